//! What the page loop holds for the whole run, and the steps every page takes through it:
//! laid out for transport and hashed, called, and its reply settled.

use super::page::{At, Framed, Prepared, STATE_KEY, Settled, Unframed, ms, span};
use super::queue::ConsumerGuard;
use super::result::page_result;
use crate::artifact::Artifact;
use crate::failure::{FailureKind, RunError};
use crate::framing::{Page, PageBudget};
use crate::progress::{PageProgress, ProgressSink};
use crate::runner::module::Module;
use runx_profile::{ModuleLifetime, PAGE_COUNT, PagesDecl, STATE_BYTES};
use runx_receipts::{ArtifactProvenance, sha256_hex};
use runx_worker::{ByteRange, Call, CancelToken, ConsoleLog, Limits, PageRecords, Pool, Reply};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::mpsc::Receiver;
use std::time::Instant;

/// Room kept in each call's input for the page metadata (everything but state and records).
const META_RESERVE: usize = 16 * 1024;
/// Bytes of offset table per record in the transport.
const PER_RECORD_OVERHEAD: usize = 4;

/// The framing budget of a page of `pages` in a call under `limits` whose other inputs take
/// `base_bytes`: the records get what the call's input allows once the other inputs, the page
/// metadata and the largest state are counted.
pub(crate) fn page_budget(pages: &PagesDecl, limits: &Limits, base_bytes: usize) -> PageBudget {
    let state_room = usize::try_from(STATE_BYTES.max).unwrap_or(usize::MAX);
    PageBudget {
        page_bytes: pages.page_bytes,
        payload_bytes: limits
            .input_bytes
            .saturating_sub(base_bytes + META_RESERVE + state_room),
        per_record_overhead: PER_RECORD_OVERHEAD,
    }
}

/// The failure of a run that reaches a page past [`PAGE_COUNT`].
pub(crate) fn too_many_pages() -> RunError {
    RunError::limit(
        &PAGE_COUNT,
        format!(
            "a run may deliver at most {} pages; use larger page_bytes",
            PAGE_COUNT.max
        ),
    )
}

/// Everything the loop needs that does not change from page to page.
pub(super) struct PageLoop<'a> {
    pub pool: &'a Pool,
    pub cancel: &'a CancelToken,
    pub artifact: &'a Artifact,
    pub pages: &'a PagesDecl,
    pub export: Option<String>,
    pub module: Module,
    /// The input object without the path inputs, encoded once.
    pub base: Vec<u8>,
    pub environment: BTreeMap<String, String>,
    pub progress: Option<&'a ProgressSink>,
}

impl PageLoop<'_> {
    /// The next framed page, or why there is none.
    pub(super) fn next_prepared(
        &self,
        framed: &ConsumerGuard<'_, Framed>,
        record: &mut ArtifactProvenance,
    ) -> Result<Prepared, RunError> {
        self.next_framed(framed, record)
            .map_err(|u| u.into_error(record))
    }

    /// The next framed page, or why there is none, not yet recorded as the run's failure.
    pub(super) fn next_framed(
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
        match self.with_digest(next) {
            Ok(Some(p)) => Ok(p),
            Ok(None) => Err(Unframed::Run(RunError::new(
                FailureKind::Page,
                "no_final_page",
                "the artifact ended without a final page",
            ))),
            Err(unframed) => Err(unframed),
        }
    }

    /// A framed page as it leaves the queue for its call: its metadata completed with the whole
    /// digest, waiting for admission to end if it has not. Pages are framed while admission
    /// goes on, but none is called before the digest it carries is known. (`whole_digest` is
    /// the last key of `runx_page` before `state`, so the metadata reads as it always did.)
    pub(super) fn with_digest(
        &self,
        framed: Result<Option<Prepared>, Unframed>,
    ) -> Result<Option<Prepared>, Unframed> {
        let Some(mut prepared) = framed? else {
            return Ok(None);
        };
        let digest = match self.artifact.digest_unless(self.cancel) {
            Ok(Some(digest)) => digest,
            Ok(None) => return Err(Unframed::Run(RunError::interrupted())),
            Err(e) => return Err(Unframed::Run(e.into())),
        };
        let meta = &mut prepared.meta_prefix;
        meta.push_str(",\"whole_digest\":");
        meta.push_str(&Value::from(digest).to_string());
        meta.push_str(STATE_KEY);
        Ok(Some(prepared))
    }

    /// Checks a page's reply: the run ends with it (eof or `done`) or goes on with its state.
    pub(super) fn settle_page(
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
            return Ok(Settled::Finished(Value::Object(rest)));
        }
        Ok(Settled::Next(state))
    }

    /// A call of `export` with `input` under the module's limits, in no partition yet. One
    /// console bound serves the whole run: a call may log only what the calls before it (as
    /// far as `log` holds them) left, and nothing once the log is full (its bytes are still
    /// counted).
    pub(super) fn call(&self, export: Option<String>, input: Vec<u8>, log: &ConsoleLog) -> Call {
        Call {
            bundle: self.module.bundle.clone(),
            bundle_digest: self.module.digest.clone(),
            export,
            input,
            page: None,
            environment: self.environment.clone(),
            limits: Limits {
                log_bytes: log.remaining(self.module.limits.log_bytes),
                ..self.module.limits
            },
            // A partition's calls run on its own worker: none runs again elsewhere.
            idempotent: false,
            probe: false,
            run: None,
            keep_module: self.pages.module == ModuleLifetime::Partition,
        }
    }

    /// What one page may hold: the declared page size, and what is left of the worker's input
    /// limit once the base inputs, the page metadata and the largest state are accounted for.
    pub(super) fn budget(&self) -> PageBudget {
        page_budget(self.pages, &self.module.limits, self.base.len())
    }

    /// Lays a page's records out for the worker and hashes its byte range; the range of the map
    /// is then released, since this process does not read it again. The page's metadata waits
    /// for the whole digest, which admission may not know yet ([`PageLoop::with_digest`]).
    pub(super) fn prepare(&self, mut page: Page, spare_blobs: &Receiver<Vec<u8>>) -> Prepared {
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
        meta_prefix.pop(); // the closing brace; `"whole_digest": …, "state": …}` follow
        Prepared {
            page,
            meta_prefix,
            records,
        }
    }
}
