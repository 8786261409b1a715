//! The wall of a V8 call: one thread per isolate that terminates execution at the deadline.
//!
//! The thread lives as long as the isolate, so a call pays a lock and a wake-up, not a thread
//! start. Arming and disarming take the same lock the thread holds when it terminates, so once
//! [`Watchdog::disarm`] returns, the thread can no longer fire for the call that armed it.

use rusty_v8 as v8;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Instant;

/// The watchdog's state, under its lock.
#[derive(Default)]
struct Alarm {
    /// When to terminate the running call; `None` between calls.
    deadline: Option<Instant>,
    /// Whether the watchdog terminated the call armed last.
    fired: bool,
    /// Set when the isolate goes away.
    quit: bool,
}

#[derive(Default)]
struct Shared {
    alarm: Mutex<Alarm>,
    wake: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Alarm> {
        // Nothing under this lock can panic halfway; a poisoned state is still consistent.
        self.alarm.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A wall-clock watchdog for one isolate.
pub(super) struct Watchdog {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Watchdog {
    /// Starts the thread that terminates execution through `handle` when an armed deadline
    /// passes.
    pub(super) fn start(handle: v8::IsolateHandle) -> std::io::Result<Watchdog> {
        let shared = Arc::new(Shared::default());
        let theirs = shared.clone();
        let thread = std::thread::Builder::new()
            .name("runx-v8-watchdog".to_string())
            .stack_size(64 * 1024)
            .spawn(move || watch(&theirs, &handle))?;
        Ok(Watchdog {
            shared,
            thread: Some(thread),
        })
    }

    /// Arms the watchdog for a call that must end by `deadline`.
    pub(super) fn arm(&self, deadline: Instant) {
        let mut alarm = self.shared.lock();
        alarm.deadline = Some(deadline);
        alarm.fired = false;
        self.shared.wake.notify_one();
    }

    /// Disarms it; returns whether it terminated the call.
    pub(super) fn disarm(&self) -> bool {
        let mut alarm = self.shared.lock();
        alarm.deadline = None;
        alarm.fired
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.shared.lock().quit = true;
        self.shared.wake.notify_one();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn watch(shared: &Shared, handle: &v8::IsolateHandle) {
    let mut alarm = shared.lock();
    loop {
        if alarm.quit {
            return;
        }
        alarm = match alarm.deadline {
            None => shared
                .wake
                .wait(alarm)
                .unwrap_or_else(PoisonError::into_inner),
            Some(deadline) => {
                let now = Instant::now();
                if now >= deadline {
                    alarm.deadline = None;
                    alarm.fired = true;
                    handle.terminate_execution();
                    alarm
                } else {
                    shared
                        .wake
                        .wait_timeout(alarm, deadline - now)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
            }
        };
    }
}
