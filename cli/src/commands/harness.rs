//! `runx harness PATH...`: discovers packages and their fixture cases, runs them on one runtime,
//! prints one line per case, every malformed package and every load-time diagnostic, and the
//! summary line `N passed, M failed` (or a JSON report with `--json`), and writes the harness
//! receipt with every case receipt beside it.

use crate::exit::usage;
use crate::keys::{SignArgs, keys};
use crate::{launch, signals};
use runx_harness::{CaseResult, CaseVerdict, HarnessReceipt, Report, ReportStatus, counted};
use runx_runtime::Runtime;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

/// Exit code for malformed fixtures and unusable paths.
const EXIT_USAGE: u8 = 64;

#[derive(clap::Args)]
pub struct HarnessArgs {
    /// Package directories (or their `SKILL.md`), fixture files, or directories of packages.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Print a JSON report on stdout.
    #[arg(short = 'j', long)]
    pub json: bool,
    /// Write the harness receipt and every case's receipt under DIR instead of
    /// `.runx/harness-receipts` of the working directory (`-R DIR`, `--receipts DIR` as in
    /// runx).
    #[arg(short = 'R', long, visible_alias = "receipts", value_name = "DIR")]
    pub receipt_dir: Option<PathBuf>,
    /// Exit 1 when any case was skipped (a case that needs runx's graph or agent runner, or
    /// its MCP or A2A client): for CI that must run every case it is given.
    #[arg(long)]
    pub fail_skipped: bool,
    #[command(flatten)]
    pub sign: SignArgs,
}

/// Runs `runx harness PATH...` with the keys and receipt directory its flags name.
pub fn command(args: HarnessArgs, engine: Option<&str>) -> ExitCode {
    let keys = match keys(&args.sign) {
        Ok(k) => k,
        Err(e) => return usage(&e.message),
    };
    let receipt_dir = args.receipt_dir.clone().unwrap_or_else(|| {
        runx_runtime::default_workspace()
            .join(".runx")
            .join("harness-receipts")
    });
    // A package's SKILL.md stands for its directory, as in runx (an X.yaml stays a fixture
    // file: runx's harness reads `*.yaml` arguments as fixtures).
    let paths: Vec<PathBuf> = args
        .paths
        .iter()
        .map(|p| match p.file_name() {
            Some(name) if name == "SKILL.md" => {
                crate::package::package_of_file(p).unwrap_or_else(|| p.clone())
            }
            _ => p.clone(),
        })
        .collect();
    let code = run(
        &launch::runtime(engine, keys),
        &paths,
        args.json,
        &receipt_dir,
        args.fail_skipped,
    );
    signals::exit_code().map_or(code, ExitCode::from)
}

/// Runs the harness over `paths` on `rt`; `as_json` prints the report object instead of lines.
/// The receipts go under `receipt_dir`; `fail_skipped` makes a skipped case fail the run.
pub fn run(
    rt: &Runtime,
    paths: &[PathBuf],
    as_json: bool,
    receipt_dir: &Path,
    fail_skipped: bool,
) -> ExitCode {
    let suites = match runx_harness::discover(paths) {
        Ok(s) => s,
        Err(e) => {
            errln!("runx: {e}");
            if as_json {
                outln!(
                    "{}",
                    serde_json::json!({"status": "malformed", "error": e.to_string()})
                );
            }
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let started = Instant::now();
    let started_at_ms = runx_receipts::now_ms();
    let report = runx_harness::run_suites_with(rt, &suites, |case| {
        if !as_json {
            print_case(case);
        }
    });
    let duration_ms = runx_profile::millis(started.elapsed());
    let receipt = HarnessReceipt::new(rt, &report, started_at_ms, duration_ms);
    let receipt_path = match receipt.write(&report, receipt_dir) {
        Ok(p) => Some(p),
        Err(e) => {
            errln!(
                "runx: cannot write the harness receipts under {}: {e}",
                receipt_dir.display()
            );
            None
        }
    };
    if as_json {
        let mut value = serde_json::to_value(&report).unwrap_or_default();
        if let Some(object) = value.as_object_mut() {
            object.insert(
                "receipt".to_string(),
                receipt_path
                    .as_ref()
                    .map(|p| p.display().to_string())
                    .into(),
            );
        }
        outln!("{value}");
    } else {
        if let Some(p) = &receipt_path {
            errln!("runx: harness receipt {}", p.display());
        }
        print_summary(&report);
    }
    if report.skipped > 0 {
        errln!(
            "runx: {} skipped case{} need{} runx itself: run them with runx, RUNX_JS_WORKER_PATH naming this runtime's runx-js-worker (the book's \"runx on this engine\"){}",
            report.skipped,
            if report.skipped == 1 { "" } else { "s" },
            if report.skipped == 1 { "s" } else { "" },
            if fail_skipped {
                "; they fail this run (--fail-skipped)"
            } else {
                "; --fail-skipped makes them fail the run"
            }
        );
    }
    let code = match report.exit_code() {
        0 if fail_skipped && report.skipped > 0 => 1,
        code => code,
    };
    ExitCode::from(code as u8)
}

fn print_case(c: &CaseResult) {
    if c.outcome == CaseVerdict::Skipped {
        outln!(
            "SKIP {}/{}: {}",
            c.package,
            c.case,
            c.skip_reason.as_deref().unwrap_or("")
        );
        return;
    }
    let verdict = if c.passed { "PASS" } else { "FAIL" };
    outln!("{verdict} {}/{} ({} ms)", c.package, c.case, c.duration_ms);
    if let Some(m) = &c.mismatch {
        outln!("  at {}: {}", m.path, m.message);
        outln!("    expected: {}", compact(&m.expected));
        outln!("    actual:   {}", compact(&m.actual));
    }
}

fn compact(v: &serde_json::Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

fn print_summary(report: &Report) {
    for p in &report.packages {
        for d in &p.diagnostics {
            outln!("NOTE {}: {d}", p.package);
        }
    }
    for e in &report.errors {
        outln!("BROKEN {}: {}", e.package, e.error.message);
    }
    for package in &report.not_declared {
        outln!("{package}: no harness cases declared (not_declared)");
    }
    for p in report.packages.iter().filter(|p| p.skipped > 0) {
        outln!(
            "SKIPPED {}: {} of {} cases not run ({})",
            p.package,
            p.skipped,
            p.passed + p.failed + p.skipped,
            counted(&p.not_run)
        );
    }
    if report.status == ReportStatus::NotDeclared {
        outln!("not_declared: no harness cases to run");
    }
    outln!("{}", report.summary());
}
