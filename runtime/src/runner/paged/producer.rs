//! The framing thread's work: pages framed from the snapshot, laid out and hashed, queued for
//! the calls. The sequential loop and the map/fold runner share it, so both page the same bytes
//! the same way.

use super::page::{Framed, Prepared, span};
use super::page_loop::PageLoop;
use super::queue::PageQueue;
use super::runx_page::PageMeta;
use super::snapshot_framer::SnapshotFramer;
use crate::framing::Page;
use runx_receipts::sha256_hex;
use runx_worker::{ByteRange, PageRecords};
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
            .map(|page| page.map(|page| prepare(page_loop, page, spare_blobs)));
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

/// Lays a page's records out for the worker and hashes its byte range; the range of the map
/// is then released, since this process does not read it again. The page's metadata waits
/// for the whole digest, which admission may not know yet ([`PageLoop::with_digest`]).
fn prepare(page_loop: &PageLoop<'_>, mut page: Page, spare_blobs: &Receiver<Vec<u8>>) -> Prepared {
    // The written part of the snapshot: the page was framed from it, and the range digest
    // below slices it, so no range sent to the worker reaches unwritten bytes.
    let data = page_loop.artifact.data();
    let records = match (page_loop.artifact.read_only(), &page.records[..]) {
        // The worker reads the span from the first record to the last from the snapshot
        // itself: no copy here, none through the pipe.
        (Some(file), [first, .., last]) | (Some(file), [first @ last]) => {
            let base = first.start;
            PageRecords::Range {
                file: file.clone(),
                range: ByteRange {
                    offset: base as u64,
                    len: (last.end - base) as u64,
                },
                spans: page
                    .records
                    .iter()
                    .map(|r| (span(r.start - base), span(r.end - base)))
                    .collect(),
            }
        }
        _ => {
            let mut blob = spare_blobs.try_recv().unwrap_or_default();
            blob.clear();
            blob.reserve(page.record_bytes());
            let mut ends = Vec::with_capacity(page.records.len());
            for r in &page.records {
                blob.extend_from_slice(&data[r.clone()]);
                ends.push(span(blob.len()));
            }
            PageRecords::Inline { ends, blob }
        }
    };
    let (start, end) = (page.offset as usize, page.next_offset as usize);
    let meta = PageMeta {
        artifact_ref: page_loop.artifact.artifact_ref.clone(),
        media_type: page_loop.pages.media_type.clone(),
        artifact_bytes: page_loop.artifact.bytes,
        page_index: page.index,
        offset: page.offset,
        length: page.length(),
        next_offset: page.next_offset,
        eof: page.eof,
        range_digest: sha256_hex(&data[start..end]),
        whole_digest: String::new(),
    };
    page_loop.artifact.release(start, end);
    // The records now live in their transport layout; the page keeps only its position
    // while it waits in the lookahead.
    page.records = Vec::new();
    Prepared {
        page,
        meta,
        records,
    }
}
