//! The second engine: V8, built only with the cargo feature `v8`, driven through the `v8` crate
//! (rusty_v8, the binding deno_core is built on) without a runtime around it.
//!
//! # An isolate per run, a fresh context per call
//!
//! A V8 isolate is the expensive part (its heap, builtins and compiler: about 2 ms to make
//! here); a context is cheap (its global object and intrinsics, deserialised from a snapshot:
//! a few tenths of a millisecond). The snapshot is a context in which the prelude already ran
//! and no module code ever did, made when runx is built and carried in the executable
//! (`snapshot`; making it when the process started cost 15 ms of every cold run), so each
//! call's context starts as a copy of it, and only V8's own additions to deserialised contexts
//! (globals of some shipped features) are deleted again per call.
//!
//! An isolate serves **one run**: a call of a javascript runner, or the pages of one paged run
//! that follow each other on this worker ([`EngineCall::continues`]). Any other call gets an
//! isolate no call has touched. The worker makes it ahead, while it waits for the host after
//! answering ([`Engine::idle`]), so a call seldom waits for it: a call costs about 0.4 ms
//! here, a new isolate about 2 ms more when calls come back to back. Why this, and not a
//! collection between calls: an isolate holds tables no collection empties and no context
//! owns. The `Symbol.for` registry keeps every key a call registers for the life of the
//! isolate, so a call that registered 32 MiB of keys made the next call, another package's,
//! fail `heap_bytes` where it passed alone; garbage a call leaves is collected only when V8
//! decides to, so a later call could measure it. A fresh isolate leaves nothing to measure: a
//! call's outcome is the one it has alone (`a_call_leaves_nothing_for_the_next` in the
//! conformance suite). The pages of one run may share an isolate because they are one
//! computation already: each page gets the state of the one before it, and the run's caller
//! is the same.
//!
//! Within an isolate, each call is still kept apart from the calls of the same run:
//!
//! - **Globals, prototypes, intrinsics**: they belong to a context; each call's context is a
//!   new copy of the snapshot's, in which no module code ever ran, and no handle to an older
//!   context survives the call (every handle lives in the call's scopes or in its own
//!   [`CallState`]).
//! - **Module instances**: compiled, instantiated and evaluated per call, in the call's
//!   context; module-level `let` state starts over. Only compiled code may be shared by V8's
//!   compilation cache, and code holds no state. (A run that keeps its module is the
//!   exception, below.)
//! - **Microtasks**: the isolate runs them only when the engine asks (explicit policy). When a
//!   call ends, however it ends, jobs it left queued are discarded without running: the engine
//!   terminates execution and runs the queue, which V8 then empties (see [`Instance::run`]).
//! - **Termination**: the wall watchdog is disarmed under its lock before the call returns,
//!   so it can no longer fire for it, and a pending termination is cancelled before the next
//!   call starts.
//! - **Heap limit**: a call that reached the limit makes the near-heap-limit callback raise it
//!   a little to unwind; the engine then drops the whole isolate, so no raised limit and no
//!   half-collected heap carry over.
//! - **Console and import state**: kept in a [`CallState`] installed in an isolate slot for
//!   the duration of one call and removed after it; callbacks that find no call do nothing.
//!
//! The conformance suite attacks each of these with a pair of calls on one engine.
//!
//! # A module kept for a run
//!
//! A call that keeps its module ([`EngineCall::keep_module`]: the pages of a paged run whose
//! runner declares `pages.module: partition`) leaves its context, with the module evaluated in
//! it, to the next call of its run that keeps the module too. That call gets no new context
//! and evaluates nothing: it looks its export up on the kept module's namespace (another
//! export than the last call's, if it names one) and calls it with its own arguments. The
//! context's globals and the module's state are then the run's, as the isolate already is;
//! each call still gets its own wall, console, log bound, stack limit and [`CallState`]. The
//! heap limit bounds the isolate, so what the module keeps counts against every later call,
//! and a state that grows page after page fails `heap_bytes` at the same page on every run.
//! A kept call ends with an empty microtask queue: jobs its output's encoding queued (a
//! `toJSON` that awaits) run before its answer, under its limits (a call that does not keep
//! its module discards them, as above). Any other call drops the kept context first: one
//! that does not continue the run gets a new isolate anyway, one that continues it without
//! keeping the module (or probes, or names another bundle) a new context; a failed call drops
//! it with the run.
//!
//! # Limits
//!
//! Memory is bounded by V8 itself, not by the address space (V8 reserves tens of GiB up
//! front): the isolate's heap limit is `heap_bytes`, and a near-heap-limit callback terminates
//! the call and grants a little room to unwind; ArrayBuffer contents draw on a budget of
//! another `heap_bytes` (module `buffers`; the prelude charges resizable buffers, which V8
//! keeps outside it, to the same budget); the worker process caps its private writable
//! memory ([`MemoryCap::Data`]). V8 cannot fail an allocation softly: when a builtin that never
//! checks for termination keeps allocating, V8 ends the process, and its out-of-memory handler
//! first answers the call as `heap_bytes` through [`crate::engine::fatal`]. The stack limit is
//! `stack_bytes` below the frame that starts each call (V8 takes it as an address; module
//! `stack`), and the wall is a watchdog thread calling `TerminateExecution`. An isolate is made
//! for one heap limit; a call that narrows it gets a new one.

