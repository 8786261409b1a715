//! `runx skill check`: every mistake a package holds that can be known before a run, each with
//! the file, line and column to fix, all at once.
//!
//! A profile that does not load is one problem (the loader stops at the first). A profile that
//! loads is checked runner by runner, and every problem of every runner is reported:
//! - what loading noticed ([`runx_profile::Diagnostic`]): a template naming an environment
//!   name the runner does not declare fails every run (an error); an inert `retry` is a warning;
//! - a javascript runner's module closure: every import resolves to a file inside the package
//!   and compiles (the same collection a run makes);
//! - its export: the module is evaluated in a real worker of the engine it runs on, calling
//!   nothing ([`Call::probe`]), once per module closure; the worker answers each export with
//!   its `typeof`, and the runner's export must be there and be a function. A package's probes
//!   take at most [`PROBE_BUDGET`] together; runners past it are warned about, not checked;
//! - a cli-tool's command: a path (`./bin/tool.sh`) must be an executable file in the package
//!   (an error); a bare name not found in this machine's `PATH` is a warning, since the
//!   machine that runs the package may have it; a `cwd:` without templates must be a directory
//!   of the package.
//!
//! Runners of types runx knows but this runtime does not run are listed, not checked.

use crate::failure::RunError;
use crate::pools::Workers;
use runx_profile::{
    DEFAULT_RUN_NAME, JsRunner, PROFILE_FILE, Profile, ProfileError, Runner, RunnerKind, key_path,
    locate,
};
use runx_worker::{Call, Failure, collect_bundle};
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How bad a problem is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Runs of the runner (or the package) fail because of it.
    Error,
    /// Runs may work, on this machine or another, but something is likely wrong.
    Warning,
}

/// One problem, with where to fix it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Problem {
    /// The file concerned: the package's `X.yaml`, or the directory when there is none.
    pub file: PathBuf,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// 1-based column, when known.
    pub column: Option<usize>,
    /// The runner concerned, when there is one.
    pub runner: Option<String>,
    /// Error or warning.
    pub severity: Severity,
    /// A stable code: the failure code a run would end with (`module_file`, `module_rejected`,
    /// `not_found`, ...), or `profile` for what loading noticed.
    pub code: String,
    /// What is wrong and what to do.
    pub message: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let Some(column) = self.column {
                write!(f, ":{column}")?;
            }
        }
        let severity = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        write!(f, ": {severity}: ")?;
        if let Some(runner) = &self.runner {
            write!(f, "runner `{runner}`: ")?;
        }
        write!(f, "{}", self.message)
    }
}

/// What one runner is, as checked.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CheckedRunner {
    /// Its name.
    pub name: String,
    /// Its declared type.
    pub r#type: String,
    /// Whether this runtime runs it (and so checked it).
    pub runs_here: bool,
    /// For a paged runner: how its pages are partitioned and how long its module lives.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pages: Option<PagedShape>,
}

/// How a paged runner's pages run: page `i` in partition `i mod partitions`, each partition on
/// one worker in page order, and the module instance's lifetime (`page` or `partition`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PagedShape {
    /// The partitions of every run.
    pub partitions: usize,
    /// `page` or `partition`.
    pub module: &'static str,
}

impl PagedShape {
    /// The shape of a runner paged by `pages`.
    pub fn of(pages: &runx_profile::PagesDecl) -> PagedShape {
        PagedShape {
            partitions: pages.partitions(),
            module: pages.module.name(),
        }
    }
}

/// The check of one package.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Checked {
    /// The package directory as given.
    pub dir: PathBuf,
    /// The skill's name, when its profile loads.
    pub skill: Option<String>,
    /// Its runners, by name.
    pub runners: Vec<CheckedRunner>,
    /// Every problem found, in the order of the file (line, then column).
    pub problems: Vec<Problem>,
}

impl Checked {
    /// How many problems are errors.
    pub fn errors(&self) -> usize {
        self.problems
            .iter()
            .filter(|p| p.severity == Severity::Error)
            .count()
    }
}

/// Checks the package in `dir` with the workers of `workers`.
pub(crate) fn check(workers: &Workers, dir: &Path) -> Checked {
    match runx_profile::load_with_text(dir) {
        Ok((profile, text)) => check_loaded(workers, dir, &profile, text),
        Err(e) => Checked {
            dir: dir.to_path_buf(),
            skill: None,
            runners: Vec::new(),
            problems: vec![profile_problem(dir, &e)],
        },
    }
}

