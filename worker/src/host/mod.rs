//! The host side: what a process that uses workers runs (the runtime, `runx serve`, the
//! benchmarks). See `src/README.md`.

pub(crate) mod cancel;
pub(crate) mod child;
pub(crate) mod collect;
pub(crate) mod descriptor;
pub(crate) mod pool;
pub(crate) mod process;
