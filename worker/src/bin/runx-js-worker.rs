//! A worker runx 0.8.2 runs unchanged: put its path in `RUNX_JS_WORKER_PATH` (or this file,
//! named `runx-js-worker`, beside runx's binary) and runx's javascript steps run on this
//! runtime's engine, V8 where built with the feature `v8`, QuickJS otherwise. See the book's
//! page "runx on this engine".
fn main() {
    std::process::exit(runx_worker::runx_worker_main());
}
