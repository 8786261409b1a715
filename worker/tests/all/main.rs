//! Integration tests of the worker crate: engine conformance (run once per engine) and the
//! pool driving real worker processes.

mod answers;
mod conformance;
#[cfg(feature = "v8")]
mod differential;
mod pages;
mod pool;
mod protocol;
mod sandbox;

use runx_worker::ModuleBundle;
use std::sync::Arc;

/// A bundle with one entry module `main.mjs` holding `source`.
pub fn single(source: &str) -> Arc<ModuleBundle> {
    Arc::new(ModuleBundle::from_sources(
        "main.mjs",
        [("main.mjs", source)],
    ))
}
