//! The pool: N worker processes, started lazily, reused, replaced within a restart budget.
//!
//! [`Pool::call`] is blocking and thread-safe. A typed failure, which the module itself
//! produced, is never retried. A call is retried on another worker only when it cannot have
//! started (the request never reached the worker), or when its worker was lost mid-call and the
//! caller marked it idempotent.
//!
//! The restart budget counts *losses*, and a loss is charged to whoever caused it: a worker lost
//! while running a module counts against that module's bundle, a worker that dies idle or
//! cannot start counts against the pool. So a module that keeps crashing its workers ends up
//! refused on its own, and every other module (another package's cases in one harness run)
//! keeps its workers. Retiring a worker on purpose (after a timeout, or a failure that says the
//! worker cannot serve again) is not a loss and spends no budget.
//!
//! [`Pool::call_cancellable`] runs a call under a [`CancelToken`]: cancelling it kills the
//! worker running that call (and only that one); that worker is retired, not lost, so its
//! replacement spends no budget.

use crate::engine::ConsoleLog;
use crate::host::cancel::CancelToken;
use crate::host::process::call::{Call, Reply};
use crate::host::process::{InvokeError, WorkerCommand, WorkerProcess, kill_group};
use crate::wire::failure::{Failure, FailureCode};
use runx_rules::Limit;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

pub(crate) mod lease;

/// The most workers a pool may have.
pub const MAX_WORKERS: usize = 16;

/// How a pool starts and supervises its workers.
#[derive(Clone, Debug)]
pub struct PoolConfig {
    /// How to start a worker process.
    pub command: WorkerCommand,
    /// Number of workers (1..=16); default: the number of CPUs.
    pub size: usize,
    /// How long a new worker has to answer `hello`.
    pub startup_timeout: Duration,
    /// Extra time after a call's wall before the host kills the worker.
    pub grace: Duration,
    /// Losses allowed within `restart_window`, for the pool and for each module bundle; one
    /// more and the pool (or that bundle) gets no new worker until the window moves on.
    pub restart_budget: usize,
    /// The window of the restart budget.
    pub restart_window: Duration,
    /// Delay before the first replacement; doubles with each replacement in the window.
    pub backoff: Duration,
}

impl PoolConfig {
    /// Defaults: one worker per CPU, 5 s startup, 100 ms grace, 3 losses per minute, 50 ms
    /// backoff.
    pub fn new(command: WorkerCommand) -> PoolConfig {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        PoolConfig {
            command,
            size: cpus.clamp(1, MAX_WORKERS),
            startup_timeout: Duration::from_secs(5),
            // The worker stops a call at its wall itself; the kill is for one that cannot (a
            // long native builtin), and should follow the wall closely.
            grace: Duration::from_millis(100),
            restart_budget: 3,
            restart_window: Duration::from_secs(60),
            backoff: Duration::from_millis(50),
        }
    }

    /// Sets the number of workers, clamped to 1..=16.
    pub fn size(mut self, size: usize) -> PoolConfig {
        self.size = size.clamp(1, MAX_WORKERS);
        self
    }
}

/// A failed call, with whatever the module logged before it failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{failure}")]
pub struct CallError {
    /// What failed.
    pub failure: Failure,
    /// Console output up to the failure.
    pub log: ConsoleLog,
}

impl From<Failure> for CallError {
    fn from(failure: Failure) -> CallError {
        CallError {
            failure,
            log: ConsoleLog::default(),
        }
    }
}

/// What the restart budget allows.
enum Budget {
    /// Start a worker after this pause.
    Start(Duration),
    /// Wait for a live worker to come free.
    Wait,
    /// No worker can be started or freed.
    Spent(Failure),
}

/// A pool of worker processes. Cheap to clone; clones share the workers.
#[derive(Clone)]
pub struct Pool {
    inner: Arc<Inner>,
}

struct Inner {
    config: PoolConfig,
    state: Mutex<State>,
    changed: Condvar,
    /// Workers run in the system temp directory: writable by nobody there (file size limit 0),
    /// and never the caller's workspace.
    workdir: std::path::PathBuf,
}

