//! Checking receipt files offline: what `runx receipt verify` runs.
//!
//! A file verifies when it is a JSON object without duplicate keys and then, by its `schema`:
//! - a `runx.receipt.v1` has runx's verdict `valid` ([`crate::runx::verdict`]): field rules,
//!   digest, content address, signature (with the verification key, or a local-development
//!   signature when the trust allows it) and this runtime's evidence;
//! - a `runx-rs.harness_receipt.v1` meets its JSON Schema, its recomputed body digest equals its
//!   `body_digest` and its signature verifies with the key ([`VerifyKey::verify`]; under local
//!   development trust it may be unsigned), and every case receipt it lists lies beside it, has
//!   the digest it records and verifies in turn.
//!
//! The first check that fails is reported with its [`Check`] and a message saying what differs.

use crate::bounds::{RECEIPT_BYTES, RECEIPT_VALUES};
use crate::digest::digest;
use crate::keys::SignatureCheck;
use crate::receipt::HARNESS_RECEIPT_SCHEMA;
use crate::runx::{RECEIPT_SCHEMA, Trust, verdict};
use crate::seal::body_digest;
use crate::signature::SignatureBlock;
use crate::strict::parse_unique;
use serde::Serialize;
use serde_json::Value;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The check a receipt failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Check {
    /// The file cannot be read (missing, not a regular file, too large or too many values, a
    /// symbolic link in a directory).
    File,
    /// The file is not one JSON object with unique keys.
    Json,
    /// The receipt does not meet its schema.
    Schema,
    /// The body was changed: its digest is not the recorded `body_digest`.
    Body,
    /// The receipt carries no signature.
    Unsigned,
    /// The signature's algorithm is not Ed25519.
    Algorithm,
    /// The signature names another key id than the verification key's.
    KeyId,
    /// The signature names another public key than the verification key.
    PublicKey,
    /// The signature names an issuer type that does not sign.
    IssuerType,
    /// The signature value is malformed or does not verify.
    Signature,
    /// A case receipt a harness receipt lists is missing, differs or does not verify.
    Cases,
    /// The receipt's `id` is not its content address.
    ContentAddress,
    /// A receipt field breaks one of runx's rules the schema alone does not state.
    Structure,
    /// This runtime's evidence in the receipt is not the document its signed act names.
    Evidence,
}

impl Check {
    /// The snake_case name, as `--json` prints it.
    pub const fn name(self) -> &'static str {
        match self {
            Check::File => "file",
            Check::Json => "json",
            Check::Schema => "schema",
            Check::Body => "body",
            Check::Unsigned => "unsigned",
            Check::Algorithm => "algorithm",
            Check::KeyId => "key_id",
            Check::PublicKey => "public_key",
            Check::IssuerType => "issuer_type",
            Check::Signature => "signature",
            Check::Cases => "cases",
            Check::ContentAddress => "content_address",
            Check::Structure => "structure",
            Check::Evidence => "evidence",
        }
    }
}

impl From<SignatureCheck> for Check {
    fn from(c: SignatureCheck) -> Check {
        match c {
            SignatureCheck::Algorithm => Check::Algorithm,
            SignatureCheck::KeyId => Check::KeyId,
            SignatureCheck::PublicKey => Check::PublicKey,
            SignatureCheck::IssuerType => Check::IssuerType,
            SignatureCheck::Signature => Check::Signature,
        }
    }
}

/// Why a receipt does not verify.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// The check that failed.
    pub check: Check,
    /// What differs, for a person.
    pub message: String,
}

impl Problem {
    fn new(check: Check, message: impl Into<String>) -> Problem {
        Problem {
            check,
            message: message.into(),
        }
    }
}

