use crate::verification::*;
use crate::*;
use serde_json::Value;
use serde_json::json;
use std::collections::BTreeMap;
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
    let evidence = RunEvidence {
        schema: EVIDENCE_SCHEMA.to_string(),
        id: tag.to_string(),
        skill: "hello".to_string(),
        version: "1.0.0".to_string(),
        runner: "greet".to_string(),
        runner_type: Some("javascript".to_string()),
        status: RunStatus::Sealed,
        input_digest: Some(h("in")),
        output_digest: Some(h("out")),
        runx_version: RUNX_VERSION.to_string(),
        limits: BTreeMap::from([("heap_bytes".to_string(), 64 << 20)]),
        duration_ms: 12,
        started_at_ms: 1_700_000_000_000,
        ..RunEvidence::default()
    };
    let mut r = runx::skill_receipt(&runx::SkillRun {
        skill: "hello".to_string(),
        runner: "greet".to_string(),
        run_id: format!("run_greet_{tag}"),
        harness_id: format!("hrn_run_greet_{tag}_greet"),
        seal: runx::SealParts {
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
        evidence: as_written(&evidence).expect("evidence"),
    });
    runx::seal(&mut r, signer);
    r
}

fn write(dir: &Path, r: &Value) -> PathBuf {
    runx::write(dir, r).expect("write")
}

fn problem(path: &Path) -> Option<Check> {
    verify_file(path, &key()).problem.map(|p| p.check)
}

#[test]
fn a_signed_receipt_verifies() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write(dir.path(), &receipt("r1", Some(&signer(1, "key-1"))));
    let v = verify_file(&path, &key());
    assert!(v.verified(), "{v:?}");
    assert_eq!(v.schema.as_deref(), Some(RECEIPT_SCHEMA));
    assert_eq!(v.kid.as_deref(), Some("key-1"));
}

/// Every one-byte change of a signed receipt file either leaves its JSON meaning intact
/// (whitespace, `e` vs `E`) or fails verification.
#[test]
fn every_byte_of_a_signed_receipt_is_covered() {
    let dir = tempfile::tempdir().expect("tempdir");
    let original =
        std::fs::read(write(dir.path(), &receipt("r1", Some(&signer(1, "key-1"))))).expect("read");
    let meaning: Value = serde_json::from_slice(&original).expect("json");
    let path = dir.path().join("mutated.json");
    let mut refused = 0;
    for i in 0..original.len() {
        let mut bytes = original.clone();
        bytes[i] = match bytes[i] {
            b'0'..=b'8' | b'a'..=b'y' | b'A'..=b'Y' => bytes[i] + 1,
            b'9' => b'0',
            b'z' | b'Z' => b'a',
            _ => b'x',
        };
        std::fs::write(&path, &bytes).expect("write");
        let verdict = verify_file(&path, &key());
        if verdict.verified() {
            let now: Value = serde_json::from_slice(&bytes).expect("verified JSON parses");
            assert_eq!(now, meaning, "byte {i} changed the receipt yet it verified");
        } else {
            refused += 1;
        }
    }
    assert!(
        refused > original.len() * 3 / 4,
        "{refused} of {}",
        original.len()
    );
}

/// An edit of a receipt document.
type Change = Box<dyn Fn(&mut Value)>;