/// Checks a package whose profile loaded from `text`.
pub(crate) fn check_loaded(
    workers: &Workers,
    dir: &Path,
    profile: &Profile,
    text: String,
) -> Checked {
    let mut checked = Checked {
        dir: dir.to_path_buf(),
        skill: None,
        runners: Vec::new(),
        problems: Vec::new(),
    };
    let at = Locator {
        file: profile.dir.join(PROFILE_FILE),
        text,
    };
    checked.skill = Some(profile.skill.clone());
    for (name, runner) in &profile.runners {
        checked.runners.push(CheckedRunner {
            name: name.clone(),
            r#type: runner.kind.runner_type().to_string(),
            runs_here: true,
            pages: match &runner.kind {
                runx_profile::RunnerKind::Javascript(js) => js.pages.as_ref().map(PagedShape::of),
                _ => None,
            },
        });
    }
    for (name, other) in &profile.other_runners {
        checked.runners.push(CheckedRunner {
            name: name.clone(),
            r#type: other.ty.clone(),
            runs_here: false,
            pages: None,
        });
    }
    checked.runners.sort_by(|a, b| a.name.cmp(&b.name));
    for d in &profile.diagnostics {
        let severity = if d.fails_every_run {
            Severity::Error
        } else {
            Severity::Warning
        };
        checked.problems.push(at.problem(
            &d.runner,
            &[d.key.as_str()],
            severity,
            "profile",
            d.message.clone(),
        ));
    }
    let mut probes = Probes::default();
    for (name, runner) in &profile.runners {
        match &runner.kind {
            RunnerKind::Javascript(js) => check_javascript(
                workers,
                profile,
                runner,
                js,
                &at,
                &mut probes,
                &mut checked.problems,
            ),
            RunnerKind::CliTool(tool) => {
                // A cwd without templates is a directory of the package, there before any run.
                if let Some(cwd) = tool.cwd.as_deref().filter(|c| !c.contains("{{"))
                    && !profile.dir.join(cwd).is_dir()
                {
                    checked.problems.push(at.problem(
                        name,
                        &["cwd"],
                        Severity::Error,
                        "cwd",
                        format!(
                            "working directory `{cwd}` is not a directory of the package; create it, or correct `cwd:`"
                        ),
                    ));
                }
                let path = std::env::var_os("PATH");
                if let Err(e) =
                    crate::subprocess::resolve_command(&tool.command, path.as_deref(), &profile.dir)
                {
                    let severity = if tool.command.contains('/') {
                        Severity::Error
                    } else {
                        Severity::Warning
                    };
                    let e = RunError::from(e);
                    checked.problems.push(at.problem(
                        name,
                        &["command"],
                        severity,
                        &e.code,
                        e.message,
                    ));
                }
            }
        }
    }
    // In the order of the file, as a compiler lists them.
    checked
        .problems
        .sort_by_key(|p| (p.line.is_none(), p.line, p.column));
    checked
}

/// Most time the probes of one package may take together: a package of many runners whose
/// modules each spin until their wall must not hold the check for hours.
pub(crate) const PROBE_BUDGET: Duration = Duration::from_secs(60);

/// What probing a module closure answered: each export and its `typeof`, or why it could not
/// be loaded. One probe serves every runner of the same closure, engine and wall.
#[derive(Default)]
pub(crate) struct Probes {
    answers: HashMap<ProbeKey, Result<Map<String, Value>, RunError>>,
    spent: Duration,
}

/// A module closure's digest, the engine and the wall in milliseconds: what one probe serves.
type ProbeKey = (String, String, u128);

