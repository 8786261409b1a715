//! `runx history [QUERY] [filters]`: the receipts of the receipt directory that pass runx's
//! filters (`history_filter`), newest first, each classified as runx classifies it; with
//! `--detail RECEIPT_ID`, that receipt in full.
//!
//! - `verified`: a verification key is configured (`RUNX_RECEIPT_VERIFY_*`, or a
//!   `RUNX_RECEIPT_SIGN_*` key) and the receipt verifies with it;
//! - `unverified`: the receipt is whole (digest, content address, evidence), so it is what it
//!   was written as, but nothing proves who wrote it: a local-development receipt, or (with no
//!   key configured) one signed by a key this machine does not have;
//! - `invalid`: anything else: changed, not a receipt, or (with a key) not signed by it.

use super::verify::matches_id;
use crate::history_filter::{Filter, instant_flag, normalized};
use crate::output::terminal_safe;
use crate::store::listing;
use runx_receipts::VerifyKey;
use runx_receipts::runx::{RunxVerdict, Trust, verdict};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct HistoryArgs {
    /// Words to look for (runx's QUERY, joined by spaces): lists the receipts whose id, name,
    /// skill, runner, source, actor or artifact type holds them, ignoring case. A whole
    /// receipt id alone (`sha256:...`) shows that receipt in full; with `--detail`, so does a
    /// unique start of one of 8 digits or more.
    pub query: Vec<String>,
    /// Show the one receipt QUERY names in full instead of listing.
    #[arg(long)]
    pub detail: bool,
    /// Only receipts of skills whose name holds S (ignoring case).
    #[arg(long, value_name = "S")]
    pub skill: Option<String>,
    /// Only receipts whose status (the seal's disposition: `closed`, `blocked`, `failed`) is S.
    #[arg(long, value_name = "S")]
    pub status: Option<String>,
    /// Only receipts whose source (the issuer type: `local`, `ci`, ...) is S.
    #[arg(long, value_name = "S")]
    pub source: Option<String>,
    /// Only receipts one of whose actors is A.
    #[arg(long, value_name = "A")]
    pub actor: Option<String>,
    /// Only receipts with an artifact of type T.
    #[arg(
        long,
        value_name = "T",
        alias = "artifact_type",
        alias = "artifactType"
    )]
    pub artifact_type: Option<String>,
    /// Only receipts created at or after this RFC 3339 time (`2026-05-18T09:30:00Z`).
    #[arg(long, value_name = "ISO")]
    pub since: Option<String>,
    /// Only receipts created at or before this RFC 3339 time.
    #[arg(long, value_name = "ISO")]
    pub until: Option<String>,
    /// Also list harness and trial receipts (runx's: made by a harness, or at its fixed time).
    #[arg(long)]
    pub include_harness: bool,
    /// The receipt directory; without it, `RUNX_RECEIPT_DIR`, else `.runx/receipts`.
    #[arg(long, value_name = "DIR")]
    pub receipt_dir: Option<PathBuf>,
    /// List at most N receipts (the newest that pass the filters).
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Print JSON on stdout.
    #[arg(long, short = 'j')]
    pub json: bool,
}

impl HistoryArgs {
    /// The filters these flags name, or the message for a time that is not one.
    fn filter(&self) -> Result<Filter, String> {
        let query = self.query.join(" ");
        Ok(Filter {
            query: normalized(Some(&query)),
            skill: normalized(self.skill.as_deref()),
            status: normalized(self.status.as_deref()),
            source: normalized(self.source.as_deref()),
            actor: normalized(self.actor.as_deref()),
            artifact_type: normalized(self.artifact_type.as_deref()),
            since: instant_flag("--since", self.since.as_deref())?,
            until: instant_flag("--until", self.until.as_deref())?,
            include_harness: self.include_harness,
        })
    }
}

/// `verified`, `unverified` or `invalid` (see the module's documentation).
fn classify(doc: &Value, key: Option<&VerifyKey>) -> (&'static str, RunxVerdict) {
    if let Some(key) = key {
        // A receipt made without a key is whole or not; a key's is verified or not.
        let v = verdict(doc, &Trust::KeyOrLocal(key.clone()));
        let local = doc["issuer"]["type"] == "local";
        let status = match (v.valid, local) {
            (true, true) => "unverified",
            (true, false) => "verified",
            (false, _) => "invalid",
        };
        return (status, v);
    }
    let v = verdict(doc, &Trust::LocalDevelopment);
    let whole = v.digest.status == "valid"
        && v.content_address.status == "valid"
        && v.evidence.status != "invalid";
    // A key's signature cannot be checked without the key: only that finding is allowed.
    let unchecked_key = v.findings.len() == 1
        && v.findings[0].code == "signature_malformed"
        && doc["signature"]["value"]
            .as_str()
            .is_some_and(|s| s.starts_with("base64:"));
    let status = if whole && (v.findings.is_empty() || unchecked_key) {
        "unverified"
    } else {
        "invalid"
    };
    (status, v)
}

fn entry(file: &std::path::Path, doc: &Value, status: &str) -> Value {
    let evidence = &doc["metadata"]["evidence"];
    let artifact_types: Vec<Value> = doc["acts"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|a| a["artifact_refs"].as_array().cloned().unwrap_or_default())
        .filter_map(|r| r.get("label").cloned())
        .collect();
    let id = doc["id"].as_str().unwrap_or_default();
    let disposition = doc["seal"]["disposition"].as_str().unwrap_or_default();
    json!({
        "id": id,
        "receipt_ref": format!("runx:receipt:{id}"),
        "name": doc["subject"]["ref"]["label"].as_str()
            .or(doc["subject"]["ref"]["uri"].as_str()),
        "skill": evidence["skill"], "runner": evidence["runner"],
        "status": disposition,
        "created_at": doc["created_at"],
        "harness_id": doc["subject"]["ref"]["uri"],
        "harness_state": if disposition == "closed" { "sealed" } else { disposition },
        "summary": doc["seal"]["summary"],
        "source_type": doc["issuer"]["type"],
        "actors": [doc["authority"]["actor_ref"]["uri"]],
        "artifact_types": artifact_types,
        "verification": { "status": status },
        "file": file.display().to_string(),
    })
}

