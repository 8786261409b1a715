//! Signed receipts: signing from the environment or a key file, `runx receipt verify` and
//! `show`, keys given half, harness receipts, and the signing seed staying out of every
//! child, worker, log and receipt.

use super::*;
use runx_receipts::sha256_hex;
use serde_json::json;
use std::os::unix::fs::PermissionsExt;

/// The raw 32-byte seed of the test key; its base64 spellings must never appear anywhere.
const SEED_RAW: &[u8; 32] = b"runx-test-seed-0123456789abcdef!";
const SEED: &str = "cnVueC10ZXN0LXNlZWQtMDEyMzQ1Njc4OWFiY2RlZiE=";
const SEED_URL_SAFE: &str = "cnVueC10ZXN0LXNlZWQtMDEyMzQ1Njc4OWFiY2RlZiE";
const KID: &str = "test-key-1";

fn sign_env() -> Vec<(&'static str, &'static str)> {
    vec![
        ("RUNX_RECEIPT_SIGN_KID", KID),
        ("RUNX_RECEIPT_SIGN_ED25519_SEED_BASE64", SEED),
        ("RUNX_RECEIPT_SIGN_ISSUER_TYPE", "ci"),
    ]
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs `imports` signed in a fresh workspace; returns the workspace and the receipt path.
fn signed_run() -> (tempfile::TempDir, PathBuf) {
    let (ws, _) = workspace_with("imports");
    let (v, code) = json_in(
        ws.path(),
        &["skill", "pkg", "-i", "values=[2,3,5]"],
        &sign_env(),
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["outcome"], "completed", "{v}");
    let receipt = PathBuf::from(v["receipt_path"].as_str().unwrap());
    (ws, receipt)
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn verify(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut all = vec!["receipt", "verify"];
    all.extend_from_slice(args);
    run_in(cwd, &all, env)
}

#[test]
fn a_signed_receipt_records_the_run_and_verifies() {
    let (ws, path) = signed_run();
    let receipt = read_json(&path);
    assert_eq!(receipt["schema"], "runx.receipt.v1");
    // Named by its content address.
    let id = receipt["id"].as_str().unwrap();
    assert_eq!(
        path.file_name().unwrap().to_str().unwrap(),
        format!("{}.json", id.replacen(':', "-", 1))
    );
    assert_eq!(
        (
            &receipt["seal"]["disposition"],
            &receipt["seal"]["reason_code"]
        ),
        (&json!("closed"), &json!("process_closed"))
    );
    assert_eq!(receipt["subject"]["ref"]["label"], "imports");
    let r = evidence(&receipt);
    assert_eq!(r["schema"], "runx-rs.run_evidence.v1");
    let profile = std::fs::read(ws.path().join("pkg/X.yaml")).unwrap();
    assert_eq!(r["profile_digest"], json!(sha256_hex(&profile)));
    assert_eq!(r["runx_version"], json!(env!("CARGO_PKG_VERSION")));
    let engine = test_engine().unwrap_or_else(|| "quickjs".to_string());
    assert_eq!(r["engine"]["name"], json!(engine));
    assert!(
        r["engine"]["version"].as_str().unwrap().contains('.'),
        "{r}"
    );
    assert!(r["bundle_digest"].as_str().unwrap().starts_with("sha256:"));
    assert!(r["limits"]["heap_bytes"].as_u64().is_some());
    // The old seal fields are gone from the evidence: the receipt itself is sealed.
    assert!(
        r.get("body_digest").is_none() && r.get("signature").is_none(),
        "{r}"
    );
    assert!(receipt["digest"].as_str().unwrap().starts_with("sha256:"));
    assert_eq!(receipt["signature"]["alg"], "Ed25519");
    assert_eq!(receipt["issuer"]["kid"], KID);
    assert_eq!(receipt["issuer"]["type"], "ci");
    assert!(
        receipt["signature"]["value"]
            .as_str()
            .unwrap()
            .starts_with("base64:")
    );

    // With the signing key configured, its public half verifies.
    let out = verify(ws.path(), &[path.to_str().unwrap()], &sign_env());
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    assert!(
        stdout(&out).ends_with("1 verified, 0 failed\n"),
        "{}",
        stdout(&out)
    );
    // So does the verification key alone, from the environment or from a file.
    let public = public_key();
    let verify_env = [
        ("RUNX_RECEIPT_VERIFY_KID", KID),
        (
            "RUNX_RECEIPT_VERIFY_ED25519_PUBLIC_KEY_BASE64",
            public.as_str(),
        ),
    ];
    let out = verify(ws.path(), &[".runx/receipts", "--json"], &verify_env);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(report["status"], "verified");
    assert_eq!(report["receipts"][0]["kid"], KID);
    assert_eq!(report["receipts"][0]["check"], Value::Null);
    let key_file = ws.path().join("public.env");
    std::fs::write(
        &key_file,
        format!(
            "RUNX_RECEIPT_VERIFY_KID={KID}\nRUNX_RECEIPT_VERIFY_ED25519_PUBLIC_KEY_BASE64={public}\n"
        ),
    )
    .unwrap();
    let out = verify(
        ws.path(),
        &[path.to_str().unwrap(), "--public-key", "public.env"],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));

    // `show` prints it for a person.
    let out = run_in(ws.path(), &["receipt", "show", path.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    let engine_line = format!("engine     {engine} ");
    for expect in [
        "schema     runx.receipt.v1",
        &format!("id         {id}"),
        "seal       closed (process_closed)",
        "status     sealed",
        "skill      imports 0.1.0",
        "runner     default (javascript)",
        &engine_line,
        "  profile  sha256:",
        "  bundle   sha256:",
        "  input    sha256:",
        "  output   sha256:",
        "  heap_bytes                 64 MiB",
        "duration   ",
        &format!("signature  Ed25519 by key `{KID}` (ci)"),
    ] {
        assert!(text.contains(expect), "{expect}: {text}");
    }
}

/// The standard base64 public key of the test key, as `runx` itself reports it to a child.
fn public_key() -> String {
    let key = runx_receipts::Signer::new(KID, SEED, "ci").unwrap();
    key.verify_key().public_key_base64()
}

/// An edit of a receipt document.
type Change = fn(&mut Value);

/// The test key under another id.
fn other_kid_signer() -> runx_receipts::Signer {
    runx_receipts::Signer::new("someone-else", SEED, "ci").unwrap()
}

#[test]
fn changing_the_body_the_signature_or_the_key_id_fails_and_says_which() {
    let (ws, path) = signed_run();
    let original = read_json(&path);
    let cases: [(&str, Change, &str, &str); 11] = [
        (
            "evidence",
            |r| r["metadata"]["evidence"]["output_digest"] = json!(sha256_hex(b"forged")),
            "evidence",
            "it was changed or removed",
        ),
        (
            "status",
            |r| {
                let e = &mut r["metadata"]["evidence"];
                e["status"] = json!("failure");
                e["failure"] = json!({"kind": "exit", "code": "exit_1", "message": "x"});
            },
            "evidence",
            "it was changed or removed",
        ),
        (
            "evidence removed",
            |r| {
                r["metadata"].as_object_mut().unwrap().remove("evidence");
            },
            "evidence",
            "it was changed or removed",
        ),
        (
            "seal",
            |r| {
                r["seal"]["disposition"] = json!("failed");
                r["seal"]["reason_code"] = json!("process_failed");
            },
            "body",
            "the body was changed",
        ),
        (
            "id",
            |r| r["id"] = json!(format!("sha256:{}", "0".repeat(64))),
            "body",
            "the body was changed",
        ),
        (
            "signature",
            |r| {
                // One character in the middle: the last one also carries padding bits.
                let mut v = r["signature"]["value"]
                    .as_str()
                    .unwrap()
                    .as_bytes()
                    .to_vec();
                v[20] = if v[20] == b'A' { b'B' } else { b'A' };
                r["signature"]["value"] = json!(String::from_utf8(v).unwrap());
            },
            "signature",
            "does not verify",
        ),
        (
            "key id",
            |r| r["issuer"]["kid"] = json!("someone-else"),
            "body",
            "the body was changed",
        ),
        (
            "key id, sealed again",
            |r| runx_receipts::runx::seal(r, Some(&other_kid_signer())),
            "key_id",
            "no verification key has id `someone-else`",
        ),
        (
            "content address",
            |r| {
                // A new id, with the digest and the signature made again over it.
                r["id"] = json!(format!("sha256:{}", "0".repeat(64)));
                let digest = runx_receipts::runx::body_digest(r).unwrap();
                r["digest"] = json!(digest);
                let key = runx_receipts::Signer::new(KID, SEED, "ci").unwrap();
                r["signature"]["value"] = json!(key.sign_digest(&digest));
            },
            "content_address",
            "but the receipt's content address is",
        ),
        (
            "local, sealed again",
            |r| runx_receipts::runx::seal(r, None),
            "issuer_type",
            "a local-development signature proves no signer",
        ),
        (
            "unsigned",
            |r| r["signature"] = Value::Null,
            "schema",
            "/signature",
        ),
    ];
    // Each changed receipt is written under a name that claims no id: a receipt sealed again
    // has another content address than the file its run wrote.
    let changed = path.with_file_name("changed.json");
    for (what, change, check, message) in cases {
        let mut r = original.clone();
        change(&mut r);
        std::fs::write(&changed, serde_json::to_vec_pretty(&r).unwrap()).unwrap();
        let out = verify(ws.path(), &[changed.to_str().unwrap()], &sign_env());
        assert_eq!(out.status.code(), Some(1), "{what}: {}", stdout(&out));
        let text = stdout(&out);
        assert!(
            text.contains(&format!("FAIL {}: {check}: ", changed.display())),
            "{what}: {text}"
        );
        assert!(text.contains(message), "{what}: {text}");
        assert!(text.ends_with("0 verified, 1 failed\n"), "{what}: {text}");
        let out = verify(
            ws.path(),
            &[changed.to_str().unwrap(), "--json"],
            &sign_env(),
        );
        let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
        assert_eq!(report["status"], "failed");
        assert_eq!(report["receipts"][0]["check"], check, "{what}");
        // Accepting local development too changes nothing for a receipt changed after it was
        // signed with a key; the receipt sealed again as local development is whole.
        let out = verify(
            ws.path(),
            &[
                changed.to_str().unwrap(),
                "--allow-local-development-signatures",
            ],
            &sign_env(),
        );
        let local = what == "local, sealed again";
        assert_eq!(
            out.status.code(),
            Some(if local { 0 } else { 1 }),
            "{what}: {}",
            stdout(&out)
        );
    }
    // A byte of the file changed by hand, in place: in the evidence, then in the signed body.
    for (from, to, check) in [
        ("\"imports\"", "\"imp0rts\"", "evidence"),
        ("\"process_closed\"", "\"process_c1osed\"", "body"),
    ] {
        std::fs::write(&path, serde_json::to_vec_pretty(&original).unwrap()).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(from), "{from}");
        std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
        let out = verify(ws.path(), &[path.to_str().unwrap()], &sign_env());
        assert_eq!(out.status.code(), Some(1));
        assert!(
            stdout(&out).contains(&format!(": {check}: ")),
            "{from}: {}",
            stdout(&out)
        );
    }

    // Another key under the same id.
    std::fs::write(&path, serde_json::to_vec_pretty(&original).unwrap()).unwrap();
    let other = [
        ("RUNX_RECEIPT_VERIFY_KID", KID),
        (
            "RUNX_RECEIPT_VERIFY_ED25519_PUBLIC_KEY_BASE64",
            "11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=",
        ),
    ];
    let out = verify(ws.path(), &[path.to_str().unwrap()], &other);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains(": public_key: "), "{}", stdout(&out));
    // The untouched receipt still verifies with its own key.
    let out = verify(ws.path(), &[path.to_str().unwrap()], &sign_env());
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
}

#[test]
fn verify_needs_a_key_and_something_to_verify() {
    let (ws, path) = signed_run();
    let out = verify(ws.path(), &[path.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(64), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("RUNX_RECEIPT_VERIFY_KID")
            && stderr(&out).contains("--allow-local-development-signatures"),
        "{}",
        stderr(&out)
    );
    let out = verify(
        ws.path(),
        &[path.to_str().unwrap()],
        &[("RUNX_RECEIPT_VERIFY_KID", KID)],
    );
    assert_eq!(out.status.code(), Some(64), "{}", stderr(&out));
    assert!(stderr(&out).contains("incomplete"), "{}", stderr(&out));
    std::fs::create_dir(ws.path().join("empty")).unwrap();
    let out = verify(ws.path(), &["empty"], &sign_env());
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("no receipts"), "{}", stderr(&out));
    let out = verify(ws.path(), &["absent.json"], &sign_env());
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains("FAIL absent.json: file: "),
        "{}",
        stdout(&out)
    );
}

