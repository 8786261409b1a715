//! Running cases, each in its own scratch workspace, into a [`Report`].

use crate::compare::Mismatch;
use crate::discover::{PackageError, Suite, SuiteCase};
use crate::error::HarnessError;
use crate::fixture::{Case, CaseKind, DATA_DIR, FIXTURES_DIR, RelPath};
use crate::matching::check_case;
use crate::plan::{Plan, plan};
use runx_profile::Diagnostic;
use runx_receipts::digest;
use runx_runtime::{EnvSource, RunOutcome, RunRequest, Runtime};
use runx_worker::{EntryKind, Scope, ScopeError};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The overall result of a harness run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReportStatus {
    /// Every case run passed, and every package loaded.
    Passed,
    /// At least one case failed.
    Failed,
    /// No package declared any case.
    NotDeclared,
    /// Cases were declared, and every one was skipped: none ran.
    Skipped,
    /// At least one package is broken: its profile does not load or a fixture is malformed.
    Malformed,
}

/// What became of one case.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CaseVerdict {
    /// It ran and met its expectations.
    Passed,
    /// It ran (or could not) and did not meet them.
    Failed,
    /// It was not run: it needs a runner this runtime does not have.
    Skipped,
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
    /// The run's status, `sealed` or `failure` (`skipped` when it did not run).
    pub run_status: String,
    /// Wall-clock milliseconds of the case (setup and run).
    pub duration_ms: u64,
    /// The first difference, when it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mismatch: Option<Mismatch>,
    /// `sha256:` of the canonical JSON of the case's whole receipt; `null` when the case
    /// never got as far as a run.
    pub receipt_digest: Option<String>,
    /// The case's receipt (its file lives in the scratch workspace, which is gone; the
    /// harness receipt writes it again beside itself).
    #[serde(skip)]
    pub receipt: Option<serde_json::Value>,
    /// `passed`, `failed` or `skipped`.
    pub outcome: CaseVerdict,
    /// The case's `kind`, when it declares one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<CaseKind>,
    /// Why a skipped case was not run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skip_reason: Option<String>,
    /// What a skipped case needs that only runx itself has: `graph`, `agent`, `mcp`, `a2a`,
    /// or another runner type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub needs: Option<String>,
}

/// What became of one package.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PackageStatus {
    /// Every case it ran passed.
    Passed,
    /// A case failed.
    Failed,
    /// It declares no case.
    NotDeclared,
    /// Every case it declares was skipped.
    Skipped,
    /// Its profile does not load, or a fixture is malformed; no case ran.
    Malformed,
}

/// The result of one package.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PackageResult {
    /// The package name.
    pub package: String,
    /// The package directory.
    pub dir: PathBuf,
    /// How it went.
    pub status: PackageStatus,
    /// Cases passed.
    pub passed: usize,
    /// Cases failed.
    pub failed: usize,
    /// Cases skipped.
    pub skipped: usize,
    /// The cases skipped, counted by what they need (see [`CaseResult::needs`]).
    pub not_run: BTreeMap<String, usize>,
    /// Why it is malformed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<PackageError>,
    /// What loading its profile noticed (templates naming undeclared inputs, inert retries).
    pub diagnostics: Vec<Diagnostic>,
}

/// A malformed package, as listed in [`Report::errors`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PackageFailure {
    /// The package name.
    pub package: String,
    /// What is wrong, where.
    #[serde(flatten)]
    pub error: PackageError,
}

/// What a harness run found. Serializes as the `--json` report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    /// `passed`, `failed`, `not_declared` or `malformed`.
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
    /// Every case, in run order (skipped ones included).
    pub cases: Vec<CaseResult>,
    /// Cases not run, with their reasons in [`Report::cases`].
    pub skipped: usize,
    /// The cases not run, counted by what they need (see [`CaseResult::needs`]).
    pub not_run: BTreeMap<String, usize>,
    /// Malformed packages.
    pub errors: Vec<PackageFailure>,
    /// Every package found, with its own result.
    pub packages: Vec<PackageResult>,
}

impl Report {
    /// The process exit code: 64 when a package is malformed, 1 when a case failed, else 0.
    pub fn exit_code(&self) -> i32 {
        if !self.errors.is_empty() {
            64
        } else if self.failed > 0 {
            1
        } else {
            0
        }
    }

