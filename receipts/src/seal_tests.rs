use crate::keys::decode_base64;
use crate::names::SIGN_NAMES;
use crate::*;
use base64::Engine as _;
use proptest::prelude::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use zeroize::Zeroizing;

/// RFC 8032, section 7.1, TEST 1: the secret key (seed) and its public key.
const RFC_SEED_HEX: &str = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60";
const RFC_PUBLIC_HEX: &str = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn seed() -> Vec<u8> {
    hex::decode(RFC_SEED_HEX).expect("hex")
}

fn signer() -> Signer {
    Signer::new("key-1", &b64(&seed()), "ci").expect("signer")
}

fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<Zeroizing<String>> {
    let map: BTreeMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |name| map.get(name).cloned().map(Zeroizing::new)
}

#[test]
fn the_seed_is_an_rfc8032_secret_key() {
    let key = signer().verify_key();
    assert_eq!(
        key.public_key_base64(),
        b64(&hex::decode(RFC_PUBLIC_HEX).expect("hex"))
    );
    assert_eq!(
        key.public_key_sha256(),
        sha256_hex(&hex::decode(RFC_PUBLIC_HEX).expect("hex"))
    );
}

#[test]
fn a_signature_verifies_and_binds_every_field_of_its_block() {
    let s = signer();
    let digest = sha256_hex(b"body");
    let block = s.sign(&digest);
    assert_eq!(block.alg, "Ed25519");
    assert_eq!(
        (block.kid.as_str(), block.issuer_type.as_str()),
        ("key-1", "ci")
    );
    assert!(block.value.starts_with("base64:"), "{}", block.value);
    let key = s.verify_key();
    assert_eq!(key.verify(&digest, &block), Ok(()));

    let check = |b: &SignatureBlock, d: &str| key.verify(d, b).map_err(|(c, _)| c);
    assert_eq!(
        check(&block, &sha256_hex(b"other body")),
        Err(SignatureCheck::Signature)
    );
    let changed = |f: &dyn Fn(&mut SignatureBlock)| {
        let mut b = block.clone();
        f(&mut b);
        check(&b, &digest)
    };
    assert_eq!(
        changed(&|b| b.alg = "RS256".into()),
        Err(SignatureCheck::Algorithm)
    );
    assert_eq!(
        changed(&|b| b.kid = "key-2".into()),
        Err(SignatureCheck::KeyId)
    );
    assert_eq!(
        changed(&|b| b.public_key_sha256 = sha256_hex(b"x")),
        Err(SignatureCheck::PublicKey)
    );
    assert_eq!(
        changed(&|b| b.issuer_type = "local".into()),
        Err(SignatureCheck::IssuerType)
    );
    // A relabelled issuer type is a valid one, but the signature covers it.
    assert_eq!(
        changed(&|b| b.issuer_type = "hosted".into()),
        Err(SignatureCheck::Signature)
    );
    assert_eq!(
        changed(&|b| b.value = b.value.replacen("base64:", "", 1)),
        Err(SignatureCheck::Signature)
    );
    assert_eq!(
        changed(&|b| b.value = "base64:AAAA".into()),
        Err(SignatureCheck::Signature)
    );
    // Every single-character change of the value is refused.
    let value = block.value.clone();
    for i in "base64:".len()..value.len() {
        let mut bytes = value.clone().into_bytes();
        bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
        let v = String::from_utf8(bytes).expect("ascii");
        assert_eq!(
            changed(&|b| b.value = v.clone()),
            Err(SignatureCheck::Signature),
            "byte {i}"
        );
    }
    // The same signature in another base64 form is refused: one receipt has one spelling, so
    // its bytes cannot be rewritten without the signature failing (padded standard base64,
    // and padded URL-safe base64, decode to the same 64 bytes).
    let raw = decode_base64(&value["base64:".len()..]).expect("base64");
    assert_eq!(
        changed(&|b| b.value = format!("base64:{}", b64(&raw))),
        Err(SignatureCheck::Signature)
    );
    let padded = format!("{value}==");
    assert_eq!(
        changed(&|b| b.value = padded.clone()),
        Err(SignatureCheck::Signature)
    );
}