#[test]
fn keys_given_half_are_refused_before_anything_runs() {
    let (ws, _) = workspace_with("imports");
    let cases: Vec<(Vec<(&str, &str)>, &str)> = vec![
        (
            vec![("RUNX_RECEIPT_SIGN_KID", KID)],
            "RUNX_RECEIPT_SIGN_ED25519_SEED_BASE64",
        ),
        (
            vec![("RUNX_RECEIPT_SIGN_ED25519_SEED_BASE64", SEED)],
            "RUNX_RECEIPT_SIGN_KID",
        ),
        (
            vec![
                ("RUNX_RECEIPT_SIGN_KID", KID),
                ("RUNX_RECEIPT_SIGN_ED25519_SEED_BASE64", SEED),
            ],
            "but RUNX_RECEIPT_SIGN_ISSUER_TYPE not",
        ),
        (
            vec![
                ("RUNX_RECEIPT_SIGN_KID", KID),
                ("RUNX_RECEIPT_SIGN_ED25519_SEED_BASE64", "bm90LTMyLWJ5dGVz"),
                ("RUNX_RECEIPT_SIGN_ISSUER_TYPE", "ci"),
            ],
            "decodes to 12 bytes",
        ),
        (
            vec![
                ("RUNX_RECEIPT_SIGN_KID", KID),
                ("RUNX_RECEIPT_SIGN_ED25519_SEED_BASE64", SEED),
                ("RUNX_RECEIPT_SIGN_ISSUER_TYPE", "local"),
            ],
            "`hosted` or `ci`",
        ),
        (
            vec![("RUNX_RECEIPT_VERIFY_KID", KID)],
            "RUNX_RECEIPT_VERIFY_ED25519_PUBLIC_KEY_BASE64",
        ),
        (vec![("RUNX_RECEIPT_REQUIRE_SIGNED", "1")], "no signing key"),
        (
            vec![("RUNX_RECEIPT_REQUIRE_SIGNED", "maybe")],
            "RUNX_RECEIPT_REQUIRE_SIGNED",
        ),
    ];
    for (env, expect) in cases {
        for command in [
            &["skill", "pkg", "-i", "values=[1]"][..],
            &["harness", "pkg"][..],
        ] {
            let out = run_in(ws.path(), command, &env);
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(64), "{env:?} {command:?}: {err}");
            assert!(err.contains(expect), "{env:?}: {err}");
            assert!(
                !err.contains(SEED) && !err.contains("bm90LTMyLWJ5dGVz"),
                "{err}"
            );
            assert!(
                !ws.path().join(".runx").exists(),
                "{env:?} {command:?}: something ran"
            );
        }
    }
    let (v, code) = json_in(ws.path(), &["skill", "pkg", "--require-signed"], &[]);
    assert_eq!(code, 64);
    assert_eq!(v["error"]["kind"], "usage");
    assert_eq!(v["error"]["code"], "unsigned");
    let (v, code) = json_in(
        ws.path(),
        &["skill", "pkg"],
        &[("RUNX_RECEIPT_SIGN_KID", KID)],
    );
    assert_eq!(code, 64);
    assert_eq!(v["error"]["code"], "signing_key");
    assert!(!ws.path().join(".runx").exists());

    // A key file readable by others is refused; a private one signs.
    let keys = tempfile::tempdir().unwrap();
    let file = keys.path().join("sign.env");
    std::fs::write(
        &file,
        format!(
            "RUNX_RECEIPT_SIGN_KID={KID}\nRUNX_RECEIPT_SIGN_ED25519_SEED_BASE64={SEED}\nRUNX_RECEIPT_SIGN_ISSUER_TYPE=hosted\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let key = file.to_str().unwrap();
    let out = run_in(ws.path(), &["skill", "pkg", "--sign-key", key], &[]);
    assert_eq!(out.status.code(), Some(64));
    assert!(stderr(&out).contains("chmod 600"), "{}", stderr(&out));
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let (v, code) = json_in(
        ws.path(),
        &["skill", "pkg", "--sign-key", key, "--require-signed"],
        &[],
    );
    assert_eq!(code, 0, "{v}");
    let r = read_json(Path::new(v["receipt_path"].as_str().unwrap()));
    assert_eq!(r["issuer"]["type"], "hosted");
    assert_eq!(r["issuer"]["kid"], KID);
}

/// A receipt made without a signing key carries runx's local-development signature: it proves
/// the receipt whole, not who wrote it, so a verifier accepts it only when asked to.
#[test]
fn unsigned_receipts_say_so_and_do_not_verify() {
    let (ws, _) = workspace_with("imports");
    let (v, code) = json_in(ws.path(), &["skill", "pkg"], &[]);
    assert_eq!(code, 0, "{v}");
    let path = v["receipt_path"].as_str().unwrap();
    let r = read_json(Path::new(path));
    assert_eq!(
        r["issuer"],
        json!({"type": "local", "kid": "runtime-skeleton", "public_key_sha256": "sha256:runtime-skeleton-public"})
    );
    let digest = r["digest"].as_str().unwrap();
    assert!(digest.starts_with("sha256:"), "{r}");
    assert_eq!(
        r["signature"],
        json!({"alg": "Ed25519", "value": format!("sig:{digest}")})
    );
    // Checked with a key, it is not that key's: `issuer_type`.
    let out = verify(ws.path(), &[path], &sign_env());
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains(
            ": issuer_type: issuer type `local`: a local-development signature proves no signer"
        ),
        "{}",
        stdout(&out)
    );
    // Without a key and without the flag, there is nothing to verify with.
    let out = verify(ws.path(), &[path], &[]);
    assert_eq!(out.status.code(), Some(64), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("--allow-local-development-signatures"),
        "{}",
        stderr(&out)
    );
    // With the flag, its integrity is checked, and it holds.
    let local = [path, "--allow-local-development-signatures"];
    let out = verify(ws.path(), &local, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("integrity only: local development")
            && stdout(&out).ends_with("1 verified, 0 failed\n"),
        "{}",
        stdout(&out)
    );
    let out = verify(
        ws.path(),
        &[path, "--allow-local-development-signatures", "--json"],
        &[],
    );
    let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        (&report["status"], &report["signature_mode"]),
        (&json!("verified"), &json!("local-development")),
        "{report}"
    );
    assert_eq!(report["receipts"][0]["kid"], "runtime-skeleton");
    // With a key and the flag, the local receipt is checked as local development.
    let out = verify(ws.path(), &local, &sign_env());
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    // Integrity still counts: a changed local receipt fails under the flag.
    let mut changed = r.clone();
    changed["seal"]["summary"] = json!("all good, honestly");
    std::fs::write(path, serde_json::to_vec_pretty(&changed).unwrap()).unwrap();
    let out = verify(ws.path(), &local, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(stdout(&out).contains(": body: "), "{}", stdout(&out));
    std::fs::write(path, serde_json::to_vec_pretty(&r).unwrap()).unwrap();

    let out = run_in(ws.path(), &["receipt", "show", path], &[]);
    assert!(
        stdout(&out).contains("signature  Ed25519 by key `runtime-skeleton` (local)"),
        "{}",
        stdout(&out)
    );
}