#[test]
fn each_kind_of_change_is_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let good = receipt("r1", Some(&signer(1, "key-1")));
    let doc = good;
    let cases: Vec<(&str, Change, Check)> = vec![
        (
            "seal",
            Box::new(|d| d["seal"]["reason_code"] = json!("other")),
            Check::Body,
        ),
        (
            "evidence",
            Box::new(|d| d["metadata"]["evidence"]["limits"]["heap_bytes"] = json!(1)),
            Check::Evidence,
        ),
        (
            "evidence removed",
            Box::new(|d| {
                d.as_object_mut().expect("object").remove("metadata");
            }),
            Check::Evidence,
        ),
        (
            "added field",
            Box::new(|d| d["note"] = json!("hi")),
            Check::Schema,
        ),
        (
            "digest",
            Box::new(|d| d["digest"] = json!(sha256_hex(b"x"))),
            Check::Body,
        ),
        (
            "id",
            Box::new(|d| d["id"] = json!(sha256_hex(b"x"))),
            Check::Body,
        ),
        (
            "signature value",
            Box::new(|d| {
                let v = d["signature"]["value"].as_str().expect("value").to_string();
                let flipped = if v.ends_with('A') { "B" } else { "A" };
                d["signature"]["value"] = json!(format!("{}{flipped}", &v[..v.len() - 1]));
            }),
            Check::Signature,
        ),
        (
            "key id",
            Box::new(|d| d["issuer"]["kid"] = json!("key-2")),
            Check::Body,
        ),
        (
            "algorithm",
            Box::new(|d| d["signature"]["alg"] = json!("none")),
            Check::Schema,
        ),
        (
            "issuer type",
            Box::new(|d| d["issuer"]["type"] = json!("verifier")),
            Check::Body,
        ),
        (
            "a field added to the signature block",
            Box::new(|d| d["signature"]["note"] = json!("approved by the security team")),
            Check::Schema,
        ),
        (
            "a local-development signature in place of the key's",
            Box::new(|d| {
                let digest = d["digest"].as_str().expect("digest").to_string();
                d["signature"]["value"] = json!(format!("sig:{digest}"));
            }),
            Check::Signature,
        ),
        (
            "unsigned",
            Box::new(|d| {
                d.as_object_mut().expect("object").remove("signature");
            }),
            Check::Schema,
        ),
        (
            "schema name",
            Box::new(|d| d["schema"] = json!("runx.receipt.v2")),
            Check::Schema,
        ),
        (
            "a disposition runx does not have",
            Box::new(|d| d["seal"]["disposition"] = json!("ok")),
            Check::Schema,
        ),
        (
            "a child that is not a receipt",
            Box::new(|d| d["lineage"]["children"] = json!([{"type": "act", "uri": "runx:act:x"}])),
            Check::Structure,
        ),
    ];
    for (what, change, expected) in cases {
        let mut d = doc.clone();
        change(&mut d);
        let path = dir.path().join("changed.json");
        std::fs::write(&path, serde_json::to_vec_pretty(&d).expect("json")).expect("write");
        let v = verify_file(&path, &key());
        let p = v.problem.unwrap_or_else(|| panic!("{what}: verified"));
        assert_eq!(p.check, expected, "{what}: {}", p.message);
    }
}

#[test]
fn receipts_without_a_key_verify_as_local_development_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    let r = receipt("r1", None);
    let path = write(dir.path(), &r);
    assert_eq!(problem(&path), Some(Check::IssuerType));
    let v = verify_file(&path, &Trust::LocalDevelopment);
    assert!(v.verified(), "{v:?}");
    assert_eq!(v.kid.as_deref(), Some(runx::LOCAL_KID));
    // A key's receipt is not accepted as local development.
    let keyed = write(dir.path(), &receipt("r2", Some(&signer(1, "key-1"))));
    let p = verify_file(&keyed, &Trust::LocalDevelopment).problem;
    assert_eq!(p.map(|p| p.check), Some(Check::Signature));
}

#[test]
fn another_key_does_not_verify() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write(dir.path(), &receipt("r1", Some(&signer(2, "key-1"))));
    assert_eq!(problem(&path), Some(Check::PublicKey));
    let path = write(dir.path(), &receipt("r2", Some(&signer(1, "key-9"))));
    assert_eq!(problem(&path), Some(Check::KeyId));
}

#[test]
fn hostile_files_are_refused_without_hanging_or_overflowing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let good =
        std::fs::read_to_string(write(dir.path(), &receipt("r1", Some(&signer(1, "key-1")))))
            .expect("read");
    // A duplicate key: serde_json would keep the last, other readers the first.
    let dup = dir.path().join("dup.json");
    std::fs::write(
        &dup,
        good.replacen("{", "{\n  \"digest\": \"sha256:00\",", 1),
    )
    .expect("write");
    let v = verify_file(&dup, &key());
    assert_eq!(
        v.problem.as_ref().map(|p| p.check),
        Some(Check::Json),
        "{v:?}"
    );
    assert!(
        v.problem
            .expect("p")
            .message
            .contains("duplicate key `digest`")
    );

    let deep = dir.path().join("deep.json");
    std::fs::write(
        &deep,
        format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)),
    )
    .expect("write");
    assert_eq!(problem(&deep), Some(Check::Json));
    let array = dir.path().join("array.json");
    std::fs::write(&array, "[]").expect("write");
    assert_eq!(problem(&array), Some(Check::Json));
    let nan = dir.path().join("nan.json");
    std::fs::write(&nan, "{\"x\": 1e999}").expect("write");
    assert_eq!(problem(&nan), Some(Check::Json));

    let fifo = dir.path().join("fifo.json");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("mkfifo");
    assert_eq!(problem(&fifo), Some(Check::File));

    let big = dir.path().join("big.json");
    std::fs::File::create(&big)
        .and_then(|f| f.set_len(RECEIPT_BYTES.max + 1))
        .expect("sparse file");
    let v = verify_file(&big, &key());
    assert!(v.problem.expect("big").message.contains("larger than"));

    // A control sequence in a field is not echoed raw into the report.
    let escape = dir.path().join("escape.json");
    std::fs::write(&escape, good.replacen("runx.receipt.v1", "\\u001b[2J", 1)).expect("write");
    let v = verify_file(&escape, &key());
    let p = v.problem.expect("escape");
    assert_eq!(p.check, Check::Schema);
    assert!(!p.message.contains('\u{1b}'), "{:?}", p.message);
}

