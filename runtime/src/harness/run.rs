//! Running cases, each in its own scratch workspace, into a [`Report`].

use super::discover::Suite;
use super::fixture::Case;
use super::matching::{Mismatch, check};
use super::{DATA_DIR, FIXTURES_DIR, HarnessError};
use crate::environment::EnvSource;
use crate::runtime::{RunOutcome, RunRequest, Runtime};
use runx_worker::scope::{EntryKind, Scope, ScopeError};
use serde::Serialize;
use serde_json::Value;
use std::path::Path;
use std::time::Instant;

/// The overall result of a harness run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReportStatus {
    /// Every case passed.
    Passed,
    /// At least one case failed.
    Failed,
    /// No package declared any case.
    NotDeclared,
}

/// A failed case, as listed in [`Report::failures`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CaseFailure {
    /// The package name.
    pub package: String,
    /// The case name.
    pub case: String,
    /// JSON path of the first difference.
    pub path: String,
    /// The expected value.
    pub expected: Value,
    /// The actual value.
    pub actual: Value,
    /// A one-line explanation.
    pub message: String,
}

/// The result of one case.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CaseResult {
    /// The package name.
    pub package: String,
    /// The case name.
    pub case: String,
    /// Whether it passed.
    pub passed: bool,
    /// The run's status, `sealed` or `failure`.
    pub run_status: String,
    /// Wall-clock milliseconds of the case (setup and run).
    pub duration_ms: u64,
    /// The first difference, when it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mismatch: Option<Mismatch>,
}

/// What a harness run found. Serializes as the `--json` report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    /// `passed`, `failed` or `not_declared`.
    pub status: ReportStatus,
    /// Cases run.
    pub case_count: usize,
    /// Cases passed.
    pub passed: usize,
    /// Cases failed.
    pub failed: usize,
    /// Every failed case with its first difference.
    pub failures: Vec<CaseFailure>,
    /// Packages that declare no case.
    pub not_declared: Vec<String>,
    /// Every case, in run order.
    pub cases: Vec<CaseResult>,
}

impl Report {
    /// The process exit code: 1 when any case failed, else 0.
    pub fn exit_code(&self) -> i32 {
        if self.failed > 0 { 1 } else { 0 }
    }

    /// The summary line CI parses: `N passed, M failed`.
    pub fn summary(&self) -> String {
        format!("{} passed, {} failed", self.passed, self.failed)
    }
}

/// Runs every case of `suites` on `rt` (one pool for all of them), in order, until the
/// runtime is interrupted.
pub fn run_suites(rt: &Runtime, suites: &[Suite]) -> Report {
    run_suites_with(rt, suites, |_| {})
}

/// Like [`run_suites`], calling `on_case` as each case finishes (for streaming output).
pub fn run_suites_with(
    rt: &Runtime,
    suites: &[Suite],
    mut on_case: impl FnMut(&CaseResult),
) -> Report {
    let mut cases = Vec::new();
    let mut not_declared = Vec::new();
    for suite in suites {
        if suite.cases.is_empty() {
            not_declared.push(suite.package.clone());
            continue;
        }
        for sc in &suite.cases {
            if rt.is_interrupted() {
                break;
            }
            let result = run_case(rt, suite, &sc.case);
            on_case(&result);
            cases.push(result);
        }
    }
    let passed = cases.iter().filter(|c| c.passed).count();
    let failures: Vec<CaseFailure> = cases
        .iter()
        .filter_map(|c| {
            c.mismatch.as_ref().map(|m| CaseFailure {
                package: c.package.clone(),
                case: c.case.clone(),
                path: m.path.clone(),
                expected: m.expected.clone(),
                actual: m.actual.clone(),
                message: m.message.clone(),
            })
        })
        .collect();
    let status = if cases.is_empty() {
        ReportStatus::NotDeclared
    } else if failures.is_empty() {
        ReportStatus::Passed
    } else {
        ReportStatus::Failed
    };
    Report {
        status,
        case_count: cases.len(),
        passed,
        failed: failures.len(),
        failures,
        not_declared,
        cases,
    }
}

