//! Integration tests of the worker crate: engine conformance (run once per engine) and the
//! pool driving real worker processes.

mod answers;
mod conformance;
#[cfg(feature = "v8")]
mod differential;
mod pages;
mod pool;
mod protocol;
mod repeat;
mod sandbox;

use runx_worker::ModuleBundle;
use std::sync::Arc;

/// Runs `f` on a thread with the stack of a worker's engine thread: an engine called in
/// process needs room for `stack_bytes` of recursion below the call (8 MiB by default), more
/// than a test thread has.
pub fn on_engine_thread(f: impl FnOnce() + Send + 'static) {
    let thread = std::thread::Builder::new()
        .stack_size(runx_worker::ENGINE_STACK_BYTES)
        .spawn(f)
        .expect("a thread for the engine");
    if let Err(panic) = thread.join() {
        std::panic::resume_unwind(panic);
    }
}

/// A bundle with one entry module `main.mjs` holding `source`.
pub fn single(source: &str) -> Arc<ModuleBundle> {
    Arc::new(ModuleBundle::from_sources(
        "main.mjs",
        [("main.mjs", source)],
    ))
}
