//! A worker held for a run of calls, so that a call can go to it before the reply to the one
//! before has come back: the pages of a paged run sent ahead (see `guest::ahead`).

use super::{CallError, Loss, Pool, cancelled};
use crate::host::cancel::{CancelToken, Watch};
use crate::host::process::call::{Call, Reply};
use crate::host::process::{InvokeError, WorkerProcess};
use crate::wire::failure::{Failure, FailureCode};
use runx_rules::Limit;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// How long a dropped lease waits for the replies still owed before it retires the worker.
const DRAIN_WAIT: Duration = Duration::from_millis(50);

/// One worker held for a run of calls. The lease registers the worker with the run's cancel
/// token for its whole life. Dropped, it gives the worker back to the pool when nothing went
/// wrong and no reply is owed (it first reads, for a moment, the refusals of pages sent ahead
/// of a reply that ended the run), and otherwise retires it, charging a loss as
/// [`Pool::call_cancellable`] would.
pub struct Lease<'p> {
    pool: &'p Pool,
    cancel: &'p CancelToken,
    bundle: String,
    worker: Option<WorkerProcess>,
    /// Unregistered before the worker leaves the lease, so that a cancel never reaches a
    /// worker another call holds.
    watch: Option<Watch<'p>>,
    /// Ids of the calls sent whose replies have not been read, oldest first.
    owed: VecDeque<u64>,
    /// Why the worker may not serve again, once something went wrong.
    spoiled: Option<Spoiled>,
}

/// Why a leased worker may not serve again, and what its loss costs.
struct Spoiled {
    why: String,
    charge: Charge,
}

/// Whom a retired worker's loss is charged to (see `Loss`).
#[derive(Clone, Copy)]
enum Charge {
    /// No one: retired on purpose.
    Nobody,
    /// The pool: lost before a call reached it.
    Pool,
    /// The bundle: lost while running it.
    Bundle,
}

/// How a leased call ended without a reply.
#[derive(Debug)]
pub enum LeaseError {
    /// The call failed as it would have on any worker: the failure to report.
    Failed(CallError),
    /// The call did not run through for a reason that is not its own (the worker was lost,
    /// the request could not be sent ahead, the reply named another state): it may run again
    /// elsewhere.
    Retry(String),
}

impl Pool {
    /// Holds one worker for a run of calls of `bundle`, under `cancel`, waiting for one when
    /// all the pool's workers are busy.
    pub fn lease<'p>(
        &'p self,
        bundle: &str,
        cancel: &'p CancelToken,
    ) -> Result<Lease<'p>, Failure> {
        self.lease_from(bundle, cancel, false)
    }

    /// Holds one worker for a run of calls of `bundle`, under `cancel`, never waiting for a
    /// busy one: an idle worker, or a new one started even beyond the pool's size (retired
    /// when the lease ends if the pool is then over its size). A run that holds several
    /// leases at once (the partitions of a paged run) takes them so: waiting for a worker
    /// one of its own leases holds would never end.
    pub fn lease_own<'p>(
        &'p self,
        bundle: &str,
        cancel: &'p CancelToken,
    ) -> Result<Lease<'p>, Failure> {
        self.lease_from(bundle, cancel, true)
    }

    fn lease_from<'p>(
        &'p self,
        bundle: &str,
        cancel: &'p CancelToken,
        beyond: bool,
    ) -> Result<Lease<'p>, Failure> {
        let worker = self.acquire(bundle, cancel, beyond)?;
        let Some(watch) = cancel.watch(worker.pid) else {
            self.release(worker);
            return Err(cancelled());
        };
        Ok(Lease {
            pool: self,
            cancel,
            bundle: bundle.to_string(),
            worker: Some(worker),
            watch: Some(watch),
            owed: VecDeque::new(),
            spoiled: None,
        })
    }
}

