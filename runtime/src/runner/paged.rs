//! The `runx_page` continuation loop of a paged javascript runner over an admitted
//! `json_array` artifact.
//!
//! The artifact is admitted once ([`crate::artifact`]), framed into pages of whole records
//! ([`crate::framing`]), and the export is called once per page with the state the previous
//! page returned. A framing thread runs ahead of the calls: while the worker runs page N, the
//! pages after it are scanned, validated, laid out for transport and hashed, up to
//! [`LOOKAHEAD_BYTES`] of them ([`lookahead`]).

use super::javascript::Module;
use super::{Produced, Provenance, Ran, RunContext, Step};
use crate::artifact::{self, Artifact};
use runx_worker::cancel::CancelToken;
use runx_receipts::{digest, sha256_hex};
use crate::failure::{FailureKind, RunError};
use crate::framing::{Framer, FramingError, Page, PageBudget};
use runx_profile::PageSource;
use runx_profile::{PAGE_COUNT, STATE_BYTES};
use runx_profile::{JsRunner, PagesDecl, PathScope};
use crate::progress::{PageProgress, ProgressSink};
use runx_receipts::ArtifactProvenance;
use runx_worker::engine::ConsoleLog;
use runx_worker::limits::Limits;
use runx_worker::pool::Pool;
use runx_worker::process::{Call, PagePayload, PageRecords, Reply};
use runx_worker::protocol::ByteRange;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::mpsc::{Receiver, Sender};
use std::time::{Duration, Instant};

mod ahead;
mod lookahead;

use lookahead::{ConsumerGuard, Lookahead};
use std::collections::VecDeque;

/// Room kept in each call's input for the page metadata (everything but state and records).
const META_RESERVE: usize = 16 * 1024;
/// Bytes of offset table per record in the transport.
const PER_RECORD_OVERHEAD: usize = 4;
/// Bytes of framed pages (record tables, metadata, and records copied for a worker without a
/// descriptor channel) that may wait for their call. A page sent by descriptor weighs 8 bytes
/// per record, about 3% of its span for records of 250 bytes, so this keeps over a hundred
/// pages of 1 MiB ahead of the calls; see [`lookahead`] for why the framing thread refills it
/// in bursts.
const LOOKAHEAD_BYTES: usize = 4 * 1024 * 1024;

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Runs a paged runner: admission, then the page loop.
pub(crate) fn run(
    ctx: &RunContext<'_>,
    step: Step<'_>,
    js: &JsRunner,
    pages: &PagesDecl,
    module: Module,
    mut provenance: Provenance,
) -> Ran {
    let result = admit_and_loop(ctx, step, js, pages, module, &mut provenance);
    Ran { result, provenance }
}

fn admit_and_loop(
    ctx: &RunContext<'_>,
    step: Step<'_>,
    js: &JsRunner,
    pages: &PagesDecl,
    module: Module,
    provenance: &mut Provenance,
) -> Result<Produced, RunError> {
    let Step {
        profile,
        mut inputs,
        environment,
        workspace,
        progress,
        page_source,
        ..
    } = step;
    // Input resolution checked the page inputs; their absence here would be a runtime bug.
    let Some(PageSource { path, scope }) = page_source else {
        return Err(RunError::internal(
            "page_source",
            "a paged run reached the page loop without its artifact path",
        ));
    };
    // The module sees neither path input: the runtime owns the file.
    inputs.remove(&pages.path_from);
    inputs.remove(&pages.path_scope_from);
    let root = match scope {
        PathScope::Workspace => workspace.to_path_buf(),
        PathScope::Skill => profile.dir.clone(),
    };
    let base_value = Value::Object(inputs);
    provenance.input_digest = Some(digest(&base_value));
    let base =
        serde_json::to_vec(&base_value).map_err(|e| RunError::internal("encode", e.to_string()))?;
    let started = Instant::now();
    let artifact = artifact::admit(&path, &root, ctx.instance)?;
    let mut record = ArtifactProvenance {
        artifact_ref: artifact.artifact_ref.clone(),
        whole_digest: artifact.whole_digest.clone(),
        artifact_bytes: artifact.bytes,
        media_type: pages.media_type.clone(),
        ..ArtifactProvenance::default()
    };
    record.timings.admission_ms = ms(started.elapsed());
    let page_loop = PageLoop {
        pool: ctx.workers.pool(&module.engine)?,
        cancel: ctx.cancel,
        artifact: &artifact,
        pages,
        export: js.export.clone(),
        module,
        base,
        environment,
        progress,
    };
    let result = page_loop.run(&mut record, &mut provenance.log);
    // No result leaves the run before the copy into the snapshot is whole and hashes to the
    // digest every page carried (a run that ended early copies the rest now). A failed run
    // produces nothing and keeps its own error.
    let result = result.and_then(|produced| match artifact.finish() {
        Ok(()) => Ok(produced),
        Err(e) => {
            record.finished = false;
            Err(e.into())
        }
    });
    record.timings.wall_ms = ms(started.elapsed());
    provenance.artifact = Some(record);
    result
}

