//! The fold: page results taken strictly in page order and merged by the fold export on a
//! worker of its own, held for the run (a partition of its own, after the map partitions), which
//! sees `runx_page` with the previous fold's `state` and the page's map `result` (no
//! `records`) and answers as a sequential page function does.

use super::super::page::{At, Settled, Walk, ms};
use super::super::page_loop::PageLoop;
use super::super::partition::{Partition, Take};
use super::board::{Board, MapOutcome, Slot};
use crate::failure::RunError;
use runx_worker::Reply;
use serde_json::Value;
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
        let bound = self.page_loop.module.limits.log_bytes;
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
            walk.record.page_count = at.index + 1;
            let result = match mapped.outcome {
                MapOutcome::Failed { error, log } => {
                    walk.log.absorb(log, bound);
                    let error = error.context(format_args!("map `{}`", self.map));
                    return Err(at.fail(&mut walk.record, error));
                }
                MapOutcome::Result {
                    output,
                    call,
                    engine,
                    log,
                } => {
                    walk.record.timings.call_ms += ms(call);
                    walk.record.timings.engine_ms += ms(engine);
                    walk.log.absorb(log, bound);
                    output
                }
            };
            let reply = self
                .call(&mapped.meta_prefix, &result, at, walk)
                .map_err(|e| at.fail(&mut walk.record, e))?;
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
        meta_prefix: &str,
        result: &[u8],
        at: At,
        walk: &mut Walk<'_>,
    ) -> Result<Reply, RunError> {
        let page_loop = self.page_loop;
        let state = serde_json::to_vec(&walk.state)
            .map_err(|e| RunError::internal("encode", e.to_string()))?;
        let bound = page_loop.module.limits.log_bytes;
        let input = fold_input(&page_loop.base, meta_prefix, &state, result)?;
        let fold = |e: RunError| e.context(format_args!("fold `{}`", self.fold));
        if self.partition.is_none() {
            let taken = Partition::take(page_loop, self.index, Take::Own).map_err(fold)?;
            self.partition = Some(taken);
        }
        let Some(partition) = self.partition.as_mut() else {
            return Err(RunError::internal("partition", "the fold has no worker"));
        };
        let mut call = page_loop.call(Some(self.fold.to_string()), input, walk.log);
        // Part of the run like its pages: the fold's calls continue on what the fold's previous
        // call left on its worker (V8: its isolate; with `pages.module: partition`, the module).
        call.run = Some(partition.run);
        let started = Instant::now();
        let reply = partition.call(&call, at);
        walk.record.timings.call_ms += ms(started.elapsed());
        match reply {
            Ok(mut reply) => {
                walk.record.timings.engine_ms += ms(reply.engine_time);
                walk.log.absorb(std::mem::take(&mut reply.log), bound);
                Ok(reply)
            }
            Err(e) => Err(fold(e.into_error(walk.log, bound))),
        }
    }
}

/// The fold's input: the run's inputs (`base`, a JSON object as serde_json writes it) with
/// `runx_page` = the page's metadata (`meta_prefix` ends with `"state":`), `state`, and
/// `result`, the map's JSON text as it came (checked JSON, never parsed and re-encoded).
fn fold_input(
    base: &[u8],
    meta_prefix: &str,
    state: &[u8],
    result: &[u8],
) -> Result<Vec<u8>, RunError> {
    let Some(open) = base.strip_suffix(b"}") else {
        return Err(RunError::internal(
            "encode",
            "the inputs are not a JSON object",
        ));
    };
    let mut input =
        Vec::with_capacity(base.len() + meta_prefix.len() + state.len() + result.len() + 32);
    input.extend_from_slice(open);
    if open != b"{" {
        input.push(b',');
    }
    input.extend_from_slice(b"\"runx_page\":");
    input.extend_from_slice(meta_prefix.as_bytes());
    input.extend_from_slice(state);
    input.extend_from_slice(b",\"result\":");
    input.extend_from_slice(result);
    input.extend_from_slice(b"}}");
    Ok(input)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_fold_input_is_the_inputs_with_runx_page() {
        let meta = r#"{"page_index":2,"eof":false,"state":"#;
        let input = fold_input(br#"{"k":1}"#, meta, b"[1]", br#"{"n":3}"#).unwrap();
        let v: Value = serde_json::from_slice(&input).unwrap();
        assert_eq!(
            v,
            json!({"k": 1, "runx_page": {"page_index": 2, "eof": false, "state": [1], "result": {"n": 3}}})
        );
        let input = fold_input(b"{}", meta, b"null", b"7").unwrap();
        let v: Value = serde_json::from_slice(&input).unwrap();
        assert_eq!(v["runx_page"]["result"], 7);
        assert!(v["runx_page"]["state"].is_null());
    }
}
