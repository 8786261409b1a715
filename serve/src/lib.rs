//! `runx serve`: one warm [`Runtime`](runx_runtime::Runtime) behind JSON-RPC 2.0 over stdio,
//! for graph runners that are not written in Rust (a Python or TypeScript orchestrator, a
//! workflow engine, a shell pipeline).
//!
//! One JSON object per line in each direction, as LSP and MCP stdio servers do. The methods:
//!
//! | method | params | result |
//! |---|---|---|
//! | `run` | `skill`, `runner`?, `inputs`?, `env`?, `cwd`?, `receipt_dir`?, `progress`? | the object `runx skill --json` prints |
//! | `inspect` | `skill` | the object `runx skill inspect --json` prints |
//! | `cancel` | `id` | `{"cancelled": bool}` |
//! | `shutdown` | `cancel`? | `null`, after every accepted request was answered |
//!
//! and the notification `progress` (`id`, `page_index`, `bytes`, `total_bytes`) after each
//! page of a `run` that asked for it. A step that ran and failed is a *result* whose `status`
//! is `failure`; JSON-RPC errors ([`protocol::ErrorCode`]) are for requests that could not be
//! run at all. At most [`ServeConfig::pool_size`] requests run at once and
//! [`ServeConfig::queue`] more wait; past that a request is refused `busy` (-32001). Answers
//! come when their step ends, so out of order, each with its request's id.
//!
//! What this crate is not: a scheduler. It runs what it is sent, on one machine; a graph
//! runner (Dask, a workflow engine) decides what runs where.
//!
//! ```no_run
//! use runx_runtime::Runtime;
//! use runx_serve::{ServeConfig, Server};
//! use std::sync::Arc;
//!
//! let config = ServeConfig::new(std::env::current_dir()?).pool_size(2);
//! let runtime = Arc::new(Runtime::discover().with_pool_size(config.pool_size));
//! let server = Server::new(runtime, config, Box::new(std::io::stdout()))?;
//! server.serve(&mut std::io::stdin().lock());
//! # Ok::<(), std::io::Error>(())
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod line;
pub mod protocol;
mod server;

pub use server::{Ending, Server};

use std::path::PathBuf;

/// Requests waiting for a step slot, by default, beyond those running.
pub const DEFAULT_QUEUE: usize = 64;
/// The largest request line, by default: room for the 4 MiB input object of a javascript
/// call, escaped, with its environment.
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 8 * 1024 * 1024;
/// The most requests that may run at once (the worker pool's own maximum).
pub const MAX_POOL_SIZE: usize = runx_runtime::MAX_WORKERS;

/// How a server runs.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    /// Requests run at once; also the size of the worker pool (1..=16; default: CPUs).
    pub pool_size: usize,
    /// Requests accepted beyond those running, waiting in order; past it, `busy`.
    pub queue: usize,
    /// The longest request line in bytes; a longer one is refused, and the server goes on.
    pub max_request_bytes: usize,
    /// Relative `skill`, `cwd` and `receipt_dir` are resolved against this directory.
    pub cwd: PathBuf,
}

impl ServeConfig {
    /// Defaults: one step per CPU, [`DEFAULT_QUEUE`], [`DEFAULT_MAX_REQUEST_BYTES`].
    pub fn new(cwd: PathBuf) -> ServeConfig {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        ServeConfig {
            pool_size: cpus.clamp(1, MAX_POOL_SIZE),
            queue: DEFAULT_QUEUE,
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
            cwd,
        }
    }

    /// Sets the number of requests run at once, clamped to 1..=16.
    pub fn pool_size(mut self, n: usize) -> ServeConfig {
        self.pool_size = n.clamp(1, MAX_POOL_SIZE);
        self
    }

    /// Sets the queue limit.
    pub fn queue(mut self, n: usize) -> ServeConfig {
        self.queue = n;
        self
    }

    /// Sets the longest request line.
    pub fn max_request_bytes(mut self, n: usize) -> ServeConfig {
        self.max_request_bytes = n;
        self
    }
}