#[test]
fn another_key_with_the_same_id_does_not_verify() {
    let digest = sha256_hex(b"body");
    let block = signer().sign(&digest);
    let other = Signer::new("key-1", &b64(&[7u8; 32]), "ci").expect("signer");
    let (check, message) = other
        .verify_key()
        .verify(&digest, &block)
        .expect_err("other key");
    assert_eq!(check, SignatureCheck::PublicKey, "{message}");
}

#[test]
fn half_keys_are_refused_and_name_what_is_missing() {
    let seed = b64(&seed());
    assert!(Signer::from_lookup(&lookup(&[])).expect("none").is_none());
    // Blank values count as unset.
    assert!(
        Signer::from_lookup(&lookup(&[(SIGN_KID_ENV, "  ")]))
            .expect("blank")
            .is_none()
    );
    for given in [
        vec![(SIGN_KID_ENV, "k")],
        vec![(SIGN_SEED_ENV, seed.as_str())],
        vec![(SIGN_KID_ENV, "k"), (SIGN_SEED_ENV, seed.as_str())],
        vec![(SIGN_ISSUER_TYPE_ENV, "ci"), (SIGN_SEED_ENV, seed.as_str())],
    ] {
        let e = Signer::from_lookup(&lookup(&given)).expect_err("half");
        let message = e.to_string();
        assert!(matches!(e, KeyError::Incomplete { .. }), "{message}");
        for name in SIGN_NAMES {
            assert!(message.contains(name), "{message}");
        }
        assert!(!message.contains(&seed), "the seed leaked: {message}");
    }
    let e = VerifyKey::from_lookup(&lookup(&[(VERIFY_KID_ENV, "k")])).expect_err("half");
    assert!(e.to_string().contains(VERIFY_PUBLIC_KEY_ENV), "{e}");
    let s = Signer::from_lookup(&lookup(&[
        (SIGN_KID_ENV, " k "),
        (SIGN_SEED_ENV, &seed),
        (SIGN_ISSUER_TYPE_ENV, "hosted"),
    ]))
    .expect("whole")
    .expect("some");
    assert_eq!((s.kid(), s.issuer_type()), ("k", IssuerType::Hosted));
}

#[test]
fn malformed_values_are_refused_without_quoting_them() {
    let good = b64(&seed());
    let secret_looking = "c2VjcmV0LXNlZWQ";
    let cases: Vec<(&str, String, &str, &str)> = vec![
        ("k", "not base64 !!".to_string(), "ci", "is not base64"),
        ("k", secret_looking.to_string(), "ci", "bytes"),
        ("k", b64(&[1u8; 31]), "ci", "decodes to 31 bytes"),
        ("k", b64(&[1u8; 64]), "ci", "decodes to 64 bytes"),
        ("k", good.clone(), "local", "`local`"),
        ("k", good.clone(), "verifier", "`verifier`"),
        ("k", good.clone(), "CI", "`CI`"),
        ("a key", good.clone(), "ci", "printable ASCII"),
        ("k\u{1b}[2J", good.clone(), "ci", "printable ASCII"),
    ];
    for (kid, seed, issuer, expect) in cases {
        let e = Signer::new(kid, &seed, issuer).expect_err("malformed");
        let message = e.to_string();
        assert!(message.contains(expect), "{message}");
        assert!(!message.contains(&seed), "value quoted: {message}");
        assert!(!message.contains('\u{1b}'), "control char: {message:?}");
    }
    // URL-safe, unpadded and padded spellings all decode.
    let raw = seed();
    for spelled in [
        b64(&raw),
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&raw),
        base64::engine::general_purpose::STANDARD_NO_PAD.encode(&raw),
    ] {
        let s = Signer::new("k", &spelled, "ci").expect("spelling");
        assert_eq!(
            s.verify_key().public_key_base64(),
            signer().verify_key().public_key_base64()
        );
    }
    let e = VerifyKey::new("k", &b64(&[0u8; 31])).expect_err("short");
    assert!(e.to_string().contains("31 bytes"), "{e}");
}

