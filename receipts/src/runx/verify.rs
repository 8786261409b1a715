//! Verifying a `runx.receipt.v1` as runx verifies it, with one check of this runtime's own.
//!
//! A verdict has runx's shape (`runx.verify_verdict.v1`): whether the recorded `digest` is the
//! body's, whether the `id` is the receipt's content address, whether the signature holds for
//! the trust asked for, and the findings, each with runx's code and the path at fault. The
//! fields are read by this runtime's own schema of runx's field rules
//! (`schemas/runx.receipt.v1.json`) first; a receipt that does not meet them is one
//! `receipt_parse_error`, as runx's strict reader refuses it. Added here: when the receipt
//! carries this runtime's evidence document (`metadata.evidence`), its digest must be the one
//! the signed act names (`evidence` in the verdict); runx itself does not read `metadata`.

use super::c14n::{body_digest, c14n_digest, identity_digest};
use super::seal::{LOCAL_ISSUER_TYPE, LOCAL_SIGNATURE_PREFIX};
use super::signature::DigestSignature;
use super::skill::{EVIDENCE_LABEL, EVIDENCE_URI_PREFIX};
use crate::keys::VerifyKey;
use serde::Serialize;
use serde_json::Value;

/// The schema name of a verdict, as runx names it.
pub const VERDICT_SCHEMA: &str = "runx.verify_verdict.v1";

/// Whom a verifier trusts.
#[derive(Clone, Debug)]
pub enum Trust {
    /// Signatures by this key (issuers `hosted` or `ci`).
    Key(VerifyKey),
    /// Local-development signatures (`sig:` and the digest), which prove integrity only.
    LocalDevelopment,
    /// Both: a receipt whose issuer is `local` as local development, any other with this key.
    /// (runx lets a key win over local development; this lets one verifier read a directory
    /// that holds both kinds.)
    KeyOrLocal(VerifyKey),
}

impl Trust {
    /// `production` or `local-development`, as the verdict names the mode.
    pub fn mode(&self) -> &'static str {
        match self {
            Trust::Key(_) => "production",
            Trust::LocalDevelopment => "local-development",
            Trust::KeyOrLocal(_) => "production+local-development",
        }
    }
}

/// One thing wrong with a receipt.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// runx's code (`seal_digest_mismatch`, `signature_invalid`, ...), or this runtime's
    /// (`evidence_digest_mismatch`).
    pub code: &'static str,
    /// Where, as a path into the receipt (`$` for the whole of it).
    pub path: String,
    /// What differs, for a person.
    pub message: String,
}

/// A recomputed value against the recorded one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Recomputed {
    /// `valid`, `invalid` or `not_evaluated`.
    pub status: &'static str,
    /// What it should be.
    pub expected: Option<String>,
    /// What the receipt records.
    pub actual: Option<String>,
}

impl Recomputed {
    fn not_evaluated() -> Recomputed {
        Recomputed {
            status: "not_evaluated",
            expected: None,
            actual: None,
        }
    }

    fn of(expected: Option<String>, actual: Option<String>) -> Recomputed {
        let status = if expected.is_some() && expected == actual {
            "valid"
        } else {
            "invalid"
        };
        Recomputed {
            status,
            expected,
            actual,
        }
    }

    fn valid_or_absent(&self) -> bool {
        self.status != "invalid"
    }
}

/// How the signature fared.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SignatureStatus {
    /// `production` or `local-development`.
    pub mode: &'static str,
    /// `valid`, `invalid` or `not_evaluated`.
    pub status: &'static str,
    /// The key id the issuer names.
    pub kid: Option<String>,
}

/// What a single receipt can say about its lineage: nothing proven.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LineageStatus {
    /// Always `unverified`.
    pub status: &'static str,
    /// Why.
    pub message: &'static str,
}

/// The verdict on one receipt.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RunxVerdict {
    /// [`VERDICT_SCHEMA`].
    pub schema: &'static str,
    /// The receipt's `id`, when it could be read.
    pub receipt_id: Option<String>,
    /// Whether every check passed.
    pub valid: bool,
    /// The recorded `digest` against the body's.
    pub digest: Recomputed,
    /// The `id` against the content address.
    pub content_address: Recomputed,
    /// The signature.
    pub signature: SignatureStatus,
    /// Lineage, which one receipt cannot prove.
    pub lineage: LineageStatus,
    /// This runtime's evidence against the digest the signed act names; `not_evaluated` for a
    /// receipt without it.
    pub evidence: Recomputed,
    /// Everything found wrong, in check order.
    pub findings: Vec<Finding>,
}

