//! Skill package profiles: a package's `X.yaml`, read into a validated model.
//!
//! The profile is the only place a package tells the runtime what to run, so everything the
//! runtime later relies on (module paths, limits, declared environment names, page framing) is
//! checked here, once, with an error that names the file, the line, the runner and the key. A
//! person fixing a package should never have to guess which of several runners was wrong.
//!
//! No key is ever silently ignored. Keys runx packages use that this runtime does not act on
//! (top level: `runx`, `policy`, `emits`, `catalog`, `credentials`; in runners: `artifacts`,
//! `scopes`, `examples`, `graph`, `agent`, ...) are read, checked where their shape is known,
//! kept in the model and shown by `runx skill inspect`. Any other key is an error naming the key
//! and its line, so a misspelt setting is never replaced by its default.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

use crate::decl::{InputDecl, OutputDecl};
pub use crate::paged::{Framing, ModuleLifetime, PagesDecl, ParallelDecl};

/// File name of the execution profile inside a skill package.
pub const PROFILE_FILE: &str = "X.yaml";

/// Input name the runtime reserves for page metadata passed to paged javascript runners.
pub const RESERVED_PAGE_INPUT: &str = "runx_page";

/// Runner name given to the single top-level `run:` block.
pub const DEFAULT_RUN_NAME: &str = "default";

/// The runner types this runtime runs.
pub(crate) const SUPPORTED_TYPES: &str = "javascript, cli-tool";

/// Why a profile could not be loaded or a runner could not be selected.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProfileError {
    /// The package directory or its profile file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The directory or file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The directory has no `X.yaml`, so it is not a skill package.
    #[error("{} has no {PROFILE_FILE}; a skill package keeps its execution profile there", dir.display())]
    NotAPackage {
        /// The directory.
        dir: PathBuf,
    },
    /// The profile file is implausibly large.
    #[error("{} is {bytes} bytes; a skill profile may be at most {max} bytes", path.display(), max = crate::limits::PROFILE_BYTES.max)]
    TooLarge {
        /// The profile file.
        path: PathBuf,
        /// Its size.
        bytes: u64,
    },
    /// The profile is not valid YAML, has the wrong shape, or breaks a rule. `message` starts with
    /// the YAML key path (`runners.main.timeout_seconds: ...`) when one is known.
    #[error("{}: {message}", Located(file, *line, *column))]
    Invalid {
        /// The profile file.
        file: PathBuf,
        /// 1-based line, when known.
        line: Option<usize>,
        /// 1-based column, when known.
        column: Option<usize>,
        /// What is wrong, starting with the key path.
        message: String,
    },
    /// The selected runner has a type this runtime does not implement.
    #[error(
        "runner `{runner}` has type `{ty}`, which this runtime does not implement (supported: {SUPPORTED_TYPES})"
    )]
    UnsupportedRunner {
        /// The runner's name.
        runner: String,
        /// Its declared type.
        ty: String,
    },
    /// The engine a javascript runner runs on is not built into this executable.
    #[error(
        "runner `{runner}` runs on the {engine} engine ({why}), which this runx was not built with (it has: {built}); build runx with `--features v8`, or pick a built engine with `--engine`"
    )]
    EngineUnavailable {
        /// The runner's name.
        runner: String,
        /// The engine asked for.
        engine: String,
        /// Who asked for it: the profile's `engine:` or the caller.
        why: &'static str,
        /// The engines this executable has.
        built: String,
    },
    /// A runner was requested by a name the package does not declare.
    #[error("skill `{skill}` has no runner `{runner}`; its runners are: {available}")]
    UnknownRunner {
        /// The package's skill name.
        skill: String,
        /// The name asked for.
        runner: String,
        /// The runners it has, with their types.
        available: String,
    },
    /// No runner was named, and the package has several without a `default: true` one.
    #[error(
        "skill `{skill}` has several runners and none is marked `default: true`; name one of: {available}"
    )]
    NoDefaultRunner {
        /// The package's skill name.
        skill: String,
        /// The runners it has, with their types.
        available: String,
    },
}

impl ProfileError {
    /// The failure code of this error (the kind is always `profile`).
    pub fn code(&self) -> &'static str {
        match self {
            ProfileError::Read { .. } | ProfileError::NotAPackage { .. } => "not_a_package",
            ProfileError::TooLarge { .. } | ProfileError::Invalid { .. } => "invalid_profile",
            ProfileError::UnsupportedRunner { .. } => "unsupported_runner",
            ProfileError::EngineUnavailable { .. } => "engine_unavailable",
            ProfileError::UnknownRunner { .. } => "unknown_runner",
            ProfileError::NoDefaultRunner { .. } => "no_default_runner",
        }
    }
}