const ECHO_MODULE: &str =
    "export function echo(inputs) { return { items: inputs.items ?? [] }; }\n";

#[test]
fn a_harness_receipt_verifies_and_names_its_cases() {
    let ws = tempfile::tempdir().unwrap();
    let pkg = ws.path().join("p");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(
        pkg.join("X.yaml"),
        "skill: p\nrun: { type: javascript, module: m.mjs, export: echo, inputs: { items: array } }\nharness:\n  cases:\n    - name: good\n      inputs: { items: [1] }\n      expect: { output: { exact: { items: [1] } } }\n    - name: bad\n      inputs: { items: [2] }\n      expect: { output: { exact: { items: [3] } } }\n",
    )
    .unwrap();
    std::fs::write(pkg.join("m.mjs"), ECHO_MODULE).unwrap();
    let (report, code) = json_in(
        ws.path(),
        &["harness", "p", "--receipt-dir", "hr"],
        &sign_env(),
    );
    assert_eq!(code, 1, "{report}");
    let receipt_path = ws.path().join(report["receipt"].as_str().unwrap());
    assert!(receipt_path.starts_with(ws.path().join("hr")), "{report}");
    let h = read_json(&receipt_path);
    assert_eq!(h["schema"], "runx-rs.harness_receipt.v1");
    assert_eq!(h["status"], "failed");
    assert_eq!(
        (h["passed"].clone(), h["failed"].clone()),
        (json!(1), json!(1))
    );
    assert_eq!(h["signature"]["kid"], KID);
    for (i, name) in ["good", "bad"].iter().enumerate() {
        let case = &h["cases"][i];
        assert_eq!(case["case"], *name);
        assert_eq!(case["package"], "p");
        assert_eq!(case["passed"], json!(i == 0));
        assert_eq!(case["receipt_digest"], report["cases"][i]["receipt_digest"]);
        // Case receipts are named by their content address, as runx names receipts.
        let file = case["receipt"].as_str().unwrap();
        let case_receipt = read_json(&ws.path().join("hr").join(file));
        let id = case_receipt["id"].as_str().unwrap();
        assert_eq!(
            file,
            format!("sha256-{}.json", id.strip_prefix("sha256:").unwrap())
        );
        assert_eq!(case_receipt["issuer"]["kid"], KID);
        assert_eq!(evidence(&case_receipt)["case"], *name, "{case_receipt}");
    }

    let out = verify(ws.path(), &["hr", "--json"], &sign_env());
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["verified"], 3);
    let harness = v["receipts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["schema"] == "runx-rs.harness_receipt.v1")
        .unwrap();
    assert_eq!(harness["cases"], json!(["p/good", "p/bad"]));

    let out = run_in(
        ws.path(),
        &["receipt", "show", receipt_path.to_str().unwrap()],
        &[],
    );
    let text = stdout(&out);
    assert!(
        text.contains("status     failed (1 passed, 1 failed of 2 cases)"),
        "{text}"
    );
    assert!(
        text.contains("  PASS p/good: ") && text.contains("  FAIL p/bad: "),
        "{text}"
    );

    // One case receipt changed: the harness receipt no longer verifies and says which case.
    let bad = ws
        .path()
        .join("hr")
        .join(h["cases"][1]["receipt"].as_str().unwrap());
    let text = std::fs::read_to_string(&bad).unwrap();
    std::fs::write(
        &bad,
        text.replacen("\"duration_ms\": ", "\"duration_ms\": 1", 1),
    )
    .unwrap();
    let out = verify(ws.path(), &[receipt_path.to_str().unwrap()], &sign_env());
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains(": cases: case `p/bad`: its receipt"),
        "{}",
        stdout(&out)
    );
}