/// A page framed and hashed, waiting for the state of the page before it.
struct Prepared {
    page: Page,
    meta_prefix: String,
    records: PageRecords,
}

impl Prepared {
    /// The memory it holds while it waits, in bytes.
    fn weight(&self) -> usize {
        let records = match &self.records {
            PageRecords::Inline { ends, blob } => 4 * ends.len() + blob.len(),
            PageRecords::Range { spans, .. } => 8 * spans.len(),
        };
        std::mem::size_of::<Prepared>() + self.meta_prefix.len() + records
    }
}

/// What the framing thread hands the loop: the next page (or why there is none) and the
/// time it took (the copy into the snapshot that framing waited for included).
type Framed = (Result<Option<Prepared>, Unframed>, Duration);

/// Everything the loop needs that does not change from page to page.
struct PageLoop<'a> {
    pool: &'a Pool,
    cancel: &'a CancelToken,
    artifact: &'a Artifact,
    pages: &'a PagesDecl,
    export: Option<String>,
    module: Module,
    /// The input object without the path inputs, encoded once.
    base: Vec<u8>,
    environment: BTreeMap<String, String>,
    progress: Option<&'a ProgressSink>,
}

/// Bytes of the snapshot framing asks to have copied past the start of the next page, beyond
/// two pages: the scan of the record after a page needs a little of what follows.
const FILL_SLACK: usize = 1 << 20;

/// The framer over a snapshot whose copy goes on while pages are framed: before each page it
/// has the copy reach a little past where the page can end, and frames from what is written
/// ([`Framer::next_page_from`]); when that cannot settle the page, it asks for twice as much.
/// Pages never wait for more of the copy than they cover, and the copy runs on this thread,
/// beside the calls. An interrupted run stops it between two steps of the copy.
struct SnapshotFramer<'a> {
    artifact: &'a Artifact,
    cancel: &'a CancelToken,
    /// Made once the head of the file (up to the opening `[`) is written.
    framer: Option<Framer<'a>>,
}

impl SnapshotFramer<'_> {
    /// The next page, or why there is none.
    fn next_page(&mut self, budget: &PageBudget) -> Result<Option<Page>, Unframed> {
        let total = self.artifact.size();
        let mut ahead = budget
            .page_bytes
            .saturating_mul(2)
            .saturating_add(FILL_SLACK);
        loop {
            if self.cancel.is_cancelled() {
                return Err(Unframed::Run(RunError::interrupted()));
            }
            let start = self.framer.as_ref().map_or(0, Framer::offset);
            let written = self
                .artifact
                .fill_to(start.saturating_add(ahead))
                .map_err(|e| Unframed::Run(e.into()))?;
            let whole = written.len() >= total;
            let framed = match &mut self.framer {
                Some(framer) => framer.next_page_from(written, whole, budget),
                None => match Framer::from_prefix(written, whole) {
                    Some(Ok(framer)) => {
                        self.framer = Some(framer);
                        continue;
                    }
                    Some(Err(e)) => Some(Err(e)),
                    None => None,
                },
            };
            match framed {
                Some(framed) => return framed.map_err(Unframed::Framing),
                None => ahead = ahead.saturating_mul(2),
            }
        }
    }
}

/// Why the framer gave no page. A framing error is kept as it came until the loop reaches
/// it: a run that ends before (`done`) does not record it.
enum Unframed {
    Framing(FramingError),
    Run(RunError),
}

impl Unframed {
    /// The run's error, recording where framing failed.
    fn into_error(self, record: &mut ArtifactProvenance) -> RunError {
        match self {
            Unframed::Framing(e) => framing_failed(e, record),
            Unframed::Run(e) => e,
        }
    }
}

/// A page taken from the framer that the one-call-at-a-time loop must run (or the reason
/// there is none), in order.
struct Unanswered {
    page: Result<Prepared, Unframed>,
    /// The page was running when its worker was lost.
    lost_once: bool,
}

/// How a page's reply leaves the run.
enum Settled {
    /// The run ends with this output.
    Finished(Produced),
    /// The run goes on with this state.
    Next(Value),
}