impl RunxVerdict {
    /// The first finding, or the first recomputed value that differs, as `(code, message)`.
    pub fn first_problem(&self) -> Option<(&'static str, String)> {
        if let Some(f) = self.findings.first() {
            return Some((f.code, format!("{} at {}", f.message, f.path)));
        }
        (self.content_address.status == "invalid").then(|| {
            (
                "content_address_mismatch",
                format!(
                    "the id is {}, but the receipt's content address is {}",
                    self.content_address.actual.as_deref().unwrap_or("missing"),
                    self.content_address
                        .expected
                        .as_deref()
                        .unwrap_or("unknown")
                ),
            )
        })
    }
}

fn text<'a>(doc: &'a Value, pointer: &str) -> Option<&'a str> {
    doc.pointer(pointer).and_then(Value::as_str)
}

fn finding(code: &'static str, path: impl Into<String>, message: impl Into<String>) -> Finding {
    Finding {
        code,
        path: path.into(),
        message: message.into(),
    }
}

/// Verifies `doc` as a `runx.receipt.v1` with `trust`.
pub fn verdict(doc: &Value, trust: &Trust) -> RunxVerdict {
    let mut v = RunxVerdict {
        schema: VERDICT_SCHEMA,
        receipt_id: text(doc, "/id").map(str::to_string),
        valid: false,
        digest: Recomputed::not_evaluated(),
        content_address: Recomputed::not_evaluated(),
        signature: SignatureStatus {
            mode: trust.mode(),
            status: "not_evaluated",
            kid: text(doc, "/issuer/kid").map(str::to_string),
        },
        lineage: LineageStatus {
            status: "unverified",
            message: "single receipt verification cannot prove receipt-tree lineage",
        },
        evidence: Recomputed::not_evaluated(),
        findings: Vec::new(),
    };
    if let Err(message) = crate::schemas::schema_errors(doc) {
        v.receipt_id = None;
        v.findings
            .push(finding("receipt_parse_error", "$", message));
        return v;
    }
    structure(doc, &mut v.findings);
    let recomputed = body_digest(doc);
    v.digest = Recomputed::of(recomputed.clone(), text(doc, "/digest").map(str::to_string));
    if v.digest.status == "invalid" {
        v.findings.push(finding(
            "seal_digest_mismatch",
            "digest",
            "the recorded digest is not the digest of the receipt's body: the body was changed",
        ));
    }
    v.content_address = Recomputed::of(identity_digest(doc), v.receipt_id.clone());
    let signature_findings = signature(doc, trust, recomputed.as_deref().unwrap_or_default());
    v.signature.status = if signature_findings.is_empty() {
        "valid"
    } else {
        "invalid"
    };
    v.findings.extend(signature_findings);
    v.evidence = evidence(doc, &mut v.findings);
    v.valid = v.findings.is_empty()
        && v.digest.status == "valid"
        && v.content_address.status == "valid"
        && v.evidence.valid_or_absent();
    v
}

