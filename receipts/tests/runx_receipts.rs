//! runx's own receipts verify here, and this runtime's receipts meet runx's rules.
//!
//! `data/runx-production-receipt.json` and `data/runx-local-receipt.json` were written by runx
//! 0.8.2 (its verifier's fixture, signed with a known key, and a conformance receipt with a
//! local-development signature); their ids and digests are runx's.

use runx_receipts::VerifyKey;
use runx_receipts::runx::{
    Commitment, JSON_COMMITMENT, SealParts, SkillRun, Trust, full_digest, seal, skill_receipt,
    verdict,
};
use serde_json::{Value, json};

/// runx's verifier fixture key.
const RUNX_KID: &str = "runx-cli-verify-fixture-key";
const RUNX_PUBLIC_KEY: &str = "4oqJcHUzMr1y/vQT5rCy7xtKrdp6osFB8jNxKmh2s1E=";

fn data(name: &str) -> Value {
    let path = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn runx_key() -> Trust {
    Trust::Key(VerifyKey::new(RUNX_KID, RUNX_PUBLIC_KEY).unwrap())
}

#[test]
fn a_receipt_runx_signed_verifies_with_its_key() {
    let doc = data("runx-production-receipt.json");
    let v = verdict(&doc, &runx_key());
    assert!(v.valid, "{v:#?}");
    assert_eq!(
        v.content_address.expected.as_deref(),
        Some("sha256:fc1bb8c2027c1b0a76d8095a1d6c112e37a4f4d144991be4d505ec21314ccd39")
    );
    assert_eq!(
        v.digest.expected.as_deref(),
        Some("sha256:e843a3e47631146b1dac7abae3c40adffc32b1ef3c167ed317b1d163afdb41a4")
    );
    assert_eq!(v.evidence.status, "not_evaluated");
    // Not as local development: its signature is a key's.
    let local = verdict(&doc, &Trust::LocalDevelopment);
    assert!(!local.valid);
    assert_eq!(local.findings[0].code, "signature_malformed");
}

#[test]
fn a_local_development_receipt_of_runx_verifies_when_allowed() {
    let doc = data("runx-local-receipt.json");
    let v = verdict(&doc, &Trust::LocalDevelopment);
    assert!(v.valid, "{v:#?}");
    // runx's oracle of the same receipt.
    assert_eq!(
        v.digest.expected.as_deref(),
        Some("sha256:9a5e2c1e399216cd9a6f5bd9e2f33997a2578e2a51507d9d63b53e66903f5c74")
    );
    assert_eq!(
        full_digest(&doc),
        "sha256:c7f2ec7047aaf087e4d2344c475ed0d47f38e8d9cd49efd816ef6413230c4a72"
    );
    // A key proves nothing about a local-development signature.
    let keyed = verdict(&doc, &runx_key());
    assert_eq!(keyed.findings[0].code, "signature_unsupported_issuer");
}

#[test]
fn tampering_with_runx_receipts_is_found() {
    let mut doc = data("runx-production-receipt.json");
    doc["seal"]["summary"] = json!("something else");
    let v = verdict(&doc, &runx_key());
    assert!(!v.valid);
    let codes: Vec<&str> = v.findings.iter().map(|f| f.code).collect();
    assert_eq!(codes, ["seal_digest_mismatch", "signature_invalid"]);

    let mut doc = data("runx-production-receipt.json");
    doc["surprise"] = json!(1);
    let v = verdict(&doc, &runx_key());
    assert_eq!(v.findings[0].code, "receipt_parse_error");
    assert!(v.receipt_id.is_none());

    // metadata is outside the body: runx does not see a change to it.
    let mut doc = data("runx-local-receipt.json");
    doc["metadata"] = json!({"note": "added later"});
    assert!(verdict(&doc, &Trust::LocalDevelopment).valid);
}

fn run(disposition: &str) -> SkillRun {
    let h = |s: &str| runx_receipts::sha256_hex(s.as_bytes());
    SkillRun {
        skill: "greet".into(),
        runner: "default".into(),
        run_id: "run_default_00".into(),
        harness_id: "hrn_run_default_00_default".into(),
        seal: SealParts {
            disposition: disposition.into(),
            reason_code: "process_closed".into(),
            summary: "javascript default completed".into(),
            closed_at: "2026-12-01T10:00:00.123Z".into(),
        },
        commitments: vec![Commitment {
            scope: "input",
            value: h("in"),
            canonicalization: JSON_COMMITMENT,
        }],
        intent_key: h("intent"),
        trigger_fingerprint: h("trigger"),
        content_hash: h("content"),
        profile_hash: h("profile"),
        execution_boundary: Some("deterministic_worker"),
        evidence: json!({"schema": "runx-rs.run_evidence.v1", "engine": {"name": "quickjs"}}),
    }
}

#[test]
fn our_receipts_meet_runx_rules_signed_or_local() {
    let mut local = skill_receipt(&run("closed"));
    seal(&mut local, None);
    let v = verdict(&local, &Trust::LocalDevelopment);
    assert!(v.valid, "{v:#?}");
    assert_eq!(v.evidence.status, "valid");
    assert_eq!(local["issuer"]["type"], "local");
    assert_eq!(
        local["signature"]["value"],
        format!("sig:{}", local["digest"].as_str().unwrap())
    );

    let signer = runx_receipts::Signer::new(
        "ci-key",
        "R0dHR0dHR0dHR0dHR0dHR0dHR0dHR0dHR0dHR0dHR0c=",
        "ci",
    )
    .unwrap();
    let mut signed = skill_receipt(&run("failed"));
    seal(&mut signed, Some(&signer));
    let v = verdict(&signed, &Trust::Key(signer.verify_key()));
    assert!(v.valid, "{v:#?}");
    assert_eq!(signed["issuer"]["kid"], "ci-key");
    // Another key of the same id does not verify it.
    let other = runx_receipts::Signer::new(
        "ci-key",
        "SEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEg=",
        "ci",
    )
    .unwrap();
    let v = verdict(&signed, &Trust::Key(other.verify_key()));
    assert_eq!(v.findings[0].code, "signature_key_hash_mismatch");
}

#[test]
fn our_evidence_is_bound_to_the_signed_act() {
    let mut doc = skill_receipt(&run("closed"));
    seal(&mut doc, None);
    doc["metadata"]["evidence"]["engine"]["name"] = json!("v8");
    let v = verdict(&doc, &Trust::LocalDevelopment);
    assert!(!v.valid);
    assert_eq!(v.findings[0].code, "evidence_digest_mismatch");
    // Removing it is found too.
    let mut doc = skill_receipt(&run("closed"));
    seal(&mut doc, None);
    doc.as_object_mut().unwrap().remove("metadata");
    assert_eq!(
        verdict(&doc, &Trust::LocalDevelopment).findings[0].code,
        "evidence_digest_mismatch"
    );
}

#[test]
fn a_changed_id_is_not_the_content_address() {
    let mut doc = skill_receipt(&run("closed"));
    seal(&mut doc, None);
    doc["id"] = json!("sha256:0000000000000000000000000000000000000000000000000000000000000000");
    let v = verdict(&doc, &Trust::LocalDevelopment);
    assert!(!v.valid);
    assert_eq!(v.content_address.status, "invalid");
}

/// Receipts the runx 0.8.2 CLI wrote for `runx skill` runs (its hello-world cli-tool example and
/// a javascript skill, without a key, and hello-world signed with a throwaway key of 32 bytes of
/// 0x11, kid `runx-spec-test-key`), byte for byte.
#[test]
fn receipts_the_runx_cli_wrote_verify_here() {
    for name in [
        "runx-cli-local-receipt.json",
        "runx-cli-javascript-receipt.json",
    ] {
        let doc = data(name);
        let v = verdict(&doc, &Trust::LocalDevelopment);
        assert!(v.valid, "{name}: {v:#?}");
        assert_eq!(doc["seal"]["reason_code"], "process_closed", "{name}");
    }
    let key = VerifyKey::new(
        "runx-spec-test-key",
        "0EqyMnQrtKs6E2i9RhXk5tAiSrcaAWuvhSCjMsl3hzc=",
    )
    .unwrap();
    let doc = data("runx-cli-signed-receipt.json");
    let v = verdict(&doc, &Trust::Key(key));
    assert!(v.valid, "{v:#?}");
    assert_eq!(v.signature.mode, "production");
    // Another key of the same id: the issuer names another public key.
    let other = runx_receipts::Signer::new(
        "runx-spec-test-key",
        "R0dHR0dHR0dHR0dHR0dHR0dHR0dHR0dHR0dHR0dHR0c=",
        "ci",
    )
    .unwrap();
    let v = verdict(&doc, &Trust::Key(other.verify_key()));
    assert_eq!(v.findings[0].code, "signature_key_hash_mismatch");
}