/// A harness run without a key: its harness receipt is unsigned and its case receipts carry
/// the local-development signature; they verify only as local development.
#[test]
fn an_unsigned_harness_receipt_verifies_under_local_development_trust() {
    let ws = tempfile::tempdir().unwrap();
    let pkg = ws.path().join("p");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(
        pkg.join("X.yaml"),
        "skill: p\nrun: { type: javascript, module: m.mjs, export: echo, inputs: { items: array } }\nharness:\n  cases:\n    - name: good\n      inputs: { items: [1] }\n      expect: { output: { exact: { items: [1] } } }\n",
    )
    .unwrap();
    std::fs::write(pkg.join("m.mjs"), ECHO_MODULE).unwrap();
    let (report, code) = json_in(ws.path(), &["harness", "p", "--receipt-dir", "hr"], &[]);
    assert_eq!(code, 0, "{report}");
    let receipt_path = ws.path().join(report["receipt"].as_str().unwrap());
    let h = read_json(&receipt_path);
    assert_eq!(h["schema"], "runx-rs.harness_receipt.v1");
    assert!(h["signature"].is_null(), "{h}");
    let case = read_json(
        &ws.path()
            .join("hr")
            .join(h["cases"][0]["receipt"].as_str().unwrap()),
    );
    assert_eq!(case["issuer"]["type"], "local");
    let harness = receipt_path.to_str().unwrap();
    let out = verify(ws.path(), &[harness], &[]);
    assert_eq!(out.status.code(), Some(64), "{}", stdout(&out));
    let out = verify(ws.path(), &[harness], &sign_env());
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(stdout(&out).contains(": unsigned: "), "{}", stdout(&out));
    let out = verify(
        ws.path(),
        &["hr", "--allow-local-development-signatures", "--json"],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["verified"], 2, "{v}");
}