/// The result of verifying one file.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Verdict {
    /// The file.
    pub path: PathBuf,
    /// Its `schema`, when it could be read.
    pub schema: Option<String>,
    /// Its recorded `body_digest`, when it could be read.
    pub body_digest: Option<String>,
    /// The key id its signature names, when it has one.
    pub kid: Option<String>,
    /// For a harness receipt: `package/case` of every case it lists.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cases: Vec<String>,
    /// The first check that failed; `None` when the file verifies.
    pub problem: Option<Problem>,
}

impl Verdict {
    fn refused(path: &Path, problem: Problem) -> Verdict {
        Verdict {
            path: path.to_path_buf(),
            schema: None,
            body_digest: None,
            kid: None,
            cases: Vec::new(),
            problem: Some(problem),
        }
    }

    /// Whether the file verified.
    pub fn verified(&self) -> bool {
        self.problem.is_none()
    }
}

/// The files `paths` name: each file as given, and the `*.json` files directly inside each
/// directory, by name. Entries that cannot be receipts (symbolic links, FIFOs, ...) and paths
/// that do not exist come back as refused verdicts, so nothing named is silently skipped.
pub fn receipt_files(paths: &[PathBuf]) -> (Vec<PathBuf>, Vec<Verdict>) {
    let mut files = Vec::new();
    let mut refused = Vec::new();
    for path in paths {
        match std::fs::metadata(path) {
            Ok(meta) if meta.is_dir() => match list_dir(path) {
                Ok((f, r)) => {
                    files.extend(f);
                    refused.extend(r);
                }
                Err(e) => refused.push(Verdict::refused(
                    path,
                    Problem::new(Check::File, format!("cannot list the directory: {e}")),
                )),
            },
            // Files named explicitly are opened as named (following a link); `read` refuses
            // what is not a regular file.
            Ok(_) => files.push(path.clone()),
            Err(e) => refused.push(Verdict::refused(
                path,
                Problem::new(Check::File, format!("cannot be read: {e}")),
            )),
        }
    }
    (files, refused)
}

fn list_dir(dir: &Path) -> std::io::Result<(Vec<PathBuf>, Vec<Verdict>)> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "json") {
            names.push((path, entry.file_type()?));
        }
    }
    names.sort_by(|a, b| a.0.cmp(&b.0));
    let mut files = Vec::new();
    let mut refused = Vec::new();
    for (path, ty) in names {
        if ty.is_file() {
            files.push(path);
        } else {
            let what = if ty.is_symlink() {
                "is a symbolic link; links inside a receipt directory are not followed"
            } else {
                "is not a regular file"
            };
            refused.push(Verdict::refused(&path, Problem::new(Check::File, what)));
        }
    }
    Ok((files, refused))
}

/// Reads a receipt file: a regular file of at most [`RECEIPT_BYTES`] holding one JSON object
/// with unique keys and at most [`RECEIPT_VALUES`] values.
pub fn read_receipt(path: &Path) -> Result<Value, Problem> {
    let file_problem = |m: String| Problem::new(Check::File, m);
    // O_NONBLOCK: a FIFO named as a receipt must not hang the verifier.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| file_problem(format!("cannot be opened: {e}")))?;
    let meta = file
        .metadata()
        .map_err(|e| file_problem(format!("cannot be read: {e}")))?;
    if !meta.is_file() {
        return Err(file_problem("is not a regular file".to_string()));
    }
    let mut bytes = Vec::new();
    file.take(RECEIPT_BYTES.max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| file_problem(format!("cannot be read: {e}")))?;
    if bytes.len() as u64 > RECEIPT_BYTES.max {
        return Err(file_problem(format!(
            "is larger than {} bytes, the most a receipt may be ({})",
            RECEIPT_BYTES.max, RECEIPT_BYTES.name
        )));
    }
    // Counted before parsing: a parsed value costs 32 bytes and more, so a file of tiny values
    // within the size bound would cost many times its size in memory.
    if !RECEIPT_VALUES.admits(&bytes) {
        return Err(file_problem(format!(
            "holds more than {} JSON values, the most a receipt may hold ({}); it was not parsed",
            RECEIPT_VALUES.max, RECEIPT_VALUES.name
        )));
    }
    let value = parse_unique(&bytes)
        .map_err(|e| Problem::new(Check::Json, format!("is not valid receipt JSON: {e}")))?;
    if !value.is_object() {
        return Err(Problem::new(Check::Json, "is not a JSON object"));
    }
    Ok(value)
}