/// runx's structural checks that the field rules alone do not make.
fn structure(doc: &Value, findings: &mut Vec<Finding>) {
    for path in [
        "/issuer/public_key_sha256",
        "/authority/enforcement/profile_hash",
        "/idempotency/intent_key",
        "/idempotency/trigger_fingerprint",
        "/idempotency/content_hash",
        "/digest",
    ] {
        if !text(doc, path).is_some_and(|t| t.starts_with("sha256:")) {
            findings.push(finding(
                "hash_commitment_invalid",
                dotted(path),
                "is not a sha256: digest",
            ));
        }
    }
    let items = |p: &str| {
        doc.pointer(p)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    for (i, c) in items("/subject/commitments").iter().enumerate() {
        if !text(c, "/value").is_some_and(|t| t.starts_with("sha256:")) {
            findings.push(finding(
                "hash_commitment_invalid",
                format!("subject.commitments[{i}].value"),
                "is not a sha256: digest",
            ));
        }
    }
    for (i, child) in items("/lineage/children").iter().enumerate() {
        if text(child, "/type") != Some("receipt") {
            findings.push(finding(
                "child_receipt_ref_invalid",
                format!("lineage.children[{i}].type"),
                "a child of a receipt must be a receipt reference",
            ));
        }
    }
    let acts = items("/acts");
    let act_ids: Vec<&str> = acts.iter().filter_map(|a| text(a, "/id")).collect();
    for (i, d) in items("/decisions").iter().enumerate() {
        if let Some(id) = text(d, "/selected_act_id")
            && !act_ids.contains(&id)
        {
            findings.push(finding(
                "decision_selected_act_missing",
                format!("decisions[{i}].selected_act_id"),
                format!("names act {id}, which the receipt does not hold"),
            ));
        }
    }
    if acts.is_empty() {
        return;
    }
    let mut bound: Vec<String> = Vec::new();
    for act in &acts {
        for p in ["/criterion_bindings", "/intent/success_criteria"] {
            let list = act.pointer(p).and_then(Value::as_array);
            bound.extend(
                list.into_iter()
                    .flatten()
                    .filter_map(|b| text(b, "/criterion_id").map(str::to_string)),
            );
        }
    }
    for (i, c) in items("/seal/criteria").iter().enumerate() {
        let id = text(c, "/criterion_id").unwrap_or_default();
        if !bound.iter().any(|b| b == id) {
            findings.push(finding(
                "seal_criterion_unbound",
                format!("seal.criteria[{i}].criterion_id"),
                format!("criterion {id} is bound by no act"),
            ));
        }
    }
}

fn dotted(pointer: &str) -> String {
    pointer.trim_start_matches('/').replace('/', ".")
}

/// The signature's findings under `trust`, over the recomputed body digest.
fn signature(doc: &Value, trust: &Trust, digest: &str) -> Vec<Finding> {
    let value = text(doc, "/signature/value").unwrap_or_default();
    let one = |code, path: &str, message: String| vec![finding(code, path, message)];
    let local = text(doc, "/issuer/type") == Some(LOCAL_ISSUER_TYPE);
    let trust = match trust {
        Trust::KeyOrLocal(_) if local => &Trust::LocalDevelopment,
        Trust::KeyOrLocal(key) => &Trust::Key(key.clone()),
        other => other,
    };
    match trust {
        Trust::LocalDevelopment | Trust::KeyOrLocal(_) => {
            let Some(signed) = value
                .strip_prefix(LOCAL_SIGNATURE_PREFIX)
                .filter(|d| d.starts_with("sha256:"))
            else {
                return one(
                    "signature_malformed",
                    "signature.value",
                    "is not a local-development signature (`sig:sha256:...`); verify it with its key".to_string(),
                );
            };
            if signed == digest {
                Vec::new()
            } else {
                one(
                    "signature_invalid",
                    "signature.value",
                    "the local-development signature names another digest than the body's"
                        .to_string(),
                )
            }
        }
        Trust::Key(key) => {
            let issuer = text(doc, "/issuer/type").unwrap_or_default();
            if !matches!(issuer, "hosted" | "ci") {
                let why = if issuer == LOCAL_ISSUER_TYPE {
                    "a local-development signature proves no signer; accept it with --allow-local-development-signatures"
                } else {
                    "this issuer type does not sign receipts"
                };
                return one(
                    "signature_unsupported_issuer",
                    "issuer",
                    format!("issuer type `{issuer}`: {why}"),
                );
            }
            let kid = text(doc, "/issuer/kid").unwrap_or_default();
            if kid != key.kid() {
                return one(
                    "signature_key_missing",
                    "issuer",
                    format!(
                        "no verification key has id `{kid}` (the key given is `{}`)",
                        key.kid()
                    ),
                );
            }
            if text(doc, "/issuer/public_key_sha256") != Some(key.public_key_sha256().as_str()) {
                return one(
                    "signature_key_hash_mismatch",
                    "issuer.public_key_sha256",
                    "is not the digest of the verification key".to_string(),
                );
            }
            match key.verify_digest(digest, value) {
                Ok(()) => Vec::new(),
                Err(DigestSignature::Malformed) => one(
                    "signature_malformed",
                    "signature.value",
                    "is not `base64:` and a 64-byte Ed25519 signature".to_string(),
                ),
                Err(DigestSignature::Invalid) => one(
                    "signature_invalid",
                    "signature.value",
                    format!("does not verify with key `{kid}` over the body's digest"),
                ),
            }
        }
    }
}

/// This runtime's evidence against the digest the signed act names.
fn evidence(doc: &Value, findings: &mut Vec<Finding>) -> Recomputed {
    let named = doc
        .pointer("/acts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|a| a.get("artifact_refs").and_then(Value::as_array))
        .flatten()
        .find(|r| text(r, "/label") == Some(EVIDENCE_LABEL))
        .and_then(|r| text(r, "/uri"))
        .map(|uri| {
            uri.strip_prefix(EVIDENCE_URI_PREFIX)
                .unwrap_or(uri)
                .to_string()
        });
    let held = doc.pointer("/metadata/evidence").map(c14n_digest);
    if named.is_none() && held.is_none() {
        return Recomputed::not_evaluated();
    }
    let r = Recomputed::of(held, named);
    if r.status == "invalid" {
        findings.push(finding(
            "evidence_digest_mismatch",
            "metadata.evidence",
            "this runtime's evidence is not the document the signed act names by digest: it was changed or removed",
        ));
    }
    r
}
