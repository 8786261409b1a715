//! Partitions: page `i` of a run belongs to partition `i mod N`, and every call of a partition
//! goes to one worker held for the whole run, in page order.
//!
//! What a call may see of the calls before it is then a function of the package and the
//! artifact's bytes: a V8 isolate (its `Symbol.for` registry, its heap, its compiled code)
//! serves the pages of one partition and nothing else, a module kept per partition
//! (`pages.module: partition`) sees that partition's pages and no other, and neither the pool's
//! size, nor which worker was free, nor which map finished first changes what a page meets.
//! The number of partitions is declared by the package (`pages.workers` for map/fold; a
//! sequential runner is one partition), never taken from the machine.
//!
//! A worker lost mid-run ends the run at the page it was running: the partition cannot go on
//! elsewhere without a page seeing another history than the one it would have had.

use super::page::At;
use super::page_loop::PageLoop;
use crate::failure::{FailureKind, RunError};
use runx_worker::{Call, ConsoleLog, Lease, LeaseError, PagePayload, Reply};

/// How a partition takes its worker from the pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Take {
    /// Waits for a worker when the pool's are all busy: a run that holds one partition only.
    Waiting,
    /// Never waits: an idle worker, or one started beyond the pool's size. A run that holds
    /// several partitions at once takes them so, since the worker it would wait for may be
    /// one of its own.
    Own,
}

/// One partition's worker, held for the run.
pub(super) struct Partition<'a> {
    /// Which partition: `0..N` for pages, `N` for a map/fold run's fold.
    pub index: usize,
    pub lease: Lease<'a>,
    /// The id its calls carry ([`PagePayload::new_run`]): the worker lets a call continue on
    /// what the partition's previous call left only when the ids match.
    pub run: u64,
}

/// The failure of a call whose failure is not its own: its worker was lost (or answered for
/// another state than the host holds).
pub(super) fn lost(index: usize, why: &str) -> RunError {
    RunError::new(
        FailureKind::WorkerCrashed,
        "worker_crashed",
        format!(
            "the worker of partition {index} was lost ({why}); every page of a partition runs on one worker in page order, so the run stops here rather than give the page's partition another history"
        ),
    )
}

impl<'a> Partition<'a> {
    /// The worker of partition `index` of the run in `page_loop`.
    pub(super) fn take(
        page_loop: &PageLoop<'a>,
        index: usize,
        take: Take,
    ) -> Result<Partition<'a>, RunError> {
        let (pool, bundle, cancel) = (page_loop.pool, &page_loop.module.digest, page_loop.cancel);
        let lease = match take {
            Take::Waiting => pool.lease(bundle, cancel),
            Take::Own => pool.lease_own(bundle, cancel),
        };
        Ok(Partition {
            index,
            lease: lease?,
            run: PagePayload::new_run(),
        })
    }

    /// A call of `page_loop`'s export with `page`, in this partition. One console bound serves
    /// the whole run: a page may log only what the pages before it (as far as `log` holds
    /// them) left, and nothing once the log is full (its bytes are still counted).
    pub(super) fn page_call(
        &self,
        page_loop: &PageLoop<'_>,
        mut page: PagePayload,
        log: &ConsoleLog,
    ) -> Call {
        page.run = Some(self.run);
        let mut call = page_loop.call(page_loop.export.clone(), page_loop.base.clone(), log);
        call.page = Some(page);
        call
    }

    /// Runs `call` on the partition's worker and waits for its reply. A failure of the call
    /// itself is the page's; any other (the worker lost) is [`lost`].
    pub(super) fn call(&mut self, call: &Call, at: At) -> Result<Reply, PartitionError> {
        self.lease.call(call).map_err(|e| self.error(e, at))
    }

    /// A lease error as the partition's: the page's own failure, or the worker lost.
    pub(super) fn error(&self, e: LeaseError, at: At) -> PartitionError {
        match e {
            LeaseError::Failed(e) => PartitionError(e.failure.into(), e.log),
            LeaseError::Retry(why) => {
                tracing::warn!(
                    partition = self.index,
                    page = at.index,
                    "a partition's worker was lost: {why}"
                );
                PartitionError(lost(self.index, &why), ConsoleLog::default())
            }
        }
    }
}

/// How a partition's call failed: the failure and what the call logged before it.
pub(super) struct PartitionError(pub RunError, pub ConsoleLog);