#[test]
fn a_receipt_over_the_value_budget_is_refused_unparsed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let max = usize::try_from(RECEIPT_VALUES.max).expect("usize");
    // One value past the budget, in an object that names a key twice and never closes: a
    // parser would report either, so a refusal for the values shows nothing was parsed.
    let many = dir.path().join("many.json");
    let text = format!(
        "{{\"schema\": 1, \"schema\": 2, \"x\": [{}",
        "0,".repeat(max - 7)
    );
    assert_eq!(
        count_values(text.as_bytes(), u64::MAX),
        RECEIPT_VALUES.max + 1
    );
    assert!(text.len() as u64 <= RECEIPT_BYTES.max);
    std::fs::write(&many, &text).expect("write");
    let v = verify_file(&many, &key());
    let p = v.problem.expect("refused");
    assert_eq!(p.check, Check::File, "{p:?}");
    for part in [
        "receipt_values",
        &RECEIPT_VALUES.max.to_string(),
        "not parsed",
    ] {
        assert!(p.message.contains(part), "{part}: {}", p.message);
    }
    let e = read_receipt(&many).expect_err("show refuses it too");
    assert_eq!(e, p);

    // At the budget the file is parsed, and refused for what it is: not an object.
    let at = dir.path().join("at.json");
    std::fs::write(&at, format!("[{}0]", "0,".repeat(max - 2))).expect("write");
    let p = verify_file(&at, &key()).problem.expect("refused");
    assert_eq!(
        (p.check, p.message.as_str()),
        (Check::Json, "is not a JSON object")
    );
}

#[test]
fn directories_expand_to_their_json_files_and_links_are_not_followed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let r = write(dir.path(), &receipt("r1", Some(&signer(1, "key-1"))));
    std::fs::write(dir.path().join("notes.txt"), "not a receipt").expect("write");
    std::os::unix::fs::symlink(&r, dir.path().join("link.json")).expect("symlink");
    let (files, refused) =
        receipt_files(&[dir.path().to_path_buf(), dir.path().join("absent.json")]);
    assert_eq!(files, vec![r]);
    let refused: Vec<(String, Check)> = refused
        .iter()
        .map(|v| {
            let name = v
                .path
                .file_name()
                .expect("name")
                .to_string_lossy()
                .into_owned();
            (name, v.problem.as_ref().expect("refused").check)
        })
        .collect();
    assert_eq!(
        refused,
        vec![
            ("link.json".to_string(), Check::File),
            ("absent.json".to_string(), Check::File)
        ]
    );
}

/// A receipt's file is named by its content address: a sealed receipt copied over another
/// run's file verifies as a receipt but not under that name (issue 43, item 5); under a name
/// that claims no id, it verifies.
#[test]
fn a_receipt_copied_over_another_is_named_for_what_it_is_not() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sealed = write(dir.path(), &receipt("ok", Some(&signer(1, "key-1"))));
    let failed = write(dir.path(), &receipt("failed", Some(&signer(1, "key-1"))));
    assert_eq!(problem(&failed), None);
    std::fs::copy(&sealed, &failed).expect("copy over");
    let v = verify_file(&failed, &key());
    let p = v.problem.expect("a problem");
    assert_eq!(p.check, Check::ContentAddress);
    assert!(p.message.contains("copied or renamed"), "{}", p.message);
    assert_eq!(problem(&sealed), None);
    let renamed = dir.path().join("kept.json");
    std::fs::copy(&sealed, &renamed).expect("copy");
    assert_eq!(problem(&renamed), None, "a name that claims no id");
    // A name of the form with a bad hex claims nothing either.
    let odd = dir.path().join("sha256-xyz.json");
    std::fs::copy(&sealed, &odd).expect("copy");
    assert_eq!(problem(&odd), None);
}