/// Where a page failed, for the error message and the receipt.
#[derive(Clone, Copy, Debug)]
struct At {
    index: u32,
    offset: u64,
}

impl At {
    fn fail(self, record: &mut ArtifactProvenance, e: RunError) -> RunError {
        record.failed_page_index = Some(self.index);
        record.failed_offset = Some(self.offset);
        e.context(format_args!(
            "page {} (byte offset {})",
            self.index, self.offset
        ))
    }
}

impl PageLoop<'_> {
    /// Frames pages on a second thread and calls the export once per page until `eof` or
    /// `done`.
    fn run(
        &self,
        record: &mut ArtifactProvenance,
        log: &mut ConsoleLog,
    ) -> Result<Produced, RunError> {
        let mut framer = SnapshotFramer {
            artifact: self.artifact,
            cancel: self.cancel,
            framer: None,
        };
        let lookahead = Lookahead::new(LOOKAHEAD_BYTES);
        std::thread::scope(|s| {
            // Record buffers come back after their call, so pages reuse memory instead of
            // faulting in a fresh megabyte each.
            let (give_back, spare_blobs) = std::sync::mpsc::channel::<Vec<u8>>();
            let budget = self.budget();
            let lookahead = &lookahead;
            s.spawn(move || {
                let queue = lookahead.producer();
                loop {
                    let started = Instant::now();
                    let next = framer
                        .next_page(&budget)
                        .map(|page| page.map(|page| self.prepare(page, &spare_blobs)));
                    let last = !matches!(&next, Ok(Some(p)) if !p.page.eof);
                    let weight = match &next {
                        Ok(Some(p)) => p.weight(),
                        _ => 0,
                    };
                    if !queue.push((next, started.elapsed()), weight) || last {
                        return;
                    }
                }
            });
            self.call_pages(&lookahead.consumer(), &give_back, record, log)
        })
    }

    /// The loop over framed pages, on the calling thread: pages go ahead on one leased worker
    /// while that works ([`ahead`]), then one call at a time through the pool.
    fn call_pages(
        &self,
        framed: &ConsumerGuard<'_, Framed>,
        give_back: &Sender<Vec<u8>>,
        record: &mut ArtifactProvenance,
        log: &mut ConsoleLog,
    ) -> Result<Produced, RunError> {
        let mut state = Value::Null;
        let mut waiting = VecDeque::new();
        if let Some(produced) =
            self.call_pages_ahead(framed, record, log, &mut state, &mut waiting)?
        {
            return Ok(produced);
        }
        loop {
            // A page lost once with a worker that ran it ahead has spent its one retry.
            let (prepared, retry_if_lost) = match waiting.pop_front() {
                Some(Unanswered { page, lost_once }) => {
                    (page.map_err(|u| u.into_error(record))?, !lost_once)
                }
                None => (self.next_prepared(framed, record)?, true),
            };
            let at = At {
                index: prepared.page.index,
                offset: prepared.page.offset,
            };
            let (eof, covered) = (prepared.page.eof, prepared.page.next_offset);
            let reply =
                self.call_page(prepared, &state, at, retry_if_lost, give_back, record, log)?;
            match self.settle_page(&reply, at, eof, covered, record)? {
                Settled::Finished(produced) => return Ok(produced),
                Settled::Next(next) => state = next,
            }
        }
    }

    /// The next framed page, or why there is none.
    fn next_prepared(
        &self,
        framed: &ConsumerGuard<'_, Framed>,
        record: &mut ArtifactProvenance,
    ) -> Result<Prepared, RunError> {
        self.next_framed(framed, record)
            .map_err(|u| u.into_error(record))
    }

    /// The next framed page, or why there is none, not yet recorded as the run's failure.
    fn next_framed(
        &self,
        framed: &ConsumerGuard<'_, Framed>,
        record: &mut ArtifactProvenance,
    ) -> Result<Prepared, Unframed> {
        let Some((next, took)) = framed.pop() else {
            return Err(Unframed::Run(RunError::internal(
                "framing_thread",
                "the framing thread stopped without a final page",
            )));
        };
        record.timings.framing_ms += ms(took);
        match next {
            Ok(Some(p)) => Ok(p),
            Ok(None) => Err(Unframed::Run(RunError::new(
                FailureKind::Page,
                "no_final_page",
                "the artifact ended without a final page",
            ))),
            Err(unframed) => Err(unframed),
        }
    }

    /// Checks a page's reply: the run ends with it (eof or `done`) or goes on with its state.
    fn settle_page(
        &self,
        reply: &Reply,
        at: At,
        eof: bool,
        covered: u64,
        record: &mut ArtifactProvenance,
    ) -> Result<Settled, RunError> {
        let result_started = Instant::now();
        let (state, done, rest) = page_result(reply, eof).map_err(|e| at.fail(record, e))?;
        record.timings.result_ms += ms(result_started.elapsed());
        if let Some(p) = self.progress {
            p.report(&PageProgress {
                pages: at.index + 1,
                bytes: covered,
                total_bytes: self.artifact.bytes,
            });
        }
        if eof || done {
            record.finished = true;
            return Ok(Settled::Finished(Produced {
                output: Value::Object(rest),
            }));
        }
        Ok(Settled::Next(state))
    }

    /// Calls the export with one page and the prior state; a page whose worker is lost runs
    /// once more elsewhere if `retry_if_lost`.
    #[allow(clippy::too_many_arguments)]
    fn call_page(
        &self,
        prepared: Prepared,
        state: &Value,
        at: At,
        retry_if_lost: bool,
        give_back: &Sender<Vec<u8>>,
        record: &mut ArtifactProvenance,
        log: &mut ConsoleLog,
    ) -> Result<Reply, RunError> {
        if u64::from(at.index) >= PAGE_COUNT.max {
            let e = RunError::limit(
                &PAGE_COUNT,
                format!(
                    "a run may deliver at most {} pages; use larger page_bytes",
                    PAGE_COUNT.max
                ),
            );
            return Err(at.fail(record, e));
        }
        let state_json = serde_json::to_string(state)
            .map_err(|e| RunError::internal("encode", e.to_string()))?;
        let mut meta = prepared.meta_prefix;
        meta.push_str(&state_json);
        meta.push('}');
        let bound = self.module.limits.log_bytes;
        let mut call = self.page_call(
            PagePayload {
                meta: meta.into_bytes(),
                records: prepared.records,
                keep_state: false,
                state_from: None,
            },
            log,
            retry_if_lost,
        );
        let started = Instant::now();
        let reply = self.pool.call_cancellable(&call, self.cancel);
        let took = started.elapsed();
        if let Some(PagePayload {
            records: PageRecords::Inline { blob, .. },
            ..
        }) = call.page.take()
        {
            let _ = give_back.send(blob);
        }
        record.page_count = at.index + 1;
        match reply {
            Ok(mut r) => {
                record.timings.call_ms += ms(took);
                record.timings.engine_ms += ms(r.engine_time);
                log.absorb(std::mem::take(&mut r.log), bound);
                Ok(r)
            }
            Err(e) => {
                log.absorb(e.log, bound);
                Err(at.fail(record, e.failure.into()))
            }
        }
    }

    /// A call of the export with `page`. One console bound serves the whole run: a page may
    /// log only what the pages before it (as far as `log` holds them) left, and nothing once
    /// the log is full (its bytes are still counted).
    fn page_call(&self, page: PagePayload, log: &ConsoleLog, idempotent: bool) -> Call {
        Call {
            bundle: self.module.bundle.clone(),
            bundle_digest: self.module.digest.clone(),
            export: self.export.clone(),
            input: self.base.clone(),
            page: Some(page),
            environment: self.environment.clone(),
            limits: Limits {
                log_bytes: log.remaining(self.module.limits.log_bytes),
                ..self.module.limits
            },
            idempotent,
        }
    }

    /// What one page may hold: the declared page size, and what is left of the worker's input
    /// limit once the base inputs, the page metadata and the largest state are accounted for.
    fn budget(&self) -> PageBudget {
        let state_room = usize::try_from(STATE_BYTES.max).unwrap_or(usize::MAX);
        PageBudget {
            page_bytes: self.pages.page_bytes,
            payload_bytes: self
                .module
                .limits
                .input_bytes
                .saturating_sub(self.base.len() + META_RESERVE + state_room),
            per_record_overhead: PER_RECORD_OVERHEAD,
        }
    }

    /// Lays a page's records out for the worker and hashes its byte range; the range of the map
    /// is then released, since this process does not read it again.
    fn prepare(&self, mut page: Page, spare_blobs: &Receiver<Vec<u8>>) -> Prepared {
        // The written part of the snapshot: the page was framed from it, and the range digest
        // below slices it, so no range sent to the worker reaches unwritten bytes.
        let data = self.artifact.data();
        let records = match (self.artifact.read_only(), &page.records[..]) {
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
        let head = serde_json::json!({
            "artifact_ref": self.artifact.artifact_ref,
            "media_type": self.pages.media_type,
            "whole_digest": self.artifact.whole_digest,
            "artifact_bytes": self.artifact.bytes,
            "page_index": page.index,
            "offset": page.offset,
            "length": page.length(),
            "next_offset": page.next_offset,
            "eof": page.eof,
            "range_digest": sha256_hex(&data[start..end]),
        });
        self.artifact.release(start, end);
        // The records now live in their transport layout; the page keeps only its position
        // while it waits in the lookahead.
        page.records = Vec::new();
        let mut meta_prefix = head.to_string();
        meta_prefix.pop(); // the closing brace; `"state": …}` follows
        meta_prefix.push_str(",\"state\":");
        Prepared {
            page,
            meta_prefix,
            records,
        }
    }
}

