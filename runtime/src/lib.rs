//! x
#![deny(unsafe_code)]
pub mod artifact;
pub mod cli_tool;
pub mod digest;
pub mod error;
pub mod framing;
pub mod harness;
pub mod inputs;
pub mod paged;
pub mod profile;
pub mod receipt;
pub mod runtime;
pub mod subprocess;

pub use error::RunError;
pub use runtime::{EnvSource, RunOutcome, RunRequest, Runtime};