/// `file:line:column`, leaving out the parts that are unknown.
struct Located<'a>(&'a Path, Option<usize>, Option<usize>);

impl fmt::Display for Located<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0.display())?;
        if let Some(line) = self.1 {
            write!(f, ":{line}")?;
            if let Some(column) = self.2 {
                write!(f, ":{column}")?;
            }
        }
        Ok(())
    }
}

/// A parsed and validated skill package profile.
#[derive(Debug, Clone)]
pub struct Profile {
    /// The `skill:` name.
    pub skill: String,
    /// The `version:` text; empty when the profile declares none. A numeric YAML version is kept
    /// as its text (`1.5` -> `"1.5"`), but YAML has already read it as a number, so `1.10`
    /// becomes `"1.1"`: authors should quote versions.
    pub version: String,
    /// The package directory ([`load`](crate::load) canonicalises it; [`parse()`](crate::parse())
    /// keeps what it was given).
    pub dir: PathBuf,
    /// `sha256:<hex>` of the profile text, the `X.yaml` bytes [`load`](crate::load) read.
    pub digest: String,
    /// The runners this runtime runs, by name. The single top-level `run:` form is one runner
    /// named `default`.
    pub runners: BTreeMap<String, Runner>,
    /// Runners of types this runtime does not run (`graph`, `agent-task`, ...), by name. Their
    /// keys are not interpreted; selecting one is an [`ProfileError::UnsupportedRunner`].
    pub other_runners: BTreeMap<String, OtherRunner>,
    /// The runner marked `default: true`, or `default` for the single `run:` form.
    pub default_runner: Option<String>,
    /// Reusable input declarations (`input_definitions:`), by name.
    pub input_definitions: BTreeMap<String, InputDecl>,
    /// Top-level keys runx reads and shows but does not act on (`runx`, `policy`, `emits`,
    /// `catalog`, `credentials`), as JSON.
    pub declared_only: BTreeMap<String, Value>,
    /// What loading noticed without refusing the package: templates naming undeclared inputs,
    /// retries that can never apply. `runx skill inspect` and the harness show them.
    pub diagnostics: Vec<Diagnostic>,
}

/// Something a profile declares that loads but will not do what it seems to say.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Diagnostic {
    /// The runner concerned.
    pub runner: String,
    /// The key concerned, like `args[1]` or `retry`.
    pub key: String,
    /// What will happen, and what to do.
    pub message: String,
    /// Every run of the runner fails because of it: `runx skill check` counts it as an error,
    /// not a warning.
    pub fails_every_run: bool,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "runners.{}.{}: {}", self.runner, self.key, self.message)
    }
}

/// One runner of a package that this runtime runs.
#[derive(Debug, Clone)]
pub struct Runner {
    /// The runner's name (its key under `runners:`).
    pub name: String,
    /// Whether the runner is marked `default: true`.
    pub default: bool,
    /// What it executes.
    pub kind: RunnerKind,
    /// Declared inputs, by name.
    pub inputs: BTreeMap<String, InputDecl>,
    /// Declared outputs, by name.
    pub outputs: BTreeMap<String, OutputDecl>,
    /// Host environment names it may receive.
    pub environment: EnvDecl,
    /// Declared `timeout_seconds`, or the runner type's default.
    pub timeout: Duration,
    /// The checked `artifacts:` block (runx does not project artifacts).
    pub artifacts: Option<ArtifactsDecl>,
    /// Example input objects (`examples:`), each checked against the input declarations at load.
    pub examples: Vec<Map<String, Value>>,
    /// Runner keys of runx packages this runtime reads but does not act on (`scopes`, `risk`,
    /// `idempotency`, `runx`, ...), as JSON.
    pub declared_only: BTreeMap<String, Value>,
}

impl Runner {
    /// Whether a call may give input `key`: the runner declares it, a cli-tool argument
    /// template reads it (`{{key}}`, `{{input.key}}`), or its `pages:` block names it as the
    /// artifact path or scope.
    pub fn takes_input(&self, key: &str) -> bool {
        self.inputs.contains_key(key) || self.named_inputs().any(|name| name == key)
    }

