//! A run's `runx.receipt.v1`, made from its evidence: runx's fields filled from what this
//! runtime measured, the evidence itself carried inside and named by digest.

use runx_receipts::runx::{
    BYTES_COMMITMENT, CANONICALIZATION, Commitment, JSON_COMMITMENT, SealParts, SkillRun,
    c14n_digest, identifier_segment, iso_millis, skill_receipt,
};
use runx_receipts::{Disposition, RunEvidence, as_written};
use serde_json::{Value, json};

/// The longest summary a seal carries; a failure's message is cut there.
const SUMMARY_CHARS: usize = 200;

/// The run's id, as runx forms one: `run_<runner>_<16 hex>`, the hex from the digest of what
/// was asked for (skill, runner, type, the inputs as given, the package's profile). The same
/// request of the same package gives the same id, whether it ran or was refused.
pub fn run_id(e: &RunEvidence, inputs_digest: &str) -> String {
    let what = json!({
        "skill": e.skill, "runner": e.runner, "runner_type": e.runner_type,
        "inputs": inputs_digest, "profile_digest": e.profile_digest,
    });
    let hex = c14n_digest(&what);
    let hex = hex.trim_start_matches("sha256:");
    format!("run_{}_{}", identifier_segment(&e.runner), &hex[..16])
}

/// What the seal says: `javascript greet completed`, or the failure's kind, code and message
/// (`refused` for a run blocked before it started).
fn summary(e: &RunEvidence) -> String {
    let what = format!(
        "{} {}",
        e.runner_type.as_deref().unwrap_or("skill"),
        if e.runner.is_empty() {
            "runner"
        } else {
            &e.runner
        }
    );
    match &e.failure {
        None => format!("{what} completed"),
        Some(f) => {
            let line = f.message.lines().next().unwrap_or_default();
            let verb = if e.disposition == Disposition::Blocked {
                "refused"
            } else {
                "failed"
            };
            let mut text = format!("{what} {verb} ({}/{}): {line}", f.kind, f.code);
            if text.chars().count() > SUMMARY_CHARS {
                text = text.chars().take(SUMMARY_CHARS - 1).collect::<String>() + "…";
            }
            text
        }
    }
}

/// The receipt of the run `e` records, not yet sealed.
pub fn runx_receipt_of(e: &RunEvidence) -> Value {
    // The values this runtime digests here for the receipt alone are in runx's canonical form
    // (cheaper than RFC 8785, and the same for what they hold); the input and output digests
    // the run made are RFC 8785, as the commitments say.
    let nothing = c14n_digest(&Value::Null);
    let failure = e.failure.as_ref().map(|f| c14n_digest(&json!(f)));
    let mut commitments = Vec::new();
    let mut commit = |scope, value: Option<&String>, canonicalization| {
        if let Some(value) = value {
            commitments.push(Commitment {
                scope,
                value: value.clone(),
                canonicalization,
            });
        }
    };
    commit("input", e.input_digest.as_ref(), JSON_COMMITMENT);
    commit("output", e.output_digest.as_ref(), JSON_COMMITMENT);
    if let Some(p) = &e.process {
        commit("stdout", Some(&p.stdout.sha256), BYTES_COMMITMENT);
        commit("stderr", Some(&p.stderr.sha256), BYTES_COMMITMENT);
    }
    commit("error", failure.as_ref(), CANONICALIZATION);
    let run_id = e.run_id.clone();
    let run = SkillRun {
        skill: e.skill.clone(),
        runner: e.runner.clone(),
        // runx's form: the fixture case, else the run, then the runner.
        harness_id: format!(
            "hrn_{}_{}",
            identifier_segment(e.case.as_deref().unwrap_or(&run_id)),
            identifier_segment(&e.runner)
        ),
        run_id,
        seal: SealParts {
            disposition: e.disposition.name().to_string(),
            reason_code: e.reason_code.clone(),
            summary: summary(e),
            closed_at: iso_millis(e.started_at_ms.saturating_add(e.duration_ms)),
        },
        commitments,
        intent_key: c14n_digest(&json!({
            "skill": e.skill, "version": e.version, "runner": e.runner,
            "profile_digest": e.profile_digest,
        })),
        trigger_fingerprint: e.input_digest.clone().unwrap_or_else(|| nothing.clone()),
        content_hash: e.output_digest.clone().or(failure).unwrap_or(nothing),
        profile_hash: c14n_digest(&json!({
            "runner_type": e.runner_type, "engine": e.engine, "limits": e.limits,
        })),
        execution_boundary: match e.runner_type.as_deref() {
            Some("javascript") => Some("deterministic_worker"),
            Some("cli-tool") => Some("trusted_host_process"),
            _ => None,
        },
        // Numbers through their JSON text, as a reader of the file parses them.
        evidence: as_written(e).unwrap_or(Value::Null),
    };
    skill_receipt(&run)
}

#[cfg(test)]
mod tests {
    use super::*;
    use runx_receipts::{EngineRecord, digest, runx};
    use std::collections::BTreeMap;

    fn evidence() -> RunEvidence {
        RunEvidence {
            schema: runx_receipts::EVIDENCE_SCHEMA.to_string(),
            id: "1-2-3".into(),
            run_id: "run_greet_0123456789abcdef".into(),
            skill: "hello".into(),
            runner: "greet".into(),
            runner_type: Some("javascript".into()),
            input_digest: Some(digest(&json!({"name": "Ada"}))),
            output_digest: Some(digest(&json!({"greeting": "hi"}))),
            bundle_digest: Some(digest(&json!(1))),
            profile_digest: Some(digest(&json!(2))),
            engine: Some(EngineRecord {
                name: "quickjs".into(),
                version: "0.14".into(),
            }),
            limits: (0..14)
                .map(|i| (format!("limit_{i}"), 1u64 << i))
                .collect::<BTreeMap<_, _>>(),
            disposition: runx_receipts::Disposition::Closed,
            reason_code: "process_closed".into(),
            ..RunEvidence::default()
        }
    }

    /// What making, sealing and encoding one receipt costs (`cargo test --release -p
    /// runx-runtime -- --ignored receipt_cost --nocapture`).
    #[test]
    #[ignore = "a measurement, not a check"]
    fn receipt_cost() {
        let e = evidence();
        let n = 2000;
        let start = std::time::Instant::now();
        for _ in 0..n {
            let mut doc = runx_receipt_of(&e);
            runx::seal(&mut doc, None);
            std::hint::black_box(serde_json::to_vec_pretty(&doc).unwrap());
        }
        let per = start.elapsed() / n;
        println!("one receipt made, sealed and encoded: {per:?}");
    }

    #[test]
    fn a_receipt_of_evidence_verifies_and_names_its_run() {
        let mut e = evidence();
        e.case = Some("greets world".into());
        let mut doc = runx_receipt_of(&e);
        runx::seal(&mut doc, None);
        let v = runx::verdict(&doc, &runx::Trust::LocalDevelopment);
        assert!(v.valid, "{v:#?}");
        assert_eq!(doc["subject"]["ref"]["uri"], "hrn_greets_world_greet");
        assert_eq!(doc["seal"]["summary"], "javascript greet completed");
    }
}
