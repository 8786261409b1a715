//! The harness: fixture cases of skill packages, run through the same [`Runtime::run`] as
//! `runx skill`, and compared with what each case expects.
//!
//! # Fixtures
//!
//! Cases live inline in a package's `X.yaml` under `harness: { cases: [...] }` and in files
//! `fixtures/*.yaml` of the package (a file holds `cases: [...]` or one case). A case:
//!
//! ```yaml
//! name: greets-world
//! runner: greet                # the default runner when absent
//! inputs: { name: World }
//! env: { REGION: eu }          # the only environment the run sees
//! files: { notes/a.txt: "hi" } # created in the scratch workspace before the run
//! expect:
//!   status: sealed             # or failure; default: failure when `error` is given
//!   output: { subset: { greeting: "Hello, World." } }   # or { exact: ... }
//!   error: { kind: environment, code: missing_environment, message_contains: REGION }
//!   receipt: { schema: runx.receipt.v1, status: sealed }  # subset of the receipt written
//! ```
//!
//! A *subset* match holds when every key (and every array element, by index) the expectation
//! gives is present in the actual value and matches recursively; the actual value may hold
//! more. An *exact* match requires equal values (numbers compare by value, so `1` equals `1.0`).
//! A mismatch is reported at the JSON path of the first difference, like
//! `$.output.items[2].name`.
//!
//! # Isolation
//!
//! Each case runs in its own scratch workspace: a fresh temporary directory holding a copy of the
//! package's `fixtures/data/` directory (as `data/`) and the case's `files`. The run's
//! workspace and receipt directory (`.runx/receipts`) are inside it, and the run's environment is
//! exactly the case's `env` ([`EnvSource::Map`]): nothing of the harness's own environment leaks.
//!
//! # Use
//!
//! [`discover`] turns paths into [`Suite`]s (malformed fixtures are a [`HarnessError`] naming
//! file and line), and [`run_suites`] runs them on one [`Runtime`] into a serializable [`Report`].

use crate::profile::PROFILE_FILE;
use crate::runtime::{EnvSource, RunOutcome, RunRequest, Runtime};
use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Component, Path, PathBuf};
use std::time::Instant;

/// The directory of fixture files inside a package.
pub const FIXTURES_DIR: &str = "fixtures";
/// The directory inside [`FIXTURES_DIR`] copied into every scratch workspace (as `data/`).
pub const DATA_DIR: &str = "data";

/// Why the harness could not start: a malformed fixture or an unusable path. Exit code 64.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// A fixture (or the `harness:` block of an `X.yaml`) does not parse.
    #[error("{}{}: malformed fixture: {message}", file.display(), location(*line, *column))]
    Malformed {
        /// The file concerned.
        file: PathBuf,
        /// 1-based line, when known.
        line: Option<usize>,
        /// 1-based column, when known.
        column: Option<usize>,
        /// What is wrong.
        message: String,
    },
    /// A path given to the harness is not a package, fixture file or directory of packages.
    #[error("{}: {message}", path.display())]
    Path {
        /// The path concerned.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

fn location(line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(l), Some(c)) => format!(":{l}:{c}"),
        (Some(l), None) => format!(":{l}"),
        _ => String::new(),
    }
}

impl HarnessError {
    fn yaml(file: &Path, e: &serde_yaml_ng::Error) -> HarnessError {
        let loc = e.location();
        HarnessError::Malformed {
            file: file.to_path_buf(),
            line: loc.as_ref().map(|l| l.line()),
            column: loc.as_ref().map(|l| l.column()),
            message: e.to_string(),
        }
    }

    fn path(path: &Path, message: impl Into<String>) -> HarnessError {
        HarnessError::Path {
            path: path.to_path_buf(),
            message: message.into(),
        }
    }
}

/// One fixture case.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// The case's name (unique within its package by convention).
    pub name: String,
    /// The runner; the package's default runner when absent.
    #[serde(default)]
    pub runner: Option<String>,
    /// The inputs given to the runner.
    #[serde(default)]
    pub inputs: Map<String, Value>,
    /// The values of declared environment names; nothing else is visible to the run.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Files created in the scratch workspace before the run: relative path → text.
    #[serde(default)]
    pub files: BTreeMap<RelPath, String>,
    /// What the run must produce.
    #[serde(default)]
    pub expect: Expect,
}

/// A relative path inside the scratch workspace (no `..`, not absolute, not empty).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct RelPath(pub String);

