//! SIGINT, SIGTERM and SIGHUP: each stops the runtime the way Ctrl-C always did.
//!
//! The first of them interrupts the runtime ([`Runtime::interrupt`]: workers and cli-tool
//! process groups killed, their descendants swept); the run then ends normally, so staged
//! input files are removed and an `interrupted` receipt is written, and runx exits with
//! 128 + the signal's number (130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP). A second
//! signal ends runx at once with the same code.

use runx_runtime::Runtime;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};

/// The first signal received, 0 until one is.
static RECEIVED: AtomicI32 = AtomicI32::new(0);

/// Routes SIGINT, SIGTERM and SIGHUP to `rt`.
pub fn install(rt: Arc<Runtime>) {
    on_first(move |signal| {
        tracing::info!("signal {signal}: interrupting the run");
        rt.interrupt();
    });
}

/// Calls `stop` with the first of SIGINT, SIGTERM and SIGHUP received, on a thread of its own;
/// a second signal ends the process at once with 128 + the first's number.
pub fn on_first(stop: impl Fn(i32) + Send + 'static) {
    let mut signals = match signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!("cannot handle signals: {e}");
            return;
        }
    };
    let spawned = std::thread::Builder::new()
        .name("runx-signals".to_string())
        .spawn(move || {
            for signal in signals.forever() {
                match RECEIVED.compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst) {
                    Ok(_) => stop(signal),
                    Err(first) => std::process::exit(128 + first),
                }
            }
        });
    if let Err(e) = spawned {
        tracing::warn!("cannot start the signal thread: {e}");
    }
}

/// The exit code a received signal asks for (128 + its number), if one was received.
pub fn exit_code() -> Option<u8> {
    match RECEIVED.load(Ordering::SeqCst) {
        0 => None,
        signal => u8::try_from(128 + signal).ok(),
    }
}
