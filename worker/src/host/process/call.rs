//! What a call to a worker carries and what it gives back: the module, input, limits and the
//! page (its records inline or as a range of a file the worker reads itself), and the reply.

use crate::engine::ConsoleLog;
use crate::engine::bundle::ModuleBundle;
use crate::wire::message::ByteRange;
use runx_rules::Limits;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// One page as the host sends it.
#[derive(Clone, Debug)]
pub struct PagePayload {
    /// `runx_page` metadata as JSON (everything but `records`).
    pub meta: Vec<u8>,
    /// The page's records.
    pub records: PageRecords,
    /// The worker keeps the state this page's result carries, for a page sent ahead of the
    /// reply (see [`crate::host::pool::lease::Lease`]).
    pub keep_state: bool,
    /// The id of the call whose kept state this page takes; `meta` then stops just before
    /// its state.
    pub state_from: Option<u64>,
    /// The paged run the page belongs to ([`PagePayload::new_run`]): a worker whose previous
    /// call was a page of the same run may let this one continue on what that call built (the
    /// V8 engine keeps its isolate); any other call starts clean.
    pub run: Option<u64>,
}

impl PagePayload {
    /// A run id no other run of this process has.
    pub fn new_run() -> u64 {
        static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }
}

/// Where a page's records are.
#[derive(Clone, Debug)]
pub enum PageRecords {
    /// In the frame: the records' bytes back to back, with the end offset of each.
    Inline {
        /// End offset of each record in `blob`.
        ends: Vec<u32>,
        /// The records' bytes back to back.
        blob: Vec<u8>,
    },
    /// In a byte range of a read-only file the worker reads itself: the frame carries only the
    /// range and each record's span in it.
    Range {
        /// The artifact's snapshot, opened read-only.
        file: Arc<std::fs::File>,
        /// The range: first byte and length.
        range: ByteRange,
        /// Each record's start and end, relative to the range.
        spans: Vec<(u32, u32)>,
    },
}

impl PageRecords {
    /// Number of records.
    pub fn count(&self) -> usize {
        match self {
            PageRecords::Inline { ends, .. } => ends.len(),
            PageRecords::Range { spans, .. } => spans.len(),
        }
    }

    /// Bytes of the records themselves.
    pub fn record_bytes(&self) -> usize {
        match self {
            PageRecords::Inline { blob, .. } => blob.len(),
            PageRecords::Range { spans, .. } => spans.iter().map(|(s, e)| (e - s) as usize).sum(),
        }
    }

    /// The records in the frame's layout, reading a range from its file (for a worker that
    /// cannot read descriptors).
    pub(super) fn to_inline(&self) -> std::io::Result<(Vec<u32>, Vec<u8>)> {
        match self {
            PageRecords::Inline { ends, blob } => Ok((ends.clone(), blob.clone())),
            PageRecords::Range { file, range, spans } => {
                use std::os::unix::fs::FileExt;
                let len = usize::try_from(range.len).map_err(std::io::Error::other)?;
                let mut bytes = vec![0u8; len];
                file.read_exact_at(&mut bytes, range.offset)?;
                let mut blob = Vec::with_capacity(self.record_bytes());
                let mut ends = Vec::with_capacity(spans.len());
                for &(start, end) in spans {
                    let record = bytes
                        .get(start as usize..end as usize)
                        .ok_or_else(|| std::io::Error::other("a record span leaves its range"))?;
                    blob.extend_from_slice(record);
                    ends.push(u32::try_from(blob.len()).map_err(std::io::Error::other)?);
                }
                Ok((ends, blob))
            }
        }
    }
}

/// One call to run in a worker.
#[derive(Clone, Debug)]
pub struct Call {
    /// The modules.
    pub bundle: Arc<ModuleBundle>,
    /// The bundle's digest (computed once by the caller).
    pub bundle_digest: String,
    /// The export; default export when `None`.
    pub export: Option<String>,
    /// The input object as JSON text.
    pub input: Vec<u8>,
    /// The page, for paged runners.
    pub page: Option<PagePayload>,
    /// Declared environment values.
    pub environment: BTreeMap<String, String>,
    /// Limits for the call.
    pub limits: Limits,
    /// Whether the call may run again on another worker after a crash mid-call.
    pub idempotent: bool,
    /// Load the module, calling nothing (the output maps each export to its `typeof`).
    pub probe: bool,
    /// The paged run a call that is not a page belongs to (a map/fold run's fold): on the
    /// worker that ran the run's previous call, it continues on what that call built, as a
    /// page of the run does ([`PagePayload::run`]).
    pub run: Option<u64>,
    /// The module instance lives for the run's calls on the worker, not for this call alone
    /// ([`crate::EngineCall::keep_module`]): set on every call of a paged run whose runner
    /// declares `pages.module: partition`.
    pub keep_module: bool,
}

impl Call {
    /// A call of `export` (default when `None`) with `input` JSON, default limits, not
    /// idempotent.
    pub fn new(bundle: Arc<ModuleBundle>, export: Option<&str>, input: Vec<u8>) -> Call {
        Call {
            bundle_digest: bundle.digest(),
            bundle,
            export: export.map(str::to_string),
            input,
            page: None,
            environment: BTreeMap::new(),
            limits: Limits::default(),
            idempotent: false,
            probe: false,
            keep_module: false,
            run: None,
        }
    }
}

impl Call {
    /// Bytes of input the call weighs against its limit, however its page travels: the input
    /// object, the page metadata, four bytes per record and the records.
    pub fn input_bytes(&self) -> usize {
        self.input.len()
            + self.page.as_ref().map_or(0, |p| {
                p.meta.len() + 4 * p.records.count() + p.records.record_bytes()
            })
    }
}

/// A successful call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    /// Output JSON text.
    pub output: Vec<u8>,
    /// Console output.
    pub log: ConsoleLog,
    /// The worker that served it.
    pub worker_pid: u32,
    /// Time the engine spent inside the worker; the rest of the round trip is transport.
    pub engine_time: Duration,
    /// For a page that took a kept state: `sha256:<hex>` of that state, as the worker gave it.
    pub state_digest: Option<String>,
}