use crate::engine::{ConsoleLog, Engine, EngineCall, EngineOutput, MemoryCap};
use crate::wire::failure::{Failure, FailureCode};
use runx_rules::{Limit, Limits};
use rusty_v8 as v8;
use std::ffi::c_void;
use std::rc::Rc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

mod buffers;
mod call;
mod math;
mod modules;
mod snapshot;
mod stack;
mod state;
mod thrown;
mod url;
mod watchdog;

use state::CallState;
use watchdog::Watchdog;

/// The worker's cap on private writable memory. V8 reserves tens of GiB of address space it
/// never touches (the Oilpan cage alone is several GiB), so an address-space cap kills it at
/// start; reservations without access do not count against `RLIMIT_DATA`, committed pages do.
/// The isolate's heap limit and the ArrayBuffer budget (64 MiB each by default) are what a call
/// runs into; this bounds the rest (resizable ArrayBuffers, frames, thread stacks, code). A
/// worker holding a 60 MiB buffer and 40 MiB of objects measured 175 MiB here.
const DATA_BYTES: u64 = 512 * 1024 * 1024;

/// Background threads of V8's platform, as Node.js and deno_core cap them. Under
/// `--single-threaded` (`runx_v8_snapshot::FLAGS`) V8 posts no compilation or collection to
/// them, so that no outcome depends on their timing.
const PLATFORM_THREADS: u32 = 4;

/// Foreground tasks V8 posted (GC and compiler housekeeping) run after a call, at most this
/// many, so that a call's answer never waits on housekeeping.
const PUMPED_TASKS: usize = 16;

/// The least room the near-heap-limit callback grants a terminated call to unwind: V8 may have
/// to promote its young generation (a few MiB) before the termination takes effect, and with
/// a small `heap_bytes` an eighth of it is not enough.
const HEADROOM_BYTES: usize = 4 * 1024 * 1024;

/// V8's process-wide platform, started with the first engine.
static PLATFORM: OnceLock<v8::SharedRef<v8::Platform>> = OnceLock::new();

fn platform() -> &'static v8::SharedRef<v8::Platform> {
    PLATFORM.get_or_init(|| {
        // The snapshot was made under the same flags (`runx_v8_snapshot::FLAGS` says which).
        v8::V8::set_flags_from_string(runx_v8_snapshot::FLAGS);
        v8::V8::set_fatal_error_handler(v8_fatal_error);
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get() as u32)
            .min(PLATFORM_THREADS);
        let platform = v8::new_default_platform(threads, false).make_shared();
        v8::V8::initialize_platform(platform.clone());
        v8::V8::initialize();
        platform
    })
}

/// The V8 engine. An isolate serves one run: one call, or the pages of one paged run on this
/// worker (and, when the run keeps its module, so does one context). It is made ahead, while the worker is idle ([`Engine::idle`]), so a call seldom
/// waits for it.
#[derive(Default)]
pub struct V8 {
    instance: Option<Instance>,
    /// The limits of the last call, for the isolate made ahead of the next one.
    last_limits: Option<Limits>,
}

impl std::fmt::Debug for V8 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("V8")
            .field("isolate", &self.instance.is_some())
            .finish()
    }
}

impl V8 {
    /// A new engine; its isolate is made when a worker first waits for a call
    /// ([`Engine::idle`]), else by the first call.
    pub fn new() -> V8 {
        V8::default()
    }
}