/// Runs `runx history`.
pub fn run(args: &HistoryArgs) -> ExitCode {
    let key = match crate::keys::verify_key(None) {
        Ok(key) => key,
        Err(e) => {
            errln!("runx: {e}");
            return ExitCode::from(crate::exit::EXIT_USAGE);
        }
    };
    let filter = match args.filter() {
        Ok(f) => f,
        // runx ends so for a time it cannot read.
        Err(message) => {
            errln!("runx: {message}");
            return ExitCode::from(1);
        }
    };
    let list_flags = filter.flags_select() || args.limit.is_some() || args.include_harness;
    if args.detail && (args.query.len() != 1 || list_flags) {
        return crate::exit::usage(if args.query.len() != 1 {
            "history --detail requires one exact receipt id: runx history RECEIPT_ID --detail"
        } else {
            "history --detail does not accept list filters"
        });
    }
    let Some((dir, (found, unreadable))) = listing(args.receipt_dir.as_deref()) else {
        return ExitCode::from(1);
    };
    // runx's documented `runx history <receipt-id> --json`: a whole receipt id alone shows
    // that receipt, as `--detail` does (a part of one is a query).
    let whole_id = args.query.len() == 1
        && !list_flags
        && found.iter().any(|(_, d)| d["id"] == args.query[0].as_str());
    if args.detail || whole_id {
        return show_one(&found, &args.query[0], key.as_ref(), &dir, args.json);
    }
    let mut rows: Vec<Value> = found
        .iter()
        .filter(|(_, doc)| !filter.hides(doc))
        .map(|(file, doc)| {
            // A receipt under another receipt's name (copied over it) is not that run's.
            let status = if runx_receipts::misnamed(file, doc).is_some() {
                "invalid"
            } else {
                classify(doc, key.as_ref()).0
            };
            entry(file, doc, status)
        })
        .filter(|row| filter.matches(row))
        .collect();
    // A file that cannot be read is listed while nothing selects: it names no skill or time.
    if !filter.selects() {
        rows.extend(unreadable.iter().map(|u| {
            json!({"id": null, "file": u.file.display().to_string(), "status": null,
                "created_at": null, "summary": u.message, "verification": {"status": "invalid"}})
        }));
    }
    // Newest first; equal times by id.
    rows.sort_by(|a, b| {
        let at = |v: &Value| v["created_at"].as_str().unwrap_or_default().to_string();
        at(b)
            .cmp(&at(a))
            .then_with(|| a["id"].as_str().cmp(&b["id"].as_str()))
    });
    if let Some(limit) = args.limit {
        rows.truncate(limit);
    }
    if args.json {
        crate::output::print_json(&json!({
            "receipt_dir": dir.display().to_string(),
            "signature_mode": if key.is_some() { "production" } else { "local-development" },
            "receipts": rows,
        }));
        return ExitCode::SUCCESS;
    }
    if rows.is_empty() && filter.selects() {
        outln!(
            "no receipts in {} match; runx history lists them all",
            dir.display()
        );
        return ExitCode::SUCCESS;
    }
    if rows.is_empty() {
        outln!(
            "no receipts in {} yet: run a skill first (runx skill DIR)",
            dir.display()
        );
        return ExitCode::SUCCESS;
    }
    outln!("history  {} receipts in {}", rows.len(), dir.display());
    for r in &rows {
        let text = |k: &str| r[k].as_str().unwrap_or("-").to_string();
        let id = text("id");
        let short: String = id.trim_start_matches("sha256:").chars().take(12).collect();
        outln!(
            "  {:<24} {:<10} {:<30} {:<10} {short}",
            text("created_at"),
            text("status"),
            // A receipt runx wrote has no evidence of ours: its subject names it.
            terminal_safe(&if r["skill"].is_string() {
                format!("{} {}", text("skill"), text("runner"))
            } else {
                text("name")
            }),
            r["verification"]["status"].as_str().unwrap_or("-"),
        );
    }
    outln!("next  runx history <receipt-id> --detail --json");
    ExitCode::SUCCESS
}

fn show_one(
    found: &[(PathBuf, Value)],
    id: &str,
    key: Option<&VerifyKey>,
    dir: &std::path::Path,
    as_json: bool,
) -> ExitCode {
    let matched: Vec<_> = found.iter().filter(|(_, d)| matches_id(d, id)).collect();
    let [(file, doc)] = matched.as_slice() else {
        // No such receipt ends 1, as runx's `--detail` ends ("receipt is missing"); an id
        // start that several receipts share is the caller's to lengthen: usage, 64.
        let (why, code) = if matched.is_empty() {
            ("no receipt", 1)
        } else {
            ("more than one receipt", crate::exit::EXIT_USAGE)
        };
        errln!(
            "runx: {why} in {} has the id {}",
            dir.display(),
            terminal_safe(id)
        );
        return ExitCode::from(code);
    };
    let (status, v) = classify(doc, key);
    if as_json {
        crate::output::print_json(&json!({
            "receipt": doc, "file": file.display().to_string(),
            "verification": { "status": status, "verdict": v },
        }));
    } else {
        super::receipt::show_file(file);
        outln!("history    {status}");
    }
    ExitCode::SUCCESS
}