impl<'de> Deserialize<'de> for RelPath {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<RelPath, D::Error> {
        let s = String::deserialize(d)?;
        let p = Path::new(&s);
        let ok = !s.is_empty()
            && p.components()
                .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
            && p.components().any(|c| matches!(c, Component::Normal(_)));
        if ok {
            Ok(RelPath(s))
        } else {
            Err(de::Error::custom(format!(
                "file path `{s}` must be relative and stay inside the workspace (no `..`, not absolute)"
            )))
        }
    }
}

/// What a case expects.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// `sealed` or `failure`; when absent, `failure` if `error` is given, else `sealed`.
    #[serde(default)]
    pub status: Option<ExpectStatus>,
    /// The output, matched exactly or as a subset.
    #[serde(default)]
    pub output: Option<OutputExpect>,
    /// The failure.
    #[serde(default)]
    pub error: Option<ErrorExpect>,
    /// A subset of the receipt written for the run (as read back from disk).
    #[serde(default)]
    pub receipt: Option<Map<String, Value>>,
}

impl Expect {
    /// The status the case expects.
    pub fn status(&self) -> ExpectStatus {
        self.status.unwrap_or(if self.error.is_some() {
            ExpectStatus::Failure
        } else {
            ExpectStatus::Sealed
        })
    }
}

/// The expected run status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ExpectStatus {
    /// The run produced an output that met the contract.
    Sealed,
    /// The run failed.
    Failure,
}

impl ExpectStatus {
    fn name(self) -> &'static str {
        match self {
            ExpectStatus::Sealed => "sealed",
            ExpectStatus::Failure => "failure",
        }
    }
}

/// How the output is matched: `{exact: VALUE}` or `{subset: VALUE}`.
#[derive(Clone, Debug, PartialEq)]
pub enum OutputExpect {
    /// Equal values.
    Exact(Value),
    /// Every key/element given is present and matches (see the module docs).
    Subset(Value),
}

impl<'de> Deserialize<'de> for OutputExpect {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<OutputExpect, D::Error> {
        let mut m = BTreeMap::<String, Value>::deserialize(d)?;
        let one = m.len() == 1;
        match (one, m.remove("exact"), m.remove("subset")) {
            (true, Some(v), None) => Ok(OutputExpect::Exact(v)),
            (true, None, Some(v)) => Ok(OutputExpect::Subset(v)),
            _ => Err(de::Error::custom(
                "`output` takes exactly one of `exact: VALUE` or `subset: VALUE`",
            )),
        }
    }
}

/// What the failure must look like; every field given must match.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorExpect {
    /// The failure kind, e.g. `resource_limit`.
    #[serde(default)]
    pub kind: Option<String>,
    /// The failure code, e.g. `wall_milliseconds`.
    #[serde(default)]
    pub code: Option<String>,
    /// Text the failure message must contain.
    #[serde(default)]
    pub message_contains: Option<String>,
}

/// A fixture file: many cases, or one.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CasesFile {
    #[serde(default)]
    cases: Vec<Case>,
}

/// The part of `X.yaml` the harness reads.
#[derive(Deserialize)]
struct ProfileHarness {
    #[serde(default)]
    harness: Option<CasesFile>,
}

/// A case together with where it was declared.
#[derive(Clone, Debug)]
pub struct SuiteCase {
    /// The case.
    pub case: Case,
    /// The file declaring it (`X.yaml` or a fixture file).
    pub source: PathBuf,
}

/// The cases of one package.
#[derive(Clone, Debug)]
pub struct Suite {
    /// The package's name: its directory name.
    pub package: String,
    /// The package directory.
    pub dir: PathBuf,
    /// The cases to run, in declaration order (inline first, then fixture files by name).
    pub cases: Vec<SuiteCase>,
}

/// Turns harness paths into suites. A path is a package directory (it has `X.yaml`: its inline
/// cases and every `fixtures/*.yaml`), a fixture file (`.yaml` inside a package's `fixtures/`:
/// only its cases), or a directory of packages (each immediate subdirectory with `X.yaml`, in
/// name order). Fails on the first malformed fixture, naming file and line.
pub fn discover(paths: &[PathBuf]) -> Result<Vec<Suite>, HarnessError> {
    let mut suites = Vec::new();
    for path in paths {
        let meta = std::fs::metadata(path)
            .map_err(|e| HarnessError::path(path, format!("cannot read: {e}")))?;
        if meta.is_file() {
            suites.push(fixture_file_suite(path)?);
        } else if path.join(PROFILE_FILE).is_file() {
            suites.push(package_suite(path)?);
        } else if meta.is_dir() {
            let mut dirs = Vec::new();
            let entries = std::fs::read_dir(path)
                .map_err(|e| HarnessError::path(path, format!("cannot list: {e}")))?;
            for entry in entries {
                let entry =
                    entry.map_err(|e| HarnessError::path(path, format!("cannot list: {e}")))?;
                let p = entry.path();
                if p.is_dir() && p.join(PROFILE_FILE).is_file() {
                    dirs.push(p);
                }
            }
            if dirs.is_empty() {
                return Err(HarnessError::path(
                    path,
                    format!(
                        "is neither a skill package (no {PROFILE_FILE}) nor a directory of skill packages"
                    ),
                ));
            }
            dirs.sort();
            for d in dirs {
                suites.push(package_suite(&d)?);
            }
        } else {
            return Err(HarnessError::path(
                path,
                "is neither a file nor a directory",
            ));
        }
    }
    Ok(suites)
}

