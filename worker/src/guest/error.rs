//! Why a worker process stops.

use crate::wire::frame::FrameError;
use crate::wire::message::PROTOCOL_VERSION;

/// Why the worker stopped serving.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkerError {
    /// The worker could not confine itself.
    #[error(transparent)]
    Sandbox(#[from] crate::guest::sandbox::SandboxError),
    /// The frame stream broke.
    #[error(transparent)]
    Frame(#[from] FrameError),
    /// The host spoke another protocol version.
    #[error("the host speaks protocol version {0}; this worker speaks {PROTOCOL_VERSION}")]
    Version(u32),
    /// The engine asked for with `--engine` is unknown or not built into this executable.
    #[error("{0}")]
    Engine(String),
    /// The engine thread could not be started or ended by a panic.
    #[error("the engine thread failed: {0}")]
    Thread(String),
}
