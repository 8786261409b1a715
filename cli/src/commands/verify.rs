//! `runx verify`: runx's verification of receipts, with runx's verdicts and exit codes.
//!
//! `runx verify --receipt FILE|-` prints runx's verdict on one receipt (`runx.verify_verdict.v1`);
//! `runx verify [RECEIPT_ID]` verifies the receipts of the receipt directory (or the one with
//! that id). Exit 0 when everything is valid, 3 when something is not, 64 for a usage error, 1
//! when no verifier can be had (no key and no `--allow-local-development-signatures`).
//! `runx receipt verify` is this runtime's view of the same checks, over files and harness
//! receipts.

use crate::exit::EXIT_USAGE;
use crate::output::terminal_safe;
use crate::store::listing;
use runx_receipts::RECEIPT_BYTES;
use runx_receipts::runx::{Finding, RunxVerdict, Trust, verdict};
use runx_receipts::{parse_unique, read_receipt};
use serde_json::{Value, json};
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

/// Exit code of a receipt that does not verify, as runx exits.
const EXIT_INVALID: u8 = 3;

#[derive(clap::Args)]
pub struct VerifyArgs {
    /// Verify the receipt with this id (or a unique start of it) in the receipt directory;
    /// without it, every receipt there.
    pub receipt_id: Option<String>,
    /// Verify one receipt file, or `-` for stdin, and print runx's verdict on it.
    #[arg(long, value_name = "FILE|-", conflicts_with_all = ["receipt_id", "receipt_dir"])]
    pub receipt: Option<String>,
    /// The receipt directory; without it, `RUNX_RECEIPT_DIR`, else `.runx/receipts`.
    #[arg(long, value_name = "DIR")]
    pub receipt_dir: Option<PathBuf>,
    /// Accept local-development signatures (a run made without a signing key): integrity only.
    #[arg(long)]
    pub allow_local_development_signatures: bool,
    /// The verification key as a file of `NAME=VALUE` lines; without it the
    /// `RUNX_RECEIPT_VERIFY_*` variables, then the public half of a `RUNX_RECEIPT_SIGN_*` key.
    #[arg(long, value_name = "FILE")]
    pub public_key: Option<PathBuf>,
    /// Print JSON on stdout.
    #[arg(long, short = 'j')]
    pub json: bool,
}

/// Runs `runx verify`.
pub fn run(args: &VerifyArgs) -> ExitCode {
    let trust = match crate::keys::trust(
        args.public_key.as_deref(),
        args.allow_local_development_signatures,
    ) {
        Ok(t) => t,
        Err(e) => {
            if args.json {
                print_pretty(&json!({"status": "failure",
                    "error": {"code": "runtime_error", "message": e.to_string()}}));
            }
            errln!("runx: {e}");
            return ExitCode::from(1);
        }
    };
    match &args.receipt {
        Some(file) => one(file, &trust, args.json),
        None => store(args, &trust),
    }
}

fn print_pretty(v: &Value) {
    outln!("{}", serde_json::to_string_pretty(v).unwrap_or_default());
}

/// The verdict on a document that could not be read as a receipt at all.
fn unparsed(message: String, trust: &Trust) -> RunxVerdict {
    let mut v = verdict(&json!(null), trust);
    v.findings = vec![Finding {
        code: "receipt_parse_error",
        path: "$".to_string(),
        message,
    }];
    v
}

fn read_stdin() -> Result<Value, String> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .lock()
        .take(RECEIPT_BYTES.max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read stdin: {e}"))?;
    if bytes.len() as u64 > RECEIPT_BYTES.max {
        return Err(format!(
            "stdin holds more than {} bytes, the most a receipt may be",
            RECEIPT_BYTES.max
        ));
    }
    parse_unique(&bytes).map_err(|e| format!("is not valid receipt JSON: {e}"))
}

fn one(file: &str, trust: &Trust, as_json: bool) -> ExitCode {
    let doc = if file == "-" {
        read_stdin()
    } else {
        read_receipt(std::path::Path::new(file)).map_err(|p| p.message)
    };
    let v = match doc {
        Ok(doc) => verdict_of(std::path::Path::new(file), &doc, trust),
        Err(message) => unparsed(message, trust),
    };
    if as_json {
        print_pretty(&json!(v));
    } else {
        print_text(&v);
    }
    ExitCode::from(if v.valid { 0 } else { EXIT_INVALID })
}