fn package_name(dir: &Path) -> String {
    let canonical = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    canonical
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| dir.display().to_string())
}

fn read_text(file: &Path) -> Result<String, HarnessError> {
    std::fs::read_to_string(file).map_err(|e| HarnessError::path(file, format!("cannot read: {e}")))
}

/// The suite of one package directory.
fn package_suite(dir: &Path) -> Result<Suite, HarnessError> {
    let profile = dir.join(PROFILE_FILE);
    let text = read_text(&profile)?;
    let doc: ProfileHarness =
        serde_yaml_ng::from_str(&text).map_err(|e| HarnessError::yaml(&profile, &e))?;
    let mut cases: Vec<SuiteCase> = doc
        .harness
        .map(|h| h.cases)
        .unwrap_or_default()
        .into_iter()
        .map(|case| SuiteCase {
            case,
            source: profile.clone(),
        })
        .collect();
    let fixtures = dir.join(FIXTURES_DIR);
    if fixtures.is_dir() {
        let mut files = Vec::new();
        let entries = std::fs::read_dir(&fixtures)
            .map_err(|e| HarnessError::path(&fixtures, format!("cannot list: {e}")))?;
        for entry in entries {
            let entry =
                entry.map_err(|e| HarnessError::path(&fixtures, format!("cannot list: {e}")))?;
            let p = entry.path();
            if p.is_file() && is_yaml(&p) {
                files.push(p);
            }
        }
        files.sort();
        for f in files {
            cases.extend(read_fixture_file(&f)?);
        }
    }
    Ok(Suite {
        package: package_name(dir),
        dir: dir.to_path_buf(),
        cases,
    })
}

fn is_yaml(p: &Path) -> bool {
    matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml"))
}

/// The suite of one fixture file: its package is the parent of `fixtures/`.
fn fixture_file_suite(file: &Path) -> Result<Suite, HarnessError> {
    let canonical = file
        .canonicalize()
        .map_err(|e| HarnessError::path(file, format!("cannot read: {e}")))?;
    let package = canonical
        .parent()
        .filter(|p| p.file_name().is_some_and(|n| n == FIXTURES_DIR))
        .and_then(Path::parent)
        .filter(|p| p.join(PROFILE_FILE).is_file());
    let Some(dir) = package.filter(|_| is_yaml(&canonical)) else {
        return Err(HarnessError::path(
            file,
            format!(
                "is not a fixture file: expected a .yaml file in the `{FIXTURES_DIR}/` directory of a skill package"
            ),
        ));
    };
    Ok(Suite {
        package: package_name(dir),
        dir: dir.to_path_buf(),
        cases: read_fixture_file(file)?,
    })
}

/// Reads a fixture file: a mapping with `cases:`, or a single case.
fn read_fixture_file(file: &Path) -> Result<Vec<SuiteCase>, HarnessError> {
    let text = read_text(file)?;
    let doc: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(&text).map_err(|e| HarnessError::yaml(file, &e))?;
    let many = doc
        .as_mapping()
        .is_some_and(|m| m.contains_key(serde_yaml_ng::Value::from("cases")));
    let cases = if doc.is_null() {
        Vec::new()
    } else if many {
        serde_yaml_ng::from_str::<CasesFile>(&text)
            .map_err(|e| HarnessError::yaml(file, &e))?
            .cases
    } else {
        vec![serde_yaml_ng::from_str::<Case>(&text).map_err(|e| HarnessError::yaml(file, &e))?]
    };
    Ok(cases
        .into_iter()
        .map(|case| SuiteCase {
            case,
            source: file.to_path_buf(),
        })
        .collect())
}

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

/// The first difference between what a case expected and what it got.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Mismatch {
    /// JSON path of the difference, like `$.output.items[2].name` or `$.error.kind`.
    pub path: String,
    /// The expected value (`null` when the expectation is that nothing is there).
    pub expected: Value,
    /// The actual value (`null` when nothing is there).
    pub actual: Value,
    /// A one-line explanation.
    pub message: String,
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