/// Runs one case in a fresh scratch workspace and compares.
pub fn run_case(rt: &Runtime, suite: &Suite, case: &Case) -> CaseResult {
    let started = Instant::now();
    let (run_status, mismatch) = match prepare_and_run(rt, suite, case) {
        // The scratch workspace lives until the receipt written inside it has been compared.
        Ok((_scratch, outcome)) => (outcome.status().to_string(), check(&case.expect, &outcome)),
        Err(e) => (
            "failure".to_string(),
            Some(Mismatch {
                path: "$".to_string(),
                expected: Value::Null,
                actual: Value::Null,
                message: e.to_string(),
            }),
        ),
    };
    CaseResult {
        package: suite.package.clone(),
        case: case.name.clone(),
        passed: mismatch.is_none(),
        run_status,
        duration_ms: started.elapsed().as_millis() as u64,
        mismatch,
    }
}

fn prepare_and_run(
    rt: &Runtime,
    suite: &Suite,
    case: &Case,
) -> Result<(tempfile::TempDir, RunOutcome), HarnessError> {
    let io = |context: String| move |source| HarnessError::Workspace { context, source };
    let scratch = tempfile::Builder::new()
        .prefix("runx-harness-")
        .tempdir()
        .map_err(io("cannot create a temporary directory".to_string()))?;
    let workspace = scratch.path().to_path_buf();
    if let Some(data) = data_dir(&suite.dir)? {
        copy_dir(&data, &workspace.join(DATA_DIR))?;
    }
    for (rel, text) in &case.files {
        let dest = workspace.join(&rel.0);
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent)
                .map_err(io(format!("cannot create {}", parent.display())))?;
        }
        std::fs::write(&dest, text).map_err(io(format!("cannot write {}", dest.display())))?;
    }
    let mut req = RunRequest::new(&suite.dir, case.inputs.clone());
    req.runner = case.runner.clone();
    req.env = EnvSource::Map(case.env.clone());
    req.workspace = workspace.clone();
    req.receipt_dir = Some(workspace.join(".runx").join("receipts"));
    let outcome = rt.run(&req);
    Ok((scratch, outcome))
}

/// The package's `fixtures/data` directory, opened inside the package without following any
/// symbolic link; `None` when there is none.
fn data_dir(package: &Path) -> Result<Option<Scope>, HarnessError> {
    let rel = Path::new(FIXTURES_DIR).join(DATA_DIR);
    let refused = |e: ScopeError| HarnessError::Workspace {
        context: format!("cannot copy {}", package.join(&rel).display()),
        source: std::io::Error::other(e.to_string()),
    };
    let scope = Scope::open(package).map_err(|source| HarnessError::Workspace {
        context: format!("cannot open {}", package.display()),
        source,
    })?;
    match scope.open_dir(&rel) {
        Ok(data) => Ok(Some(data)),
        Err(ScopeError::NotFound { .. }) => Ok(None),
        Err(e) => Err(refused(e)),
    }
}

/// Copies the regular files and directories of `from` into `to`. Nothing is followed: symbolic
/// links, FIFOs, sockets and devices are left out (with a warning), and every file is opened
/// through the scope, so one swapped for a link while the copy runs is refused, not followed.
fn copy_dir(from: &Scope, to: &Path) -> Result<(), HarnessError> {
    let io = |context: String| move |source| HarnessError::Workspace { context, source };
    let refused = |e: ScopeError| HarnessError::Workspace {
        context: format!("cannot copy from {}", from.path().display()),
        source: std::io::Error::other(e.to_string()),
    };
    std::fs::create_dir_all(to).map_err(io(format!("cannot create {}", to.display())))?;
    for (name, kind) in from.entries().map_err(refused)? {
        let dest = to.join(&name);
        match kind {
            EntryKind::File => {
                let mut source = from.open_file(&name).map_err(refused)?;
                let mut copy = std::fs::File::create_new(&dest)
                    .map_err(io(format!("cannot create {}", dest.display())))?;
                std::io::copy(&mut source, &mut copy)
                    .map_err(io(format!("cannot copy into {}", dest.display())))?;
            }
            EntryKind::Dir => copy_dir(&from.open_dir(&name).map_err(refused)?, &dest)?,
            EntryKind::Symlink | EntryKind::Other => tracing::warn!(
                "{} is not a regular file or directory; it is not copied into the case workspace",
                from.path().join(&name).display()
            ),
        }
    }
    Ok(())
}
