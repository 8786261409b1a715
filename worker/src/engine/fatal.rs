//! The answer a worker process still gives when its engine has to end the process.
//!
//! V8 cannot fail an allocation softly. When its heap runs out inside a builtin that never
//! checks for termination (`new Array(1e9).fill(1)` fills a sparse array in a C++ loop), V8
//! ends the process through its out-of-memory handler. When the worker's data cap is reached
//! instead (a single allocation may exceed the heap limit: V8 flattens a 256 MiB rope string
//! in one piece, and `JSON.stringify` builds its text in a C++ buffer outside the heap), a C++
//! allocation inside V8 fails and the process aborts without a word. A worker process then
//! still answers the call it was running with the limit it ran into, so the host reports
//! `resource_limit` instead of a crash; the failure discards the worker, which is gone a moment
//! later. The answer is made when the call starts, since nothing can be allocated when it is
//! needed, and written with one system call.
//!
//! In a V8 worker every abort during a call is answered this way, except one that V8's own
//! fatal-error handler saw first (a failed `CHECK`: a bug, which stays a crash): the aborts
//! left are a C++ or Rust allocation that failed. An engine used in-process (tests,
//! benchmarks) has no host to answer, and the process simply ends.

use crate::engine::ConsoleLog;
use crate::wire::failure::Failure;
use crate::wire::frame::write_frame;
use crate::wire::message::{Header, Message};
use nix::libc;
use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};
use runx_rules::{Limit, Limits};
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

/// Whether this process is a worker whose stdout carries frames to a host and whose engine may
/// end the process: the only case where a call's answer is made ahead.
static ON_STDOUT: AtomicBool = AtomicBool::new(false);

/// The answer to the call the worker is running, if any: a leaked `Box<Vec<u8>>` holding the
/// frame that says it ran out of memory, or null. A pointer, not a lock: a signal handler
/// takes it.
static RUNNING: AtomicPtr<Vec<u8>> = AtomicPtr::new(std::ptr::null_mut());

/// Set when V8 reported a fatal error (a failed `CHECK`) before ending the process: that abort
/// is a crash, not the memory limit.
static V8_FATAL: AtomicBool = AtomicBool::new(false);

/// Declares that this process answers a host through frames on its stdout, and whether its
/// engine may end the process (V8): only then is each call's answer made ahead, and an abort
/// during a call answered (see the module documentation).
pub(crate) fn answer_on_stdout(engine_ends_process: bool) {
    if !engine_ends_process {
        return;
    }
    ON_STDOUT.store(true, Ordering::SeqCst);
    let action = SigAction::new(
        SigHandler::Handler(on_abort),
        SaFlags::SA_RESETHAND,
        SigSet::empty(),
    );
    // SAFETY: `on_abort` only does what a signal handler may: atomics and `write`; it
    // allocates, locks and frees nothing.
    #[allow(unsafe_code, reason = "installs a signal handler")]
    if let Err(e) = unsafe { sigaction(Signal::SIGABRT, &action) } {
        eprintln!("runx worker: cannot handle aborts ({e}); an abort will be reported as a crash");
    }
}

/// Records that V8 reported a fatal error: the abort that follows is a crash.
#[cfg_attr(
    not(feature = "v8"),
    allow(dead_code, reason = "only the V8 engine reports fatal errors")
)]
pub(crate) fn v8_fatal_error() {
    V8_FATAL.store(true, Ordering::SeqCst);
}

/// Records the call being run until the returned guard is dropped: its id, limits and the
/// digest of the kept state it took (see `guest::ahead`).
pub(crate) fn running(call_id: u64, limits: Limits, state_digest: Option<String>) -> Running {
    if !ON_STDOUT.load(Ordering::SeqCst) {
        return Running(());
    }
    let failure = Failure::exceeded(Limit::HeapBytes, &limits).discard_worker();
    let message = Message::Failure {
        failure,
        log: ConsoleLog::default(),
        state_digest,
    };
    let mut frame = Vec::new();
    if write_frame(&mut frame, &Header::new(call_id, message).to_bytes(), &[]).is_err() {
        return Running(());
    }
    running_frame(frame)
}

/// Records the call being run until the returned guard is dropped, with `frame`, the whole
/// frame (in the host's protocol: runx's worker protocol for `runx-js-worker`) that answers it
/// when the engine ends the process. Does nothing where this process answers no host.
pub(crate) fn running_frame(frame: Vec<u8>) -> Running {
    if ON_STDOUT.load(Ordering::SeqCst) {
        let old = RUNNING.swap(Box::into_raw(Box::new(frame)), Ordering::SeqCst);
        free(old);
    }
    Running(())
}

/// Forgets the running call when dropped.
pub(crate) struct Running(());

impl Drop for Running {
    fn drop(&mut self) {
        free(RUNNING.swap(std::ptr::null_mut(), Ordering::SeqCst));
    }
}

/// Frees a frame taken from [`RUNNING`].
fn free(frame: *mut Vec<u8>) {
    if !frame.is_null() {
        // SAFETY: every non-null pointer in `RUNNING` came from `Box::into_raw`, and whoever
        // swaps it out owns it: no one else can take it again.
        #[allow(unsafe_code, reason = "takes back a box leaked into RUNNING")]
        drop(unsafe { Box::from_raw(frame) });
    }
}

/// Answers the running call with "`heap_bytes` exceeded" and a discarded worker, once, when
/// this process is a worker serving a host; returns whether it did. May run on any thread, in
/// a signal handler, with no memory left: it allocates, locks and frees nothing, and writes the
/// frame made when the call started straight to the stdout descriptor (the serving thread is
/// inside the call, not writing: frames are written and flushed whole). Only the V8 engine
/// ends the process from inside a builtin.
#[cfg_attr(
    not(feature = "v8"),
    allow(
        dead_code,
        reason = "only the V8 engine ends the process from inside a builtin"
    )
)]
pub fn answer_out_of_memory() -> bool {
    if !ON_STDOUT.load(Ordering::SeqCst) {
        return false;
    }
    let frame = RUNNING.swap(std::ptr::null_mut(), Ordering::SeqCst);
    if frame.is_null() {
        return false;
    }
    // SAFETY: the pointer came from `Box::into_raw` and was swapped out here, so this thread
    // owns it; it is leaked, not freed (the process is ending, and `free` may not be called
    // from a signal handler).
    #[allow(unsafe_code, reason = "reads the frame leaked into RUNNING")]
    let frame: &[u8] = unsafe { &*frame };
    let mut rest = frame;
    while !rest.is_empty() {
        // SAFETY: `write` reads `rest.len()` bytes from a live slice.
        #[allow(unsafe_code, reason = "write(2), which a signal handler may call")]
        let n = unsafe { libc::write(libc::STDOUT_FILENO, rest.as_ptr().cast(), rest.len()) };
        if n <= 0 {
            return false;
        }
        rest = &rest[n as usize..];
    }
    true
}

/// The SIGABRT handler: answers the running call unless V8 reported a fatal error first, then
/// returns, and `abort` ends the process (the handler was reset to the default).
extern "C" fn on_abort(_: libc::c_int) {
    if !V8_FATAL.load(Ordering::SeqCst) {
        answer_out_of_memory();
    }
}
