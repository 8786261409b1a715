//! `runx skill check DIR...`: every mistake of each package before a run, one line per problem
//! as `file:line:column: error: ...`, and a line per package; exit 64 when any is an error.

use crate::launch;
use crate::output::print_json;
use runx_runtime::{Checked, Runtime, Severity};
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;

/// `runx skill check` flags.
#[derive(clap::Args)]
pub struct CheckArgs {
    /// Skill package directories (or their `SKILL.md` or `X.yaml`), or bare skill names found
    /// as `skills/NAME`.
    #[arg(required = true, value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// Print one JSON object on stdout: `{status, packages: [{dir, skill, runners, problems}]}`.
    #[arg(short = 'j', long)]
    pub json: bool,
}

/// Checks every package; exit 0 when none has an error, else 64.
pub fn run(args: CheckArgs, engine: Option<&str>) -> ExitCode {
    let rt = launch::configured_runtime(engine, crate::keys::Keys::default());
    let checks: Vec<Checked> = args.dirs.iter().map(|dir| check_one(&rt, dir)).collect();
    let errors: usize = checks.iter().map(Checked::errors).sum();
    if args.json {
        let status = if errors == 0 { "ok" } else { "failed" };
        print_json(&json!({ "status": status, "packages": checks }));
    } else {
        for c in &checks {
            print_checked(c);
        }
    }
    if errors == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(crate::exit::EXIT_USAGE)
    }
}

/// The check of `dir`, a bare name found as `skills/NAME` as for a run.
pub fn check_one(rt: &Runtime, dir: &std::path::Path) -> Checked {
    match crate::package::find_package(dir) {
        Ok(dir) => rt.check(&dir),
        Err(message) => Checked {
            dir: dir.to_path_buf(),
            skill: None,
            runners: Vec::new(),
            problems: vec![runx_runtime::Problem {
                file: dir.to_path_buf(),
                line: None,
                column: None,
                runner: None,
                severity: Severity::Error,
                code: "not_a_package".to_string(),
                message,
            }],
        },
    }
}

/// The problems of one package, then its summary line.
pub fn print_checked(c: &Checked) {
    for p in &c.problems {
        outln!("{p}");
    }
    let name = c
        .skill
        .clone()
        .unwrap_or_else(|| c.dir.display().to_string());
    let errors = c.errors();
    let warnings = c.problems.len() - errors;
    let verdict = match (errors, warnings) {
        (0, 0) => "ok".to_string(),
        (0, w) => format!("ok, {}", count(w, "warning")),
        (e, 0) => count(e, "error"),
        (e, w) => format!("{}, {}", count(e, "error"), count(w, "warning")),
    };
    let mut checked: Vec<String> = c
        .runners
        .iter()
        .filter(|r| r.runs_here)
        .map(|r| match &r.pages {
            Some(pages) => format!(
                "{} ({}, paged in {}, module per {})",
                r.name,
                r.r#type,
                count(pages.partitions, "partition"),
                pages.module
            ),
            None => format!("{} ({})", r.name, r.r#type),
        })
        .collect();
    // A package of many runners is counted, not listed (`--json` lists them).
    if checked.len() > MAX_LISTED {
        checked = vec![format!("{} runners", checked.len())];
    }
    let shown: Vec<String> = c
        .runners
        .iter()
        .filter(|r| !r.runs_here)
        .map(|r| format!("{} ({})", r.name, r.r#type))
        .collect();
    let mut line = format!("{name}: {verdict}");
    if !checked.is_empty() {
        line.push_str(&format!("; checked {}", checked.join(", ")));
    }
    if !shown.is_empty() {
        line.push_str(&format!("; not run by this runtime: {}", shown.join(", ")));
    }
    outln!("{line}");
}

/// Most runners named in a package's summary line.
const MAX_LISTED: usize = 12;

/// `1 error`, `2 warnings`.
fn count(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}
