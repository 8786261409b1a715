//! What host and worker say to each other: frames, messages, limits and failures. See
//! `src/README.md`.

pub(crate) mod failure;
pub(crate) mod frame;
pub(crate) mod message;
