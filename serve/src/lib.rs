//! `runx serve`: one warm [`Runtime`](runx_runtime::Runtime) behind JSON-RPC 2.0 over stdio,
//! for graph runners that are not written in Rust (a Python or TypeScript orchestrator, a
//! workflow engine, a shell pipeline).
//!
//! One JSON object per line in each direction, as LSP and MCP stdio servers do. The methods:
//!
//! | method | params | result |
//! |---|---|---|
//! | `run` | `skill`, `runner`?, `inputs`?, `env`?, `cwd`?, `receipt_dir`?, `progress`?, `receipt_body`? | the object `runx skill --json` prints (with `receipt_body`, also the receipt document) |
//! | `inspect` | `skill` | the object `runx skill inspect --json` prints |
//! | `info` | none | `{"pool_size", "queue", "version"}` |
//! | `cancel` | `id` | `{"cancelled": bool}` |
//! | `shutdown` | `cancel`? | `null`, after every accepted request was answered |
//!
//! and the notification `progress` (`id`, `page_index`, `bytes`, `total_bytes`) after each
//! page of a `run` that asked for it. A step that ran and failed is a *result* whose `status`
//! is `failure`; JSON-RPC errors ([`ErrorCode`]) are for requests that could not be
//! run at all. At most [`ServeConfig::pool_size`] requests run at once and
//! [`ServeConfig::queue`] more wait; past that a request is refused `busy` (-32001). Answers
//! come when their step ends, so out of order, each with its request's id.
//!
//! What a server holds is bounded: a request waits as the text of its line (at most
//! [`ServeConfig::max_request_bytes`]), its inputs and environment ([`Inputs`], [`Env`])
//! parsed only when a step thread takes it, and a line of more than `runx_profile::REQUEST_VALUES` JSON values is refused
//! before it is parsed, since a parsed value costs 32 bytes and more where its text may cost two.
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

mod answer;
mod config;
mod line;
mod params;
mod protocol;
mod server;

pub use answer::busy_error;
pub use config::{DEFAULT_MAX_REQUEST_BYTES, DEFAULT_QUEUE, MAX_POOL_SIZE, ServeConfig};
pub use params::{CancelParams, Env, InfoParams, Inputs, InspectParams, RunParams, ShutdownParams};
pub use protocol::{ErrorCode, Method, Request, RpcError};
pub use server::{Ending, Server};