#[test]
fn debug_shows_no_secret() {
    let text = format!("{:?}", signer());
    assert!(text.contains("key-1"), "{text}");
    assert!(!text.to_lowercase().contains(&RFC_SEED_HEX[..16]), "{text}");
    assert!(!text.contains(&b64(&seed())), "{text}");
}

#[test]
fn signing_names_are_recognised_in_any_case() {
    for name in [
        SIGN_KID_ENV,
        SIGN_SEED_ENV,
        SIGN_ISSUER_TYPE_ENV,
        "RUNX_RECEIPT_SIGN_ANYTHING",
        "runx_receipt_sign_ed25519_seed_base64",
    ] {
        assert!(is_signing_name(name), "{name}");
    }
    for name in [
        VERIFY_KID_ENV,
        VERIFY_PUBLIC_KEY_ENV,
        RECEIPT_DIR_ENV,
        "RUNX_RECEIPT_SIG",
        "REGION",
    ] {
        assert!(!is_signing_name(name), "{name}");
    }
}

fn key_file(dir: &Path, name: &str, text: &str, mode: u32) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("chmod");
    path
}

#[test]
fn key_files_hold_the_same_values_and_are_checked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let seed = b64(&seed());
    let good = format!(
        "# the CI signing key\n\n{SIGN_KID_ENV}=key-1\nexport {SIGN_SEED_ENV}=\"{seed}\"\n{SIGN_ISSUER_TYPE_ENV} = 'ci'\n"
    );
    let path = key_file(dir.path(), "good", &good, 0o600);
    let s = Signer::from_file(&path).expect("key file");
    assert_eq!(s.verify_key(), signer().verify_key());

    let refused = |name: &str, text: &str, mode: u32, expect: &str| {
        let path = key_file(dir.path(), name, text, mode);
        let message = Signer::from_file(&path).expect_err(name).to_string();
        assert!(message.contains(expect), "{name}: {message}");
        assert!(!message.contains(&seed), "{name}: seed quoted: {message}");
    };
    refused("open", &good, 0o644, "chmod 600");
    refused("group", &good, 0o640, "group or others");
    refused(
        "half",
        &format!("{SIGN_KID_ENV}=k\n{SIGN_SEED_ENV}={seed}\n"),
        0o600,
        SIGN_ISSUER_TYPE_ENV,
    );
    refused("empty", "# nothing\n", 0o600, "names none of");
    refused(
        "foreign",
        &format!("{good}AWS_SECRET_ACCESS_KEY={seed}\n"),
        0o600,
        "line 6: names a variable other than",
    );
    refused(
        "twice",
        &format!("{good}{SIGN_KID_ENV}=other\n"),
        0o600,
        "a second time",
    );
    refused(
        "garbage",
        &format!("{seed}\n"),
        0o600,
        "line 1: names a variable other than",
    );
    refused(
        "unpadded",
        &format!(
            "{}\n",
            base64::engine::general_purpose::STANDARD_NO_PAD.encode(self::seed())
        ),
        0o600,
        "line 1: is not NAME=VALUE",
    );
    refused("large", &"#".repeat(5000), 0o600, "larger than 4096 bytes");
    let missing = Signer::from_file(&dir.path().join("absent")).expect_err("missing");
    assert!(
        missing.to_string().contains("cannot be opened"),
        "{missing}"
    );

    // A FIFO is refused at once instead of blocking the run.
    let fifo = dir.path().join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("mkfifo");
    let e = Signer::from_file(&fifo).expect_err("fifo");
    assert!(e.to_string().contains("not a regular file"), "{e}");
    // A directory too.
    let e = Signer::from_file(dir.path()).expect_err("dir");
    assert!(e.to_string().contains("not a regular file"), "{e}");

    // A verification key file: public, so any mode; only the two verify names.
    let public = key_file(
        dir.path(),
        "public",
        &format!(
            "{VERIFY_KID_ENV}=key-1\n{VERIFY_PUBLIC_KEY_ENV}={}\n",
            signer().verify_key().public_key_base64()
        ),
        0o644,
    );
    assert_eq!(
        VerifyKey::from_file(&public).expect("public"),
        signer().verify_key()
    );
    let e = VerifyKey::from_file(&path).expect_err("a signing file is not a public key file");
    assert!(e.to_string().contains(SIGN_KID_ENV), "{e}");
}

