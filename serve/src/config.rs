//! How a server runs: its step slots, its queue and its longest request.

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