/// Runs every case of `suites` on `rt` (one pool for all of them), in order.
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
        Err(message) => (
            "failure".to_string(),
            Some(Mismatch {
                path: "$".to_string(),
                expected: Value::Null,
                actual: Value::Null,
                message: format!("cannot prepare the scratch workspace: {message}"),
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
) -> Result<(tempfile::TempDir, RunOutcome), String> {
    let scratch = tempfile::Builder::new()
        .prefix("runx-harness-")
        .tempdir()
        .map_err(|e| format!("cannot create a temporary directory: {e}"))?;
    let workspace = scratch.path().to_path_buf();
    let data = suite.dir.join(FIXTURES_DIR).join(DATA_DIR);
    if data.is_dir() {
        copy_dir(&data, &workspace.join(DATA_DIR))?;
    }
    for (rel, text) in &case.files {
        let dest = workspace.join(&rel.0);
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        std::fs::write(&dest, text).map_err(|e| format!("cannot write {}: {e}", dest.display()))?;
    }
    let req = RunRequest {
        dir: suite.dir.clone(),
        runner: case.runner.clone(),
        inputs: case.inputs.clone(),
        env: EnvSource::Map(case.env.clone()),
        workspace: workspace.clone(),
        receipt_dir: Some(workspace.join(".runx").join("receipts")),
        progress: None,
    };
    let outcome = rt.run(&req);
    Ok((scratch, outcome))
}

/// Copies regular files and directories (symbolic links are not followed nor copied).
fn copy_dir(from: &Path, to: &Path) -> Result<(), String> {
    std::fs::create_dir_all(to).map_err(|e| format!("cannot create {}: {e}", to.display()))?;
    let entries =
        std::fs::read_dir(from).map_err(|e| format!("cannot list {}: {e}", from.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot list {}: {e}", from.display()))?;
        let ty = entry
            .file_type()
            .map_err(|e| format!("cannot stat {}: {e}", entry.path().display()))?;
        let dest = to.join(entry.file_name());
        if ty.is_dir() {
            copy_dir(&entry.path(), &dest)?;
        } else if ty.is_file() {
            std::fs::copy(entry.path(), &dest)
                .map_err(|e| format!("cannot copy {}: {e}", entry.path().display()))?;
        }
    }
    Ok(())
}

/// Compares an outcome with a case's expectation; the first difference, if any.
pub fn check(expect: &Expect, outcome: &RunOutcome) -> Option<Mismatch> {
    let want = expect.status();
    let got = outcome.status();
    if want.name() != got {
        let detail = match &outcome.error {
            Some(e) => format!(" ({e})"),
            None => String::new(),
        };
        return Some(Mismatch {
            path: "$.status".to_string(),
            expected: Value::from(want.name()),
            actual: Value::from(got),
            message: format!(
                "expected the run to be {}, it was {got}{detail}",
                want.name()
            ),
        });
    }
    if let Some(out) = &expect.output {
        let actual = outcome.output.clone().unwrap_or(Value::Null);
        let m = match out {
            OutputExpect::Exact(v) => match_exact(v, &actual, "$.output"),
            OutputExpect::Subset(v) => match_subset(v, &actual, "$.output"),
        };
        if m.is_some() {
            return m;
        }
    }
    if let Some(err) = &expect.error {
        let actual = outcome.error.as_ref();
        let field = |name: &str, want: &Option<String>, got: Option<&String>| {
            let want = want.as_ref()?;
            if got == Some(want) {
                return None;
            }
            Some(Mismatch {
                path: format!("$.error.{name}"),
                expected: Value::from(want.as_str()),
                actual: got.map_or(Value::Null, |g| Value::from(g.as_str())),
                message: format!("the failure {name} differs"),
            })
        };
        if let Some(m) = field("kind", &err.kind, actual.map(|e| &e.kind))
            .or_else(|| field("code", &err.code, actual.map(|e| &e.code)))
        {
            return Some(m);
        }
        if let Some(want) = &err.message_contains {
            let got = actual.map(|e| e.message.as_str());
            if !got.is_some_and(|g| g.contains(want.as_str())) {
                return Some(Mismatch {
                    path: "$.error.message".to_string(),
                    expected: Value::from(want.as_str()),
                    actual: got.map_or(Value::Null, Value::from),
                    message: format!("the failure message does not contain `{want}`"),
                });
            }
        }
    }
    if let Some(receipt) = &expect.receipt {
        let written = outcome
            .receipt_path
            .as_ref()
            .and_then(|p| std::fs::read(p).ok())
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok());
        let Some(actual) = written else {
            return Some(Mismatch {
                path: "$.receipt".to_string(),
                expected: Value::Object(receipt.clone()),
                actual: Value::Null,
                message: "no readable receipt was written".to_string(),
            });
        };
        if let Some(m) = match_subset(&Value::Object(receipt.clone()), &actual, "$.receipt") {
            return Some(m);
        }
    }
    None
}

/// A path segment for an object key: `.key` for identifier-like keys, else `["key"]`.
fn key_path(path: &str, key: &str) -> String {
    let simple = key
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    let mut out = path.to_string();
    if simple {
        let _ = write!(out, ".{key}");
    } else {
        let _ = write!(out, "[{}]", Value::from(key));
    }
    out
}

fn scalar_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            x == y
                || match (x.as_f64(), y.as_f64()) {
                    (Some(p), Some(q)) => p == q,
                    _ => false,
                }
        }
        _ => a == b,
    }
}

fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn differ(path: &str, expected: &Value, actual: &Value, message: String) -> Option<Mismatch> {
    Some(Mismatch {
        path: path.to_string(),
        expected: expected.clone(),
        actual: actual.clone(),
        message,
    })
}

/// Whether `actual` contains `expected`: every key of an expected object is present and matches,
/// every element of an expected array matches the actual element at the same index (the actual
/// array may be longer), and scalars are equal. The first difference, with its JSON path under
/// `path`, or `None` when it matches.
pub fn match_subset(expected: &Value, actual: &Value, path: &str) -> Option<Mismatch> {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => e.iter().find_map(|(k, ev)| {
            let p = key_path(path, k);
            match a.get(k) {
                Some(av) => match_subset(ev, av, &p),
                None => differ(&p, ev, &Value::Null, "missing key".to_string()),
            }
        }),
        (Value::Array(e), Value::Array(a)) => e.iter().enumerate().find_map(|(i, ev)| {
            let p = format!("{path}[{i}]");
            match a.get(i) {
                Some(av) => match_subset(ev, av, &p),
                None => differ(
                    &p,
                    ev,
                    &Value::Null,
                    format!("missing element (the array has {} elements)", a.len()),
                ),
            }
        }),
        _ => scalar_mismatch(expected, actual, path),
    }
}

/// Whether `actual` equals `expected` (numbers compare by value). The first difference, with its
/// JSON path under `path`, or `None` when equal.
pub fn match_exact(expected: &Value, actual: &Value, path: &str) -> Option<Mismatch> {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => e
            .iter()
            .find_map(|(k, ev)| {
                let p = key_path(path, k);
                match a.get(k) {
                    Some(av) => match_exact(ev, av, &p),
                    None => differ(&p, ev, &Value::Null, "missing key".to_string()),
                }
            })
            .or_else(|| {
                a.iter()
                    .find(|(k, _)| !e.contains_key(*k))
                    .and_then(|(k, av)| {
                        differ(
                            &key_path(path, k),
                            &Value::Null,
                            av,
                            "unexpected key".to_string(),
                        )
                    })
            }),
        (Value::Array(e), Value::Array(a)) => e
            .iter()
            .zip(a)
            .enumerate()
            .find_map(|(i, (ev, av))| match_exact(ev, av, &format!("{path}[{i}]")))
            .or_else(|| {
                if e.len() == a.len() {
                    None
                } else {
                    differ(
                        path,
                        expected,
                        actual,
                        format!("expected {} elements, got {}", e.len(), a.len()),
                    )
                }
            }),
        _ => scalar_mismatch(expected, actual, path),
    }
}

