//! The runtime of this process: its workers are this very executable.

use crate::keys::Keys;
use crate::signals;
use runx_runtime::Runtime;
use std::sync::Arc;

/// The runtime of this process (every javascript runner on `engine` when given) signing with
/// `keys`, its workers this very executable, with Ctrl-C, SIGTERM and SIGHUP wired to kill its
/// workers and subprocesses ([`signals`]).
pub fn runtime(engine: Option<&str>, keys: Keys) -> Arc<Runtime> {
    install(configured_runtime(engine, keys))
}

/// `rt` shared, with Ctrl-C, SIGTERM and SIGHUP wired to kill its workers and subprocesses.
pub fn install(rt: Runtime) -> Arc<Runtime> {
    let rt = Arc::new(rt);
    signals::install(rt.clone());
    rt
}

/// A runtime whose workers are this very executable, every javascript runner on `engine` when
/// given, signing and verifying receipts with `keys`; no signal handling.
pub fn configured_runtime(engine: Option<&str>, keys: Keys) -> Runtime {
    let mut rt = Runtime::new(runx_runtime::current_exe_worker());
    if let Some(engine) = engine {
        rt = rt.with_engine(engine);
    }
    if let Some(signer) = keys.signer {
        rt = rt.with_signer(signer);
    }
    if let Some(key) = keys.verify {
        rt = rt.with_verify_key(key);
    }
    rt
}
