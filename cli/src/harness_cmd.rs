//! `runx harness PATH...`: discovers packages and their fixture cases, runs them on one runtime,
//! prints one line per case, every malformed package and every load-time diagnostic, and the
//! summary line `N passed, M failed` (or a JSON report with `--json`).

use runx_runtime::Runtime;
use runx_runtime::harness::{self, CaseResult, CaseVerdict, Report, ReportStatus};
use std::path::PathBuf;
use std::process::ExitCode;

/// Exit code for malformed fixtures and unusable paths.
const EXIT_USAGE: u8 = 64;

/// Runs the harness over `paths` on `rt`; `as_json` prints the report object instead of lines.
pub fn run(rt: &Runtime, paths: &[PathBuf], as_json: bool) -> ExitCode {
    let suites = match harness::discover(paths) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("runx: {e}");
            if as_json {
                println!(
                    "{}",
                    serde_json::json!({"status": "malformed", "error": e.to_string()})
                );
            }
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let report = harness::run_suites_with(rt, &suites, |case| {
        if !as_json {
            print_case(case);
        }
    });
    if as_json {
        println!(
            "{}",
            serde_json::to_string(&report).unwrap_or_else(|_| "{}".to_string())
        );
    } else {
        print_summary(&report);
    }
    ExitCode::from(report.exit_code() as u8)
}

fn print_case(c: &CaseResult) {
    if c.outcome == CaseVerdict::Skipped {
        println!(
            "SKIP {}/{}: {}",
            c.package,
            c.case,
            c.skip_reason.as_deref().unwrap_or("")
        );
        return;
    }
    let verdict = if c.passed { "PASS" } else { "FAIL" };
    println!("{verdict} {}/{} ({} ms)", c.package, c.case, c.duration_ms);
    if let Some(m) = &c.mismatch {
        println!("  at {}: {}", m.path, m.message);
        println!("    expected: {}", compact(&m.expected));
        println!("    actual:   {}", compact(&m.actual));
    }
}

fn compact(v: &serde_json::Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

fn print_summary(report: &Report) {
    for p in &report.packages {
        for d in &p.diagnostics {
            println!("NOTE {}: {d}", p.package);
        }
    }
    for e in &report.errors {
        println!("BROKEN {}: {}", e.package, e.error.message);
    }
    for package in &report.not_declared {
        println!("{package}: no harness cases declared (not_declared)");
    }
    if report.status == ReportStatus::NotDeclared {
        println!("not_declared: no harness cases to run");
    }
    println!("{}", report.summary());
}
