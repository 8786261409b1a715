//! The answer a worker process still gives when its engine has to end the process.
//!
//! V8 cannot fail an allocation softly. When its heap runs out inside a builtin that never
//! checks for termination (`new Array(1e9).fill(1)` fills a sparse array in a C++ loop), V8
//! ends the process. A worker process then still answers the call it was running with the limit
//! it ran into, so the host reports `resource_limit` instead of a crash; the failure discards
//! the worker, which is gone a moment later. An engine used in-process (tests, benchmarks) has
//! no host to answer, and the process simply ends.

use crate::engine::ConsoleLog;
use crate::wire::failure::Failure;
use crate::wire::frame::write_frame;
use crate::wire::message::{Header, Message};
use runx_rules::{Limit, Limits};
use std::os::fd::AsFd;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether this process is a worker whose stdout carries frames to a host.
static ON_STDOUT: AtomicBool = AtomicBool::new(false);

/// The call the worker is running, if any: its id, limits and the digest of the kept state it
/// took (see `guest::ahead`).
static RUNNING: Mutex<Option<(u64, Limits, Option<String>)>> = Mutex::new(None);

/// Declares that this process answers a host through frames on its stdout.
pub(crate) fn answer_on_stdout() {
    ON_STDOUT.store(true, Ordering::SeqCst);
}

/// Records the call being run until the returned guard is dropped.
pub(crate) fn running(call_id: u64, limits: Limits, state_digest: Option<String>) -> Running {
    if let Ok(mut slot) = RUNNING.lock() {
        *slot = Some((call_id, limits, state_digest));
    }
    Running(())
}

/// Forgets the running call when dropped.
pub(crate) struct Running(());

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(mut slot) = RUNNING.lock() {
            *slot = None;
        }
    }
}

/// Answers the running call with "`limit` exceeded" and a discarded worker, once, when this
/// process is a worker serving a host; returns whether it did. May run on any thread, from
/// inside the engine; it writes to a duplicate of the stdout descriptor because the serving
/// thread holds the stdout lock (and has flushed it: frames are flushed whole). Only the V8
/// engine ends the process from inside a builtin, so a build without it never calls this.
#[cfg_attr(
    not(feature = "v8"),
    allow(
        dead_code,
        reason = "only the V8 engine ends the process from inside a builtin"
    )
)]
pub fn answer(limit: Limit) -> bool {
    if !ON_STDOUT.load(Ordering::SeqCst) {
        return false;
    }
    // `try_lock`: a thread that ends the process must never wait on another.
    let Some((call_id, limits, state_digest)) =
        RUNNING.try_lock().ok().and_then(|mut slot| slot.take())
    else {
        return false;
    };
    let failure = Failure::exceeded(limit, &limits).discard_worker();
    let log = ConsoleLog::default();
    let message = Message::Failure {
        failure,
        log,
        state_digest,
    };
    let header = Header::new(call_id, message).to_bytes();
    match std::io::stdout().as_fd().try_clone_to_owned() {
        Ok(fd) => write_frame(&mut std::fs::File::from(fd), &header, &[]).is_ok(),
        Err(_) => false,
    }
}