/// runx's verdict of the receipt `doc` read from `file`, and one more check of runx's own
/// rule for files: a receipt's file is named by its content address (a receipt copied over
/// another run's file verified, and was counted twice).
pub fn verdict_of(file: &std::path::Path, doc: &Value, trust: &Trust) -> RunxVerdict {
    let mut v = verdict(doc, trust);
    if let Some(problem) = runx_receipts::misnamed(file, doc) {
        v.valid = false;
        v.findings.push(Finding {
            code: "file_name_mismatch",
            path: "$".to_string(),
            message: problem.message,
        });
    }
    v
}

fn print_text(v: &RunxVerdict) {
    outln!("receipt verification");
    outln!("receipt: {}", v.receipt_id.as_deref().unwrap_or("-"));
    outln!("signature: {} ({})", v.signature.status, v.signature.mode);
    outln!("digest: {}", v.digest.status);
    outln!("content address: {}", v.content_address.status);
    outln!("evidence: {}", v.evidence.status);
    outln!("lineage: {}", v.lineage.status);
    for f in &v.findings {
        outln!("  {} at {}: {}", f.code, f.path, terminal_safe(&f.message));
    }
    outln!("verification: {}", if v.valid { "ok" } else { "FAILED" });
}

fn store(args: &VerifyArgs, trust: &Trust) -> ExitCode {
    let Some((dir, (found, unreadable))) = listing(args.receipt_dir.as_deref()) else {
        return ExitCode::from(1);
    };
    let chosen: Vec<&(PathBuf, Value)> = match &args.receipt_id {
        None => found.iter().collect(),
        Some(id) => {
            let m: Vec<_> = found.iter().filter(|(_, d)| matches_id(d, id)).collect();
            if m.len() != 1 {
                let why = if m.is_empty() {
                    "no receipt"
                } else {
                    "more than one receipt"
                };
                errln!("runx: {why} in {} has the id {id}", dir.display());
                return ExitCode::from(EXIT_USAGE);
            }
            m
        }
    };
    let trees: Vec<Value> = chosen
        .iter()
        .map(|(file, doc)| {
            let v = verdict_of(file, doc, trust);
            json!({
                "root_receipt_id": v.receipt_id, "receipt_count": 1, "parent_missing": false,
                "valid": v.valid, "file": file.display().to_string(), "findings": v.findings,
            })
        })
        .collect();
    let unreadable: Vec<Value> = if args.receipt_id.is_some() {
        Vec::new()
    } else {
        unreadable
            .iter()
            .map(|u| json!({"file": u.file.display().to_string(), "message": u.message}))
            .collect()
    };
    let valid = unreadable.is_empty() && trees.iter().all(|t| t["valid"] == true);
    if args.json {
        print_pretty(&json!({
            "receipt_dir": dir.display().to_string(), "signature_mode": trust.mode(),
            "trees": trees, "unreadable_files": unreadable, "valid": valid,
        }));
    } else {
        for t in &trees {
            let state = if t["valid"] == true {
                "valid  "
            } else {
                "INVALID"
            };
            outln!("{state} {}", t["root_receipt_id"].as_str().unwrap_or("-"));
            for f in t["findings"].as_array().into_iter().flatten() {
                outln!(
                    "  {} at {}: {}",
                    f["code"].as_str().unwrap_or_default(),
                    f["path"].as_str().unwrap_or_default(),
                    terminal_safe(f["message"].as_str().unwrap_or_default())
                );
            }
        }
        for u in &unreadable {
            outln!(
                "INVALID {}: {}",
                terminal_safe(u["file"].as_str().unwrap_or_default()),
                terminal_safe(u["message"].as_str().unwrap_or_default())
            );
        }
        outln!(
            "{} receipts in {} ({}): {}",
            trees.len(),
            dir.display(),
            trust.mode(),
            if valid { "valid" } else { "NOT valid" }
        );
    }
    ExitCode::from(if valid { 0 } else { EXIT_INVALID })
}

/// Whether `doc` is the receipt `id` names: its id, its file stem, or a unique start of either
/// (a prefix of at least 8 hex digits, as a person copies one).
pub fn matches_id(doc: &Value, id: &str) -> bool {
    let Some(full) = doc["id"].as_str() else {
        return false;
    };
    let hex = full.trim_start_matches("sha256:");
    let given = id
        .trim_start_matches("sha256:")
        .trim_start_matches("sha256-")
        .trim_end_matches(".json");
    given.len() >= 8 && hex.starts_with(given)
}
