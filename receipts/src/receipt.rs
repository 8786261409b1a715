//! What this runtime records of one run beyond runx's receipt: the engine, every limit, the
//! digests of the inputs, output, bundle and pages, the process and its streams, the timings.
//! It travels inside the run's `runx.receipt.v1` as `metadata.evidence`, named there by its
//! digest in a signed reference ([`crate::runx`]), so it is covered by the receipt's signature.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

/// The schema name of a harness receipt: one `runx harness` run and the receipts of its cases.
/// This runtime's own document, named apart from runx's.
pub const HARNESS_RECEIPT_SCHEMA: &str = "runx-rs.harness_receipt.v1";

/// What a run records about itself, beside its runx receipt.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunEvidence {
    /// Always [`EVIDENCE_SCHEMA`](crate::runx::EVIDENCE_SCHEMA).
    pub schema: String,
    /// Unique per run: time, process and a counter.
    pub id: String,
    /// The run's id as runx forms one (`run_<runner>_<16 hex>`): the same package, runner and
    /// inputs give the same id.
    #[serde(default)]
    pub run_id: String,
    /// The fixture case this run was, when a harness ran it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case: Option<String>,
    /// The package's `skill:` name.
    pub skill: String,
    /// The package's `version:`.
    pub version: String,
    /// The runner that ran.
    pub runner: String,
    /// `javascript` or `cli-tool`; `null` when the run failed before a runner was selected.
    pub runner_type: Option<String>,
    /// `sealed` or `failure`: whether the run succeeded.
    pub status: RunStatus,
    /// Always `sealed`: the receipt is closed and final, whatever the run's status (runx
    /// packages' `expect.receipt.state`).
    #[serde(default = "sealed_state")]
    pub state: String,
    /// How the run closed: `closed`, `failed`, `timed_out` or `killed` (how the runtime closes each kind of failure).
    #[serde(default)]
    pub disposition: Disposition,
    /// Why it closed so: `process_closed`, `process_failed`, `process_timed_out`,
    /// `process_killed` or `input_contract_invalid`.
    #[serde(default)]
    pub reason_code: String,
    /// The failure, when there was one.
    pub failure: Option<FailureRecord>,
    /// Canonical-JSON SHA-256 of the inputs the module saw.
    pub input_digest: Option<String>,
    /// Canonical-JSON SHA-256 of the output.
    pub output_digest: Option<String>,
    /// Digest of the module bundle (javascript runners).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bundle_digest: Option<String>,
    /// The runx release that ran (the `runx-runtime` crate version).
    #[serde(default)]
    pub runx_version: String,
    /// The JavaScript engine of a javascript run; `null` for other runs.
    #[serde(default)]
    pub engine: Option<EngineRecord>,
    /// `sha256:<hex>` of the profile's `X.yaml` bytes; `null` when no profile was read.
    #[serde(default)]
    pub profile_digest: Option<String>,
    /// Every limit that applied to the run, by name.
    pub limits: BTreeMap<String, u64>,
    /// Wall-clock duration of the run in milliseconds.
    pub duration_ms: u64,
    /// Unix time the run started, in milliseconds.
    pub started_at_ms: u64,
    /// Artifact provenance of paged runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub artifact: Option<ArtifactProvenance>,
    /// Captured process streams of cli-tool runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub process: Option<ProcessRecord>,
    /// Bytes of console output dropped past the log bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub console_dropped_bytes: Option<u64>,
}

/// The JavaScript engine a run used.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EngineRecord {
    /// `quickjs` or `v8`.
    pub name: String,
    /// The engine's own version as built into runx.
    pub version: String,
}

/// A failed run, as its receipt records it: the `{kind, code, message}` that `--json` prints
/// and harness reports use too.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailureRecord {
    /// The stable category (`input`, `resource_limit`, `execution`, ...).
    pub kind: String,
    /// The specific reason within the kind: a limit name, `missing_input`, `exit_3`, ...
    pub code: String,
    /// What happened.
    pub message: String,
}

/// The runx release, as receipts record it.
pub const RUNX_VERSION: &str = env!("CARGO_PKG_VERSION");

/// How a run ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// The runner produced an output that met its contract.
    Sealed,
    /// The run failed; the receipt's `failure` says how.
    #[default]
    Failure,
}

