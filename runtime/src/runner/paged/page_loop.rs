//! What the page loop holds for the whole run, and the steps every page takes through it:
//! laid out for transport and hashed, called, and its reply settled.

use super::page::{At, Framed, Prepared, Settled, Unframed, ms};
use super::queue::ConsumerGuard;
use super::result::page_result;
use crate::artifact::Artifact;
use crate::failure::{FailureKind, RunError};
use crate::framing::PageBudget;
use crate::progress::{PageProgress, ProgressSink};
use crate::runner::module::Module;
use runx_profile::{ModuleLifetime, PAGE_COUNT, PagesDecl, STATE_BYTES};
use runx_receipts::ArtifactProvenance;
use runx_worker::{Call, CancelToken, ConsoleLog, Limits, Pool, Reply};
use serde_json::Value;
use std::collections::BTreeMap;
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
    /// The same inputs as a map, for a fold's input.
    pub inputs: serde_json::Map<String, Value>,
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
    /// goes on, but none is called before the digest it carries is known.
    pub(super) fn with_digest(
        &self,
        framed: Result<Option<Prepared>, Unframed>,
    ) -> Result<Option<Prepared>, Unframed> {
        let Some(mut prepared) = framed? else {
            return Ok(None);
        };
        if u64::from(prepared.page.index) >= PAGE_COUNT.max {
            return Err(Unframed::TooMany(At::of(&prepared.page)));
        }
        let digest = match self.artifact.digest_unless(self.cancel) {
            Ok(Some(digest)) => digest,
            Ok(None) => return Err(Unframed::Run(RunError::interrupted())),
            Err(e) => return Err(Unframed::Run(e.into())),
        };
        prepared.meta.whole_digest = digest.to_string();
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
}