fn scalar_mismatch(expected: &Value, actual: &Value, path: &str) -> Option<Mismatch> {
    if scalar_eq(expected, actual) {
        return None;
    }
    let message = if kind_name(expected) == kind_name(actual) {
        "values differ".to_string()
    } else {
        format!(
            "expected {}, got {}",
            kind_name(expected),
            kind_name(actual)
        )
    };
    differ(path, expected, actual, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn path_of(m: Option<Mismatch>) -> String {
        m.map(|m| m.path).unwrap_or_default()
    }

    #[test]
    fn subset_matches_nested_objects_and_arrays() {
        let actual = json!({
            "total": 6, "extra": true,
            "items": [{"name": "a", "n": 1}, {"name": "b"}, {"name": "c", "deep": {"x": [1, 2, 3]}}]
        });
        assert_eq!(match_subset(&json!({}), &actual, "$.output"), None);
        assert_eq!(
            match_subset(
                &json!({"items": [{"name": "a"}, {}, {"deep": {"x": [1, 2]}}], "total": 6.0}),
                &actual,
                "$.output"
            ),
            None
        );
        let m = match_subset(
            &json!({"items": [{}, {}, {"name": "z"}]}),
            &actual,
            "$.output",
        )
        .expect("differs");
        assert_eq!(m.path, "$.output.items[2].name");
        assert_eq!(m.expected, json!("z"));
        assert_eq!(m.actual, json!("c"));
        assert_eq!(
            path_of(match_subset(
                &json!({"items": [{}, {}, {"deep": {"x": [1, 5]}}]}),
                &actual,
                "$.output"
            )),
            "$.output.items[2].deep.x[1]"
        );
        let m = match_subset(&json!({"items": [{}, {}, {}, {}]}), &actual, "$.output")
            .expect("too short");
        assert_eq!(m.path, "$.output.items[3]");
        assert_eq!(m.actual, Value::Null);
        let m = match_subset(&json!({"missing": 1}), &actual, "$.output").expect("missing");
        assert_eq!(
            (m.path.as_str(), m.message.as_str()),
            ("$.output.missing", "missing key")
        );
        assert_eq!(
            path_of(match_subset(&json!({"a b": 1}), &json!({}), "$")),
            "$[\"a b\"]"
        );
        // Type differences are differences.
        let m = match_subset(&json!({"items": {}}), &actual, "$.output").expect("type");
        assert_eq!(m.message, "expected object, got array");
        assert_eq!(
            path_of(match_subset(&json!([null]), &json!([0]), "$")),
            "$[0]"
        );
    }

    #[test]
    fn exact_requires_equality() {
        let actual = json!({"a": [1, {"b": 2}], "c": "x"});
        assert_eq!(match_exact(&actual.clone(), &actual, "$.output"), None);
        assert_eq!(
            match_exact(&json!({"a": [1.0, {"b": 2}], "c": "x"}), &actual, "$"),
            None
        );
        let m = match_exact(&json!({"a": [1, {"b": 2}]}), &actual, "$.output").expect("extra key");
        assert_eq!(m.path, "$.output.c");
        assert_eq!((m.expected, m.actual), (Value::Null, json!("x")));
        assert_eq!(
            path_of(match_exact(
                &json!({"a": [1], "c": "x"}),
                &actual,
                "$.output"
            )),
            "$.output.a"
        );
        assert_eq!(
            path_of(match_exact(
                &json!({"a": [1, {"b": 3}], "c": "x"}),
                &actual,
                "$.output"
            )),
            "$.output.a[1].b"
        );
        assert_eq!(
            path_of(match_exact(&json!(1), &json!("1"), "$.output")),
            "$.output"
        );
    }

    fn outcome(output: Option<Value>, error: Option<crate::RunError>) -> RunOutcome {
        RunOutcome {
            skill: "s".into(),
            runner: "r".into(),
            output,
            error,
            receipt: crate::receipt::Receipt::default(),
            receipt_path: None,
            log: Default::default(),
        }
    }

    fn expect(yaml: &str) -> Expect {
        serde_yaml_ng::from_str(yaml).expect("expect parses")
    }

    #[test]
    fn check_reports_status_error_and_output_paths() {
        let sealed = outcome(Some(json!({"g": "hi", "n": [1, 2]})), None);
        assert_eq!(check(&expect("{}"), &sealed), None);
        assert_eq!(
            check(&expect("output: { exact: { g: hi, n: [1, 2] } }"), &sealed),
            None
        );
        assert_eq!(
            path_of(check(&expect("output: { subset: { n: [1, 3] } }"), &sealed)),
            "$.output.n[1]"
        );
        let m = check(&expect("error: { kind: input }"), &sealed).expect("status");
        assert_eq!(
            (m.path.as_str(), m.expected, m.actual),
            ("$.status", json!("failure"), json!("sealed"))
        );
        let failed = outcome(
            None,
            Some(crate::RunError::new(
                "resource_limit",
                "wall_milliseconds",
                "too slow: 1000 ms",
            )),
        );
        assert_eq!(path_of(check(&expect("{}"), &failed)), "$.status");
        assert_eq!(
            check(
                &expect(
                    "{status: failure, error: { kind: resource_limit, code: wall_milliseconds, message_contains: '1000' }}"
                ),
                &failed
            ),
            None
        );
        let m = check(
            &expect("error: { kind: resource_limit, code: heap }"),
            &failed,
        )
        .expect("code");
        assert_eq!(
            (m.path.as_str(), m.actual),
            ("$.error.code", json!("wall_milliseconds"))
        );
        assert_eq!(
            path_of(check(&expect("error: { message_contains: nope }"), &failed)),
            "$.error.message"
        );
        assert_eq!(
            path_of(check(
                &expect("{status: failure, receipt: { schema: runx.receipt.v1 }}"),
                &failed
            )),
            "$.receipt"
        );
    }

    #[test]
    fn case_syntax() {
        let c: Case = serde_yaml_ng::from_str(
            "name: a\nrunner: r\ninputs: { x: [1] }\nenv: { A: b }\nfiles: { d/e.txt: hi }\nexpect: { status: sealed, output: { subset: { y: 1 } }, receipt: { schema: runx.receipt.v1 } }\n",
        )
        .expect("parses");
        assert_eq!(c.runner.as_deref(), Some("r"));
        assert_eq!(c.files[&RelPath("d/e.txt".into())], "hi");
        assert_eq!(c.expect.output, Some(OutputExpect::Subset(json!({"y": 1}))));
        for bad in [
            "name: a\nfiles: { ../x: hi }\n",
            "name: a\nfiles: { /etc/x: hi }\n",
            "name: a\nexpect: { status: done }\n",
            "name: a\nexpect: { output: { exactly: 1 } }\n",
            "name: a\nnmae: b\n",
        ] {
            let e = serde_yaml_ng::from_str::<Case>(bad).expect_err(bad);
            assert!(e.location().is_some(), "{bad}: {e}");
        }
    }

    // ---- packages in temporary directories, run through a real runtime ----

    fn package(profile: &str, files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join(PROFILE_FILE), profile).expect("profile");
        for (p, text) in files {
            let dest = dir.path().join(p);
            std::fs::create_dir_all(dest.parent().expect("parent")).expect("mkdir");
            std::fs::write(dest, text).expect("write");
        }
        dir
    }

    fn runtime() -> Runtime {
        Runtime::discover().with_pool_size(2)
    }

    const ECHO: &str = r#"
export function echo(inputs, { environment }) {
  return { inputs, env: environment, leaky: environment.LEAKY ?? null, path: environment.PATH ?? null };
}
export function readData(inputs) { return { ok: true }; }
"#;

    const PROFILE: &str = "skill: echo\nrunners:\n  echo:\n    default: true\n    type: javascript\n    module: m.mjs\n    export: echo\n    environment: { optional: [LEAKY, PATH, HOME, GIVEN] }\n";

    fn run(dir: &Path) -> Report {
        let suites = discover(&[dir.to_path_buf()]).expect("discover");
        run_suites(&runtime(), &suites)
    }

    #[test]
    fn passing_and_failing_cases_through_the_runtime() {
        let pkg = package(
            &format!(
                "{PROFILE}harness:\n  cases:\n    - name: passes\n      inputs: {{ items: [{{ name: a }}, {{ name: b, n: 1 }}] }}\n      env: {{ GIVEN: yes }}\n      expect:\n        output: {{ subset: {{ inputs: {{ items: [{{}}, {{ name: b }}] }}, env: {{ GIVEN: 'yes' }} }} }}\n        receipt: {{ schema: runx.receipt.v1, status: sealed, skill: echo }}\n"
            ),
            &[
                ("m.mjs", ECHO),
                (
                    "fixtures/more.yaml",
                    "cases:\n  - name: fails\n    inputs: { items: [1, 2, { name: x }] }\n    expect: { output: { subset: { inputs: { items: [1, 2, { name: y }] } } } }\n",
                ),
                (
                    "fixtures/single.yaml",
                    "name: missing-runner\nrunner: nope\nexpect: { error: { kind: profile, code: unknown_runner } }\n",
                ),
            ],
        );
        let report = run(pkg.path());
        assert_eq!(report.case_count, 3, "{report:#?}");
        assert_eq!(report.passed, 2, "{report:#?}");
        assert_eq!(report.status, ReportStatus::Failed);
        assert_eq!(report.exit_code(), 1);
        assert_eq!(report.summary(), "2 passed, 1 failed");
        let f = &report.failures[0];
        assert_eq!(f.case, "fails");
        assert_eq!(f.path, "$.output.inputs.items[2].name");
        assert_eq!(
            (f.expected.clone(), f.actual.clone()),
            (json!("y"), json!("x"))
        );

        // A fixture file alone runs only its cases.
        let suites = discover(&[pkg.path().join("fixtures/single.yaml")]).expect("discover");
        assert_eq!(suites[0].cases.len(), 1);
        let r = run_suites(&runtime(), &suites);
        assert_eq!((r.status, r.passed), (ReportStatus::Passed, 1));
        let json = serde_json::to_value(&r).expect("serializes");
        assert_eq!(json["status"], "passed");
        assert_eq!(json["case_count"], 1);
    }

    #[test]
    fn environment_is_only_the_cases_env() {
        // PATH (and HOME) are set in this test process; the runner declares them optional; the
        // case gives neither, so the skill sees neither.
        assert!(std::env::var_os("PATH").is_some());
        let pkg = package(
            &format!(
                "{PROFILE}harness:\n  cases:\n    - name: isolated\n      expect: {{ output: {{ exact: {{ inputs: {{}}, env: {{}}, leaky: null, path: null }} }} }}\n    - name: given\n      env: {{ PATH: /nowhere }}\n      expect: {{ output: {{ subset: {{ env: {{ PATH: /nowhere }}, path: /nowhere }} }} }}\n"
            ),
            &[("m.mjs", ECHO)],
        );
        let report = run(pkg.path());
        assert_eq!(report.status, ReportStatus::Passed, "{report:#?}");
    }

    #[test]
    fn scratch_workspace_holds_data_and_files() {
        let pkg = package(
            r#"skill: ws
run:
  type: cli-tool
  command: /bin/sh
  args: ["-c", 'printf "{\"d\":\"%s\",\"n\":\"%s\"}" "$(cat data/d.txt)" "$(cat notes/n.txt)"']
  cwd: "{{env.RUNX_CWD}}"
  idempotent: true
"#,
            &[
                ("fixtures/data/d.txt", "from-data\n"),
                (
                    "fixtures/case.yaml",
                    "name: sees-files\nfiles: { notes/n.txt: \"from-case\\n\" }\nexpect: { output: { exact: { d: from-data, n: from-case } } }\n",
                ),
            ],
        );
        let report = run(pkg.path());
        assert_eq!(report.status, ReportStatus::Passed, "{report:#?}");
    }

    #[test]
    fn malformed_fixtures_name_file_and_line() {
        let pkg = package(
            PROFILE,
            &[
                ("m.mjs", ECHO),
                (
                    "fixtures/bad.yaml",
                    "cases:\n  - name: a\n    expect:\n      status: sealedd\n",
                ),
            ],
        );
        let e = discover(&[pkg.path().to_path_buf()]).expect_err("malformed");
        match &e {
            HarnessError::Malformed { file, line, .. } => {
                assert!(file.ends_with("fixtures/bad.yaml"), "{e}");
                assert_eq!(*line, Some(4), "{e}");
            }
            other => panic!("{other}"),
        }
        assert!(e.to_string().contains("bad.yaml:4:"), "{e}");

        let pkg = package(
            &format!("{PROFILE}harness:\n  cases:\n    - name: a\n      inputz: {{}}\n"),
            &[("m.mjs", ECHO)],
        );
        let e = discover(&[pkg.path().to_path_buf()]).expect_err("malformed inline");
        assert!(e.to_string().contains("X.yaml:12:"), "{e}");

        let pkg = package(PROFILE, &[("fixtures/broken.yaml", "cases: [\n")]);
        let e = discover(&[pkg.path().join("fixtures/broken.yaml")]).expect_err("syntax");
        assert!(
            matches!(e, HarnessError::Malformed { line: Some(_), .. }),
            "{e}"
        );

        let e = discover(&[pkg.path().join("m.mjs")]).expect_err("not a fixture");
        assert!(matches!(e, HarnessError::Path { .. }), "{e}");
    }

    #[test]
    fn packages_without_cases_are_not_declared() {
        let root = tempfile::tempdir().expect("tempdir");
        for (name, profile) in [
            ("a", PROFILE.to_string()),
            (
                "b",
                format!(
                    "{PROFILE}harness:\n  cases:\n    - name: ok\n      expect: {{ output: {{ subset: {{ leaky: null }} }} }}\n"
                ),
            ),
        ] {
            let d = root.path().join(name);
            std::fs::create_dir_all(&d).expect("mkdir");
            std::fs::write(d.join(PROFILE_FILE), profile).expect("profile");
            std::fs::write(d.join("m.mjs"), ECHO).expect("module");
        }
        std::fs::create_dir_all(root.path().join("not-a-package")).expect("mkdir");

        let only = run(&root.path().join("a"));
        assert_eq!(only.status, ReportStatus::NotDeclared);
        assert_eq!(only.case_count, 0);
        assert_eq!(only.exit_code(), 0);
        assert_eq!(only.not_declared, vec!["a"]);

        let all = run(root.path());
        assert_eq!(all.status, ReportStatus::Passed, "{all:#?}");
        assert_eq!(all.not_declared, vec!["a"]);
        assert_eq!(all.summary(), "1 passed, 0 failed");
    }
}
