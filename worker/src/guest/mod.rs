//! The worker process: what runs inside `runx __worker` (or the `runx-worker` binary), from its
//! start and confinement to the loop that answers the host's frames. See `src/README.md`.

pub(crate) mod ahead;
pub(crate) mod engines;
pub(crate) mod error;
mod output;
mod request;
pub(crate) mod runx;
pub(crate) mod sandbox;
pub(crate) mod session;
pub(crate) mod start;
mod tail;