/// The module closure, the engine and the export of a javascript runner.
fn check_javascript(
    workers: &Workers,
    profile: &Profile,
    runner: &Runner,
    js: &JsRunner,
    at: &Locator,
    probes: &mut Probes,
    problems: &mut Vec<Problem>,
) {
    let name = runner.name.as_str();
    let limits = runx_profile::worker_limits(runner);
    let bundle = match collect_bundle(&profile.dir, &js.module, limits.source_bytes) {
        Ok(b) => b,
        Err(e) => {
            let e = RunError::from(e);
            problems.push(at.problem(name, &["module"], Severity::Error, &e.code, e.message));
            return;
        }
    };
    let engine = match workers.engine_for(runner, js.engine.as_deref()) {
        Ok(engine) => engine,
        Err(e) => {
            // The machine's build, not the package: another runx may have the engine.
            problems.push(at.problem(
                name,
                &["engine", "module"],
                Severity::Warning,
                &e.code,
                format!("{}; its export was not checked", e.message),
            ));
            return;
        }
    };
    let key = (bundle.digest(), engine.clone(), limits.wall().as_millis());
    if !probes.answers.contains_key(&key) {
        if probes.spent >= PROBE_BUDGET {
            problems.push(at.problem(
                name,
                &["export", "module"],
                Severity::Warning,
                "not_checked",
                format!(
                    "its export was not checked: the package's probes took their {} s",
                    PROBE_BUDGET.as_secs()
                ),
            ));
            return;
        }
        let started = Instant::now();
        let answer = probe(workers, &engine, bundle.clone(), limits);
        probes.spent += started.elapsed();
        probes.answers.insert(key.clone(), answer);
    }
    let exports = match &probes.answers[&key] {
        Ok(exports) => exports,
        Err(e) => {
            // Only the module's top-level code ran: a limit hit or a throw happened there.
            let message = if e.kind == crate::failure::FailureKind::ModuleRejected {
                e.message.clone()
            } else {
                format!("the module's top-level code failed: {}", e.message)
            };
            problems.push(at.problem(
                name,
                &["export", "module"],
                Severity::Error,
                &e.code,
                message,
            ));
            return;
        }
    };
    // A map/fold runner calls its two exports and never `export`.
    let called: Vec<(Option<&str>, &[&str])> =
        match js.pages.as_ref().and_then(|p| p.parallel.as_ref()) {
            Some(parallel) => vec![
                (Some(parallel.map.as_str()), &["map", "pages"]),
                (Some(parallel.fold.as_str()), &["fold", "pages"]),
            ],
            None => vec![(js.export.as_deref(), &["export", "module"])],
        };
    for (named, key) in called {
        let export = named.unwrap_or("default");
        let failure = match exports.get(export).and_then(Value::as_str) {
            None => {
                let names: Vec<String> = exports.keys().cloned().collect();
                Failure::missing_export(&bundle.entry, named, &names)
            }
            Some(kind) if Failure::runnable(kind) => continue,
            Some(kind) => Failure::not_a_function(&bundle.entry, export, kind),
        };
        let e = RunError::from(failure);
        problems.push(at.problem(name, key, Severity::Error, &e.code, e.message));
    }
}

/// Loads `bundle` in a worker of `engine` under `limits`, calling nothing: each export and its
/// `typeof`, or the failure the module's loading met.
fn probe(
    workers: &Workers,
    engine: &str,
    bundle: runx_worker::ModuleBundle,
    limits: runx_worker::Limits,
) -> Result<Map<String, Value>, RunError> {
    let pool = workers.pool(engine)?;
    let mut call = Call::new(Arc::new(bundle), None, b"{}".to_vec());
    call.limits = limits;
    call.probe = true;
    let reply = pool.call(&call).map_err(|e| RunError::from(e.failure))?;
    serde_json::from_slice(&reply.output).map_err(|e| {
        RunError::internal(
            "probe",
            format!("the worker's answer to a probe is not an object: {e}"),
        )
    })
}

/// The one problem of a profile that does not load.
fn profile_problem(dir: &Path, e: &ProfileError) -> Problem {
    let (file, line, column) = match e {
        ProfileError::Invalid {
            file, line, column, ..
        } => (file.clone(), *line, *column),
        ProfileError::TooLarge { path, .. } | ProfileError::Read { path, .. } => {
            (path.clone(), None, None)
        }
        _ => (dir.to_path_buf(), None, None),
    };
    // The message of an invalid profile starts with its place, which the problem carries.
    let message = match e {
        ProfileError::Invalid { message, .. } => message.clone(),
        other => other.to_string(),
    };
    Problem {
        file,
        line,
        column,
        runner: None,
        severity: Severity::Error,
        code: e.code().to_string(),
        message,
    }
}

/// Positions of runner keys in a loaded profile's text.
struct Locator {
    file: PathBuf,
    text: String,
}

impl Locator {
    /// A problem of runner `runner` placed at the first of `keys` the runner has (keys like
    /// `args[1]`), else at the runner itself.
    fn problem(
        &self,
        runner: &str,
        keys: &[&str],
        severity: Severity,
        code: &str,
        message: String,
    ) -> Problem {
        let place = keys
            .iter()
            .find_map(|key| self.find(runner, Some(key)))
            .or_else(|| self.find(runner, None));
        Problem {
            file: self.file.clone(),
            line: place.map(|p| p.0),
            column: place.map(|p| p.1),
            runner: Some(runner.to_string()),
            severity,
            code: code.to_string(),
            message,
        }
    }

    /// Where `key` of `runner` is written: under `runners.NAME`, in its nested `run:` or
    /// `source:` block, or under the top-level `run:` of a single-runner package.
    fn find(&self, runner: &str, key: Option<&str>) -> Option<(usize, usize)> {
        let mut bases = vec![format!("runners.{runner}")];
        if runner == DEFAULT_RUN_NAME {
            bases.push("run".to_string());
        }
        bases.iter().find_map(|base| {
            let Some(key) = key else {
                return locate(&self.text, &key_path(base));
            };
            ["", ".run", ".source"]
                .iter()
                .find_map(|nested| locate(&self.text, &key_path(&format!("{base}{nested}.{key}"))))
        })
    }
}
