//! `runx harness PATH...`: discovers fixture cases, runs them on one runtime, prints one line per
//! case and the summary line `N passed, M failed` (or a JSON report with `--json`).

use runx_runtime::Runtime;
use runx_runtime::harness::{self, CaseResult, Report, ReportStatus};
use std::path::PathBuf;
use std::process::ExitCode;

/// Exit code for malformed fixtures and unusable paths.
const EXIT_USAGE: u8 = 64;

/// Runs the harness over `paths` on `rt`; `as_json` prints the report object instead of lines.
pub fn run(rt: &Runtime, paths: &[PathBuf], as_json: bool) -> ExitCode {
    let suites = match harness::discover(paths) {
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
    let report = harness::run_suites_with(rt, &suites, |case| {
        if !as_json {
            print_case(case);
        }
    });
    if as_json {
        outln!(
            "{}",
            serde_json::to_string(&report).unwrap_or_else(|_| "{}".to_string())
        );
    } else {
        print_summary(&report);
    }
    ExitCode::from(report.exit_code() as u8)
}

fn print_case(c: &CaseResult) {
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
    for package in &report.not_declared {
        outln!("{package}: no harness cases declared (not_declared)");
    }
    if report.status == ReportStatus::NotDeclared {
        outln!("not_declared: no harness cases to run");
    }
    outln!("{}", report.summary());
}
