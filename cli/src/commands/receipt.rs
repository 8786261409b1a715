//! `runx receipt verify` and `runx receipt show`: receipts checked and printed offline.

use runx_profile::CATALOGUE;
use runx_receipts::runx::iso_millis;
use runx_receipts::{Trust, Verdict};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::exit::EXIT_USAGE;
use crate::output::terminal_safe;

#[derive(clap::Subcommand)]
pub enum ReceiptCommand {
    /// Check receipts offline: runx's field rules, digest, content address and signature, this
    /// runtime's evidence (and for a harness receipt, every case receipt beside it). Exits 0
    /// only if every receipt verifies.
    Verify(VerifyArgs),
    /// Print a receipt for a person (not a verification: use `runx receipt verify`).
    Show(ShowArgs),
}

#[derive(clap::Args)]
pub struct VerifyArgs {
    /// Receipt files, or directories whose `*.json` files are receipts.
    #[arg(required = true, value_name = "FILE|DIR")]
    paths: Vec<PathBuf>,
    /// The verification key: a file of `NAME=VALUE` lines for RUNX_RECEIPT_VERIFY_KID and
    /// RUNX_RECEIPT_VERIFY_ED25519_PUBLIC_KEY_BASE64. Without it those environment variables
    /// are read, and then the public half of a configured signing key.
    #[arg(long, value_name = "FILE")]
    public_key: Option<PathBuf>,
    /// Without a key, accept local-development signatures (runx's signature of a run made
    /// without a key): the receipt is checked for integrity, not for who wrote it.
    #[arg(long)]
    allow_local_development_signatures: bool,
    /// Print one JSON object on stdout.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
pub struct ShowArgs {
    /// The receipt file.
    file: PathBuf,
}

/// Runs `runx receipt ...`.
pub fn run(command: ReceiptCommand) -> ExitCode {
    match command {
        ReceiptCommand::Verify(args) => verify(&args),
        ReceiptCommand::Show(args) => show_file(&args.file),
    }
}

fn verify(args: &VerifyArgs) -> ExitCode {
    let trust = match crate::keys::trust(
        args.public_key.as_deref(),
        args.allow_local_development_signatures,
    ) {
        Ok(t) => t,
        Err(e) => {
            errln!("runx: {e}");
            if args.json {
                outln!("{}", json!({"status": "usage", "error": e.to_string()}));
            }
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let (files, mut verdicts) = runx_receipts::receipt_files(&args.paths);
    verdicts.extend(files.iter().map(|f| runx_receipts::verify_file(f, &trust)));
    if verdicts.is_empty() {
        let message = "no receipts: the directories named hold no *.json files";
        errln!("runx: {message}");
        if args.json {
            outln!(
                "{}",
                json!({"status": "failed", "verified": 0, "failed": 0, "receipts": [], "error": message})
            );
        }
        return ExitCode::from(1);
    }
    let verified = verdicts.iter().filter(|v| v.verified()).count();
    let failed = verdicts.len() - verified;
    if args.json {
        let receipts: Vec<Value> = verdicts.iter().map(verdict_json).collect();
        outln!(
            "{}",
            json!({
                "status": if failed == 0 { "verified" } else { "failed" },
                "signature_mode": trust.mode(),
                "verified": verified,
                "failed": failed,
                "receipts": receipts,
            })
        );
    } else {
        let by = match &trust {
            Trust::Key(key) => format!("signed by `{}`", key.kid()),
            Trust::LocalDevelopment => "integrity only: local development".to_string(),
            Trust::KeyOrLocal(key) => {
                format!(
                    "signed by `{}`, or local development (integrity only)",
                    key.kid()
                )
            }
        };
        for v in &verdicts {
            print_verdict(v, &by);
        }
        outln!("{verified} verified, {failed} failed");
    }
    ExitCode::from(if failed == 0 { 0 } else { 1 })
}

fn verdict_json(v: &Verdict) -> Value {
    json!({
        "path": v.path.display().to_string(),
        "status": if v.verified() { "verified" } else { "failed" },
        "schema": v.schema,
        "body_digest": v.body_digest,
        "kid": v.kid,
        "cases": v.cases,
        "check": v.problem.as_ref().map(|p| p.check.name()),
        "message": v.problem.as_ref().map(|p| p.message.clone()),
    })
}

fn print_verdict(v: &Verdict, by: &str) {
    // A file name is the writer's choice (a cli-tool is told the receipt directory): control
    // characters in it must not reach the terminal as a forged line.
    let path = terminal_safe(&v.path.display().to_string());
    match &v.problem {
        None => {
            let cases = if v.cases.is_empty() {
                String::new()
            } else {
                format!(", {} case receipts", v.cases.len())
            };
            outln!(
                "OK   {path} ({}, {by}{cases})",
                v.schema.as_deref().unwrap_or("?")
            );
        }
        Some(p) => outln!(
            "FAIL {path}: {}: {}",
            p.check.name(),
            terminal_safe(&p.message)
        ),
    }
}

/// Prints the receipt in `file` for a person; exit 1 when it cannot be read.
pub fn show_file(file: &Path) -> ExitCode {
    let doc = match runx_receipts::read_receipt(file) {
        Ok(d) => d,
        Err(p) => {
            errln!(
                "runx: {}: {}",
                terminal_safe(&file.display().to_string()),
                terminal_safe(&p.message)
            );
            return ExitCode::from(1);
        }
    };
    outln!("receipt    {}", terminal_safe(&file.display().to_string()));
    match doc.get("schema").and_then(Value::as_str) {
        Some(runx_receipts::HARNESS_RECEIPT_SCHEMA) => show_harness(&doc),
        _ => show_run(&doc),
    }
    show_signature(&doc);
    ExitCode::SUCCESS
}

/// A string field, or `-`, with control characters escaped: a receipt is a file anyone may
/// have written, and it must not rewrite the reader's terminal.
fn text(doc: &Value, pointer: &str) -> String {
    terminal_safe(doc.pointer(pointer).and_then(Value::as_str).unwrap_or("-"))
}

/// A Unix time in milliseconds at `pointer`, as an RFC 3339 UTC time
/// (`2026-12-01T12:31:45.159Z`), or `-`.
fn utc_time(doc: &Value, pointer: &str) -> String {
    doc.pointer(pointer)
        .and_then(Value::as_u64)
        .map_or_else(|| "-".to_string(), iso_millis)
}

fn number(doc: &Value, pointer: &str) -> String {
    doc.pointer(pointer)
        .and_then(Value::as_u64)
        .map_or_else(|| "-".to_string(), |n| n.to_string())
}

fn show_run(receipt: &Value) {
    outln!("schema     {}", text(receipt, "/schema"));
    outln!("id         {}", text(receipt, "/id"));
    outln!(
        "seal       {} ({}): {}",
        text(receipt, "/seal/disposition"),
        text(receipt, "/seal/reason_code"),
        text(receipt, "/seal/summary")
    );
    let doc = &receipt["metadata"]["evidence"];
    match doc.get("failure").filter(|f| f.is_object()) {
        Some(f) => outln!(
            "status     {} ({}/{}: {})",
            text(doc, "/status"),
            text(f, "/kind"),
            text(f, "/code"),
            text(f, "/message")
        ),
        None => outln!("status     {}", text(doc, "/status")),
    }
    outln!(
        "skill      {} {}",
        text(doc, "/skill"),
        text(doc, "/version")
    );
    outln!(
        "runner     {} ({})",
        text(doc, "/runner"),
        text(doc, "/runner_type")
    );
    match doc.get("engine").filter(|e| e.is_object()) {
        Some(e) => outln!("engine     {} {}", text(e, "/name"), text(e, "/version")),
        None => outln!("engine     -"),
    }
    outln!("runx       {}", text(doc, "/runx_version"));
    outln!("started    {}", utc_time(doc, "/started_at_ms"));
    outln!("duration   {} ms", number(doc, "/duration_ms"));
    outln!("digests");
    for (label, field) in [
        ("profile", "profile_digest"),
        ("bundle", "bundle_digest"),
        ("input", "input_digest"),
        ("output", "output_digest"),
    ] {
        outln!("  {label:<9}{}", text(doc, &format!("/{field}")));
    }
    outln!("  {:<9}{}", "receipt", text(receipt, "/digest"));
    if let Some(a) = doc.get("artifact").filter(|a| a.is_object()) {
        outln!(
            "artifact   {} ({} bytes, {} pages{})",
            text(a, "/whole_digest"),
            number(a, "/artifact_bytes"),
            number(a, "/page_count"),
            if a.get("finished") == Some(&Value::Bool(true)) {
                ", finished"
            } else {
                ", not finished"
            }
        );
    }
    if let Some(p) = doc.get("process").filter(|p| p.is_object()) {
        let ending = match (
            p.get("exit_code").and_then(Value::as_i64),
            p.get("signal").and_then(Value::as_i64),
        ) {
            (Some(code), _) => format!("exit {code}"),
            (None, Some(sig)) => format!("signal {sig}"),
            _ => "no exit".to_string(),
        };
        outln!(
            "process    {} ({ending}, {} attempts, stdout {})",
            text(p, "/command"),
            number(p, "/attempts"),
            text(p, "/stdout/sha256")
        );
    }
    outln!("limits");
    if let Some(limits) = doc.get("limits").and_then(Value::as_object) {
        for (name, value) in limits {
            let shown = match (CATALOGUE.iter().find(|d| d.name == name), value.as_u64()) {
                (Some(def), Some(v)) => runx_profile::human(def, v),
                _ => terminal_safe(&value.to_string()),
            };
            outln!("  {:<27}{shown}", terminal_safe(name));
        }
    }
}

fn show_harness(doc: &Value) {
    outln!("schema     {}", text(doc, "/schema"));
    outln!(
        "status     {} ({} passed, {} failed of {} cases)",
        text(doc, "/status"),
        number(doc, "/passed"),
        number(doc, "/failed"),
        number(doc, "/case_count")
    );
    outln!(
        "engine     {} {}",
        text(doc, "/engine/name"),
        text(doc, "/engine/version")
    );
    outln!("runx       {}", text(doc, "/runx_version"));
    outln!("duration   {} ms", number(doc, "/duration_ms"));
    outln!("body       {}", text(doc, "/body_digest"));
    outln!("cases");
    for case in doc
        .get("cases")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        outln!(
            "  {} {}/{}: {} {}",
            if case.get("passed") == Some(&Value::Bool(true)) {
                "PASS"
            } else if case.get("run_status").and_then(Value::as_str) == Some("skipped") {
                "SKIP"
            } else {
                "FAIL"
            },
            text(case, "/package"),
            text(case, "/case"),
            text(case, "/receipt"),
            text(case, "/receipt_digest")
        );
    }
}

fn show_signature(doc: &Value) {
    if let Some(issuer) = doc.get("issuer").filter(|i| i.is_object()) {
        outln!(
            "signature  {} by key `{}` ({}), public key {} (not checked here: run `runx receipt verify`)",
            text(doc, "/signature/alg"),
            text(issuer, "/kid"),
            text(issuer, "/type"),
            text(issuer, "/public_key_sha256")
        );
        return;
    }
    match doc.get("signature").filter(|s| s.is_object()) {
        Some(s) => outln!(
            "signature  {} by key `{}` ({}), public key {} (not checked here: run `runx receipt verify`)",
            text(s, "/alg"),
            text(s, "/kid"),
            text(s, "/issuer_type"),
            text(s, "/public_key_sha256")
        ),
        None => outln!("signature  unsigned"),
    }
}