    /// The summary line CI parses: `N passed, M failed`, then the skipped cases with what they
    /// need (`, 5 skipped (1 agent, 4 graph)`) and malformed packages when there are any.
    pub fn summary(&self) -> String {
        let mut line = format!("{} passed, {} failed", self.passed, self.failed);
        if self.skipped > 0 {
            line.push_str(&format!(
                ", {} skipped ({})",
                self.skipped,
                counted(&self.not_run)
            ));
        }
        if !self.errors.is_empty() {
            let n = self.errors.len();
            line.push_str(&format!(
                ", {n} malformed package{}",
                if n == 1 { "" } else { "s" }
            ));
        }
        line
    }
}

/// `3 graph, 1 mcp`: counts by name, in name order.
pub fn counted(counts: &BTreeMap<String, usize>) -> String {
    counts
        .iter()
        .map(|(name, n)| format!("{n} {name}"))
        .collect::<Vec<_>>()
        .join(", ")
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
    let mut packages = Vec::new();
    let mut errors = Vec::new();
    for suite in suites {
        let mut package = PackageResult {
            package: suite.package.clone(),
            dir: suite.dir.clone(),
            status: PackageStatus::NotDeclared,
            passed: 0,
            failed: 0,
            skipped: 0,
            not_run: BTreeMap::new(),
            error: suite.broken.clone(),
            diagnostics: suite.diagnostics.clone(),
        };
        let broken = suite
            .broken
            .clone()
            .or_else(|| crate::checks::check_errors(rt, suite));
        if let Some(error) = &broken {
            package.error = Some(error.clone());
            package.status = PackageStatus::Malformed;
            errors.push(PackageFailure {
                package: suite.package.clone(),
                error: error.clone(),
            });
            packages.push(package);
            continue;
        }
        for sc in &suite.cases {
            if rt.is_interrupted() {
                break;
            }
            let result = run_case(rt, suite, sc);
            on_case(&result);
            match result.outcome {
                CaseVerdict::Passed => package.passed += 1,
                CaseVerdict::Failed => package.failed += 1,
                CaseVerdict::Skipped => {
                    package.skipped += 1;
                    if let Some(needs) = &result.needs {
                        *package.not_run.entry(needs.clone()).or_default() += 1;
                    }
                }
            }
            cases.push(result);
        }
        package.status = package_status(&package);
        packages.push(package);
    }
    report(cases, packages, errors)
}

/// A package's status from the verdicts of its cases.
fn package_status(package: &PackageResult) -> PackageStatus {
    if package.failed > 0 {
        PackageStatus::Failed
    } else if package.passed > 0 {
        PackageStatus::Passed
    } else if package.skipped > 0 {
        PackageStatus::Skipped
    } else {
        PackageStatus::NotDeclared
    }
}

/// The report of a whole harness run from its cases, packages and broken packages.
fn report(
    cases: Vec<CaseResult>,
    packages: Vec<PackageResult>,
    errors: Vec<PackageFailure>,
) -> Report {
    let count = |v: CaseVerdict| cases.iter().filter(|c| c.outcome == v).count();
    let (passed, skipped) = (count(CaseVerdict::Passed), count(CaseVerdict::Skipped));
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
    let not_declared = packages
        .iter()
        .filter(|p| p.status == PackageStatus::NotDeclared)
        .map(|p| p.package.clone())
        .collect();
    let status = if !errors.is_empty() {
        ReportStatus::Malformed
    } else if !failures.is_empty() {
        ReportStatus::Failed
    } else if cases.is_empty() {
        ReportStatus::NotDeclared
    } else if passed == 0 {
        ReportStatus::Skipped
    } else {
        ReportStatus::Passed
    };
    let mut not_run = BTreeMap::new();
    for (needs, n) in packages.iter().flat_map(|p| &p.not_run) {
        *not_run.entry(needs.clone()).or_default() += n;
    }
    Report {
        status,
        not_run,
        case_count: cases.len() - skipped,
        passed,
        failed: failures.len(),
        failures,
        not_declared,
        cases,
        skipped,
        errors,
        packages,
    }
}

