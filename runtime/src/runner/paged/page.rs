//! A page on its way through the loop, and what a paged run gathers as its pages go.

use super::runx_page::PageMeta;
use crate::failure::RunError;
use crate::framing::{FramingError, Page};
use runx_profile::PAGE_COUNT;
use runx_receipts::ArtifactProvenance;
use runx_worker::{ConsoleLog, PageRecords};
use serde_json::Value;
use std::time::Duration;

/// Milliseconds, as the receipt's timings count them.
pub(super) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// A page framed and hashed, waiting for the state of the page before it.
pub(super) struct Prepared {
    pub page: Page,
    /// What its calls see of it in `runx_page`.
    pub meta: PageMeta,
    pub records: PageRecords,
}

impl Prepared {
    /// The memory it holds while it waits, in bytes.
    pub(super) fn weight(&self) -> usize {
        let records = match &self.records {
            PageRecords::Inline { ends, blob } => 4 * ends.len() + blob.len(),
            PageRecords::Range { spans, .. } => 8 * spans.len(),
        };
        let meta = &self.meta;
        let text = meta.artifact_ref.len() + meta.media_type.len() + meta.range_digest.len();
        std::mem::size_of::<Prepared>() + text + records
    }
}

/// What the framing thread hands the loop: the next page (or why there is none) and the
/// time it took (any wait for admission included).
pub(super) type Framed = (Result<Option<Prepared>, Unframed>, Duration);

/// Why the framer gave no page. A framing error is kept as it came until the loop reaches
/// it: a run that ends before (`done`) does not record it.
pub(super) enum Unframed {
    Framing(FramingError),
    Run(RunError),
    /// The page at `At` is past the most a run may deliver ([`PAGE_COUNT`]).
    TooMany(At),
}

impl Unframed {
    /// The run's error, recording where framing failed.
    pub(super) fn into_error(self, record: &mut ArtifactProvenance) -> RunError {
        match self {
            Unframed::Framing(e) => framing_failed(e, record),
            Unframed::Run(e) => e,
            Unframed::TooMany(at) => at.fail(record, too_many_pages()),
        }
    }
}

/// How a page's reply leaves the run.
pub(super) enum Settled {
    /// The run ends with this output (what the module returned beside `runx_page`).
    Finished(Value),
    /// The run goes on with this state.
    Next(Value),
}

/// Where a page failed, for the error message and the receipt.
#[derive(Clone, Copy, Debug)]
pub(crate) struct At {
    pub index: u32,
    pub offset: u64,
}

impl At {
    pub(super) fn fail(self, record: &mut ArtifactProvenance, e: RunError) -> RunError {
        record.failed_page_index = Some(self.index);
        record.failed_offset = Some(self.offset);
        self.locate(e)
    }

    /// `e` as the failure of this page: its message starts with where the page is.
    pub(crate) fn locate(self, e: RunError) -> RunError {
        e.context(format_args!(
            "page {} (byte offset {})",
            self.index, self.offset
        ))
    }
}

impl At {
    /// Where `page` starts.
    pub(super) fn of(page: &Page) -> At {
        At {
            index: page.index,
            offset: page.offset,
        }
    }
}

/// What a paged run gathers as its pages go, carried from call to call as one value: the
/// record its receipt keeps, its console log, and the state for the next page.
pub(super) struct Walk<'r> {
    pub record: ArtifactProvenance,
    pub log: &'r mut ConsoleLog,
    /// The run's one console bound ([`runx_worker::Limits::log_bytes`]).
    pub log_bound: usize,
    pub state: Value,
}

impl Walk<'_> {
    /// Records a call of the page at `at` that answered: the pages delivered so far, the call's
    /// round trip and engine time, and its console lines under the run's one bound. Every call
    /// of a page, sequential, map or fold, is recorded here.
    pub(super) fn record_call(
        &mut self,
        at: At,
        call: Duration,
        engine: Duration,
        log: ConsoleLog,
    ) {
        self.record.page_count = at.index + 1;
        self.record.timings.call_ms += ms(call);
        self.record.timings.engine_ms += ms(engine);
        self.log.absorb(log, self.log_bound);
    }

    /// Records a call of the page at `at` that failed with `e`, after logging `log`: the run's
    /// failure, located at the page.
    pub(super) fn record_failure(&mut self, at: At, e: RunError, log: ConsoleLog) -> RunError {
        self.record.page_count = at.index + 1;
        self.log.absorb(log, self.log_bound);
        at.fail(&mut self.record, e)
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

/// An offset within one page (pages span at most 4 MiB of records, so it fits).
pub(super) fn span(offset: usize) -> u32 {
    u32::try_from(offset).unwrap_or(u32::MAX)
}

/// The failure for an artifact that cannot be framed, recording where.
pub(super) fn framing_failed(e: FramingError, record: &mut ArtifactProvenance) -> RunError {
    record.failed_page_index = e.page_index();
    record.failed_offset = Some(e.offset());
    e.into()
}