impl Engine for V8 {
    fn name(&self) -> &'static str {
        "v8"
    }

    fn memory_cap(&self) -> MemoryCap {
        MemoryCap::Data(DATA_BYTES)
    }

    fn call(&mut self, call: &EngineCall<'_>) -> Result<EngineOutput, (Failure, ConsoleLog)> {
        let limits = call.limits;
        self.last_limits = Some(limits);
        let usable = self
            .instance
            .as_ref()
            .is_some_and(|i| i.fits(&limits) && (i.calls == 0 || call.continues));
        if !usable {
            // The old isolate goes first: two never coexist.
            self.instance = None;
            let made = Instance::new(&limits).map_err(|f| (f, ConsoleLog::default()))?;
            self.instance = Some(made);
        }
        let Some(instance) = self.instance.as_mut() else {
            unreachable!("the isolate was just made")
        };
        let state = Rc::new(CallState::new(call, instance.buffers.clone()));
        let (result, keep) = instance.run(call, &state);
        if !keep {
            self.instance = None;
        }
        let log = state.log.take();
        match result {
            Ok(output) => Ok(EngineOutput { output, log }),
            Err(f) => Err((f, log)),
        }
    }

    fn idle(&mut self) {
        // Before the first call (the worker has just started): an isolate for the
        // default limits, which most calls have, and V8 started with it.
        let limits = self.last_limits.unwrap_or_default();
        if self.instance.as_ref().is_some_and(|i| i.calls == 0) {
            return;
        }
        self.instance = None;
        // A failure here is met again, and answered, by the next call.
        self.instance = Instance::new(&limits).ok();
    }
}

/// What the near-heap-limit callback shares with the engine.
struct HeapGuard {
    handle: v8::IsolateHandle,
    /// Set when the current call reached the heap limit.
    hit: AtomicBool,
    /// Room granted to unwind a terminated call.
    headroom: usize,
}

/// One isolate with its watchdog and heap guard.
struct Instance {
    // Field order is drop order: the watchdog thread stops and the kept module's handles go
    // before the isolate goes, and the heap guard the isolate's callback points to outlives
    // the isolate.
    watchdog: Watchdog,
    /// The module instance the last call kept for the next call of its run.
    kept: Option<call::Kept>,
    isolate: v8::OwnedIsolate,
    /// The index of the prelude's helpers in the snapshot data of each context.
    helpers: usize,
    heap: Box<HeapGuard>,
    /// The ArrayBuffer budget's refusals.
    buffers: buffers::Buffers,
    heap_bytes: usize,
    /// Calls run on this isolate so far.
    calls: u64,
}

impl Instance {
    /// An isolate for `limits`: heap and ArrayBuffer budget, explicit microtasks, no dynamic
    /// import, the fatal out-of-memory answer, and a watchdog.
    fn new(limits: &Limits) -> Result<Instance, Failure> {
        // V8 starts with the first isolate of the process.
        platform();
        Instance::from_snapshot(limits, snapshot::startup()?)
    }

    /// An isolate for `limits` made from `startup`.
    fn from_snapshot(limits: &Limits, startup: snapshot::Startup) -> Result<Instance, Failure> {
        let (allocator, budget) = buffers::allocator(limits.heap_bytes);
        let params = v8::CreateParams::default()
            .snapshot_blob(v8::StartupData::from(startup.blob))
            .external_references(snapshot::external_references())
            .heap_limits(0, limits.heap_bytes)
            .array_buffer_allocator(allocator);
        let mut isolate = v8::Isolate::new(params);
        isolate.set_microtasks_policy(v8::MicrotasksPolicy::Explicit);
        isolate.set_oom_error_handler(out_of_memory);
        isolate.set_host_import_module_dynamically_callback(modules::refuse_dynamic_import);
        let heap = Box::new(HeapGuard {
            handle: isolate.thread_safe_handle(),
            hit: AtomicBool::new(false),
            headroom: (limits.heap_bytes / 8).max(HEADROOM_BYTES),
        });
        let data = &*heap as *const HeapGuard as *mut c_void;
        isolate.add_near_heap_limit_callback(near_heap_limit, data);
        let watchdog = Watchdog::start(isolate.thread_safe_handle()).map_err(|e| {
            Failure::new(
                FailureCode::Internal,
                format!("cannot start the watchdog: {e}"),
            )
        })?;
        Ok(Instance {
            watchdog,
            kept: None,
            isolate,
            helpers: startup.helpers,
            heap,
            buffers: budget,
            heap_bytes: limits.heap_bytes,
            calls: 0,
        })
    }

    /// Whether a call under `limits` can run on this isolate.
    fn fits(&self, limits: &Limits) -> bool {
        self.heap_bytes == limits.heap_bytes
    }