#[derive(Default)]
struct State {
    idle: Vec<WorkerProcess>,
    /// Workers alive or being started, idle or busy.
    live: usize,
    /// Workers being started ahead of any call ([`Pool::start_ahead`]), counted in `live`: a
    /// call waits for one rather than start another.
    ahead: usize,
    /// Workers started ahead, `hello` sent and `ready` not yet read, counted in `live`: the
    /// call that takes one reads it.
    starting: Vec<WorkerProcess>,
    /// When workers were lost outside any call (died idle, could not start), within the window.
    losses: VecDeque<Instant>,
    /// When workers were lost while running a bundle, by bundle digest, within the window.
    crashes: HashMap<String, VecDeque<Instant>>,
    /// Why the last worker was lost.
    last_loss: Option<String>,
    /// Process ids of every live worker, for [`Pool::kill_all`].
    pids: HashSet<u32>,
    closed: bool,
}

impl Pool {
    /// A pool; no worker starts until the first call.
    pub fn new(mut config: PoolConfig) -> std::io::Result<Pool> {
        // Workers start in another directory, so a relative program path (`./runx-worker`)
        // must be made absolute against ours first.
        let program = &config.command.program;
        if program.is_relative() && program.components().count() > 1 {
            config.command.program = std::env::current_dir()?.join(program);
        }
        let workdir = std::env::temp_dir();
        Ok(Pool {
            inner: Arc::new(Inner {
                config,
                state: Mutex::new(State::default()),
                changed: Condvar::new(),
                workdir,
            }),
        })
    }

    /// The pool's configuration.
    pub fn config(&self) -> &PoolConfig {
        &self.inner.config
    }

    /// Runs one call on a worker, blocking until it ends.
    pub fn call(&self, call: &Call) -> Result<Reply, CallError> {
        self.call_cancellable(call, &CancelToken::new())
    }

    /// Runs one call on a worker, blocking until it ends or `cancel` is cancelled: then the
    /// worker running it is killed (and retired: its replacement spends no restart budget) and
    /// the call fails `interrupted`. A call cancelled before it reaches a worker never starts.
    pub fn call_cancellable(&self, call: &Call, cancel: &CancelToken) -> Result<Reply, CallError> {
        // A call the worker would refuse never reaches one.
        call.limits
            .check()
            .map_err(|why| Failure::new(FailureCode::InvalidRequest, why))?;
        Failure::check_input(call.input_bytes(), &call.limits)?;
        let bundle = call.bundle_digest.as_str();
        let mut crashed_once = false;
        let mut unsent = 0;
        loop {
            let mut worker = self.acquire(bundle, cancel, false)?;
            let outcome = match cancel.watch(worker.pid) {
                Some(_watch) => worker.invoke(call, self.inner.config.grace),
                None => {
                    self.release(worker);
                    return Err(cancelled().into());
                }
            };
            if cancel.is_cancelled() {
                // The worker may have been killed mid-call, or just after it answered.
                self.discard(worker, "its call was cancelled", Loss::Retired);
                return outcome.map_err(|_| cancelled().into());
            }
            match outcome {
                Ok(reply) => {
                    self.release(worker);
                    return Ok(reply);
                }
                Err(InvokeError::Failed(failure, log)) => {
                    if failure.worker_reusable {
                        self.release(worker);
                    } else {
                        self.discard(worker, &failure.message, Loss::Retired);
                    }
                    return Err(CallError { failure, log });
                }
                Err(
                    e @ (InvokeError::NotSent(_)
                    | InvokeError::NeedBundle
                    | InvokeError::TooLargeAhead(_)),
                ) => {
                    // The call never started, so running it elsewhere is safe.
                    let why = match e {
                        InvokeError::NotSent(why) | InvokeError::TooLargeAhead(why) => why,
                        _ => "the worker kept asking for its bundle".to_string(),
                    };
                    self.discard(worker, &why, Loss::Pool);
                    unsent += 1;
                    if unsent > 2 {
                        return Err(crashed(why).into());
                    }
                }
                Err(InvokeError::Lost(why) | InvokeError::StateMismatch(why)) => {
                    self.discard(worker, &why, Loss::Bundle(bundle));
                    if call.idempotent && !crashed_once {
                        crashed_once = true;
                        tracing::warn!(
                            "worker lost mid-call ({why}); retrying the idempotent call"
                        );
                        continue;
                    }
                    return Err(crashed(why).into());
                }
                Err(InvokeError::TimedOut) => {
                    let wall = call.limits.wall_milliseconds;
                    let why = format!(
                        "the worker did not answer within its wall of {wall} ms plus {} ms grace and was killed",
                        self.inner.config.grace.as_millis()
                    );
                    self.discard(worker, &why, Loss::Retired);
                    return Err(Failure::limit(Limit::WallMilliseconds, why)
                        .discard_worker()
                        .into());
                }
            }
        }
    }

