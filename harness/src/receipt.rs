//! The receipt of a whole harness run: one sealed (and, with a key, signed) object listing
//! every case with the digest of its own receipt, so a fixture run verifies as one thing.

use crate::run::Report;
use runx_receipts::runx;
use runx_receipts::{
    EngineRecord, HARNESS_RECEIPT_SCHEMA, RUNX_VERSION, RunEvidence, SignatureBlock,
};
use runx_runtime::Runtime;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// What a harness run proves about itself.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HarnessReceipt {
    /// Always [`HARNESS_RECEIPT_SCHEMA`].
    pub schema: String,
    /// Unique per run, `harness-` and the same form as a run receipt's id.
    pub id: String,
    /// The runx release that ran the cases.
    pub runx_version: String,
    /// The JavaScript engine the cases ran on.
    pub engine: EngineRecord,
    /// `passed`, `failed`, `not_declared`, `skipped` (no case ran) or `malformed`.
    pub status: String,
    /// Cases run.
    pub case_count: usize,
    /// Cases passed.
    pub passed: usize,
    /// Cases failed.
    pub failed: usize,
    /// Packages that declare no case.
    pub not_declared: Vec<String>,
    /// Every case, in run order.
    pub cases: Vec<CaseRecord>,
    /// Unix time the harness run started, in milliseconds.
    pub started_at_ms: u64,
    /// Wall-clock duration of the harness run in milliseconds.
    pub duration_ms: u64,
    /// `sha256:` of the RFC 8785 canonical JSON of every other field but `signature`
    /// ([`runx_receipts::body_digest`]).
    #[serde(default)]
    pub body_digest: Option<String>,
    /// The signature over the body digest; `null` without a signing key.
    #[serde(default)]
    pub signature: Option<SignatureBlock>,
}

/// One case of a harness receipt.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CaseRecord {
    /// The package name.
    pub package: String,
    /// The case name.
    pub case: String,
    /// Whether it passed.
    pub passed: bool,
    /// `sealed` or `failure`; `skipped` for a case this runtime does not run.
    pub run_status: String,
    /// The file name of the case's receipt, beside the harness receipt; `null` when the case
    /// never got as far as a run.
    pub receipt: Option<String>,
    /// `sha256:` of the canonical JSON of the whole case receipt, signature included.
    pub receipt_digest: Option<String>,
}

impl HarnessReceipt {
    /// The sealed receipt of `report`, run on `rt` from `started_at_ms` for `duration_ms`.
    pub fn new(rt: &Runtime, report: &Report, started_at_ms: u64, duration_ms: u64) -> Self {
        let cases = report
            .cases
            .iter()
            .map(|c| CaseRecord {
                package: c.package.clone(),
                case: c.case.clone(),
                passed: c.passed,
                run_status: c.run_status.clone(),
                receipt: c
                    .receipt
                    .as_ref()
                    .and_then(|r| r["id"].as_str().map(runx::file_name)),
                receipt_digest: c.receipt_digest.clone(),
            })
            .collect();
        let status = serde_json::to_value(report.status)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let mut receipt = HarnessReceipt {
            schema: HARNESS_RECEIPT_SCHEMA.to_string(),
            id: format!("harness-{}", RunEvidence::new_id(started_at_ms)),
            runx_version: RUNX_VERSION.to_string(),
            engine: rt.engine(),
            status,
            case_count: report.case_count,
            passed: report.passed,
            failed: report.failed,
            not_declared: report.not_declared.clone(),
            cases,
            started_at_ms,
            duration_ms,
            body_digest: None,
            signature: None,
        };
        let (body_digest, signature) = runx_receipts::seal(&receipt, rt.signer());
        receipt.body_digest = body_digest;
        receipt.signature = signature;
        receipt
    }

    /// Writes every case receipt of `report` and then this receipt into `dir` (created when
    /// needed), and returns this receipt's path.
    pub fn write(&self, report: &Report, dir: &Path) -> std::io::Result<PathBuf> {
        for case in &report.cases {
            if let Some(r) = &case.receipt {
                runx::write(dir, r)?;
            }
        }
        std::fs::create_dir_all(dir)?;
        let path = dir.join(format!("{}.json", self.id));
        let mut text = serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?;
        text.push(b'\n');
        std::fs::write(&path, text)?;
        Ok(path)
    }
}