fn evidence_with_timings(values: [f64; 6]) -> RunEvidence {
    RunEvidence {
        schema: crate::EVIDENCE_SCHEMA.to_string(),
        id: "1-2-3".to_string(),
        limits: BTreeMap::from([("huge".to_string(), u64::MAX)]),
        artifact: Some(ArtifactProvenance {
            timings: PageTimings {
                admission_ms: values[0],
                framing_ms: values[1],
                call_ms: values[2],
                engine_ms: values[3],
                result_ms: values[4],
                wall_ms: values[5],
            },
            ..ArtifactProvenance::default()
        }),
        ..RunEvidence::default()
    }
}

fn receipt_of(evidence: &RunEvidence, signer: Option<&Signer>) -> Value {
    let h = sha256_hex(b"x");
    let mut doc = crate::runx::skill_receipt(&crate::runx::SkillRun {
        skill: "s".into(),
        runner: "r".into(),
        run_id: "run_r_0".into(),
        harness_id: "hrn_run_r_0_r".into(),
        seal: crate::runx::SealParts {
            disposition: "closed".into(),
            reason_code: "process_closed".into(),
            summary: "javascript r completed".into(),
            closed_at: "2026-12-01T00:00:00.000Z".into(),
        },
        commitments: Vec::new(),
        intent_key: h.clone(),
        trigger_fingerprint: h.clone(),
        content_hash: h.clone(),
        profile_hash: h,
        execution_boundary: None,
        evidence: as_written(evidence).expect("evidence"),
    });
    crate::runx::seal(&mut doc, signer);
    doc
}

proptest! {
    /// The evidence a receipt names by digest is the evidence a reader of its file finds,
    /// whatever floats it holds (serde_json does not parse every float back exactly; both
    /// sides parse the same text).
    #[test]
    fn the_evidence_digest_is_the_one_its_file_gives(values in proptest::array::uniform6(any::<f64>().prop_filter("finite", |f| f.is_finite()))) {
        let doc = receipt_of(&evidence_with_timings(values), Some(&signer()));
        let text = serde_json::to_string_pretty(&doc).expect("json");
        let read: Value = serde_json::from_str(&text).expect("parse");
        let v = crate::runx::verdict(&read, &crate::Trust::Key(signer().verify_key()));
        prop_assert!(v.valid, "{:?}", v);
    }
}

#[test]
fn sealing_again_gives_the_same_receipt() {
    let evidence = evidence_with_timings([0.1, 0.2, 0.30000000000000004, 1e-7, 1e21, 5.0]);
    let mut doc = receipt_of(&evidence, None);
    let first = doc.clone();
    crate::runx::seal(&mut doc, None);
    assert_eq!(doc, first, "the seal is not part of what it seals");
    crate::runx::seal(&mut doc, Some(&signer()));
    assert_ne!(doc["digest"], first["digest"], "the issuer is in the body");
    assert_eq!(doc["issuer"]["kid"], signer().kid());
}