    /// Starts a worker now, its fork on a thread of its own, when the pool has none alive or
    /// starting, so that the first call finds it ready instead of waiting for its start: the
    /// process's start and its engine's (V8: the platform and the call's isolate) overlap what
    /// the caller does before that call, which then reads the worker's `ready` itself. A
    /// worker that cannot start is a loss of the pool, as when a call starts it.
    pub fn start_ahead(&self) {
        let mut st = self.lock();
        if st.closed || st.live > 0 {
            return;
        }
        st.live += 1;
        st.ahead += 1;
        drop(st);
        let pool = self.clone();
        let spawned = std::thread::Builder::new()
            .name("runx-start-ahead".to_string())
            .spawn(move || {
                // A failed start gave its slot back and recorded the loss.
                let launched = pool.launch();
                let mut st = pool.lock();
                st.ahead -= 1;
                if let Ok(worker) = launched {
                    st.starting.push(worker);
                }
                drop(st);
                pool.inner.changed.notify_all();
            });
        if spawned.is_err() {
            // No thread: the first call starts the worker itself.
            let mut st = self.lock();
            st.live -= 1;
            st.ahead -= 1;
        }
    }

    /// Kills every worker's process group at once (Ctrl-C). Calls in flight fail; the pool
    /// accepts no new calls. A worker still starting is killed too; [`Pool::settle`] waits
    /// until it is reaped.
    pub fn kill_all(&self) {
        let pids: Vec<u32> = {
            let mut st = self.lock();
            st.closed = true;
            st.pids.iter().copied().collect()
        };
        for pid in pids {
            kill_group(pid);
        }
        self.inner.changed.notify_all();
    }

    /// Waits until no worker is being started ahead ([`Pool::start_ahead`]), at most a second,
    /// and after [`Pool::kill_all`] kills and reaps those started ahead that no call took: a
    /// caller about to exit calls it, so that no worker it started outlives it.
    pub fn settle(&self) {
        drop(self.settled(self.lock()));
    }

