//! x
#![deny(unsafe_code)]
pub mod digest;
pub mod framing;
pub mod inputs;
pub mod profile;
pub mod subprocess;
