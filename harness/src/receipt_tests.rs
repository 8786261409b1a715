//! Harness receipts verify as a whole: every case receipt they list lies beside them, has the
//! digest they record, and verifies in turn.

use crate::receipt::HarnessReceipt;
use crate::run::{CaseResult, CaseVerdict, Report, ReportStatus};
use runx_receipts::runx::{SealParts, SkillRun, file_name, seal, skill_receipt};
use runx_receipts::{
    Check, HARNESS_RECEIPT_SCHEMA, Signer, Trust, digest, read_receipt, sha256_hex, verify_file,
};
use runx_runtime::{Runtime, WorkerCommand};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

fn signer(seed: u8, kid: &str) -> Signer {
    let seed = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, [seed; 32]);
    Signer::new(kid, &seed, "ci").expect("signer")
}

fn key() -> Trust {
    Trust::Key(signer(1, "key-1").verify_key())
}

/// A receipt as a sealed javascript run writes it; `tag` makes it one of its own.
fn receipt(tag: &str, signer: Option<&Signer>) -> Value {
    let h = |s: &str| sha256_hex(s.as_bytes());
    let mut r = skill_receipt(&SkillRun {
        skill: "hello".to_string(),
        runner: "greet".to_string(),
        run_id: format!("run_greet_{tag}"),
        harness_id: format!("hrn_run_greet_{tag}_greet"),
        seal: SealParts {
            disposition: "closed".to_string(),
            reason_code: "process_closed".to_string(),
            summary: "javascript greet completed".to_string(),
            closed_at: "2026-12-01T00:00:00.012Z".to_string(),
        },
        commitments: Vec::new(),
        intent_key: h("intent"),
        trigger_fingerprint: h(tag),
        content_hash: h("out"),
        profile_hash: h("profile"),
        execution_boundary: Some("deterministic_worker"),
        evidence: json!({"schema": "runx-rs.run_evidence.v1", "skill": "hello", "tag": tag}),
    });
    seal(&mut r, signer);
    r
}

/// The file name a receipt is written under.
fn name_of(r: &Value) -> String {
    file_name(r["id"].as_str().expect("id"))
}

fn problem(path: &Path) -> Option<Check> {
    verify_file(path, &key()).problem.map(|p| p.check)
}

fn case(package: &str, name: &str, receipt: Option<Value>) -> CaseResult {
    CaseResult {
        package: package.to_string(),
        case: name.to_string(),
        passed: true,
        run_status: "sealed".to_string(),
        duration_ms: 1,
        mismatch: None,
        receipt_digest: receipt
            .as_ref()
            .and_then(runx_receipts::as_written)
            .map(|v| digest(&v)),
        receipt,
        outcome: CaseVerdict::Passed,
        kind: None,
        skip_reason: None,
        needs: None,
    }
}

fn harness_run(dir: &Path, signer: &Signer) -> (PathBuf, Value) {
    let rt = Runtime::new(WorkerCommand::new("/nonexistent/worker")).with_signer(signer.clone());
    let first = receipt("c1", Some(signer));
    let cases = vec![
        case("hello", "greets", Some(first.clone())),
        case("hello", "refuses", Some(receipt("c2", Some(signer)))),
    ];
    let report = Report {
        status: ReportStatus::Passed,
        case_count: 2,
        passed: 2,
        failed: 0,
        failures: Vec::new(),
        not_declared: vec!["empty".to_string()],
        cases,
        skipped: 0,
        not_run: Default::default(),
        errors: Vec::new(),
        packages: Vec::new(),
    };
    let h = HarnessReceipt::new(&rt, &report, 1, 2);
    (h.write(&report, dir).expect("write"), first)
}

