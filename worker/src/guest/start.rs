//! A worker process from its start: the engine named on its command line, its confinement, the
//! watch on the host, and the thread its session runs on.
//!
//! Started by the pool as `runx __worker` (or the `runx-worker` binary). Stdout carries frames
//! and nothing else; console output travels inside results.

use super::engines::engine_by_name;
use super::error::WorkerError;
use super::sandbox::SandboxOptions;
use super::session::run_session_with;
use runx_rules::DEFAULT_ENGINE;
use std::io;

/// Stack of the thread the engine runs on. The worker sets it itself, so the caller's stack
/// limit (`ulimit -s`) never decides whether deep recursion is a `stack_bytes` failure or a
/// crash: the engine's own limit ([`runx_rules::Limits::stack_bytes`], at most 8 MiB) is checked well
/// inside it, with room left for the native frames of builtins and of the worker.
pub const ENGINE_STACK_BYTES: usize = 16 * 1024 * 1024;

/// Entry point of a worker process: takes the engine from `--engine NAME` in the process's
/// arguments (QuickJS when absent; the environment stays empty), then runs
/// [`worker_main_with`]. Returns the process exit code.
pub fn worker_main() -> i32 {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let options = SandboxOptions::from_args(&args);
    let engine = args
        .iter()
        .position(|a| a == "--engine")
        .and_then(|i| args.get(i + 1).cloned())
        .or_else(|| {
            args.iter()
                .find_map(|a| a.strip_prefix("--engine=").map(str::to_string))
        });
    worker_main_with_options(engine.as_deref().unwrap_or(DEFAULT_ENGINE), options)
}

/// Entry point of a worker process using the engine `engine` (`quickjs`, `v8`) and the
/// strictest sandbox; see [`worker_main_with_options`].
pub fn worker_main_with(engine: &str) -> i32 {
    worker_main_with_options(engine, SandboxOptions::default())
}

/// Entry point of a worker process: confines the process (`sandbox::enter`), then
/// serves stdin/stdout on a thread of [`ENGINE_STACK_BYTES`] until shutdown or end of input.
/// Returns the process exit code.
pub fn worker_main_with_options(engine: &str, options: SandboxOptions) -> i32 {
    match confine_and_serve(engine, options) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("runx worker: {e}");
            2
        }
    }
}

/// Ends the worker at once when the host goes away. The request loop only notices a closed
/// stdin between calls; a call may run for its whole wall (up to 30 s) first. A thread waits
/// instead for the pipe to the host to break: the write end of a pipe reports an error
/// (`POLLERR`) as soon as no reader is left, which happens the moment the host exits or dies.
pub(crate) fn watch_host() {
    let spawned = std::thread::Builder::new()
        .name("runx-host-watch".to_string())
        .spawn(|| {
            use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
            use std::os::fd::AsFd;
            let stdout = io::stdout();
            loop {
                let mut fds = [PollFd::new(stdout.as_fd(), PollFlags::empty())];
                let gone = match poll(&mut fds, PollTimeout::NONE) {
                    Ok(_) => fds[0].revents().is_some_and(|r| {
                        r.intersects(PollFlags::POLLERR | PollFlags::POLLHUP | PollFlags::POLLNVAL)
                    }),
                    Err(nix::errno::Errno::EINTR) => false,
                    Err(_) => return,
                };
                if gone {
                    exit_now();
                }
                // Not a pipe (a terminal, a file): nothing to watch, and no busy loop.
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
        });
    if let Err(e) = spawned {
        eprintln!("runx worker: cannot watch the host pipe: {e}");
    }
}

/// Ends the process without unwinding or flushing anything: the host that would read it is gone.
#[allow(unsafe_code, reason = "_exit ends the process without unwinding")]
fn exit_now() -> ! {
    // SAFETY: `_exit` ends the process at once; it touches no memory of this program and runs
    // no handler, so it is safe to call while the main thread is inside the engine.
    unsafe { nix::libc::_exit(3) }
}

fn confine_and_serve(name: &str, options: SandboxOptions) -> Result<(), WorkerError> {
    // The engine is chosen before the sandbox so that a refusal can still be reported; making
    // an engine starts no thread and touches no environment.
    let memory = engine_by_name(name)?.memory_cap();
    crate::guest::sandbox::enter(memory, name, options)?;
    // Only V8 ends the process when memory runs out; QuickJS fails the allocation softly, so
    // its workers make no answer ahead of each call.
    crate::engine::fatal::answer_on_stdout(name == "v8");
    watch_host();
    let descriptors = crate::host::descriptor::inherited();
    let name = name.to_string();
    std::thread::Builder::new()
        .name("runx-engine".to_string())
        .stack_size(ENGINE_STACK_BYTES)
        .spawn(move || {
            let mut engine = engine_by_name(&name)?;
            run_session_with(
                engine.as_mut(),
                io::stdin().lock(),
                io::stdout().lock(),
                descriptors.as_ref(),
            )
        })
        .map_err(|e| WorkerError::Thread(e.to_string()))?
        .join()
        .map_err(|_| WorkerError::Thread("it panicked".to_string()))?
}
