//! One partition's map thread: it takes the partition's framed pages in page order, calls the
//! map export with each (the page's `runx_page` without `state`) on the partition's worker,
//! and posts the result for the fold.

use super::super::page::{At, Prepared, Unframed};
use super::super::page_loop::PageLoop;
use super::super::partition::{Partition, PartitionError, Take};
use super::super::runx_page::Beside;
use super::board::{Board, MapOutcome, Mapped, MapperLeaves, Slot};
use crate::failure::{FailureKind, RunError};
use runx_profile::STATE_BYTES;
use runx_worker::{ConsoleLog, PagePayload, PageRecords, Reply};
use serde_json::value::RawValue;
use std::sync::mpsc::Sender;
use std::time::Instant;

/// Maps the pages of partition `index` of `partitions` until the board needs no more;
/// `give_back` returns record buffers to the framing thread. The partition's worker is taken
/// with its first page and held to its last.
pub(super) fn map_partition(
    page_loop: &PageLoop<'_>,
    board: &Board<'_>,
    (index, partitions): (usize, usize),
    give_back: &Sender<Vec<u8>>,
) {
    let _leaves = MapperLeaves(board);
    let mut partition = None;
    let step = u32::try_from(partitions).unwrap_or(u32::MAX);
    let mut next = u32::try_from(index).ok();
    while let Some(seq) = next {
        let Some((framed, took)) = board.next_page(seq) else {
            return;
        };
        next = seq.checked_add(step);
        let slot = match page_loop.with_digest(framed) {
            Ok(Some(prepared)) => {
                if !board.wanted(seq) {
                    // An earlier page ends the run: this one would never be folded.
                    return;
                }
                // A panic here must not leave the fold waiting for a page no one posts.
                let mapped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    let taken = partition_for(page_loop, &mut partition, index);
                    map_page(page_loop, taken, prepared, took, give_back)
                }));
                match mapped {
                    Ok(mapped) => Slot::Page(Box::new(mapped)),
                    Err(_) => Slot::Unframed(
                        Unframed::Run(RunError::internal(
                            "map_thread",
                            format!("the map thread stopped while mapping page {seq}"),
                        )),
                        took,
                    ),
                }
            }
            Ok(None) => Slot::Unframed(
                Unframed::Run(RunError::new(
                    FailureKind::Page,
                    "no_final_page",
                    "the artifact ended without a final page",
                )),
                took,
            ),
            Err(unframed) => Slot::Unframed(unframed, took),
        };
        let ends = slot.ends();
        board.post(seq, slot);
        if ends {
            // The run ends at this page: the partition's later pages are never folded (and a
            // failed page may have spoiled its worker).
            return;
        }
    }
}

/// The partition's worker, taken now if this is its first page (or why none could be).
fn partition_for<'p, 'a>(
    page_loop: &PageLoop<'a>,
    partition: &'p mut Option<Partition<'a>>,
    index: usize,
) -> Result<&'p mut Partition<'a>, RunError> {
    if partition.is_none() {
        *partition = Some(Partition::take(page_loop, index, Take::Own)?);
    }
    partition
        .as_mut()
        .ok_or_else(|| RunError::internal("partition", "the partition has no worker"))
}

/// Calls the map export with one page on its partition's worker. Each call gets the whole
/// console bound: calls run side by side, so what the pages before left of it is not known
/// yet; the fold joins the logs in page order under the run's one bound.
fn map_page(
    page_loop: &PageLoop<'_>,
    partition: Result<&mut Partition<'_>, RunError>,
    prepared: Prepared,
    framing: std::time::Duration,
    give_back: &Sender<Vec<u8>>,
) -> Mapped {
    let at = At::of(&prepared.page);
    let (eof, covered) = (prepared.page.eof, prepared.page.next_offset);
    let page_meta = prepared.meta;
    let meta = page_meta.encode(Beside::Nothing);
    let mapped = |outcome| Mapped {
        at,
        eof,
        covered,
        meta: page_meta,
        framing,
        outcome,
    };
    let (partition, meta) = match (partition, meta) {
        (Ok(partition), Ok(meta)) => (partition, meta),
        (Err(error), _) | (_, Err(error)) => {
            return mapped(MapOutcome::Failed {
                error,
                log: ConsoleLog::default(),
            });
        }
    };
    let mut call = partition.page_call(
        page_loop,
        PagePayload {
            meta,
            records: prepared.records,
            keep_state: false,
            state_from: None,
            run: None,
        },
        &ConsoleLog::default(),
    );
    let started = Instant::now();
    let reply = partition.call(&call, at);
    let took = started.elapsed();
    if let Some(PagePayload {
        records: PageRecords::Inline { blob, .. },
        ..
    }) = call.page.take()
    {
        let _ = give_back.send(blob);
    }
    let outcome = match reply {
        Ok(mut reply) => match check_result(&reply) {
            Ok(output) => MapOutcome::Result {
                output,
                call: took,
                engine: reply.engine_time,
                log: std::mem::take(&mut reply.log),
            },
            Err(error) => MapOutcome::Failed {
                error,
                log: std::mem::take(&mut reply.log),
            },
        },
        Err(PartitionError(error, log)) => MapOutcome::Failed { error, log },
    };
    mapped(outcome)
}

/// A map result passes to the fold inside its input: it must be JSON and, like a state carried
/// between pages, at most [`STATE_BYTES`].
fn check_result(reply: &Reply) -> Result<Box<RawValue>, RunError> {
    let output = serde_json::from_slice::<Box<RawValue>>(&reply.output)
        .map_err(|e| RunError::new(FailureKind::OutputRejected, "invalid_json", e.to_string()))?;
    let len = reply.output.len() as u64;
    if len > STATE_BYTES.max {
        return Err(RunError::limit(
            &STATE_BYTES,
            format!(
                "the map result is {len} bytes; at most {} bytes (2 MiB) pass from a page's map to the fold",
                STATE_BYTES.max
            ),
        ));
    }
    Ok(output)
}