/// Runs one case in a fresh scratch workspace and compares.
pub fn run_case(rt: &Runtime, suite: &Suite, sc: &SuiteCase) -> CaseResult {
    let started = Instant::now();
    let case = &sc.case;
    let whole = |message: String| Mismatch {
        path: "$".to_string(),
        expected: Value::Null,
        actual: Value::Null,
        message,
    };
    let mut needs = None;
    let (run_status, outcome, mismatch, skip_reason, receipt) = match plan(suite, sc) {
        Plan::Skip(skip) => {
            needs = Some(skip.needs);
            (
                "skipped".to_string(),
                CaseVerdict::Skipped,
                None,
                Some(skip.reason),
                None,
            )
        }
        Plan::Fail(message) => (
            "failure".to_string(),
            CaseVerdict::Failed,
            Some(whole(message)),
            None,
            None,
        ),
        Plan::Run(dir) => match prepare_and_run(rt, suite, sc, &dir) {
            // The scratch workspace lives until the receipt written inside it has been compared.
            Ok((_scratch, run)) => {
                let mismatch = check_case(case, &run);
                let verdict = if mismatch.is_some() {
                    CaseVerdict::Failed
                } else {
                    CaseVerdict::Passed
                };
                (
                    run.status().to_string(),
                    verdict,
                    mismatch,
                    None,
                    Some(run.receipt),
                )
            }
            Err(e) => (
                "failure".to_string(),
                CaseVerdict::Failed,
                Some(whole(e.to_string())),
                None,
                None,
            ),
        },
    };
    // The digest a verifier computes from the receipt's file.
    let receipt_digest = receipt
        .as_ref()
        .and_then(runx_receipts::as_written)
        .map(|v| digest(&v));
    CaseResult {
        package: suite.package.clone(),
        case: case.name.clone(),
        passed: outcome == CaseVerdict::Passed,
        run_status,
        duration_ms: started.elapsed().as_millis() as u64,
        mismatch,
        receipt_digest,
        receipt,
        outcome,
        kind: case.kind,
        skip_reason,
        needs,
    }
}

fn prepare_and_run(
    rt: &Runtime,
    suite: &Suite,
    sc: &SuiteCase,
    dir: &Path,
) -> Result<(tempfile::TempDir, RunOutcome), HarnessError> {
    let case: &Case = &sc.case;
    let io = |context: String| move |source| HarnessError::Workspace { context, source };
    let scratch = tempfile::Builder::new()
        .prefix("runx-harness-")
        .tempdir()
        .map_err(io("cannot create a temporary directory".to_string()))?;
    let workspace = scratch.path().to_path_buf();
    if let Some(data) = data_dir(&suite.dir)? {
        copy_dir(&data, &workspace.join(DATA_DIR))?;
    }
    for rel in &sc.copies {
        copy_package_file(&suite.dir, rel, &workspace)?;
    }
    for (rel, text) in &case.files {
        let dest = workspace.join(&rel.0);
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent)
                .map_err(io(format!("cannot create {}", parent.display())))?;
        }
        std::fs::write(&dest, text).map_err(io(format!("cannot write {}", dest.display())))?;
    }
    let mut req = RunRequest::new(dir, case.inputs.clone());
    req.runner = case.runner.clone();
    req.env = EnvSource::Map(case.env.clone());
    req.workspace = workspace.clone();
    req.receipt_dir = Some(workspace.join(".runx").join("receipts"));
    req.case = Some(case.name.clone());
    let outcome = rt.run(req);
    Ok((scratch, outcome))
}

/// Copies an inline `harness.files` entry to the same path in the workspace; files under
/// `fixtures/bin/` are made executable, as runx packages expect. The file is opened inside the
/// package through [`Scope`], like every file runx reads of a package: no component of its path
/// may be a symbolic link, and it must be a regular file (discovery checked the same, but the
/// package may have changed since).
pub(crate) fn copy_package_file(
    package: &Path,
    rel: &RelPath,
    workspace: &Path,
) -> Result<(), HarnessError> {
    use std::os::unix::fs::PermissionsExt;
    let io = |context: String| move |source| HarnessError::Workspace { context, source };
    let from = package.join(&rel.0);
    let mut source = Scope::open(package)
        .map_err(io(format!("cannot open {}", package.display())))?
        .open_file(&rel.0)
        .map_err(|e| {
            HarnessError::path(
                &from,
                format!("cannot be copied: {e}; `harness.files` copies regular files only"),
            )
        })?;
    let dest = workspace.join(&rel.0);
    if let Some(parent) = dest.parent() {
        std::fs::create_dir_all(parent)
            .map_err(io(format!("cannot create {}", parent.display())))?;
    }
    let mut copy =
        std::fs::File::create(&dest).map_err(io(format!("cannot create {}", dest.display())))?;
    std::io::copy(&mut source, &mut copy).map_err(io(format!("cannot copy {}", from.display())))?;
    let executable = Path::new(&rel.0)
        .parent()
        .is_some_and(|p| p.ends_with(Path::new(FIXTURES_DIR).join("bin")));
    if executable {
        std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(0o755))
            .map_err(io(format!("cannot make {} executable", dest.display())))?;
    }
    Ok(())
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