    /// The names a call may give, sorted: declared inputs and the names templates and `pages:`
    /// read.
    pub fn input_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.inputs.keys().cloned().collect();
        for name in self.named_inputs() {
            if !names.iter().any(|n| n == name) {
                names.push(name.to_string());
            }
        }
        names.sort();
        names
    }

    /// The input names a runner reads without declaring them: a cli-tool's argument templates
    /// (a `cwd:` takes no input templates), a paged runner's `path_from` and `path_scope_from`.
    fn named_inputs(&self) -> Box<dyn Iterator<Item = &str> + '_> {
        match &self.kind {
            RunnerKind::CliTool(tool) => Box::new(
                tool.args
                    .iter()
                    .flat_map(|t| crate::template::pieces(t).unwrap_or_default())
                    .filter_map(|piece| match piece {
                        crate::template::Piece::Input(name) => Some(name),
                        _ => None,
                    }),
            ),
            RunnerKind::Javascript(js) => Box::new(
                js.pages
                    .iter()
                    .flat_map(|p| [p.path_from.as_str(), p.path_scope_from.as_str()]),
            ),
        }
    }
}

/// A runner of a type this runtime does not run. Its key names are checked like any runner's;
/// their values are kept as written, for `runx skill inspect`.
#[derive(Debug, Clone, PartialEq)]
pub struct OtherRunner {
    /// The declared `type:`.
    pub ty: String,
    /// Whether it is marked `default: true`.
    pub default: bool,
    /// Every declared key but `type` and `default`, as JSON (a nested `run:`/`source:` block as
    /// an object).
    pub keys: BTreeMap<String, Value>,
}

/// A runner's `artifacts:` block: how runx packages expose a result to graph steps. Checked at
/// load and shown by `runx skill inspect`; this runtime does not project artifacts.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ArtifactsDecl {
    /// `emits`: the artifact names the runner emits.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub emits: Vec<String>,
    /// `named_emits`: output field → artifact name.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub named_emits: BTreeMap<String, String>,
    /// `packets`: output field (a `named_emits` key) → packet id.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub packets: BTreeMap<String, String>,
    /// `wrap_as`: the name the whole result is wrapped as.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wrap_as: Option<String>,
    /// `packet`: the packet id of the `wrap_as` artifact.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub packet: Option<String>,
}

/// What a runner executes.
#[derive(Debug, Clone)]
pub enum RunnerKind {
    /// An export of a local ES module, in a no-host worker.
    Javascript(JsRunner),
    /// A supervised subprocess.
    CliTool(CliToolRunner),
}

/// A runner's type, as written in profiles and recorded in receipts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum RunnerType {
    /// `type: javascript`.
    #[serde(rename = "javascript")]
    Javascript,
    /// `type: cli-tool`.
    #[serde(rename = "cli-tool")]
    CliTool,
}

impl RunnerType {
    /// The type name as written in the profile.
    pub const fn name(self) -> &'static str {
        match self {
            RunnerType::Javascript => "javascript",
            RunnerType::CliTool => "cli-tool",
        }
    }
}

impl fmt::Display for RunnerType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl RunnerKind {
    /// The runner's type.
    pub fn runner_type(&self) -> RunnerType {
        match self {
            RunnerKind::Javascript(_) => RunnerType::Javascript,
            RunnerKind::CliTool(_) => RunnerType::CliTool,
        }
    }

    /// The type name as written in the profile.
    pub fn type_name(&self) -> &'static str {
        self.runner_type().name()
    }
}

/// A `type: javascript` runner: an export of a local ES module.
#[derive(Debug, Clone)]
pub struct JsRunner {
    /// Relative `.mjs`/`.js` path with forward slashes, checked by the one module-path rule
    /// ([`runx_rules::check_module_entry`]); the files are read when the bundle is built.
    pub module: String,
    /// Named export; `None` selects the default export.
    pub export: Option<String>,
    /// The paged artifact source, for a paged runner.
    pub pages: Option<PagesDecl>,
    /// The engine the package prefers (`engine: v8`), one of
    /// [`runx_rules::ENGINES`]; `None` leaves it to the runtime (QuickJS unless the
    /// caller picks another). The caller's choice (`--engine`) overrides it.
    pub engine: Option<String>,
}

/// The directory a page path is resolved against, chosen at run time by the
/// `path_scope_from` input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathScope {
    /// The caller's workspace (`RUNX_CWD`); the default.
    Workspace,
    /// The skill package directory.
    Skill,
}

impl PathScope {
    /// Parses the run-time scope value; `None` for anything but `workspace` or `skill`.
    pub fn from_name(name: &str) -> Option<PathScope> {
        match name {
            "workspace" => Some(PathScope::Workspace),
            "skill" => Some(PathScope::Skill),
            _ => None,
        }
    }
}