/// An offset within one page (pages span at most 4 MiB of records, so it fits).
fn span(offset: usize) -> u32 {
    u32::try_from(offset).unwrap_or(u32::MAX)
}

/// The failure for an artifact that cannot be framed, recording where.
fn framing_failed(e: FramingError, record: &mut ArtifactProvenance) -> RunError {
    record.failed_page_index = e.page_index();
    record.failed_offset = Some(e.offset());
    e.into()
}

/// Parses a page's reply and splits it into (state, done, the rest); the state must fit its
/// limit.
fn page_result(reply: &Reply, eof: bool) -> Result<(Value, bool, Map<String, Value>), RunError> {
    let output: Value = serde_json::from_slice(&reply.output)
        .map_err(|e| RunError::new(FailureKind::OutputRejected, "invalid_json", e.to_string()))?;
    let (state, done, rest) = split_result(output, eof)?;
    let state_len = serde_json::to_vec(&state).map_or(0, |v| v.len());
    if state_len as u64 > STATE_BYTES.max {
        return Err(RunError::limit(
            &STATE_BYTES,
            format!(
                "the continuation state is {state_len} bytes; at most {} bytes (2 MiB) are carried between pages",
                STATE_BYTES.max
            ),
        ));
    }
    Ok((state, done, rest))
}