#[test]
fn a_runner_declaring_a_signing_name_is_refused_at_load() {
    let ws = tempfile::tempdir().unwrap();
    let pkg = ws.path().join("p");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(
        pkg.join("X.yaml"),
        "skill: p\nrun: { type: cli-tool, command: ./t.sh, environment: { optional: [RUNX_RECEIPT_SIGN_ED25519_SEED_BASE64] } }\n",
    )
    .unwrap();
    let (v, code) = json_in(ws.path(), &["skill", "p"], &sign_env());
    assert_eq!(code, 64, "{v}");
    assert_eq!(v["error"]["kind"], "profile");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("receipt-signing material is never given to a runner"),
        "{v}"
    );
    assert!(!v.to_string().contains(SEED));
}

/// Writes `text` as an executable script.
fn script(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A package whose cli-tool runner dumps everything it can see of its environment and inputs
/// into the workspace and into `capture`, and whose javascript runner returns and logs its
/// environment.
fn leaky_package(root: &Path, capture: &Path) -> PathBuf {
    let pkg = root.join("leak");
    std::fs::create_dir_all(pkg.join("bin")).unwrap();
    let cap = capture.display();
    script(
        &pkg.join("bin/dump.sh"),
        &format!(
            r#"#!/bin/sh
env > "$RUNX_CWD/child-env.txt"
env > "{cap}/child-env-$$.txt"
tr '\000' '\n' < /proc/self/environ > "{cap}/child-proc-environ-$$.txt"
cp -r "$(dirname "$RUNX_INPUTS_PATH")" "{cap}/child-inputs-$$"
cp -r "$(dirname "$RUNX_INPUTS_PATH")" "$RUNX_CWD/child-inputs"
echo "to stderr: $RUNX_RECEIPT_VERIFY_KID" >&2
printf '{{"receipt_dir":"%s","verify_kid":"%s","verify_key":"%s","sign":"%s%s%s"}}' "$RUNX_RECEIPT_DIR" "$RUNX_RECEIPT_VERIFY_KID" "$RUNX_RECEIPT_VERIFY_ED25519_PUBLIC_KEY_BASE64" "$RUNX_RECEIPT_SIGN_KID" "$RUNX_RECEIPT_SIGN_ED25519_SEED_BASE64" "$RUNX_RECEIPT_SIGN_ISSUER_TYPE"
"#
        ),
    );
    std::fs::write(
        pkg.join("m.mjs"),
        "export function look(inputs, { environment }) {\n  console.log('env', JSON.stringify(environment));\n  return { environment, names: Object.getOwnPropertyNames(globalThis).length };\n}\n",
    )
    .unwrap();
    std::fs::write(
        pkg.join("X.yaml"),
        r#"skill: leak
runners:
  dump:
    default: true
    type: cli-tool
    command: ./bin/dump.sh
    environment: { optional: [REGION] }
    inputs:
      note: { type: string, default: "a note" }
  look:
    type: javascript
    module: m.mjs
    export: look
    environment: { optional: [REGION] }
harness:
  cases:
    - name: dumps
      env: { REGION: eu }
      expect: { status: sealed }
    - name: looks
      runner: look
      env: { REGION: eu }
      expect: { output: { subset: { environment: { REGION: eu } } } }
"#,
    )
    .unwrap();
    pkg
}

/// Every regular file under `dir`, recursively.
fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let ty = entry.file_type().unwrap();
        if ty.is_dir() {
            files_under(&entry.path(), out);
        } else if ty.is_file() {
            out.push(entry.path());
        }
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn the_signing_seed_reaches_no_child_worker_log_or_receipt() {
    let ws = tempfile::tempdir().unwrap();
    let capture = tempfile::tempdir().unwrap();
    let cap = capture.path();
    leaky_package(ws.path(), cap);
    // Every worker is this wrapper: it records its own environment and every frame in and out.
    let wrapper = cap.join("worker.sh");
    script(
        &wrapper,
        &format!(
            "#!/bin/sh\n/usr/bin/tr '\\000' '\\n' < /proc/self/environ > {cap}/worker-env-$$.txt\n/usr/bin/tee -a {cap}/frames-in-$$.bin | /usr/bin/env -i {runx} __worker \"$@\" | /usr/bin/tee -a {cap}/frames-out-$$.bin\n",
            cap = cap.display(),
            runx = env!("CARGO_BIN_EXE_runx"),
        ),
    );
    let keys = tempfile::tempdir().unwrap();
    let key_file = keys.path().join("sign.env");
    std::fs::write(
        &key_file,
        format!(
            "RUNX_RECEIPT_SIGN_KID={KID}\nRUNX_RECEIPT_SIGN_ED25519_SEED_BASE64={SEED}\nRUNX_RECEIPT_SIGN_ISSUER_TYPE=ci\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o600)).unwrap();

    let mut env = sign_env();
    env.extend([
        ("REGION", "eu"),
        ("RUST_LOG", "trace"),
        ("RUNX_WORKER", wrapper.to_str().unwrap()),
    ]);
    let key = key_file.to_str().unwrap();
    let runs: Vec<Vec<&str>> = vec![
        vec!["-vv", "skill", "leak", "-i", "note=hello", "--json"],
        vec!["-vv", "skill", "leak", "-i", "note=hello"],
        vec!["-vv", "skill", "leak", "look", "--json"],
        vec!["-vv", "skill", "leak", "look"],
        vec!["-vv", "harness", "leak", "--json", "--receipt-dir", "hr"],
        vec!["-vv", "harness", "leak", "--receipt-dir", "hr"],
        vec!["-vv", "skill", "leak", "--sign-key", key, "--json"],
    ];
    let mut outputs = Vec::new();
    for args in &runs {
        // The key file run takes its key from the file only.
        let env: Vec<(&str, &str)> = if args.contains(&"--sign-key") {
            env.iter()
                .filter(|(k, _)| !k.starts_with("RUNX_RECEIPT_SIGN_"))
                .copied()
                .collect()
        } else {
            env.clone()
        };
        let out = run_in(ws.path(), args, &env);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}{}",
            stdout(&out),
            stderr(&out)
        );
        outputs.push((format!("{args:?}"), out.stdout, out.stderr));
    }

    // The child saw the receipt directory and the verification key, and nothing of the seed.
    let (v, _) = json_in(ws.path(), &["skill", "leak"], &env);
    let public = public_key();
    assert_eq!(
        v["result"],
        json!({
            "receipt_dir": ws.path().join(".runx/receipts").display().to_string(),
            "verify_kid": KID,
            "verify_key": public,
            "sign": "",
        })
    );

    let mut files = Vec::new();
    files_under(ws.path(), &mut files);
    files_under(cap, &mut files);
    // The test is only as good as what it looked at.
    let names: Vec<String> = files
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    for expected in [
        "child-env",
        "child-proc-environ",
        "worker-env",
        "frames-in",
        "frames-out",
        "inputs.json",
    ] {
        assert!(
            names.iter().any(|n| n.starts_with(expected)),
            "no {expected} file among {names:?}"
        );
    }
    let frames_in: Vec<u8> = files
        .iter()
        .filter(|f| f.to_string_lossy().contains("frames-in"))
        .flat_map(|f| std::fs::read(f).unwrap())
        .collect();
    assert!(
        contains(&frames_in, b"REGION"),
        "the frames carry the declared environment"
    );
    assert!(
        files
            .iter()
            .filter(|f| f.to_string_lossy().contains("harness"))
            .count()
            >= 2
    );

    let needles: [&[u8]; 3] = [SEED.as_bytes(), SEED_URL_SAFE.as_bytes(), SEED_RAW];
    for file in &files {
        let bytes = std::fs::read(file).unwrap();
        let name = file.file_name().unwrap().to_string_lossy();
        if name.starts_with("child-") || name.starts_with("worker-env") {
            // What a child or worker was given must not even name a signing variable.
            assert!(
                !contains(&bytes, b"RUNX_RECEIPT_SIGN_"),
                "{} names a signing variable",
                file.display()
            );
        }
        for needle in &needles {
            assert!(
                !contains(&bytes, needle),
                "the seed is in {}",
                file.display()
            );
        }
        if name.starts_with("worker-env") {
            assert!(
                bytes.is_empty(),
                "a worker's environment is empty: {}",
                file.display()
            );
        }
    }
    for (run, out, err) in &outputs {
        for needle in &needles {
            assert!(!contains(out, needle), "the seed is on stdout of {run}");
            assert!(!contains(err, needle), "the seed is on stderr of {run}");
        }
    }
    // The logs were on: the test read real log lines.
    assert!(outputs.iter().any(|(_, _, err)| contains(err, b"DEBUG")
        || contains(err, b"TRACE")
        || contains(err, b"INFO")));
}

#[test]
fn receipt_file_names_cannot_forge_lines_of_verify_or_show() {
    // A cli-tool is told the receipt directory, so it can plant a file whose name holds a line
    // break and a terminal escape: neither may reach the output as a forged line.
    let (ws, path) = signed_run();
    let dir = path.parent().unwrap();
    let forged = dir.join("x.json\nOK   all.json (runx.receipt.v1, signed)\u{1b}[2K.json");
    std::fs::write(&forged, b"{}").unwrap();
    let out = verify(ws.path(), &[dir.to_str().unwrap()], &sign_env());
    assert_eq!(
        out.status.code(),
        Some(1),
        "the planted file does not verify"
    );
    let text = stdout(&out);
    assert!(!text.contains('\u{1b}'), "{text}");
    assert!(
        !text.lines().any(|l| l.starts_with("OK   all.json")),
        "{text}"
    );
    assert!(
        text.contains("\\n"),
        "the line break is shown escaped: {text}"
    );
    let out = run_in(
        ws.path(),
        &["receipt", "show", forged.to_str().unwrap()],
        &[],
    );
    let shown = format!("{}{}", stdout(&out), stderr(&out));
    assert!(!shown.contains('\u{1b}'), "{shown}");
    assert!(
        !shown.lines().any(|l| l.starts_with("OK   all.json")),
        "{shown}"
    );
}

/// A skipped case is shown `SKIP`, not `FAIL` (one real failure among 343 skipped cases showed
/// as 344 FAIL lines).
#[test]
fn receipt_show_labels_skipped_cases_skip() {
    let ws = tempfile::tempdir().unwrap();
    let pkg = ws.path().join("p");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(
        pkg.join("X.yaml"),
        "skill: p\nrun: { type: javascript, module: m.mjs, export: echo, inputs: { items: array } }\nharness:\n  cases:\n    - name: good\n      inputs: { items: [1] }\n      expect: { output: { exact: { items: [1] } } }\n",
    )
    .unwrap();
    std::fs::write(pkg.join("m.mjs"), ECHO_MODULE).unwrap();
    // A graph case: this runtime runs no graphs, so it is skipped.
    std::fs::create_dir_all(pkg.join("fixtures")).unwrap();
    std::fs::write(
        pkg.join("fixtures/later.yaml"),
        "name: later\nkind: graph\ntarget: ../X.yaml\nexpect: { status: sealed }\n",
    )
    .unwrap();
    let (report, code) = json_in(ws.path(), &["harness", "p", "--receipt-dir", "hr"], &[]);
    assert_eq!(code, 0, "{report}");
    let receipt_path = ws.path().join(report["receipt"].as_str().unwrap());
    let out = run_in(
        ws.path(),
        &["receipt", "show", receipt_path.to_str().unwrap()],
        &[],
    );
    let text = stdout(&out);
    assert!(text.contains("  PASS p/good: "), "{text}");
    assert!(text.contains("  SKIP p/later: "), "{text}");
    assert!(!text.contains("FAIL"), "{text}");
}

/// Issue 25: `RUNX_RECEIPT_DIR` names the receipt folder as runx reads it; `--receipt-dir`
/// wins over it, and an empty one is as if unset.
#[test]
fn runx_receipt_dir_names_the_receipt_folder() {
    let ws = tempfile::tempdir().unwrap();
    let hello = fixtures().join("hello");
    let hello = hello.to_str().unwrap();
    let run = |extra: &[&str], env: &[(&str, &str)]| {
        let mut args = vec!["skill", hello, "-i", "name=Ada"];
        args.extend_from_slice(extra);
        let mut env = env.to_vec();
        env.push(("REGION", "eu"));
        let (v, code) = json_in(ws.path(), &args, &env);
        assert_eq!(code, 0, "{v}");
        std::path::PathBuf::from(v["receipt_path"].as_str().unwrap())
    };
    let from_env = run(&[], &[("RUNX_RECEIPT_DIR", "from-env")]);
    let name = |p: &std::path::Path| p.file_name().unwrap().to_owned();
    assert!(ws.path().join("from-env").join(name(&from_env)).is_file());
    let from_flag = run(
        &["--receipt-dir", "from-flag"],
        &[("RUNX_RECEIPT_DIR", "from-env")],
    );
    assert!(
        ws.path()
            .join("from-flag")
            .join(from_flag.file_name().unwrap())
            .is_file()
    );
    let default = run(&[], &[("RUNX_RECEIPT_DIR", "")]);
    assert!(
        ws.path()
            .join(".runx/receipts")
            .join(default.file_name().unwrap())
            .is_file()
    );
}

/// Runs `imports` in `ws` with `values`; returns the run's `--json` result.
fn imports_run(ws: &Path, values: &str, env: &[(&str, &str)]) -> Value {
    let arg = format!("values={values}");
    let (v, code) = json_in(ws, &["skill", "pkg", "-i", &arg], env);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["outcome"], "completed", "{v}");
    v
}

