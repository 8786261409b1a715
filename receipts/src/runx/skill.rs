//! The `runx.receipt.v1` of one skill run, filled as runx's own runtime fills it for a
//! javascript or cli-tool runner, from what this runtime knows.
//!
//! Every object holds exactly the keys runx's strict reader expects, empty lists included (the
//! canonical form counts them). Where runx's schema has a typed, signed place for what this
//! runtime measured, it goes there: the digests of the input, output, streams and failure in
//! `subject.commitments`, the limits and engine as the enforcement profile's hash, the kind of
//! boundary a step ran in. Everything else this runtime records (engine version, each limit,
//! page and bundle digests, timings) is its own document, `runx-rs.run_evidence.v1`, carried in
//! the receipt's `metadata.evidence`: runx leaves `metadata` out of the signed body, so the
//! receipt's one act names the evidence by its digest in `artifact_refs`, which is signed.

use super::c14n::{CANONICALIZATION, c14n_digest};
pub use crate::schemas::{EVIDENCE_SCHEMA, RECEIPT_SCHEMA};
use serde_json::{Value, json};

/// The label of the act's artifact reference that names the evidence by digest.
pub const EVIDENCE_LABEL: &str = EVIDENCE_SCHEMA;
/// The prefix of that reference's `uri`; the evidence's `sha256:` digest follows.
pub const EVIDENCE_URI_PREFIX: &str = "runx:artifact:";
/// The canonical form of the commitments of JSON values: RFC 8785.
pub const JSON_COMMITMENT: &str = "rfc8785";
/// The canonical form of the commitments of byte streams: the bytes as written.
pub const BYTES_COMMITMENT: &str = "bytes";

/// How a run closed, in runx's words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SealParts {
    /// `closed`, `failed`, `blocked`, `timed_out` or `killed`.
    pub disposition: String,
    /// Why: `process_closed`, `process_failed`, `preflight_refused`, ...
    pub reason_code: String,
    /// One line for a person.
    pub summary: String,
    /// When, as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
    pub closed_at: String,
}

/// One digest the receipt commits to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Commitment {
    /// `input`, `output`, `stdout`, `stderr` or `error`.
    pub scope: &'static str,
    /// `sha256:<hex>`.
    pub value: String,
    /// How the committed value was made bytes: [`JSON_COMMITMENT`] or [`BYTES_COMMITMENT`].
    pub canonicalization: &'static str,
}

/// What a skill run's receipt is made from.
#[derive(Clone, Debug)]
pub struct SkillRun {
    /// The package's `skill:` name.
    pub skill: String,
    /// The runner that ran.
    pub runner: String,
    /// The run's id (`run_<runner>_<hex>`), which the harness id is made from.
    pub run_id: String,
    /// The harness id (`hrn_<run>_<runner>`; a fixture case's name in place of the run).
    pub harness_id: String,
    /// How it closed.
    pub seal: SealParts,
    /// What it committed to.
    pub commitments: Vec<Commitment>,
    /// `sha256:` of what was asked for: the package, runner and inputs.
    pub intent_key: String,
    /// `sha256:` of what started it: the inputs.
    pub trigger_fingerprint: String,
    /// `sha256:` of what it produced: the output or the failure.
    pub content_hash: String,
    /// `sha256:` of the enforcement profile: engine, limits, runner type.
    pub profile_hash: String,
    /// `deterministic_worker` (javascript) or `trusted_host_process` (cli-tool); `None` when
    /// the run stopped before a runner was chosen.
    pub execution_boundary: Option<&'static str>,
    /// This runtime's evidence document.
    pub evidence: Value,
}

/// `text` as runx writes it inside an identifier: runs of other characters than
/// `[A-Za-z0-9_.-]` as one `_`, no leading or trailing `._-`, `.` as `-`.
pub fn identifier_segment(text: &str) -> String {
    let mut out = String::new();
    let mut gap = false;
    for c in text.chars() {
        if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') {
            out.push(c);
            gap = false;
        } else if !gap {
            out.push('_');
            gap = true;
        }
    }
    let trimmed = out.trim_matches(|c| matches!(c, '.' | '_' | '-'));
    let seg = trimmed.replace('.', "-");
    if seg.is_empty() {
        "run".to_string()
    } else {
        seg
    }
}