impl RunStatus {
    /// `sealed` or `failure`.
    pub const fn name(self) -> &'static str {
        match self {
            RunStatus::Sealed => "sealed",
            RunStatus::Failure => "failure",
        }
    }
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The `state` of every receipt runx writes.
pub const SEALED_STATE: &str = "sealed";

fn sealed_state() -> String {
    SEALED_STATE.to_string()
}

/// How a run closed, in the words of runx receipts' closure.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Disposition {
    /// The run sealed its output.
    Closed,
    /// The run failed (most failures).
    #[default]
    Failed,
    /// The run hit its wall-clock limit (`resource_limit/wall_milliseconds`).
    TimedOut,
    /// The run was interrupted and its workers and processes killed (`interrupted`).
    Killed,
    /// The run was refused before it started: its inputs do not meet the runner's contract
    /// (runx's `preflight_refused`).
    Blocked,
}

impl Disposition {
    /// The snake_case name, as receipts write it.
    pub const fn name(self) -> &'static str {
        match self {
            Disposition::Closed => "closed",
            Disposition::Failed => "failed",
            Disposition::TimedOut => "timed_out",
            Disposition::Killed => "killed",
            Disposition::Blocked => "blocked",
        }
    }
}

/// Where a paged run's records came from.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ArtifactProvenance {
    /// The runtime-local handle (differs between runtime instances).
    pub artifact_ref: String,
    /// `sha256:<hex>` of the whole admitted file.
    pub whole_digest: String,
    /// Size of the admitted file.
    pub artifact_bytes: u64,
    /// The media type declared by the runner.
    pub media_type: String,
    /// Pages delivered to the module.
    pub page_count: u32,
    /// Whether the loop reached `eof` or `done`.
    pub finished: bool,
    /// For a failed page: its index.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed_page_index: Option<u32>,
    /// For a failed page: its byte offset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed_offset: Option<u64>,
    /// For a map/fold runner: its declared `pages.workers`, the partitions its pages were
    /// mapped in (the same as `partitions`, kept for readers of earlier receipts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workers: Option<u32>,
    /// The partitions of the run: page `i` ran in partition `i mod partitions`, each on one
    /// worker in page order (1 for a sequential runner).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partitions: Option<u32>,
    /// How long the module instance lived: `page` (a fresh one per page) or `partition` (one
    /// per partition, its state carried from page to page of the partition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module_lifetime: Option<String>,
    /// Where the time went.
    #[serde(default)]
    pub timings: PageTimings,
}

/// The split of a paged run's time, in milliseconds. Framing runs while the worker executes
/// the previous page, so the parts can add up to more than the wall.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PageTimings {
    /// Admitting the artifact: from opening it to its whole digest, once it is read, hashed
    /// and written into its snapshot (page 0 is framed meanwhile, and called after).
    pub admission_ms: f64,
    /// Scanning and validating records, laying pages out and hashing page ranges, with any
    /// wait for admission to write the bytes framing needs or for the whole digest.
    pub framing_ms: f64,
    /// Round trips to the worker (transport plus JavaScript). A page sent ahead of the reply
    /// before it counts from that reply to its own: the time the worker gave it.
    pub call_ms: f64,
    /// JavaScript time inside the worker.
    pub engine_ms: f64,
    /// Parsing page results and checking state.
    pub result_ms: f64,
    /// The whole paged run, admission included.
    pub wall_ms: f64,
}

/// One captured stream of a subprocess.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamRecord {
    /// Every byte the process wrote.
    pub total_bytes: u64,
    /// `sha256:<hex>` of the whole stream.
    pub sha256: String,
    /// Whether only a prefix was kept.
    pub truncated: bool,
}

/// What the supervisor saw of a cli-tool process.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcessRecord {
    /// The program run.
    pub command: String,
    /// The working directory.
    pub cwd: String,
    /// Exit code, when it exited.
    pub exit_code: Option<i32>,
    /// Signal, when it was killed by one.
    pub signal: Option<i32>,
    /// Whether the runtime stopped it at the timeout.
    pub timed_out: bool,
    /// Attempts made (retries included).
    pub attempts: u32,
    /// Stdout capture.
    pub stdout: StreamRecord,
    /// Stderr capture.
    pub stderr: StreamRecord,
}

impl RunEvidence {
    /// A unique id of a run: the time, this process and a counter.
    pub fn new_id(started_at_ms: u64) -> String {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        format!(
            "{started_at_ms}-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        )
    }
}

/// Milliseconds since the Unix epoch, now: what `started_at_ms` records.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