#[test]
fn a_harness_receipt_verifies_as_a_whole_and_names_its_cases() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = signer(1, "key-1");
    let (path, first) = harness_run(dir.path(), &s);
    let v = verify_file(&path, &key());
    assert!(v.verified(), "{v:?}");
    assert_eq!(v.schema.as_deref(), Some(HARNESS_RECEIPT_SCHEMA));
    assert_eq!(v.cases, vec!["hello/greets", "hello/refuses"]);

    // A case receipt replaced by another one signed with the same key: the harness receipt
    // records another digest.
    let c1 = dir.path().join(name_of(&first));
    let mut forged = first.clone();
    forged["metadata"]["evidence"]["skill"] = json!("forged");
    forged["acts"][0]["artifact_refs"] = json!([runx_receipts::runx::evidence_ref(
        &forged["metadata"]["evidence"]
    )]);
    seal(&mut forged, Some(&s));
    std::fs::write(&c1, serde_json::to_vec_pretty(&forged).expect("json")).expect("write");
    assert!(
        runx_receipts::runx::verdict(&forged, &key()).valid,
        "the forgery verifies on its own"
    );
    let p = verify_file(&path, &key()).problem.expect("forged case");
    assert_eq!(p.check, Check::Cases);
    assert!(
        p.message.contains("hello/greets") && p.message.contains("was changed"),
        "{}",
        p.message
    );

    std::fs::remove_file(&c1).expect("rm");
    let p = verify_file(&path, &key()).problem.expect("missing case");
    assert_eq!(p.check, Check::Cases);
    assert!(p.message.contains(&name_of(&first)), "{}", p.message);
}

#[test]
fn a_harness_receipt_cannot_point_outside_its_directory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = signer(1, "key-1");
    let (path, _) = harness_run(dir.path(), &s);
    let mut doc = read_receipt(&path).expect("read");
    doc["cases"][0]["receipt"] = json!("../c1.json");
    // Even re-sealed with the right key, the schema refuses a path.
    let mut sealed: HarnessReceipt = serde_json::from_value(doc).expect("harness receipt");
    let (d, sig) = runx_receipts::seal(&sealed, Some(&s));
    sealed.body_digest = d;
    sealed.signature = sig;
    std::fs::write(&path, serde_json::to_vec(&sealed).expect("json")).expect("write");
    assert_eq!(problem(&path), Some(Check::Schema));
}

#[test]
fn a_case_receipt_that_does_not_verify_fails_the_harness_receipt() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Cases signed by another key, harness receipt by the verification key.
    let rt =
        Runtime::new(WorkerCommand::new("/nonexistent/worker")).with_signer(signer(1, "key-1"));
    let other = signer(3, "key-3");
    let cases = vec![case("hello", "greets", Some(receipt("c1", Some(&other))))];
    let report = Report {
        status: ReportStatus::Passed,
        case_count: 1,
        passed: 1,
        failed: 0,
        failures: Vec::new(),
        not_declared: Vec::new(),
        cases,
        skipped: 0,
        not_run: Default::default(),
        errors: Vec::new(),
        packages: Vec::new(),
    };
    let path = HarnessReceipt::new(&rt, &report, 1, 2)
        .write(&report, dir.path())
        .expect("write");
    let p = verify_file(&path, &key())
        .problem
        .expect("case by another key");
    assert_eq!(p.check, Check::Cases);
    assert!(p.message.contains("key_id"), "{}", p.message);
}

#[test]
fn without_a_key_a_harness_run_verifies_as_local_development() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rt = Runtime::new(WorkerCommand::new("/nonexistent/worker"));
    let report = Report {
        status: ReportStatus::Passed,
        case_count: 1,
        passed: 1,
        failed: 0,
        failures: Vec::new(),
        not_declared: Vec::new(),
        cases: vec![case("hello", "greets", Some(receipt("c1", None)))],
        skipped: 0,
        not_run: Default::default(),
        errors: Vec::new(),
        packages: Vec::new(),
    };
    let path = HarnessReceipt::new(&rt, &report, 1, 2)
        .write(&report, dir.path())
        .expect("write");
    let v = verify_file(&path, &Trust::LocalDevelopment);
    assert!(v.verified(), "{v:?}");
    // A key proves nothing about receipts made without one.
    assert_eq!(problem(&path), Some(Check::Unsigned));
}