    /// Runs one call in a fresh context under the wall, then clears what the call may have
    /// left in the isolate. Returns the result and whether the isolate may serve another call.
    fn run(
        &mut self,
        call: &EngineCall<'_>,
        state: &Rc<CallState>,
    ) -> (Result<Vec<u8>, Failure>, bool) {
        let limits = call.limits;
        // Only the next call of the run, keeping the module too, finds the kept instance; any
        // other call drops it first.
        let resumes = call.keep_module && !call.probe && call.continues;
        let mut kept = self
            .kept
            .take()
            .filter(|k| resumes && k.serves(call.bundle));
        self.calls += 1;
        self.isolate.cancel_terminate_execution();
        self.heap.hit.store(false, Ordering::SeqCst);
        self.buffers.start_call();
        stack::limit(
            &mut self.isolate,
            crate::engine::stack::usable(limits.stack_bytes),
        );
        self.isolate.set_slot(state.clone());
        let started = Instant::now();
        self.watchdog.arm(started + limits.wall());
        let isolate = &mut self.isolate;
        let helpers = self.helpers;
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            call::run(isolate, helpers, call, state, &mut kept)
        }));
        let fired = self.watchdog.disarm();
        // Jobs the call left queued (it failed, or code ran after the last checkpoint) must
        // never run: with execution terminated, V8 empties the queue instead of running it.
        self.isolate.terminate_execution();
        self.isolate.perform_microtask_checkpoint();
        self.isolate.cancel_terminate_execution();
        self.isolate.remove_slot::<Rc<CallState>>();
        state.modules.borrow_mut().clear();
        let platform = platform();
        for _ in 0..PUMPED_TASKS {
            if !v8::Platform::pump_message_loop(platform, &self.isolate, false) {
                break;
            }
        }
        let heap_hit = self.heap.hit.load(Ordering::SeqCst);
        let result = match ran {
            _ if heap_hit => Err(Failure::exceeded(Limit::HeapBytes, &limits)),
            // Checked again when the call returns: a call that outlived its wall fails even
            // when it finished before the watchdog could stop it.
            _ if fired || started.elapsed() > limits.wall() => {
                Err(Failure::exceeded(Limit::WallMilliseconds, &limits))
            }
            Ok(result) => result,
            // A panic between V8 calls leaves the isolate in an unknown state: give it up, and
            // the worker with it.
            Err(_) => {
                Err(Failure::new(FailureCode::Internal, "the V8 engine panicked").discard_worker())
            }
        };
        if result.is_ok() {
            self.kept = kept;
        }
        let keep = !heap_hit && ran_ok(&result);
        (result, keep)
    }
}

/// Whether the isolate is still trusted after a call that ended with `result`.
fn ran_ok(result: &Result<Vec<u8>, Failure>) -> bool {
    match result {
        Ok(_) => true,
        Err(f) => f.worker_reusable,
    }
}

/// V8's near-heap-limit callback: terminates the call at the first approach and grants a
/// little room to unwind.
extern "C" fn near_heap_limit(data: *mut c_void, current: usize, _initial: usize) -> usize {
    // SAFETY: `data` is the `HeapGuard` boxed in the `Instance` that owns the isolate; the box
    // is dropped only after the isolate, so it is alive whenever V8 calls this.
    #[allow(
        unsafe_code,
        reason = "reads the guard V8 hands back to the near-heap-limit callback"
    )]
    let guard = unsafe { &*(data as *const HeapGuard) };
    if guard.hit.swap(true, Ordering::SeqCst) {
        // Terminated at the first approach and still growing: the call is inside a builtin
        // that never checks for termination. V8 cannot fail an allocation softly, so it ends
        // the process; `out_of_memory` answers the call first.
        return current;
    }
    guard.handle.terminate_execution();
    // Room to unwind the terminated call, which takes little; kept small so that a builtin
    // ignoring the termination reaches the second approach soon.
    current.saturating_add(guard.headroom)
}

/// What V8 calls on a fatal error (a failed `CHECK`) before it ends the process: the abort
/// that follows is a crash, not a memory limit (see `engine::fatal`).
fn v8_fatal_error(file: &str, line: i32, message: &str) {
    crate::engine::fatal::v8_fatal_error();
    eprintln!("runx worker: V8 fatal error at {file}:{line}: {message}");
}

/// What V8 calls when it cannot allocate (its heap exhausted inside a builtin that ignores
/// termination, or the worker's data cap reached); V8 ends the process when this returns.
extern "C" fn out_of_memory(_location: *const std::ffi::c_char, details: &v8::OomDetails) {
    // The answer first: it allocates nothing, while the message below may need to.
    let answered = crate::engine::fatal::answer_out_of_memory();
    let what = if details.is_heap_oom {
        "JavaScript heap"
    } else {
        "process memory"
    };
    eprintln!("runx worker: V8 is out of {what}; the process ends");
    if answered {
        // The host has its answer; V8's own crash report would only add noise.
        std::process::abort();
    }
}