/// `runx verify` (runx's command): runx's verdict on one receipt and its exit codes: 0 valid,
/// 3 invalid, 1 when there is no verifier (no key, no `--allow-local-development-signatures`).
#[test]
fn runx_verify_gives_runx_verdicts_and_exit_codes() {
    let (ws, _) = workspace_with("imports");
    let v = imports_run(ws.path(), "[1]", &[]);
    let path = v["receipt_path"].as_str().unwrap().to_string();
    let id = v["receipt_id"].as_str().unwrap().to_string();
    let runx_verify = |args: &[&str], env: &[(&str, &str)]| {
        let mut all = vec!["verify"];
        all.extend_from_slice(args);
        let out = run_in(ws.path(), &all, env);
        let code = out.status.code().unwrap();
        let text = stdout(&out);
        let verdict: Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {text}{}", stderr(&out)));
        (verdict, code)
    };
    let local = "--allow-local-development-signatures";

    // No key and no flag: no verifier.
    let (verdict, code) = runx_verify(&["--receipt", &path, "--json"], &[]);
    assert_eq!(code, 1, "{verdict}");
    assert_eq!(verdict["status"], "failure", "{verdict}");
    assert!(
        verdict["error"]["message"]
            .as_str()
            .unwrap()
            .contains(local),
        "{verdict}"
    );

    // With the flag: valid, every part of it.
    let (verdict, code) = runx_verify(&["--receipt", &path, local, "--json"], &[]);
    assert_eq!(code, 0, "{verdict}");
    assert_eq!(verdict["schema"], "runx.verify_verdict.v1");
    assert_eq!(verdict["valid"], true, "{verdict}");
    assert_eq!(verdict["receipt_id"], id.as_str());
    assert_eq!(
        verdict["signature"],
        json!({"mode": "local-development", "status": "valid", "kid": "runtime-skeleton"})
    );
    for part in ["digest", "content_address", "evidence"] {
        assert_eq!(verdict[part]["status"], "valid", "{part}: {verdict}");
    }
    assert_eq!(verdict["findings"], json!([]));
    // From stdin too.
    let out = runx()
        .current_dir(ws.path())
        .args(["verify", "--receipt", "-", local, "--json"])
        .stdin(std::fs::File::open(&path).unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    // With a key and without the flag, a local receipt proves no signer: invalid.
    let (verdict, code) = runx_verify(&["--receipt", &path, "--json"], &sign_env());
    assert_eq!(code, 3, "{verdict}");
    assert_eq!(
        verdict["findings"][0]["code"], "signature_unsupported_issuer",
        "{verdict}"
    );

    // The receipt directory, and one receipt of it by a start of its id.
    let (all, code) = runx_verify(&[local, "--json"], &[]);
    assert_eq!(code, 0, "{all}");
    assert_eq!(all["valid"], true, "{all}");
    assert_eq!(all["trees"][0]["root_receipt_id"], id.as_str(), "{all}");
    let prefix = &id["sha256:".len().."sha256:".len() + 12];
    let (one, code) = runx_verify(&[prefix, local, "--json"], &[]);
    assert_eq!(code, 0, "{one}");
    assert_eq!(one["trees"].as_array().unwrap().len(), 1, "{one}");

    // Changed after it was written: invalid (3), saying what.
    let original = read_json(Path::new(&path));
    for (what, change, part, finding) in [
        (
            "seal",
            (|r: &mut Value| r["seal"]["summary"] = json!("all good")) as Change,
            "digest",
            "seal_digest_mismatch",
        ),
        (
            "evidence",
            |r| r["metadata"]["evidence"]["output_digest"] = json!(sha256_hex(b"forged")),
            "evidence",
            "evidence_digest_mismatch",
        ),
    ] {
        let mut r = original.clone();
        change(&mut r);
        std::fs::write(&path, serde_json::to_vec_pretty(&r).unwrap()).unwrap();
        let (verdict, code) = runx_verify(&["--receipt", &path, local, "--json"], &[]);
        assert_eq!(code, 3, "{what}: {verdict}");
        assert_eq!(verdict["valid"], false, "{what}");
        assert_eq!(verdict[part]["status"], "invalid", "{what}: {verdict}");
        assert_eq!(verdict["findings"][0]["code"], finding, "{what}: {verdict}");
        let (all, code) = runx_verify(&[local, "--json"], &[]);
        assert_eq!((code, &all["valid"]), (3, &json!(false)), "{what}: {all}");
        // The human form says so too.
        let out = run_in(ws.path(), &["verify", "--receipt", &path, local], &[]);
        assert_eq!(out.status.code(), Some(3));
        assert!(
            stdout(&out).contains(finding) && stdout(&out).contains("verification: FAILED"),
            "{what}: {}",
            stdout(&out)
        );
    }
    std::fs::write(&path, serde_json::to_vec_pretty(&original).unwrap()).unwrap();

    // A receipt signed with a key verifies with that key, in production mode.
    let signed = imports_run(ws.path(), "[2]", &sign_env());
    let signed_path = signed["receipt_path"].as_str().unwrap();
    let (verdict, code) = runx_verify(&["--receipt", signed_path, "--json"], &sign_env());
    assert_eq!(code, 0, "{verdict}");
    assert_eq!(
        verdict["signature"],
        json!({"mode": "production", "status": "valid", "kid": KID})
    );
}

/// `runx history`: the receipts of the receipt directory, newest first, each `verified`,
/// `unverified` or `invalid`; with `--detail` and an id, that one in full.
#[test]
fn runx_history_lists_receipts_newest_first_with_their_verification() {
    let (ws, _) = workspace_with("imports");
    let first = imports_run(ws.path(), "[1]", &[]);
    let second = imports_run(ws.path(), "[2]", &sign_env());
    let third = imports_run(ws.path(), "[3]", &[]);
    let history = |args: &[&str], env: &[(&str, &str)]| {
        let mut all = vec!["history"];
        all.extend_from_slice(args);
        all.push("--json");
        let out = run_in(ws.path(), &all, env);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        serde_json::from_str::<Value>(&stdout(&out)).unwrap()
    };
    let rows = |h: &Value| -> Vec<(String, String)> {
        h["receipts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["id"].as_str().unwrap().to_string(),
                    r["verification"]["status"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    let id = |v: &Value| v["receipt_id"].as_str().unwrap().to_string();
    let status = |s: &str| s.to_string();

    // No key configured: whole receipts are unverified, signed or not.
    let h = history(&[], &[]);
    assert_eq!(
        rows(&h),
        [
            (id(&third), status("unverified")),
            (id(&second), status("unverified")),
            (id(&first), status("unverified")),
        ],
        "{h}"
    );
    let newest = &h["receipts"][0];
    assert_eq!(
        (&newest["skill"], &newest["runner"], &newest["status"]),
        (&json!("imports"), &json!("default"), &json!("closed"))
    );
    assert_eq!(newest["source_type"], "local");
    assert_eq!(h["receipts"][1]["source_type"], "ci");
    let times: Vec<&str> = h["receipts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["created_at"].as_str().unwrap())
        .collect();
    assert!(times.windows(2).all(|w| w[0] >= w[1]), "{times:?}");

    // The key configured (the signing key, or its verification half): the signed one verifies.
    let public = public_key();
    let verify_env = [
        ("RUNX_RECEIPT_VERIFY_KID", KID),
        (
            "RUNX_RECEIPT_VERIFY_ED25519_PUBLIC_KEY_BASE64",
            public.as_str(),
        ),
    ];
    for env in [&sign_env()[..], &verify_env[..]] {
        let h = history(&[], env);
        assert_eq!(
            rows(&h),
            [
                (id(&third), status("unverified")),
                (id(&second), status("verified")),
                (id(&first), status("unverified")),
            ],
            "{h}"
        );
    }

    // A receipt changed after it was written is invalid, whatever the key.
    let path = first["receipt_path"].as_str().unwrap();
    let mut r = read_json(Path::new(path));
    r["metadata"]["evidence"]["output_digest"] = json!(sha256_hex(b"forged"));
    std::fs::write(path, serde_json::to_vec_pretty(&r).unwrap()).unwrap();
    for env in [&[][..], &sign_env()[..]] {
        let h = history(&[], env);
        assert_eq!(rows(&h)[2], (id(&first), status("invalid")), "{h}");
        assert_eq!(rows(&h)[0].1, "unverified", "{h}");
    }

    // One receipt by a start of its id, in full.
    let full = id(&second);
    let one = history(
        &[&full["sha256:".len().."sha256:".len() + 12], "--detail"],
        &sign_env(),
    );
    assert_eq!(one["receipt"]["id"], full.as_str(), "{one}");
    assert_eq!(
        one["receipt"],
        read_json(Path::new(second["receipt_path"].as_str().unwrap()))
    );
    assert_eq!(one["verification"]["status"], "verified", "{one}");
    assert_eq!(one["verification"]["verdict"]["valid"], true, "{one}");
    let one = history(&[&id(&first), "--detail"], &[]);
    assert_eq!(one["verification"]["status"], "invalid", "{one}");
    // An id no receipt has.
    let out = run_in(
        ws.path(),
        &["history", "0123456789ab", "--detail", "--json"],
        &[],
    );
    // As runx ends `--detail` for a receipt that is not there.
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
}

/// A receipt's file is named by its content address (issue 43, item 5): a sealed receipt copied
/// over another run's file is reported by `runx receipt verify`, `runx verify` (which counted the
/// same id twice as valid) and `runx history` (which listed it twice), each naming the file.
#[test]
fn a_receipt_copied_over_another_runs_file_is_reported() {
    let (ws, _) = workspace_with("imports");
    let kept = imports_run(ws.path(), "[1]", &[]);
    let over = imports_run(ws.path(), "[2]", &[]);
    let (kept_path, over_path) = (
        kept["receipt_path"].as_str().unwrap().to_string(),
        over["receipt_path"].as_str().unwrap().to_string(),
    );
    std::fs::copy(&kept_path, &over_path).unwrap();
    let local = "--allow-local-development-signatures";

    let out = run_in(ws.path(), &["receipt", "verify", &over_path, local], &[]);
    assert_ne!(out.status.code(), Some(0), "{}", stdout(&out));
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert!(said.contains("copied or renamed"), "{}", said);
    let out = run_in(ws.path(), &["receipt", "verify", &kept_path, local], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));

    let out = run_in(ws.path(), &["verify", local, "--json"], &[]);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["valid"], false, "{v}");
    let invalid: Vec<&Value> = v["trees"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["valid"] == false)
        .collect();
    assert_eq!(invalid.len(), 1, "{v}");
    assert_eq!(invalid[0]["file"], over_path.as_str(), "{v}");
    assert_eq!(
        invalid[0]["findings"][0]["code"], "file_name_mismatch",
        "{v}"
    );
    let out = run_in(ws.path(), &["verify", "--receipt", &over_path, local], &[]);
    assert_eq!(out.status.code(), Some(3), "{}", stdout(&out));

    let out = run_in(ws.path(), &["history", "--json"], &[]);
    let h: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let statuses: Vec<(&str, &str)> = h["receipts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["file"].as_str().unwrap(),
                r["verification"]["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert!(
        statuses.contains(&(over_path.as_str(), "invalid")),
        "{statuses:?}"
    );
    assert!(
        statuses.contains(&(kept_path.as_str(), "unverified")),
        "{statuses:?}"
    );
}
