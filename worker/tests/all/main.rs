//! Integration tests of the worker crate: engine conformance (run once per engine) and the
//! pool driving real worker processes.

/// Instantiates each named case (`fn case(e: &mut dyn Engine)` in the module that invokes
/// this) once per engine built, as `quickjs::case` and `v8::case`, each on a thread with the
/// engine thread's stack.
macro_rules! per_engine {
    ($($case:ident),* $(,)?) => {
        mod quickjs {
            $(
                #[test]
                fn $case() {
                    crate::on_engine_thread(|| super::$case(&mut runx_worker::QuickJs::new()));
                }
            )*
        }
        #[cfg(feature = "v8")]
        mod v8 {
            $(
                #[test]
                fn $case() {
                    crate::on_engine_thread(|| super::$case(&mut runx_worker::V8::new()));
                }
            )*
        }
    };
}

mod answers;
mod conformance;
#[cfg(feature = "v8")]
mod differential;
mod kept;
mod pages;
mod pool;
mod protocol;
mod repeat;
mod runx_js_worker;
mod runx_packages;
mod sandbox;

use runx_worker::{ConsoleLog, Engine, EngineCall, EngineOutput, Failure, Limits, ModuleBundle};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Calls the default export of a bundle of one module holding `source`, with the input `{}`
/// and no environment, under `limits`.
pub fn call_source(
    engine: &mut dyn Engine,
    source: &str,
    limits: Limits,
) -> Result<EngineOutput, (Failure, ConsoleLog)> {
    let bundle = single(source);
    engine.call(&EngineCall {
        bundle: &bundle,
        export: None,
        input: b"{}",
        page: None,
        environment: &BTreeMap::new(),
        limits,
        continues: false,
        probe: false,
        keep_module: false,
    })
}

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
