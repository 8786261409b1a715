//! The framing thread's work: pages framed from the snapshot, laid out and hashed, queued for
//! the calls. The sequential loop and the map/fold runner share it, so both page the same bytes
//! the same way.

use super::page::Framed;
use super::page_loop::PageLoop;
use super::queue::PageQueue;
use super::snapshot_framer::SnapshotFramer;
use std::sync::mpsc::Receiver;
use std::time::Instant;

/// Bytes of framed pages (record tables, metadata, and records copied for a worker without a
/// descriptor channel) that may wait for their call. A page sent by descriptor weighs 8 bytes
/// per record, about 3% of its span for records of 250 bytes, so this keeps over a hundred
/// pages of 1 MiB ahead of the calls; see `queue` for why the framing thread refills it in
/// bursts.
pub(super) const LOOKAHEAD_BYTES: usize = 4 * 1024 * 1024;

/// Frames every page of the run into `queue` until the last one (eof, a framing error, or an
/// interruption), or until the calls stop taking pages. `spare_blobs` brings back the record
/// buffers of pages whose calls are over, so pages reuse memory instead of faulting in a fresh
/// megabyte each.
pub(super) fn frame_pages(
    page_loop: &PageLoop<'_>,
    mut framer: SnapshotFramer<'_>,
    queue: &PageQueue<Framed>,
    spare_blobs: &Receiver<Vec<u8>>,
) {
    let budget = page_loop.budget();
    let producer = queue.producer();
    loop {
        let started = Instant::now();
        // Pages are framed while admission goes on; the calls wait for its digest.
        let next = framer
            .next_page(&budget)
            .map(|page| page.map(|page| page_loop.prepare(page, spare_blobs)));
        let last = !matches!(&next, Ok(Some(p)) if !p.page.eof);
        let weight = match &next {
            Ok(Some(p)) => p.weight(),
            _ => 0,
        };
        if !producer.push((next, started.elapsed()), weight) || last {
            return;
        }
    }
}