/// The reference that names the evidence document by the digest of its canonical form.
pub fn evidence_ref(evidence: &Value) -> Value {
    json!({
        "type": "artifact",
        "uri": format!("{EVIDENCE_URI_PREFIX}{}", c14n_digest(evidence)),
        "label": EVIDENCE_LABEL,
        "locator": "metadata.evidence",
    })
}

/// The receipt of `run`, not yet sealed: `id`, `digest`, `issuer` and `signature` are filled
/// by [`crate::runx::seal`].
pub fn skill_receipt(run: &SkillRun) -> Value {
    let step = identifier_segment(&run.runner);
    let act_id = format!("act_{step}");
    let outcome = if run.seal.disposition == "closed" {
        "verified"
    } else {
        "failed"
    };
    let binding = json!({
        "criterion_id": "step_outcome",
        "status": outcome,
        "evidence_refs": [],
        "verification_refs": [],
        "summary": run.seal.summary,
    });
    let closure = json!({
        "disposition": run.seal.disposition,
        "reason_code": run.seal.reason_code,
        "summary": run.seal.summary,
        "closed_at": run.seal.closed_at,
    });
    let intent = json!({
        "purpose": format!("Run runner {} of skill {}", run.runner, run.skill),
        "legitimacy": "Requested by the local caller of this runtime",
        "success_criteria": [{
            "criterion_id": "step_outcome",
            "statement": "the runner produces an output that meets its contract",
            "required": true,
        }],
        "constraints": [],
        "derived_from": [],
    });
    let commitments: Vec<Value> = run
        .commitments
        .iter()
        .map(|c| {
            json!({
                "scope": c.scope, "algorithm": "sha256", "value": c.value,
                "canonicalization": c.canonicalization,
            })
        })
        .collect();
    let mut enforcement = json!({
        "profile_hash": run.profile_hash,
        "redaction_refs": [], "setup_refs": [], "teardown_refs": [],
    });
    if let Some(kind) = run.execution_boundary {
        enforcement["execution_boundary"] = json!({ "kind": kind });
    }
    json!({
        "schema": RECEIPT_SCHEMA,
        "id": "",
        "created_at": run.seal.closed_at,
        "canonicalization": CANONICALIZATION,
        "issuer": {},
        "signature": {},
        "digest": "",
        "idempotency": {
            "intent_key": run.intent_key,
            "trigger_fingerprint": run.trigger_fingerprint,
            "content_hash": run.content_hash,
        },
        "subject": {
            "kind": "skill",
            "ref": { "type": "harness", "uri": run.harness_id, "label": run.skill },
            "commitments": commitments,
        },
        "authority": {
            "actor_ref": { "type": "principal", "uri": "runx:principal:local_runtime" },
            "grant_refs": [], "scope_refs": [], "authority_proof_refs": [],
            "attenuation": { "parent_authority_ref": null, "subset_proof": null },
            "terms": [],
            "enforcement": enforcement,
        },
        "signals": [],
        "decisions": [{
            "decision_id": format!("dec_{step}"),
            "choice": "open",
            "inputs": {
                "signal_refs": [], "target_ref": null, "opportunity_refs": [],
                "selection_ref": null,
            },
            "proposed_intent": intent,
            "selected_act_id": act_id,
            "selected_harness_ref": null,
            "justification": {
                "summary": format!("the caller asked for runner {}", run.runner),
                "evidence_refs": [],
            },
            "closure": null,
            "artifact_refs": [],
        }],
        "acts": [{
            "id": act_id,
            "form": "observation",
            "intent": intent,
            "summary": format!("Ran runner {}", run.runner),
            "criterion_bindings": [binding],
            "source_refs": [], "target_refs": [],
            "artifact_refs": [evidence_ref(&run.evidence)],
            "closure": closure,
        }],
        "seal": {
            "disposition": run.seal.disposition,
            "reason_code": run.seal.reason_code,
            "summary": run.seal.summary,
            "closed_at": run.seal.closed_at,
            "last_observed_at": run.seal.closed_at,
            "criteria": [binding],
        },
        "lineage": { "children": [], "sync": [] },
        "metadata": { "evidence": run.evidence },
    })
}

/// `ms` since the Unix epoch as runx writes a time: `YYYY-MM-DDTHH:MM:SS.mmmZ`, UTC.
pub fn iso_millis(ms: u64) -> String {
    let at = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms);
    humantime::format_rfc3339_millis(at).to_string()
}