/// Verifies the receipt file at `path` with `trust`.
pub fn verify_file(path: &Path, trust: &Trust) -> Verdict {
    let doc = match read_receipt(path) {
        Ok(d) => d,
        Err(p) => return Verdict::refused(path, p),
    };
    let text = |p: &str| doc.pointer(p).and_then(Value::as_str).map(str::to_string);
    let runx = text("/schema").as_deref() == Some(RECEIPT_SCHEMA);
    let mut verdict = Verdict {
        path: path.to_path_buf(),
        schema: text("/schema"),
        body_digest: if runx {
            text("/digest")
        } else {
            text("/body_digest")
        },
        kid: if runx {
            text("/issuer/kid")
        } else {
            text("/signature/kid")
        },
        cases: Vec::new(),
        problem: None,
    };
    let checked = check_sealed(&doc, trust).and_then(|()| {
        if let Some(problem) = misnamed(path, &doc) {
            return Err(problem);
        }
        if verdict.schema.as_deref() == Some(HARNESS_RECEIPT_SCHEMA) {
            verdict.cases = case_names(&doc);
            check_cases(path, &doc, trust)
        } else {
            Ok(())
        }
    });
    verdict.problem = checked.err();
    verdict
}

/// Why a runx receipt's file name is not its own: runx names a receipt `sha256-<hex>.json` after
/// its id (its content address), so a file of that form holding another receipt was copied or
/// renamed over another run's, and its name hands out an id that is not the receipt's. A file
/// named otherwise claims no id. `None` when the name is the receipt's or claims none.
pub fn misnamed(path: &Path, doc: &Value) -> Option<Problem> {
    if doc.get("schema").and_then(Value::as_str) != Some(RECEIPT_SCHEMA) {
        return None;
    }
    let name = path.file_name()?.to_str()?;
    let hex = name.strip_prefix("sha256-")?.strip_suffix(".json")?;
    if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let id = doc.get("id").and_then(Value::as_str).unwrap_or_default();
    if crate::runx::file_name(id) == name {
        return None;
    }
    let holds = if id.is_empty() {
        "a receipt with no id".to_string()
    } else {
        format!("receipt {id}")
    };
    Some(Problem::new(
        Check::ContentAddress,
        format!(
            "the file is named for receipt sha256:{hex} but holds {holds}: runx names a receipt's file by its content address, so this one was copied or renamed over another"
        ),
    ))
}

/// Schema, seal and signature of one receipt document, by its `schema`.
pub fn check_sealed(doc: &Value, trust: &Trust) -> Result<(), Problem> {
    if doc.get("schema").and_then(Value::as_str) == Some(RECEIPT_SCHEMA) {
        let v = verdict(doc, trust);
        return match v.first_problem() {
            None => Ok(()),
            Some((code, message)) => Err(Problem::new(check_of(code), message)),
        };
    }
    check_schema(doc)?;
    let recorded = doc
        .get("body_digest")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let actual = body_digest(doc).unwrap_or_default();
    if actual != recorded {
        return Err(Problem::new(
            Check::Body,
            format!("the body was changed: its digest is {actual}, the receipt records {recorded}"),
        ));
    }
    let signature = doc.get("signature").cloned().unwrap_or(Value::Null);
    match (trust, signature.is_null()) {
        // Local development proves integrity only: an unsigned harness receipt passes.
        (Trust::LocalDevelopment | Trust::KeyOrLocal(_), true) => Ok(()),
        (Trust::LocalDevelopment, false) => Err(Problem::new(
            Check::Signature,
            "the receipt is signed with a key; verify it with that key, not as local development",
        )),
        (Trust::Key(_), true) => Err(Problem::new(
            Check::Unsigned,
            "the receipt is unsigned (no signing key was configured when it was written)",
        )),
        (Trust::Key(key) | Trust::KeyOrLocal(key), false) => {
            // The schema has checked the block's shape.
            let block: SignatureBlock = serde_json::from_value(signature)
                .map_err(|e| Problem::new(Check::Schema, format!("signature: {e}")))?;
            key.verify(recorded, &block)
                .map_err(|(check, message)| Problem::new(check.into(), message))
        }
    }
}