/// A `type: cli-tool` runner: a supervised subprocess.
#[derive(Debug, Clone)]
pub struct CliToolRunner {
    /// Program to start (no shell); relative paths resolve from the package directory.
    pub command: String,
    /// Argument templates (`{{input.x}}`, `{{env.X}}`), resolved before spawn.
    pub args: Vec<String>,
    /// Working directory template; `None` means the package directory.
    pub cwd: Option<String>,
    /// What stdin receives.
    pub input_mode: InputMode,
    /// Whether running the command twice is safe (a precondition of `retry`): `idempotent: true`,
    /// or an `idempotency` declaration.
    pub idempotent: bool,
    /// The declared retry policy; it applies only when [`RetryDecl::inert`] is `None`.
    pub retry: Option<RetryDecl>,
}

impl CliToolRunner {
    /// The retry policy that applies, if any.
    pub fn active_retry(&self) -> Option<&RetryDecl> {
        self.retry.as_ref().filter(|r| r.inert.is_none())
    }
}

/// What a cli-tool's stdin receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InputMode {
    /// Stdin is closed without input (no `input_mode`, or `input_mode: none`).
    #[default]
    Closed,
    /// `input_mode: args`: stdin is closed without input; the arguments are exactly the templated
    /// `args` (inputs are never appended implicitly).
    Args,
    /// Stdin receives the whole input object as JSON, then closes.
    Stdin,
}

impl InputMode {
    /// The mode as `runx skill inspect` shows it.
    pub fn name(self) -> &'static str {
        match self {
            InputMode::Closed => "none",
            InputMode::Args => "args",
            InputMode::Stdin => "stdin",
        }
    }
}

/// Retry policy of a cli-tool runner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryDecl {
    /// Additional runs after the first failed one ([`crate::limits::RETRY_ATTEMPTS`]);
    /// `retry: {max_attempts: N}` declares `N - 1`.
    pub attempts: u32,
    /// Failure kinds that trigger a retry.
    pub on: Vec<RetryOn>,
    /// Pause before each retry.
    pub backoff: Duration,
    /// Why the declared retry can never apply (the runner is not idempotent, or it allows no
    /// additional run); `None` when it applies.
    pub inert: Option<String>,
}

/// Failure kinds a retry may react to. Only crashes: a timeout or an exit status may follow side
/// effects the tool already performed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryOn {
    /// The process was killed by a signal.
    Crash,
}

/// Host environment names a runner may receive.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvDecl {
    /// Names that must be set, or the run fails before starting.
    pub required: Vec<String>,
    /// Names passed when set and omitted otherwise.
    pub optional: Vec<String>,
}

impl EnvDecl {
    /// Whether `name` is declared, required or optional.
    pub fn declares(&self, name: &str) -> bool {
        self.required
            .iter()
            .chain(&self.optional)
            .any(|n| n == name)
    }
}

impl Profile {
    /// Selects a runner: the named one, else the `default: true` one, else the only one.
    ///
    /// Runners of other types are reported here rather than at load, so a package that also
    /// carries, say, a graph runner still works for its javascript runners.
    pub fn runner(&self, name: Option<&str>) -> Result<&Runner, ProfileError> {
        let name = match (name, &self.default_runner) {
            (Some(name), _) => name,
            (None, Some(default)) => default.as_str(),
            (None, None) => match self.only_runner() {
                Some(only) => only,
                None => {
                    return Err(ProfileError::NoDefaultRunner {
                        skill: self.skill.clone(),
                        available: self.runner_list(),
                    });
                }
            },
        };
        if let Some(runner) = self.runners.get(name) {
            return Ok(runner);
        }
        match self.other_runners.get(name) {
            Some(other) => Err(ProfileError::UnsupportedRunner {
                runner: name.to_string(),
                ty: other.ty.clone(),
            }),
            None => Err(ProfileError::UnknownRunner {
                skill: self.skill.clone(),
                runner: name.to_string(),
                available: format!(
                    "{}{}",
                    self.runner_list(),
                    runx_rules::did_you_mean(
                        name,
                        self.runners
                            .keys()
                            .chain(self.other_runners.keys())
                            .map(String::as_str)
                    )
                ),
            }),
        }
    }

    /// The name of the package's only runner, of whatever type.
    fn only_runner(&self) -> Option<&str> {
        let mut all = self.runners.keys().chain(self.other_runners.keys());
        match (all.next(), all.next()) {
            (Some(only), None) => Some(only.as_str()),
            _ => None,
        }
    }

    /// `name (type)` for every runner, in name order.
    fn runner_list(&self) -> String {
        let mut all: Vec<(&str, &str)> = self
            .runners
            .iter()
            .map(|(n, r)| (n.as_str(), r.kind.type_name()))
            .chain(
                self.other_runners
                    .iter()
                    .map(|(n, o)| (n.as_str(), o.ty.as_str())),
            )
            .collect();
        all.sort();
        all.iter()
            .map(|(name, ty)| format!("{name} ({ty})"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}