/// Splits a page result into (state, done, the rest). An intermediate result must be exactly
/// `{runx_page: {state, done?}}`.
fn split_result(output: Value, eof: bool) -> Result<(Value, bool, Map<String, Value>), RunError> {
    let bad = |m: String| RunError::new(FailureKind::OutputRejected, "page_result", m);
    let Value::Object(mut obj) = output else {
        return Err(bad("a page result must be an object".to_string()));
    };
    let (state, done) = match obj.remove("runx_page") {
        None if eof => (Value::Null, false),
        None => {
            return Err(bad(
                "an intermediate page result must be `{runx_page: {state, done?}}`; `runx_page` is missing".to_string(),
            ));
        }
        Some(Value::Object(mut p)) => {
            let state = p.remove("state").unwrap_or(Value::Null);
            let done = match p.remove("done") {
                None | Some(Value::Null) => false,
                Some(Value::Bool(b)) => b,
                Some(other) => {
                    return Err(bad(format!(
                        "`runx_page.done` must be a boolean, not {other}"
                    )));
                }
            };
            if let Some(extra) = p.keys().next() {
                return Err(bad(format!(
                    "`runx_page` may hold only `state` and `done`; it also holds `{extra}`"
                )));
            }
            (state, done)
        }
        Some(other) => return Err(bad(format!("`runx_page` must be an object, not {other}"))),
    };
    if !eof
        && !done
        && let Some(extra) = obj.keys().next()
    {
        return Err(bad(format!(
            "an intermediate page result must be exactly `{{runx_page: {{state, done?}}}}`; it also holds `{extra}` (return domain outputs only with `done: true` or on the eof page)"
        )));
    }
    Ok((state, done, obj))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn intermediate_results_are_exact() {
        assert!(split_result(json!({"runx_page": {"state": 1}}), false).is_ok());
        assert!(split_result(json!({"runx_page": {"state": 1}, "x": 1}), false).is_err());
        assert!(split_result(json!({"runx_page": {"state": 1, "y": 2}}), false).is_err());
        assert!(split_result(json!({"x": 1}), false).is_err());
        let (_, done, rest) = split_result(
            json!({"runx_page": {"state": 1, "done": true}, "x": 1}),
            false,
        )
        .expect("done with outputs");
        assert!(done);
        assert_eq!(rest["x"], 1);
        let (_, _, rest) = split_result(json!({"x": 2}), true).expect("eof result");
        assert_eq!(rest["x"], 2);
    }
}