/// The check a runx verdict's finding code belongs to.
fn check_of(code: &str) -> Check {
    match code {
        "receipt_parse_error" => Check::Schema,
        "seal_digest_mismatch" => Check::Body,
        "content_address_mismatch" => Check::ContentAddress,
        "evidence_digest_mismatch" => Check::Evidence,
        "signature_unsupported_issuer" => Check::IssuerType,
        "signature_key_missing" => Check::KeyId,
        "signature_key_hash_mismatch" => Check::PublicKey,
        "signature_malformed" | "signature_invalid" => Check::Signature,
        _ => Check::Structure,
    }
}

/// The receipt meets the JSON Schema of its `schema`.
pub fn check_schema(doc: &Value) -> Result<(), Problem> {
    crate::schemas::schema_errors(doc).map_err(|m| Problem::new(Check::Schema, m))
}

fn case_names(doc: &Value) -> Vec<String> {
    let field = |c: &Value, k: &str| c.get(k).and_then(Value::as_str).unwrap_or("?").to_string();
    doc.get("cases")
        .and_then(Value::as_array)
        .map(|cases| {
            cases
                .iter()
                .map(|c| format!("{}/{}", field(c, "package"), field(c, "case")))
                .collect()
        })
        .unwrap_or_default()
}

/// Every case receipt a (verified) harness receipt lists lies beside it, has the recorded
/// digest and verifies.
fn check_cases(path: &Path, doc: &Value, trust: &Trust) -> Result<(), Problem> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let cases = doc.get("cases").and_then(Value::as_array);
    for case in cases.into_iter().flatten() {
        let name = |k: &str| case.get(k).and_then(Value::as_str).unwrap_or_default();
        let label = format!("case `{}/{}`", name("package"), name("case"));
        let (Some(file), Some(recorded)) = (
            case.get("receipt").and_then(Value::as_str),
            case.get("receipt_digest").and_then(Value::as_str),
        ) else {
            return Err(Problem::new(
                Check::Cases,
                format!("{label} has no receipt, so the run cannot be verified as a whole"),
            ));
        };
        // The schema restricts `file` to a plain file name, so it cannot leave `dir`.
        let case_path = dir.join(file);
        let case_doc = read_receipt(&case_path).map_err(|p| {
            Problem::new(
                Check::Cases,
                format!("{label}: its receipt {file} {}", p.message),
            )
        })?;
        let actual = digest(&case_doc);
        if actual != recorded {
            return Err(Problem::new(
                Check::Cases,
                format!(
                    "{label}: its receipt {file} was changed: its digest is {actual}, the harness receipt records {recorded}"
                ),
            ));
        }
        if case_doc.get("schema").and_then(Value::as_str) != Some(RECEIPT_SCHEMA) {
            return Err(Problem::new(
                Check::Cases,
                format!("{label}: {file} is not a {RECEIPT_SCHEMA}"),
            ));
        }
        check_sealed(&case_doc, trust).map_err(|p| {
            Problem::new(
                Check::Cases,
                format!(
                    "{label}: its receipt {file} does not verify ({}): {}",
                    p.check.name(),
                    p.message
                ),
            )
        })?;
    }
    Ok(())
}
