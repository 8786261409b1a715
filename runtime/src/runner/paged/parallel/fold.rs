//! The fold: page results taken strictly in page order and merged by the fold export on a
//! worker of its own, held for the run (a partition of its own, after the map partitions), which
//! sees `runx_page` with the previous fold's `state` and the page's map `result` (no
//! `records`) and answers as a sequential page function does.

use super::super::page::{At, Settled, Walk, ms};
use super::super::page_loop::PageLoop;
use super::super::partition::{Partition, PartitionError, Take};
use super::super::runx_page::PageMeta;
use super::board::{Board, MapOutcome, Slot};
use crate::failure::RunError;
use runx_worker::{ConsoleLog, Reply};
use serde_json::Value;
use serde_json::value::RawValue;
use std::time::Instant;

/// The fold of one run.
pub(super) struct Fold<'l, 'a> {
    pub page_loop: &'l PageLoop<'a>,
    /// The map export, named in a failed map's message.
    pub map: &'l str,
    /// The fold export.
    pub fold: &'l str,
    /// The fold's partition index (the number of map partitions).
    pub index: usize,
    /// The fold's worker, taken with the first fold.
    pub partition: Option<Partition<'a>>,
}

impl Fold<'_, '_> {
    /// Folds the pages from position 0 on until one ends the run: its output, or the failure
    /// of the first page in page order that failed.
    pub(super) fn run(
        &mut self,
        board: &Board<'_>,
        walk: &mut Walk<'_>,
    ) -> Result<Value, RunError> {
        let mut seq = 0u32;
        loop {
            let mapped = match board.take(seq, self.page_loop.cancel)? {
                Slot::Page(mapped) => mapped,
                Slot::Unframed(unframed, took) => {
                    walk.record.timings.framing_ms += ms(took);
                    return Err(unframed.into_error(&mut walk.record));
                }
            };
            seq += 1;
            let at = mapped.at;
            walk.record.timings.framing_ms += ms(mapped.framing);
            let result = match mapped.outcome {
                MapOutcome::Failed { error, log } => {
                    let error = error.context(format_args!("map `{}`", self.map));
                    return Err(walk.record_failure(at, error, log));
                }
                MapOutcome::Result {
                    output,
                    call,
                    engine,
                    log,
                } => {
                    walk.record_call(at, call, engine, log);
                    output
                }
            };
            let reply = self.call(&mapped.meta, &result, at, walk)?;
            let settled = self.page_loop.settle_page(
                &reply,
                at,
                mapped.eof,
                mapped.covered,
                &mut walk.record,
            )?;
            match settled {
                Settled::Finished(output) => return Ok(output),
                Settled::Next(state) => walk.state = state,
            }
        }
    }

    /// Calls the fold export with the page's metadata, the fold state so far and the page's
    /// map result, on the fold's worker.
    fn call(
        &mut self,
        meta: &PageMeta,
        result: &RawValue,
        at: At,
        walk: &mut Walk<'_>,
    ) -> Result<Reply, RunError> {
        let page_loop = self.page_loop;
        let input = meta.fold_input(&page_loop.inputs, &walk.state, result)?;
        let fold = |e: RunError| e.context(format_args!("fold `{}`", self.fold));
        if self.partition.is_none() {
            match Partition::take(page_loop, self.index, Take::Own) {
                Ok(taken) => self.partition = Some(taken),
                Err(e) => return Err(walk.record_failure(at, fold(e), ConsoleLog::default())),
            }
        }
        let Some(partition) = self.partition.as_mut() else {
            return Err(RunError::internal("partition", "the fold has no worker"));
        };
        let mut call = page_loop.call(Some(self.fold.to_string()), input, walk.log);
        // Part of the run like its pages: the fold's calls continue on what the fold's previous
        // call left on its worker (V8: its isolate; with `pages.module: partition`, the module).
        call.run = Some(partition.run);
        let started = Instant::now();
        match partition.call(&call, at) {
            Ok(mut reply) => {
                let log = std::mem::take(&mut reply.log);
                walk.record_call(at, started.elapsed(), reply.engine_time, log);
                Ok(reply)
            }
            Err(PartitionError(e, log)) => Err(walk.record_failure(at, fold(e), log)),
        }
    }
}