    fn settled<'a>(&'a self, mut st: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        let deadline = Instant::now() + Duration::from_secs(1);
        while st.ahead > 0 && Instant::now() < deadline {
            st = self.wait(st);
        }
        if st.closed && !st.starting.is_empty() {
            let starting = std::mem::take(&mut st.starting);
            drop(st);
            for worker in starting {
                self.discard(worker, "the pool was shut down", Loss::Retired);
            }
            st = self.lock();
        }
        st
    }

    /// Process ids of the live workers.
    pub fn worker_pids(&self) -> Vec<u32> {
        self.lock().pids.iter().copied().collect()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves plain data behind; keep going with it.
        self.inner
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A worker for a call of `bundle`: an idle one, or a new one when the pool has room (or
    /// `beyond` its size, for a lease that must not wait: [`Pool::lease_own`]) and neither
    /// the pool's nor the bundle's budget is spent.
    fn acquire(
        &self,
        bundle: &str,
        cancel: &CancelToken,
        beyond: bool,
    ) -> Result<WorkerProcess, Failure> {
        let cfg = &self.inner.config;
        let mut st = self.lock();
        loop {
            if cancel.is_cancelled() {
                return Err(cancelled());
            }
            if st.closed {
                // A worker started ahead for this call is being reaped: it goes first.
                drop(self.settled(st));
                return Err(Failure::new(
                    FailureCode::WorkerCrashed,
                    "the worker pool was shut down (interrupted)",
                ));
            }
            forget_old_losses(&mut st, cfg.restart_window);
            if let Some(crashes) = st.crashes.get(bundle)
                && crashes.len() > cfg.restart_budget
            {
                return Err(Failure::new(
                    FailureCode::WorkerCrashed,
                    format!(
                        "this module lost {} workers within {} s, more than the restart budget of {}; it gets no new worker until the window has passed. Last worker loss: {}",
                        crashes.len(),
                        cfg.restart_window.as_secs(),
                        cfg.restart_budget,
                        st.last_loss.as_deref().unwrap_or("unknown")
                    ),
                ));
            }
            if let Some(mut w) = st.idle.pop() {
                if w.has_exited() {
                    // Died while idle: it never saw this call, so take another.
                    drop(st);
                    self.discard(w, "the worker exited while idle", Loss::Pool);
                    st = self.lock();
                    continue;
                }
                return Ok(w);
            }
            if let Some(worker) = st.starting.pop() {
                // Started ahead: this call reads its `ready`.
                drop(st);
                match self.ready(worker) {
                    Ok(w) => return Ok(w),
                    Err(_) => {
                        st = self.lock();
                        continue;
                    }
                }
            }
            if st.ahead > 0 {
                // A worker started ahead is on its way: this call takes it.
                st = self.wait(st);
                continue;
            }
            if st.live < cfg.size || beyond {
                let backoff = match self.replacement_backoff(&st, bundle, beyond) {
                    Budget::Start(backoff) => backoff,
                    Budget::Wait => {
                        st = self.wait(st);
                        continue;
                    }
                    Budget::Spent(failure) => return Err(failure),
                };
                st.live += 1;
                drop(st);
                std::thread::sleep(backoff);
                return self.start_worker();
            }
            st = self.wait(st);
        }
    }

    /// Whether a worker may be started now for a call of `bundle`: at once when nothing was
    /// lost in the window, after a backoff that doubles with each loss charged to the pool or
    /// to the bundle, and not at all once the pool's losses exceed the budget (then a caller
    /// `beyond` the size is refused: the workers it would wait for may be its run's own).
    fn replacement_backoff(&self, st: &State, bundle: &str, beyond: bool) -> Budget {
        let cfg = &self.inner.config;
        if st.losses.len() > cfg.restart_budget {
            if st.live > 0 && !beyond {
                return Budget::Wait;
            }
            return Budget::Spent(Failure::new(
                FailureCode::WorkerCrashed,
                format!(
                    "no worker available: {} workers were lost within {} s, more than the restart budget of {}; last worker loss: {}",
                    st.losses.len(),
                    cfg.restart_window.as_secs(),
                    cfg.restart_budget,
                    st.last_loss.as_deref().unwrap_or("unknown")
                ),
            ));
        }
        let charged = st.losses.len() + st.crashes.get(bundle).map_or(0, VecDeque::len);
        if charged == 0 {
            return Budget::Start(Duration::ZERO);
        }
        Budget::Start(cfg.backoff * (1u32 << (charged - 1).min(8)))
    }

    /// Starts a worker whose slot is already counted in `live` and waits for its `ready`.
    fn start_worker(&self) -> Result<WorkerProcess, Failure> {
        let worker = self.launch()?;
        self.ready(worker)
    }

    /// Starts a worker process whose slot is already counted in `live` and sends it `hello`.
    /// Its pid is known to [`Pool::kill_all`] from its fork on, so a worker still starting is
    /// killed too.
    fn launch(&self) -> Result<WorkerProcess, Failure> {
        let cfg = &self.inner.config;
        let forked = std::cell::Cell::new(None);
        let started = WorkerProcess::start(&cfg.command, &self.inner.workdir, |pid| {
            forked.set(Some(pid));
            self.lock().pids.insert(pid);
        });
        started.map_err(|e| self.lost_start(forked.get(), e.to_string()))
    }

    /// Reads the `ready` of a worker started by [`Pool::launch`].
    fn ready(&self, mut worker: WorkerProcess) -> Result<WorkerProcess, Failure> {
        if let Err(e) = worker.await_ready(self.inner.config.startup_timeout) {
            return Err(self.lost_start(Some(worker.pid), e.to_string()));
        }
        if self.lock().closed {
            self.discard(worker, "the pool was shut down", Loss::Retired);
            return Err(Failure::new(
                FailureCode::WorkerCrashed,
                "the worker pool was shut down (interrupted)",
            ));
        }
        tracing::debug!(pid = worker.pid, "worker started");
        Ok(worker)
    }

    /// A worker that could not start (already killed): its slot given back, a loss of the pool.
    fn lost_start(&self, pid: Option<u32>, why: String) -> Failure {
        let mut st = self.lock();
        if let Some(pid) = pid {
            st.pids.remove(&pid);
        }
        st.live -= 1;
        st.losses.push_back(Instant::now());
        st.last_loss = Some(why.clone());
        drop(st);
        self.inner.changed.notify_all();
        Failure::new(FailureCode::WorkerCrashed, why)
    }

    fn wait<'a>(&self, st: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        self.inner
            .changed
            .wait_timeout(st, Duration::from_millis(250))
            .map(|(g, _)| g)
            .unwrap_or_else(|p| p.into_inner().0)
    }

    fn release(&self, worker: WorkerProcess) {
        let mut st = self.lock();
        if st.closed {
            drop(st);
            self.discard(worker, "the pool was shut down", Loss::Retired);
            return;
        }
        if st.live > self.inner.config.size {
            // Started beyond the pool's size for a lease of its own: it goes with the lease.
            drop(st);
            self.discard(worker, "started beyond the pool's size", Loss::Retired);
            return;
        }
        st.idle.push(worker);
        drop(st);
        self.inner.changed.notify_one();
    }

    fn discard(&self, mut worker: WorkerProcess, why: &str, loss: Loss<'_>) {
        tracing::debug!(pid = worker.pid, why, "worker discarded");
        worker.kill();
        let mut st = self.lock();
        st.live = st.live.saturating_sub(1);
        st.pids.remove(&worker.pid);
        let now = Instant::now();
        match loss {
            Loss::Retired => {}
            Loss::Pool => st.losses.push_back(now),
            Loss::Bundle(digest) => st
                .crashes
                .entry(digest.to_string())
                .or_default()
                .push_back(now),
        }
        st.last_loss = Some(why.to_string());
        drop(st);
        self.inner.changed.notify_all();
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        let st = match self.state.get_mut() {
            Ok(s) => s,
            Err(p) => p.into_inner(),
        };
        for w in st.idle.drain(..) {
            w.shutdown();
        }
        for pid in st.pids.drain() {
            kill_group(pid);
        }
    }
}

/// The failure of a call stopped by its [`CancelToken`].
fn cancelled() -> Failure {
    Failure::new(
        FailureCode::Interrupted,
        "the call was cancelled; a worker running it is killed and replaced",
    )
    .discard_worker()
}

/// Who a discarded worker is charged to.
enum Loss<'a> {
    /// Retired on purpose (timeout, a failure that ends the worker, shutdown): no charge.
    Retired,
    /// Lost outside any call, or before a call reached it: charged to the pool.
    Pool,
    /// Lost while running this bundle: charged to it.
    Bundle(&'a str),
}

/// Drops the losses that left the window, and bundles with none left.
fn forget_old_losses(st: &mut State, window: Duration) {
    let now = Instant::now();
    let old = |t: &Instant| now.duration_since(*t) > window;
    while st.losses.front().is_some_and(old) {
        st.losses.pop_front();
    }
    st.crashes.retain(|_, crashes| {
        while crashes.front().is_some_and(old) {
            crashes.pop_front();
        }
        !crashes.is_empty()
    });
}

fn crashed(why: String) -> Failure {
    Failure::new(FailureCode::WorkerCrashed, why).discard_worker()
}
