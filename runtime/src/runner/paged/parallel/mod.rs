//! The map/fold runner (a runx extension): pages framed exactly as the sequential loop frames
//! them, each mapped on its own by the `map` export in its partition (page `i` in partition
//! `i mod N`, N the declared `pages.workers`, each partition on a worker of its own), and the
//! map results folded by the `fold` export strictly in page order, on one more worker. What
//! the run returns, records and reports is a function of the package and the artifact's bytes:
//! the fold sees the same results in the same order whichever map finished first, every
//! partition sees the same pages in the same order whatever the pool, and the first page in
//! page order that failed decides a failure.
//!
//! - `board`: the pages handed to their partitions, the results waiting for their turn,
//!   stopping;
//! - `map`: one partition's map thread;
//! - `fold`: the fold, on the calling thread.

mod board;
mod fold;
mod map;

use super::page::Walk;
use super::page_loop::PageLoop;
use super::producer::{LOOKAHEAD_BYTES, frame_pages};
use super::queue::PageQueue;
use super::snapshot_framer::SnapshotFramer;
use crate::failure::RunError;
use board::{Board, StopOnDrop};
use fold::Fold;
use runx_profile::ParallelDecl;
use serde_json::Value;

/// Positions each map thread may run ahead of the fold: enough that a worker rarely waits for
/// a slow page before it, few enough that the results waiting stay small.
const AHEAD_PER_WORKER: u32 = 4;

/// Runs the pages of `page_loop` (whose export is the map) through `parallel`'s map and fold
/// in `partitions` partitions, one map thread each.
pub(super) fn walk_pages(
    page_loop: &PageLoop<'_>,
    parallel: &ParallelDecl,
    partitions: usize,
    walk: &mut Walk<'_>,
) -> Result<Value, RunError> {
    let framer = SnapshotFramer::new(page_loop.artifact, page_loop.cancel);
    let queue = PageQueue::new(LOOKAHEAD_BYTES);
    let window = u32::try_from(partitions)
        .unwrap_or(u32::MAX)
        .saturating_mul(AHEAD_PER_WORKER);
    let board = Board::new(queue.consumer(), partitions, window);
    let mut fold = Fold {
        page_loop,
        map: &parallel.map,
        fold: &parallel.fold,
        index: partitions,
        partition: None,
    };
    std::thread::scope(|s| {
        let (give_back, spare_blobs) = std::sync::mpsc::channel::<Vec<u8>>();
        let queue = &queue;
        s.spawn(move || frame_pages(page_loop, framer, queue, &spare_blobs));
        let board = &board;
        for index in 0..partitions {
            let give_back = give_back.clone();
            s.spawn(move || map::map_partition(page_loop, board, (index, partitions), &give_back));
        }
        drop(give_back);
        // Dropped before the scope joins its threads, however the fold ends: the map threads
        // stop taking pages and the framing thread is let go.
        let _stop = StopOnDrop(board);
        fold.run(board, walk)
    })
}