impl Lease<'_> {
    /// Whether the worker reads page records from descriptors (pages are sent ahead only then:
    /// their requests are small).
    pub fn pages_by_descriptor(&self) -> bool {
        self.worker
            .as_ref()
            .is_some_and(|w| w.pages_by_descriptor())
    }

    /// Sends `call` without waiting for its reply; its id. A call sent while another's reply
    /// is owed must fit in what its worker takes ahead (`WorkerProcess::ahead_bytes`), or it is not sent (`Retry`, and the
    /// worker still serves the calls sent before).
    pub fn send(&mut self, call: &Call) -> Result<u64, LeaseError> {
        call.limits.check().map_err(|why| {
            LeaseError::Failed(Failure::new(FailureCode::InvalidRequest, why).into())
        })?;
        Failure::check_input(call.input_bytes(), &call.limits)
            .map_err(|f| LeaseError::Failed(f.into()))?;
        let ahead = !self.owed.is_empty();
        match self.worker()?.send_call(call, ahead) {
            Ok(id) => {
                self.owed.push_back(id);
                Ok(id)
            }
            Err(e) => Err(self.settle(e, call)),
        }
    }

    /// Sends `call` when no reply is owed and waits for its reply: one call at a time on the
    /// leased worker.
    pub fn call(&mut self, call: &Call) -> Result<Reply, LeaseError> {
        if !self.owed.is_empty() {
            let why = "a call was made while replies were owed".to_string();
            return Err(self.spoil(why, Charge::Nobody));
        }
        let id = self.send(call)?;
        self.receive(id, call, None)
    }

    /// Waits for the reply to `id` (the oldest owed) until the call's wall plus the pool's
    /// grace from now. For a call that took a kept state, `state` is the digest of the state
    /// the host holds: a reply that names another is `Retry`.
    pub fn receive(
        &mut self,
        id: u64,
        call: &Call,
        state: Option<&str>,
    ) -> Result<Reply, LeaseError> {
        if self.owed.front() != Some(&id) {
            let why = format!("call {id} is not the next reply owed");
            return Err(self.spoil(why, Charge::Nobody));
        }
        self.owed.pop_front();
        let deadline = Instant::now() + call.limits.wall() + self.pool.inner.config.grace;
        let outcome = self.worker()?.receive_call(id, deadline, state);
        if self.cancel.is_cancelled() {
            // As in `call_cancellable`: the worker may have been killed mid-call, or just after
            // it answered; an answer that came is kept, and nothing more is sent.
            self.spoil("its call was cancelled".to_string(), Charge::Nobody);
            return outcome.map_err(|_| LeaseError::Failed(cancelled().into()));
        }
        outcome.map_err(|e| self.settle(e, call))
    }

    fn worker(&mut self) -> Result<&mut WorkerProcess, LeaseError> {
        if let Some(spoiled) = &self.spoiled {
            return Err(LeaseError::Retry(spoiled.why.clone()));
        }
        self.worker
            .as_mut()
            .ok_or_else(|| LeaseError::Retry("the lease holds no worker".to_string()))
    }

    /// The lease error for an invoke error, and what the worker's loss costs, as
    /// [`Pool::call_cancellable`] would have it.
    fn settle(&mut self, e: InvokeError, call: &Call) -> LeaseError {
        match e {
            InvokeError::Failed(failure, log) => {
                if !failure.worker_reusable {
                    self.spoil(failure.message.clone(), Charge::Nobody);
                }
                LeaseError::Failed(CallError { failure, log })
            }
            InvokeError::TimedOut => {
                let why = format!(
                    "the worker did not answer within its wall of {} ms plus {} ms grace and was killed",
                    call.limits.wall_milliseconds,
                    self.pool.inner.config.grace.as_millis()
                );
                self.spoil(why.clone(), Charge::Nobody);
                LeaseError::Failed(
                    Failure::limit(Limit::WallMilliseconds, why)
                        .discard_worker()
                        .into(),
                )
            }
            InvokeError::Lost(why) => self.spoil(why, Charge::Bundle),
            InvokeError::NotSent(why) => self.spoil(why, Charge::Pool),
            InvokeError::NeedBundle => {
                self.spoil("the worker asked for its bundle".to_string(), Charge::Pool)
            }
            InvokeError::StateMismatch(why) => self.spoil(why, Charge::Nobody),
            // Nothing reached the worker: it still serves the calls already sent.
            InvokeError::TooLargeAhead(why) => LeaseError::Retry(why),
        }
    }

    /// Marks the worker as one that may not serve again (the first reason stays).
    fn spoil(&mut self, why: String, charge: Charge) -> LeaseError {
        self.spoiled.get_or_insert(Spoiled {
            why: why.clone(),
            charge,
        });
        LeaseError::Retry(why)
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        self.watch = None;
        let Some(mut worker) = self.worker.take() else {
            return;
        };
        if self.spoiled.is_none() && !self.owed.is_empty() {
            // A page sent ahead of a reply that ended the run is refused at once (the worker
            // kept no state for it): read those answers rather than lose a warm worker. One
            // that runs on is not waited for.
            let deadline = Instant::now() + DRAIN_WAIT;
            while let Some(&id) = self.owed.front() {
                match worker.receive_call(id, deadline, None) {
                    Ok(_) => {}
                    Err(InvokeError::Failed(f, _)) if f.worker_reusable => {}
                    Err(_) => break,
                }
                self.owed.pop_front();
            }
        }
        match (&self.spoiled, self.owed.is_empty()) {
            (None, true) => self.pool.release(worker),
            (None, false) => self.pool.discard(
                worker,
                "it was running a call no one waits for",
                Loss::Retired,
            ),
            (Some(spoiled), _) => {
                let loss = match spoiled.charge {
                    Charge::Nobody => Loss::Retired,
                    Charge::Pool => Loss::Pool,
                    Charge::Bundle => Loss::Bundle(&self.bundle),
                };
                self.pool.discard(worker, &spoiled.why, loss)
            }
        }
    }
}
