//! Skill package profiles: parsing and validating a package's `X.yaml`.
//!
//! The profile is the only place a package tells the runtime what to run, so everything the
//! runtime later relies on (module paths, limits, declared environment names, page framing) is
//! checked here, once, with an error that names the file, the line, the runner and the key. A
//! person fixing a package should never have to guess which of several runners was wrong.
//!
//! Parsing runs in two passes over the same text:
//!
//! 1. The document is read as a plain YAML value only to learn each runner's `type`. Runner types
//!    this runtime does not implement (`graph`, `agent-task`, ...) have shapes of their own, so
//!    they are recorded as [`RunnerKind::Unsupported`] without being interpreted; the package
//!    still loads, and the error appears only if such a runner is selected.
//! 2. The document is deserialized through typed serde structures. Validation happens inside the
//!    serde visitors, so `serde_yaml_ng` attaches the line, column and key path of the offending
//!    node to every error, including the semantic ones (timeout ranges, page settings, ...).
//!
//! Keys this runtime does not use (`catalog`, `credentials`, `artifacts`, `scopes`, ...) are
//! ignored at the top level and in runners, because packages are shared with other runtimes that
//! do use them. The small, runtime-controlling blocks `environment`, `pages` and `retry` reject
//! unknown keys instead, so a misspelt limit is not silently replaced by its default.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// File name of the execution profile inside a skill package.
pub const PROFILE_FILE: &str = "X.yaml";

/// Largest profile accepted; a profile is a few kilobytes, anything bigger is not one.
pub const MAX_PROFILE_BYTES: u64 = 1024 * 1024;

/// Input name the runtime reserves for page metadata passed to paged javascript runners.
pub const RESERVED_PAGE_INPUT: &str = "runx_page";

/// Default wall time of a javascript runner call.
pub const JS_DEFAULT_TIMEOUT_SECONDS: u64 = 2;
/// Largest wall time a javascript runner may declare.
pub const JS_MAX_TIMEOUT_SECONDS: u64 = 30;
/// Default wall time of a cli-tool runner.
pub const CLI_DEFAULT_TIMEOUT_SECONDS: u64 = 60;
/// Largest wall time a cli-tool runner may declare.
pub const CLI_MAX_TIMEOUT_SECONDS: u64 = 3600;
/// Default size of one page of a paged artifact.
pub const DEFAULT_PAGE_BYTES: usize = 1024 * 1024;
/// Largest page a package may ask for; bigger pages would not fit the worker's 4 MiB input.
pub const MAX_PAGE_BYTES: usize = 4 * 1024 * 1024;
/// Most additional runs a retry declaration may ask for.
pub const MAX_RETRY_ATTEMPTS: u32 = 3;
/// Default pause before a retry, in seconds.
pub const DEFAULT_RETRY_BACKOFF_SECONDS: u64 = 30;
/// Longest pause before a retry, in seconds.
pub const MAX_RETRY_BACKOFF_SECONDS: u64 = 300;

const SUPPORTED_TYPES: &str = "javascript, cli-tool";

/// Why a profile could not be loaded or a runner could not be selected.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// The package directory or its profile file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The directory has no `X.yaml`, so it is not a skill package.
    #[error("{} has no {PROFILE_FILE}; a skill package keeps its execution profile there", dir.display())]
    NotAPackage { dir: PathBuf },
    /// The profile file is implausibly large.
    #[error("{} is {bytes} bytes; a skill profile may be at most {max} bytes", path.display(), max = MAX_PROFILE_BYTES)]
    TooLarge { path: PathBuf, bytes: u64 },
    /// The profile is not valid YAML, has the wrong shape, or breaks a rule. `message` starts with
    /// the YAML key path (`runners.main.timeout_seconds: ...`) when one is known.
    #[error("{}: {message}", Located(file, *line, *column))]
    Invalid {
        file: PathBuf,
        line: Option<usize>,
        column: Option<usize>,
        message: String,
    },
    /// The selected runner has a type this runtime does not implement.
    #[error(
        "runner `{runner}` has type `{ty}`, which this runtime does not implement (supported: {SUPPORTED_TYPES})"
    )]
    UnsupportedRunner { runner: String, ty: String },
    /// A runner was requested by a name the package does not declare.
    #[error("skill `{skill}` has no runner `{runner}`; its runners are: {available}")]
    UnknownRunner {
        skill: String,
        runner: String,
        available: String,
    },
    /// No runner was named, and the package has several without a `default: true` one.
    #[error(
        "skill `{skill}` has several runners and none is marked `default: true`; name one of: {available}"
    )]
    NoDefaultRunner { skill: String, available: String },
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
    /// The package directory ([`load`] canonicalises it; [`parse`] keeps what it was given).
    pub dir: PathBuf,
    /// Every runner, supported or not, by name. The single top-level `run:` form is one runner
    /// named `default`.
    pub runners: BTreeMap<String, Runner>,
    /// The runner marked `default: true`, or `default` for the single `run:` form.
    pub default_runner: Option<String>,
    /// The raw `harness:` block, interpreted by the harness module.
    pub harness: Option<Value>,
    /// 1-based line of the top-level `harness:` key, for harness error messages.
    pub harness_line: Option<usize>,
}

/// One runner of a package.
#[derive(Debug, Clone)]
pub struct Runner {
    pub name: String,
    /// Whether the runner is marked `default: true`.
    pub default: bool,
    pub kind: RunnerKind,
    pub inputs: BTreeMap<String, InputDecl>,
    pub outputs: BTreeMap<String, OutputDecl>,
    pub environment: EnvDecl,
    /// Declared `timeout_seconds`, or the runner type's default. Zero for unsupported runners.
    pub timeout: Duration,
}

/// What a runner executes.
#[derive(Debug, Clone)]
pub enum RunnerKind {
    Javascript(JsRunner),
    CliTool(CliToolRunner),
    /// A runner type this runtime does not implement; holds the declared type. Its other keys are
    /// not interpreted, so its `inputs`, `outputs` and `environment` are empty.
    Unsupported(String),
}

impl RunnerKind {
    /// The type name as written in the profile.
    pub fn type_name(&self) -> &str {
        match self {
            RunnerKind::Javascript(_) => "javascript",
            RunnerKind::CliTool(_) => "cli-tool",
            RunnerKind::Unsupported(ty) => ty,
        }
    }
}

/// A `type: javascript` runner: an export of a local ES module.
#[derive(Debug, Clone)]
pub struct JsRunner {
    /// Relative `.mjs`/`.js` path with forward slashes; containment in the package is checked
    /// when the module closure is built.
    pub module: String,
    /// Named export; `None` selects the default export.
    pub export: Option<String>,
    pub pages: Option<PagesDecl>,
}

/// A paged `json_array` artifact source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PagesDecl {
    /// Name of the input holding the artifact path.
    pub path_from: String,
    /// Name of the input holding the path scope (`workspace` when absent, or `skill`).
    pub path_scope_from: String,
    pub media_type: String,
    pub framing: Framing,
    pub page_bytes: usize,
}

/// How a paged artifact is split into records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// One JSON array (optionally behind a `name = ` assignment), split at top-level commas.
    JsonArray,
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
    /// Argument templates (`{{input.x}}`, `{{env.X}}`), resolved before spawn elsewhere.
    pub args: Vec<String>,
    /// Working directory template; `None` means the package directory.
    pub cwd: Option<String>,
    pub input_mode: InputMode,
    pub idempotent: bool,
    pub retry: Option<RetryDecl>,
}

/// What a cli-tool's stdin receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InputMode {
    /// Stdin is closed without input (no `input_mode`).
    #[default]
    Closed,
    /// Stdin receives the whole input object as JSON, then closes.
    Stdin,
}

/// Retry policy of an idempotent cli-tool runner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryDecl {
    /// Additional runs after the first failed one (1..=3).
    pub attempts: u32,
    /// Failure kinds that trigger a retry.
    pub on: Vec<RetryOn>,
    /// Pause before each retry.
    pub backoff: Duration,
}

/// Failure kinds a retry may react to. Only crashes: a timeout or an exit status may follow side
/// effects the tool already performed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryOn {
    Crash,
}

/// Declared JSON type of an input or output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueType {
    String,
    Number,
    /// A number without a fractional part (`2` and `2.0`, not `2.5`).
    Integer,
    Boolean,
    Object,
    Array,
    Null,
    Any,
}

const TYPE_NAMES: &str = "string, number, integer, boolean, object, array, null, any";

impl ValueType {
    /// Parses a declared type name.
    pub fn from_name(name: &str) -> Option<ValueType> {
        Some(match name {
            "string" => ValueType::String,
            "number" => ValueType::Number,
            "integer" => ValueType::Integer,
            "boolean" => ValueType::Boolean,
            "object" => ValueType::Object,
            "array" => ValueType::Array,
            "null" => ValueType::Null,
            "any" => ValueType::Any,
            _ => return None,
        })
    }

    /// The name as written in a profile.
    pub fn name(self) -> &'static str {
        match self {
            ValueType::String => "string",
            ValueType::Number => "number",
            ValueType::Integer => "integer",
            ValueType::Boolean => "boolean",
            ValueType::Object => "object",
            ValueType::Array => "array",
            ValueType::Null => "null",
            ValueType::Any => "any",
        }
    }

    /// Whether `v` has this type.
    pub fn matches(self, v: &Value) -> bool {
        match self {
            ValueType::String => v.is_string(),
            ValueType::Number => v.is_number(),
            ValueType::Integer => is_integer(v),
            ValueType::Boolean => v.is_boolean(),
            ValueType::Object => v.is_object(),
            ValueType::Array => v.is_array(),
            ValueType::Null => v.is_null(),
            ValueType::Any => true,
        }
    }

    /// The JSON type name of a value, for "expected X, got Y" messages.
    pub fn describe(v: &Value) -> &'static str {
        match v {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(_) if is_integer(v) => "integer",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        }
    }
}

impl fmt::Display for ValueType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A type name with its indefinite article (`a string`, `an integer`), for messages.
pub fn with_article(name: &str) -> String {
    let article = if name.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    format!("{article} {name}")
}

fn is_integer(v: &Value) -> bool {
    match v {
        Value::Number(n) => {
            n.is_i64()
                || n.is_u64()
                || n.as_f64()
                    .is_some_and(|f| f.is_finite() && f.fract() == 0.0)
        }
        _ => false,
    }
}

/// A declared input.
#[derive(Debug, Clone, PartialEq)]
pub struct InputDecl {
    /// Declared type; `any` when the declaration names none.
    pub ty: ValueType,
    pub required: bool,
    /// Applied when the caller gives no value; checked against `ty` and `schema` at load.
    pub default: Option<Value>,
    pub description: Option<String>,
    /// JSON Schema for the value; compiled at load so a broken schema fails early.
    pub schema: Option<Value>,
}

/// A declared output.
#[derive(Debug, Clone, PartialEq)]
pub struct OutputDecl {
    /// Declared type; `any` when the declaration names none.
    pub ty: ValueType,
    pub schema: Option<Value>,
}

/// Host environment names a runner may receive.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvDecl {
    /// Names that must be set, or the run fails before starting.
    pub required: Vec<String>,
    /// Names passed when set and omitted otherwise.
    pub optional: Vec<String>,
}

/// Reads and parses `dir/X.yaml`.
pub fn load(dir: &Path) -> Result<Profile, ProfileError> {
    let dir = dir.canonicalize().map_err(|source| ProfileError::Read {
        path: dir.to_path_buf(),
        source,
    })?;
    let file = dir.join(PROFILE_FILE);
    let read_err = |source| ProfileError::Read {
        path: file.clone(),
        source,
    };
    let meta = match std::fs::metadata(&file) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ProfileError::NotAPackage { dir });
        }
        Err(e) => return Err(read_err(e)),
    };
    if meta.len() > MAX_PROFILE_BYTES {
        return Err(ProfileError::TooLarge {
            path: file,
            bytes: meta.len(),
        });
    }
    let text = std::fs::read_to_string(&file).map_err(read_err)?;
    parse(&text, &dir, &file)
}

/// Parses profile text. `dir` is recorded as the package directory; `file` is used in messages.
pub fn parse(text: &str, dir: &Path, file: &Path) -> Result<Profile, ProfileError> {
    let invalid = |e: serde_yaml_ng::Error| yaml_error(file, e);
    if text.trim().is_empty() {
        return Err(ProfileError::Invalid {
            file: file.to_path_buf(),
            line: None,
            column: None,
            message: "the profile is empty; it needs at least `skill:` and `runners:` (or `run:`)"
                .to_string(),
        });
    }
    // Pass 1: learn runner types, so unsupported runners are skipped rather than misread.
    let doc: serde_yaml_ng::Value = serde_yaml_ng::from_str(text).map_err(invalid)?;
    let unsupported = unsupported_runner_types(&doc);
    // Pass 2: typed parse with validation inside the visitors (which gives errors locations).
    let de = serde_yaml_ng::Deserializer::from_str(text);
    let top = TopSeed {
        unsupported: &unsupported,
    }
    .deserialize(de)
    .map_err(invalid)?;
    Ok(Profile {
        skill: top.skill,
        version: top.version,
        dir: dir.to_path_buf(),
        default_runner: top.default_runner,
        runners: top.runners,
        harness_line: if top.harness.is_some() {
            top_level_key_line(text, "harness")
        } else {
            None
        },
        harness: top.harness,
    })
}

impl Profile {
    /// Selects a runner: the named one, else the `default: true` one, else the only one.
    ///
    /// Unsupported runner types are reported here rather than at load, so a package that also
    /// carries, say, a graph runner still works for its javascript runners.
    pub fn runner(&self, name: Option<&str>) -> Result<&Runner, ProfileError> {
        let runner = match name {
            Some(name) => self
                .runners
                .get(name)
                .ok_or_else(|| ProfileError::UnknownRunner {
                    skill: self.skill.clone(),
                    runner: name.to_string(),
                    available: self.runner_list(),
                })?,
            None => match &self.default_runner {
                Some(default) => {
                    self.runners
                        .get(default)
                        .ok_or_else(|| ProfileError::UnknownRunner {
                            skill: self.skill.clone(),
                            runner: default.clone(),
                            available: self.runner_list(),
                        })?
                }
                None => {
                    let mut all = self.runners.values();
                    match (all.next(), all.next()) {
                        (Some(only), None) => only,
                        _ => {
                            return Err(ProfileError::NoDefaultRunner {
                                skill: self.skill.clone(),
                                available: self.runner_list(),
                            });
                        }
                    }
                }
            },
        };
        if let RunnerKind::Unsupported(ty) = &runner.kind {
            return Err(ProfileError::UnsupportedRunner {
                runner: runner.name.clone(),
                ty: ty.clone(),
            });
        }
        Ok(runner)
    }

    fn runner_list(&self) -> String {
        self.runners
            .iter()
            .map(|(name, r)| format!("{name} ({})", r.kind.type_name()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Turns a YAML error into [`ProfileError::Invalid`], moving the location out of the message.
fn yaml_error(file: &Path, e: serde_yaml_ng::Error) -> ProfileError {
    let location = e.location();
    let mut message = e.to_string();
    if let Some(loc) = &location {
        let suffix = format!(" at line {} column {}", loc.line(), loc.column());
        if let Some(stripped) = message.strip_suffix(&suffix) {
            message = stripped.to_string();
        }
    }
    ProfileError::Invalid {
        file: file.to_path_buf(),
        line: location.as_ref().map(|l| l.line()),
        column: location.as_ref().map(|l| l.column()),
        message,
    }
}

/// 1-based line of a top-level block key such as `harness:`.
fn top_level_key_line(text: &str, key: &str) -> Option<usize> {
    text.lines()
        .position(|line| {
            line.strip_prefix(key).is_some_and(|rest| {
                let rest = rest.trim_start_matches([' ', '\t']);
                rest.starts_with(':')
            })
        })
        .map(|i| i + 1)
}

/// Names and types of runners whose declared type this runtime does not implement.
fn unsupported_runner_types(doc: &serde_yaml_ng::Value) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let declared_type = |runner: &serde_yaml_ng::Value| -> Option<String> {
        let ty = runner
            .get("type")
            .or_else(|| runner.get("run").and_then(|run| run.get("type")))?;
        ty.as_str().map(str::to_string)
    };
    let mut note = |name: &str, runner: &serde_yaml_ng::Value| {
        if let Some(ty) = declared_type(runner)
            && ty != "javascript"
            && ty != "cli-tool"
        {
            out.insert(name.to_string(), ty);
        }
    };
    if let Some(runners) = doc.get("runners").and_then(|r| r.as_mapping()) {
        for (name, runner) in runners {
            if let Some(name) = name.as_str() {
                note(name, runner);
            }
        }
    }
    if doc.get("runners").is_none()
        && let Some(run) = doc.get("run")
    {
        note(DEFAULT_RUN_NAME, run);
    }
    out
}

/// Runner name given to the single top-level `run:` block.
pub const DEFAULT_RUN_NAME: &str = "default";

// ---------------------------------------------------------------------------------------------
// Typed pass: top level.

struct TopSeed<'a> {
    unsupported: &'a BTreeMap<String, String>,
}

struct Top {
    skill: String,
    version: String,
    runners: BTreeMap<String, Runner>,
    default_runner: Option<String>,
    harness: Option<Value>,
}

impl<'de> DeserializeSeed<'de> for TopSeed<'_> {
    type Value = Top;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Top, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for TopSeed<'_> {
    type Value = Top;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a skill profile mapping with `skill:` and `runners:` (or `run:`)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Top, A::Error> {
        let mut skill = None;
        let mut version = None;
        let mut runners = None;
        let mut run = None;
        let mut harness = None;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "skill" => skill = Some(map.next_value::<String>()?),
                "version" => version = map.next_value::<Option<VersionText>>()?.map(|v| v.0),
                "runners" => {
                    runners = Some(map.next_value_seed(RunnersSeed {
                        unsupported: self.unsupported,
                    })?)
                }
                "run" => {
                    run = Some(map.next_value_seed(RunnerSeed {
                        name: DEFAULT_RUN_NAME,
                        unsupported: self.unsupported.get(DEFAULT_RUN_NAME),
                    })?)
                }
                "harness" => harness = map.next_value::<Option<Value>>()?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let skill = match skill {
            Some(s) if !s.trim().is_empty() => s,
            Some(_) => return Err(de::Error::custom("`skill` is empty; give the skill a name")),
            None => {
                return Err(de::Error::custom(
                    "`skill:` is missing; give the skill a name",
                ));
            }
        };
        let (runners, default_runner) = match (runners, run) {
            (Some(_), Some(_)) => {
                return Err(de::Error::custom(
                    "both `runners:` and a top-level `run:` are declared; use one of them",
                ));
            }
            (None, None) => {
                return Err(de::Error::custom(
                    "no runner is declared; add `runners:` (named runners) or a top-level `run:`",
                ));
            }
            (None, Some(runner)) => {
                let mut runners = BTreeMap::new();
                runners.insert(DEFAULT_RUN_NAME.to_string(), runner);
                (runners, Some(DEFAULT_RUN_NAME.to_string()))
            }
            (Some(runners), None) => {
                let defaults: Vec<&str> = runners
                    .values()
                    .filter(|r: &&Runner| r.default)
                    .map(|r| r.name.as_str())
                    .collect();
                let default = match defaults.as_slice() {
                    [] => None,
                    [one] => Some(one.to_string()),
                    many => {
                        return Err(de::Error::custom(format!(
                            "runners {} are all marked `default: true`; at most one runner may be the default",
                            many.iter()
                                .map(|n| format!("`{n}`"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        )));
                    }
                };
                (runners, default)
            }
        };
        Ok(Top {
            skill,
            version: version.unwrap_or_default(),
            runners,
            default_runner,
            harness,
        })
    }
}

/// A version written as a string or, loosely, as a YAML number.
struct VersionText(String);

impl<'de> Deserialize<'de> for VersionText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = VersionText;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a version string such as \"1.0.0\"")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<VersionText, E> {
                Ok(VersionText(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<VersionText, E> {
                Ok(VersionText(v.to_string()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<VersionText, E> {
                Ok(VersionText(v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<VersionText, E> {
                // `1.0` should stay `1.0`, not become `1`.
                if v.fract() == 0.0 && v.abs() < 1e15 {
                    Ok(VersionText(format!("{v:.1}")))
                } else {
                    Ok(VersionText(v.to_string()))
                }
            }
        }
        d.deserialize_any(V)
    }
}

// ---------------------------------------------------------------------------------------------
// Typed pass: runners.

struct RunnersSeed<'a> {
    unsupported: &'a BTreeMap<String, String>,
}

impl<'de> DeserializeSeed<'de> for RunnersSeed<'_> {
    type Value = BTreeMap<String, Runner>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for RunnersSeed<'_> {
    type Value = BTreeMap<String, Runner>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a mapping from runner names to runners")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut runners = BTreeMap::new();
        while let Some(name) = map.next_key::<String>()? {
            if name.trim().is_empty() {
                return Err(de::Error::custom("a runner has an empty name"));
            }
            let runner = map.next_value_seed(RunnerSeed {
                name: &name,
                unsupported: self.unsupported.get(&name),
            })?;
            runners.insert(name, runner);
        }
        if runners.is_empty() {
            return Err(de::Error::custom(
                "`runners:` is empty; declare at least one runner",
            ));
        }
        Ok(runners)
    }
}

struct RunnerSeed<'a> {
    name: &'a str,
    /// The declared type when pass 1 found it unsupported.
    unsupported: Option<&'a String>,
}

impl<'de> DeserializeSeed<'de> for RunnerSeed<'_> {
    type Value = Runner;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Runner, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for RunnerSeed<'_> {
    type Value = Runner;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "runner `{}` as a mapping with a `type:`", self.name)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Runner, A::Error> {
        let inner = de::value::MapAccessDeserializer::new(map);
        if let Some(ty) = self.unsupported {
            let raw = UnsupportedRaw::deserialize(inner)?;
            return Ok(Runner {
                name: self.name.to_string(),
                default: raw.default.unwrap_or(false),
                kind: RunnerKind::Unsupported(ty.clone()),
                inputs: BTreeMap::new(),
                outputs: BTreeMap::new(),
                environment: EnvDecl::default(),
                timeout: Duration::ZERO,
            });
        }
        let raw = RawRunner::deserialize(inner)?;
        build_runner(self.name, raw).map_err(de::Error::custom)
    }
}

/// The only key read from an unsupported runner.
#[derive(Deserialize)]
struct UnsupportedRaw {
    #[serde(default)]
    default: Option<bool>,
}

/// Every runner key this runtime understands; unknown keys are ignored. The same shape is used
/// for the nested `run:` block, whose keys are merged into the runner's.
#[derive(Deserialize, Default)]
struct RawRunner {
    #[serde(rename = "type")]
    ty: Option<String>,
    default: Option<bool>,
    module: Option<String>,
    export: Option<String>,
    timeout_seconds: Option<u64>,
    environment: Option<RawEnv>,
    inputs: Option<BTreeMap<String, InputDecl>>,
    outputs: Option<BTreeMap<String, OutputDecl>>,
    pages: Option<RawPages>,
    command: Option<String>,
    args: Option<Vec<String>>,
    cwd: Option<String>,
    input_mode: Option<String>,
    idempotent: Option<bool>,
    retry: Option<RawRetry>,
    run: Option<Box<RawRunner>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEnv {
    #[serde(default)]
    required: Vec<String>,
    #[serde(default)]
    optional: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPages {
    path_from: String,
    path_scope_from: String,
    media_type: Option<String>,
    framing: Option<String>,
    page_bytes: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRetry {
    attempts: u32,
    on: Option<Vec<String>>,
    backoff_seconds: Option<u64>,
}

/// Merges the nested `run:` block into the runner, refusing a key given in both places.
fn merge_nested(mut outer: RawRunner) -> Result<RawRunner, String> {
    let Some(inner) = outer.run.take() else {
        return Ok(outer);
    };
    let mut inner = *inner;
    if inner.run.is_some() {
        return Err("`run.run`: a nested `run:` block may not contain another `run:`".to_string());
    }
    fn take<T>(key: &str, outer: &mut Option<T>, inner: &mut Option<T>) -> Result<(), String> {
        match (outer.is_some(), inner.is_some()) {
            (true, true) => Err(format!(
                "`{key}` is given both in `run:` and at the runner level; keep one"
            )),
            (false, true) => {
                *outer = inner.take();
                Ok(())
            }
            _ => Ok(()),
        }
    }
    take("type", &mut outer.ty, &mut inner.ty)?;
    take("default", &mut outer.default, &mut inner.default)?;
    take("module", &mut outer.module, &mut inner.module)?;
    take("export", &mut outer.export, &mut inner.export)?;
    take(
        "timeout_seconds",
        &mut outer.timeout_seconds,
        &mut inner.timeout_seconds,
    )?;
    take(
        "environment",
        &mut outer.environment,
        &mut inner.environment,
    )?;
    take("inputs", &mut outer.inputs, &mut inner.inputs)?;
    take("outputs", &mut outer.outputs, &mut inner.outputs)?;
    take("pages", &mut outer.pages, &mut inner.pages)?;
    take("command", &mut outer.command, &mut inner.command)?;
    take("args", &mut outer.args, &mut inner.args)?;
    take("cwd", &mut outer.cwd, &mut inner.cwd)?;
    take("input_mode", &mut outer.input_mode, &mut inner.input_mode)?;
    take("idempotent", &mut outer.idempotent, &mut inner.idempotent)?;
    take("retry", &mut outer.retry, &mut inner.retry)?;
    Ok(outer)
}

/// Validates a runner's keys. Messages name the key; the YAML error adds the runner's path and
/// line.
fn build_runner(name: &str, raw: RawRunner) -> Result<Runner, String> {
    let raw = merge_nested(raw)?;
    let ty = raw.ty.as_deref().ok_or_else(|| {
        format!("runner `{name}` has no `type:`; declare `type: javascript` or `type: cli-tool`")
    })?;
    let environment = build_env(raw.environment)?;
    let inputs = raw.inputs.unwrap_or_default();
    let outputs = raw.outputs.unwrap_or_default();
    if inputs.contains_key(RESERVED_PAGE_INPUT) {
        return Err(format!(
            "`inputs.{RESERVED_PAGE_INPUT}` is reserved: the runtime passes page metadata under that name"
        ));
    }
    let forbid = |key: &str, present: bool, only_for: &str| -> Result<(), String> {
        if present {
            Err(format!(
                "`{key}` applies only to {only_for} runners, not to a `{ty}` runner"
            ))
        } else {
            Ok(())
        }
    };
    let (kind, timeout) = match ty {
        "javascript" => {
            forbid("command", raw.command.is_some(), "cli-tool")?;
            forbid("args", raw.args.is_some(), "cli-tool")?;
            forbid("cwd", raw.cwd.is_some(), "cli-tool")?;
            forbid("input_mode", raw.input_mode.is_some(), "cli-tool")?;
            forbid("idempotent", raw.idempotent.is_some(), "cli-tool")?;
            forbid("retry", raw.retry.is_some(), "cli-tool")?;
            let timeout = timeout_of(
                raw.timeout_seconds,
                JS_DEFAULT_TIMEOUT_SECONDS,
                JS_MAX_TIMEOUT_SECONDS,
                ty,
            )?;
            let module = raw
                .module
                .ok_or("`module` is missing; a javascript runner names its ES module (`module: src/main.mjs`)")?;
            check_module(&module)?;
            if let Some(export) = &raw.export {
                check_export(export)?;
            }
            let pages = raw.pages.map(|p| build_pages(p, &inputs)).transpose()?;
            (
                RunnerKind::Javascript(JsRunner {
                    module,
                    export: raw.export,
                    pages,
                }),
                timeout,
            )
        }
        "cli-tool" => {
            forbid("module", raw.module.is_some(), "javascript")?;
            forbid("export", raw.export.is_some(), "javascript")?;
            forbid("pages", raw.pages.is_some(), "javascript")?;
            let timeout = timeout_of(
                raw.timeout_seconds,
                CLI_DEFAULT_TIMEOUT_SECONDS,
                CLI_MAX_TIMEOUT_SECONDS,
                ty,
            )?;
            let command = raw
                .command
                .ok_or("`command` is missing; a cli-tool runner names the program to start")?;
            if command.trim().is_empty() {
                return Err("`command` is empty; name the program to start".to_string());
            }
            let input_mode = match raw.input_mode.as_deref() {
                None => InputMode::Closed,
                Some("stdin") => InputMode::Stdin,
                Some(other) => {
                    return Err(format!(
                        "`input_mode` is `{other}`; the only mode is `stdin` (omit it to close stdin without input)"
                    ));
                }
            };
            let idempotent = raw.idempotent.unwrap_or(false);
            let retry = raw.retry.map(|r| build_retry(r, idempotent)).transpose()?;
            (
                RunnerKind::CliTool(CliToolRunner {
                    command,
                    args: raw.args.unwrap_or_default(),
                    cwd: raw.cwd,
                    input_mode,
                    idempotent,
                    retry,
                }),
                timeout,
            )
        }
        // Pass 1 routes every other string type to `Unsupported`; reaching here means the type
        // was not a plain string there, which the typed field above would already have refused.
        other => {
            return Err(format!(
                "runner `{name}` has type `{other}`, which this runtime does not implement (supported: {SUPPORTED_TYPES})"
            ));
        }
    };
    Ok(Runner {
        name: name.to_string(),
        default: raw.default.unwrap_or(false),
        kind,
        inputs,
        outputs,
        environment,
        timeout,
    })
}

fn timeout_of(declared: Option<u64>, default: u64, max: u64, ty: &str) -> Result<Duration, String> {
    let secs = declared.unwrap_or(default);
    if !(1..=max).contains(&secs) {
        return Err(format!(
            "`timeout_seconds` is {secs}; a {ty} runner allows 1 to {max} seconds"
        ));
    }
    Ok(Duration::from_secs(secs))
}

/// Module paths must be portable and relative; containment is checked with the filesystem when
/// the module closure is built.
fn check_module(module: &str) -> Result<(), String> {
    if module.is_empty() {
        return Err("`module` is empty; name a .mjs or .js file in the package".to_string());
    }
    if module.starts_with('/') || module.starts_with('\\') || Path::new(module).is_absolute() {
        return Err(format!(
            "`module` `{module}` is absolute; give a path relative to the skill package"
        ));
    }
    if module.contains('\\') {
        return Err(format!(
            "`module` `{module}` uses backslashes; write the relative path with `/`"
        ));
    }
    if module.contains(':') {
        return Err(format!(
            "`module` `{module}` contains `:`; URLs and drive letters are not allowed, give a relative path"
        ));
    }
    if !(module.ends_with(".mjs") || module.ends_with(".js")) {
        return Err(format!("`module` `{module}` must end in .mjs or .js"));
    }
    Ok(())
}

fn check_export(export: &str) -> Result<(), String> {
    let mut chars = export.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_' || c == '$');
    if !first_ok || !chars.all(|c| c.is_alphanumeric() || c == '_' || c == '$') {
        return Err(format!(
            "`export` `{export}` is not a JavaScript export name; omit `export` to use the default export"
        ));
    }
    Ok(())
}

fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn build_env(raw: Option<RawEnv>) -> Result<EnvDecl, String> {
    let Some(raw) = raw else {
        return Ok(EnvDecl::default());
    };
    let mut seen = BTreeSet::new();
    for (list, names) in [("required", &raw.required), ("optional", &raw.optional)] {
        for name in names {
            if !is_env_name(name) {
                return Err(format!(
                    "`environment.{list}` entry `{name}` is not an environment variable name ([A-Za-z_][A-Za-z0-9_]*)"
                ));
            }
            if !seen.insert(name.as_str()) {
                return Err(format!(
                    "`environment` lists `{name}` more than once; name each variable once, as required or optional"
                ));
            }
        }
    }
    Ok(EnvDecl {
        required: raw.required,
        optional: raw.optional,
    })
}

fn is_page_input_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn build_pages(raw: RawPages, inputs: &BTreeMap<String, InputDecl>) -> Result<PagesDecl, String> {
    for (key, value) in [
        ("path_from", &raw.path_from),
        ("path_scope_from", &raw.path_scope_from),
    ] {
        if !is_page_input_name(value) {
            return Err(format!(
                "`pages.{key}` is `{value}`; it names an input and must match [A-Za-z0-9_-]+"
            ));
        }
        if value == RESERVED_PAGE_INPUT {
            return Err(format!(
                "`pages.{key}` may not be `{RESERVED_PAGE_INPUT}`, which the runtime reserves for page metadata"
            ));
        }
        if let Some(decl) = inputs.get(value.as_str())
            && !matches!(decl.ty, ValueType::String | ValueType::Any)
        {
            return Err(format!(
                "`pages.{key}` names input `{value}`, which is declared `{}`; it must be a string",
                decl.ty
            ));
        }
    }
    if raw.path_from == raw.path_scope_from {
        return Err(format!(
            "`pages.path_from` and `pages.path_scope_from` both name `{}`; they must be different inputs",
            raw.path_from
        ));
    }
    let framing = match raw.framing.as_deref() {
        None | Some("json_array") => Framing::JsonArray,
        Some(other) => {
            return Err(format!(
                "`pages.framing` is `{other}`; the only framing is `json_array`"
            ));
        }
    };
    let media_type = raw
        .media_type
        .unwrap_or_else(|| "application/json".to_string());
    if media_type.trim().is_empty() || !media_type.contains('/') {
        return Err(format!(
            "`pages.media_type` is `{media_type}`; give a media type such as application/json"
        ));
    }
    let page_bytes = match raw.page_bytes {
        None => DEFAULT_PAGE_BYTES,
        Some(n) => match usize::try_from(n) {
            Ok(n) if (1..=MAX_PAGE_BYTES).contains(&n) => n,
            _ => {
                return Err(format!(
                    "`pages.page_bytes` is {n}; allowed 1 to {MAX_PAGE_BYTES} (default {DEFAULT_PAGE_BYTES})"
                ));
            }
        },
    };
    Ok(PagesDecl {
        path_from: raw.path_from,
        path_scope_from: raw.path_scope_from,
        media_type,
        framing,
        page_bytes,
    })
}

fn build_retry(raw: RawRetry, idempotent: bool) -> Result<RetryDecl, String> {
    if !idempotent {
        return Err(
            "`retry` requires `idempotent: true`: a retried command must be safe to run twice"
                .to_string(),
        );
    }
    if !(1..=MAX_RETRY_ATTEMPTS).contains(&raw.attempts) {
        return Err(format!(
            "`retry.attempts` is {}; allowed 1 to {MAX_RETRY_ATTEMPTS} additional runs",
            raw.attempts
        ));
    }
    let on = match raw.on {
        None => vec![RetryOn::Crash],
        Some(list) => {
            if list.is_empty() {
                return Err("`retry.on` is empty; use `[crash]` or remove `retry`".to_string());
            }
            let mut on = Vec::new();
            for kind in list {
                match kind.as_str() {
                    "crash" => {
                        if !on.contains(&RetryOn::Crash) {
                            on.push(RetryOn::Crash);
                        }
                    }
                    other => {
                        return Err(format!(
                            "`retry.on` contains `{other}`; only `crash` may be retried, other failures may follow side effects"
                        ));
                    }
                }
            }
            on
        }
    };
    let backoff = raw.backoff_seconds.unwrap_or(DEFAULT_RETRY_BACKOFF_SECONDS);
    if backoff > MAX_RETRY_BACKOFF_SECONDS {
        return Err(format!(
            "`retry.backoff_seconds` is {backoff}; allowed 0 to {MAX_RETRY_BACKOFF_SECONDS}"
        ));
    }
    Ok(RetryDecl {
        attempts: raw.attempts,
        on,
        backoff: Duration::from_secs(backoff),
    })
}

// ---------------------------------------------------------------------------------------------
// Input and output declarations.

impl<'de> Deserialize<'de> for ValueType {
    /// Reads a type name. YAML reads an unquoted `type: null` as the null value, which here can
    /// only mean the `null` type.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = ValueType;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "a type name ({TYPE_NAMES})")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ValueType, E> {
                ValueType::from_name(v).ok_or_else(|| unknown_type(v))
            }
            fn visit_unit<E: de::Error>(self) -> Result<ValueType, E> {
                Ok(ValueType::Null)
            }
        }
        d.deserialize_any(V)
    }
}

/// A `type:` key that is present; `type: null` is the null type, not an absent type.
fn some_type<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ValueType>, D::Error> {
    ValueType::deserialize(d).map(Some)
}

fn unknown_type<E: de::Error>(name: &str) -> E {
    E::custom(format!(
        "unknown type `{name}`; the types are: {TYPE_NAMES}"
    ))
}

/// Long form of an input declaration; unknown keys (`examples`, ...) are ignored.
#[derive(Deserialize)]
struct RawInput {
    #[serde(rename = "type", default, deserialize_with = "some_type")]
    ty: Option<ValueType>,
    #[serde(default)]
    required: bool,
    // `default: null` is a real default, hence the double option.
    #[serde(default, deserialize_with = "present")]
    default: Option<Value>,
    description: Option<String>,
    schema: Option<Value>,
}

/// Keeps an explicitly written `null` as `Some(Value::Null)`.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

#[derive(Deserialize)]
struct RawOutput {
    #[serde(rename = "type", default, deserialize_with = "some_type")]
    ty: Option<ValueType>,
    schema: Option<Value>,
}

/// Compiles a schema so a broken one is reported at load, not on first use.
pub fn compile_schema(schema: &Value) -> Result<jsonschema::Validator, String> {
    jsonschema::validator_for(schema)
        .map_err(|e| format!("`schema` is not a usable JSON Schema: {e}"))
}

/// Accepts `name: <type>` or `name: { type, ... }` and validates the long form.
macro_rules! decl_visitor {
    ($decl:ident, $expect:literal, $build:expr) => {
        impl<'de> Deserialize<'de> for $decl {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = $decl;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str($expect)
                    }
                    fn visit_str<E: de::Error>(self, v: &str) -> Result<$decl, E> {
                        let ty = ValueType::from_name(v).ok_or_else(|| unknown_type::<E>(v))?;
                        Ok($decl::of_type(ty))
                    }
                    fn visit_unit<E: de::Error>(self) -> Result<$decl, E> {
                        Err(E::custom(
                            "the declaration is empty (YAML reads a bare `null` as nothing); write a type such as `any`, or `\"null\"` quoted for the null type",
                        ))
                    }
                    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<$decl, A::Error> {
                        let raw = Deserialize::deserialize(de::value::MapAccessDeserializer::new(map))?;
                        #[allow(clippy::redundant_closure_call)]
                        ($build)(raw).map_err(de::Error::custom)
                    }
                }
                d.deserialize_any(V)
            }
        }
    };
}

impl InputDecl {
    fn of_type(ty: ValueType) -> InputDecl {
        InputDecl {
            ty,
            required: false,
            default: None,
            description: None,
            schema: None,
        }
    }
}

impl OutputDecl {
    fn of_type(ty: ValueType) -> OutputDecl {
        OutputDecl { ty, schema: None }
    }
}

decl_visitor!(
    InputDecl,
    "an input type name or a mapping with `type`, `required`, `default`, `description`, `schema`",
    |raw: RawInput| -> Result<InputDecl, String> {
        let ty = raw.ty.unwrap_or(ValueType::Any);
        let validator = raw.schema.as_ref().map(compile_schema).transpose()?;
        if let Some(default) = &raw.default {
            if !ty.matches(default) {
                return Err(format!(
                    "`default` is {}, but the input is declared `{ty}`",
                    with_article(ValueType::describe(default))
                ));
            }
            if let Some(validator) = &validator
                && let Err(e) = validator.validate(default)
            {
                return Err(format!("`default` does not match `schema`: {e}"));
            }
        }
        Ok(InputDecl {
            ty,
            required: raw.required,
            default: raw.default,
            description: raw.description,
            schema: raw.schema,
        })
    }
);

decl_visitor!(
    OutputDecl,
    "an output type name or a mapping with `type` and `schema`",
    |raw: RawOutput| -> Result<OutputDecl, String> {
        if let Some(schema) = &raw.schema {
            compile_schema(schema)?;
        }
        Ok(OutputDecl {
            ty: raw.ty.unwrap_or(ValueType::Any),
            schema: raw.schema,
        })
    }
);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse_str(text: &str) -> Result<Profile, ProfileError> {
        parse(text, Path::new("/pkg"), Path::new("/pkg/X.yaml"))
    }

    fn ok(text: &str) -> Profile {
        match parse_str(text) {
            Ok(p) => p,
            Err(e) => panic!("expected a valid profile, got: {e}"),
        }
    }

    /// Parses and returns the error text, panicking if the profile is accepted.
    fn err(text: &str) -> String {
        match parse_str(text) {
            Ok(_) => panic!("expected an error for:\n{text}"),
            Err(e) => e.to_string(),
        }
    }

    fn js(r: &Runner) -> &JsRunner {
        match &r.kind {
            RunnerKind::Javascript(j) => j,
            other => panic!("not javascript: {other:?}"),
        }
    }

    fn cli(r: &Runner) -> &CliToolRunner {
        match &r.kind {
            RunnerKind::CliTool(c) => c,
            other => panic!("not cli-tool: {other:?}"),
        }
    }

    const FULL: &str = r#"
skill: sample
version: 1.0.0
catalog: { visible: true }
credentials: [github]
runners:
  main:
    default: true
    type: javascript
    module: src/main.mjs
    export: run
    timeout_seconds: 5
    scopes: [fs.read]
    artifacts: { emits: [] }
    environment: { required: [REGION], optional: [TRACE] }
    inputs:
      name: { type: string, required: true, default: "x", description: "who", schema: { minLength: 1 } }
      count: integer
      archive_file: { type: string }
    outputs:
      greeting: string
      stats: { type: object, schema: { type: object, required: [n] } }
    pages: { path_from: archive_file, path_scope_from: archive_base, media_type: application/json, framing: json_array, page_bytes: 524288 }
  tool:
    type: cli-tool
    command: ./bin/tool.sh
    args: ["--name", "{{input.name}}", "{{env.REGION}}"]
    cwd: "{{env.RUNX_CWD}}"
    input_mode: stdin
    idempotent: true
    retry: { attempts: 2, on: [crash], backoff_seconds: 1 }
  plan:
    type: graph
    steps: [{ run: main }, { run: tool }]
    inputs: "graphs have their own shapes"
harness:
  cases:
    - name: one
      inputs: { name: a }
"#;

    #[test]
    fn full_profile_parses() {
        let p = ok(FULL);
        assert_eq!(p.skill, "sample");
        assert_eq!(p.version, "1.0.0");
        assert_eq!(p.dir, Path::new("/pkg"));
        assert_eq!(p.default_runner.as_deref(), Some("main"));
        assert_eq!(p.runners.len(), 3);

        let main = &p.runners["main"];
        assert!(main.default);
        assert_eq!(main.timeout, Duration::from_secs(5));
        assert_eq!(main.environment.required, vec!["REGION"]);
        assert_eq!(main.environment.optional, vec!["TRACE"]);
        let name = &main.inputs["name"];
        assert_eq!(name.ty, ValueType::String);
        assert!(name.required);
        assert_eq!(name.default, Some(json!("x")));
        assert_eq!(name.description.as_deref(), Some("who"));
        assert_eq!(name.schema, Some(json!({"minLength": 1})));
        assert_eq!(main.inputs["count"].ty, ValueType::Integer);
        assert_eq!(
            main.outputs["greeting"],
            OutputDecl::of_type(ValueType::String)
        );
        assert_eq!(main.outputs["stats"].ty, ValueType::Object);
        let j = js(main);
        assert_eq!(j.module, "src/main.mjs");
        assert_eq!(j.export.as_deref(), Some("run"));
        assert_eq!(
            j.pages,
            Some(PagesDecl {
                path_from: "archive_file".into(),
                path_scope_from: "archive_base".into(),
                media_type: "application/json".into(),
                framing: Framing::JsonArray,
                page_bytes: 524288,
            })
        );

        let tool = &p.runners["tool"];
        assert_eq!(tool.timeout, Duration::from_secs(60));
        let c = cli(tool);
        assert_eq!(c.command, "./bin/tool.sh");
        assert_eq!(c.args, vec!["--name", "{{input.name}}", "{{env.REGION}}"]);
        assert_eq!(c.cwd.as_deref(), Some("{{env.RUNX_CWD}}"));
        assert_eq!(c.input_mode, InputMode::Stdin);
        assert!(c.idempotent);
        assert_eq!(
            c.retry,
            Some(RetryDecl {
                attempts: 2,
                on: vec![RetryOn::Crash],
                backoff: Duration::from_secs(1)
            })
        );

        assert!(matches!(&p.runners["plan"].kind, RunnerKind::Unsupported(t) if t == "graph"));
        assert_eq!(
            p.harness,
            Some(json!({"cases": [{"name": "one", "inputs": {"name": "a"}}]}))
        );
        assert_eq!(p.harness_line, Some(36));
    }

    #[test]
    fn defaults_apply() {
        let p = ok(
            "skill: s\nrunners:\n  a:\n    type: javascript\n    module: m.js\n    pages: { path_from: f, path_scope_from: s }\n",
        );
        let a = &p.runners["a"];
        assert_eq!(a.timeout, Duration::from_secs(2));
        assert_eq!(p.version, "");
        assert_eq!(p.default_runner, None);
        assert_eq!(p.harness, None);
        assert_eq!(p.harness_line, None);
        let j = js(a);
        assert_eq!(j.export, None);
        let pages = j.pages.as_ref().expect("pages");
        assert_eq!(pages.page_bytes, DEFAULT_PAGE_BYTES);
        assert_eq!(pages.media_type, "application/json");
        assert_eq!(pages.framing, Framing::JsonArray);
        assert_eq!(a.environment, EnvDecl::default());
    }

    #[test]
    fn nested_run_form_matches_flat_form() {
        let nested = ok(r#"
skill: s
runners:
  main:
    default: true
    timeout_seconds: 3
    inputs: { n: number }
    credentials: [x]
    run:
      type: javascript
      module: lib/a.mjs
      export: go
      outputs: { out: array }
      pages: { path_from: f, path_scope_from: scope }
"#);
        let flat = ok(r#"
skill: s
runners:
  main:
    default: true
    timeout_seconds: 3
    inputs: { n: number }
    type: javascript
    module: lib/a.mjs
    export: go
    outputs: { out: array }
    pages: { path_from: f, path_scope_from: scope }
"#);
        let (a, b) = (&nested.runners["main"], &flat.runners["main"]);
        assert_eq!(a.inputs, b.inputs);
        assert_eq!(a.outputs, b.outputs);
        assert_eq!(a.timeout, b.timeout);
        assert_eq!(a.default, b.default);
        assert_eq!(js(a).module, js(b).module);
        assert_eq!(js(a).export, js(b).export);
        assert_eq!(js(a).pages, js(b).pages);
    }

    #[test]
    fn nested_run_conflicts_are_errors() {
        let e = err(
            "skill: s\nrunners:\n  m:\n    module: a.js\n    run: { type: javascript, module: b.js }\n",
        );
        assert!(e.contains("`module` is given both"), "{e}");
        assert!(e.contains("runners.m"), "{e}");
        let e =
            err("skill: s\nrunners:\n  m:\n    run: { type: javascript, module: b.js, run: {} }\n");
        assert!(e.contains("run.run"), "{e}");
    }

    #[test]
    fn single_top_level_run_is_default_runner() {
        let p = ok(r#"
skill: risk
version: 2
run:
  type: javascript
  module: risk-model.mjs
  export: assessRisk
  outputs:
    assessment: object
"#);
        assert_eq!(p.version, "2");
        assert_eq!(p.default_runner.as_deref(), Some("default"));
        let r = p.runner(None).expect("default runner");
        assert_eq!(r.name, "default");
        assert_eq!(js(r).module, "risk-model.mjs");
        assert!(p.runner(Some("default")).is_ok());
    }

    #[test]
    fn numeric_versions_become_text() {
        assert_eq!(
            ok("skill: s\nversion: 1.5\nrun: { type: javascript, module: a.js }\n").version,
            "1.5"
        );
        assert_eq!(
            ok("skill: s\nversion: 1.0\nrun: { type: javascript, module: a.js }\n").version,
            "1.0"
        );
        assert_eq!(
            ok("skill: s\nversion: '1.10'\nrun: { type: javascript, module: a.js }\n").version,
            "1.10"
        );
    }

    #[test]
    fn unsupported_runner_errors_only_when_selected() {
        let p = ok(
            "skill: s\nrunners:\n  g:\n    type: agent-task\n    default: true\n    allowed_tools: [x]\n    outputs: 7\n  j:\n    type: javascript\n    module: a.js\n",
        );
        let e = p.runner(None).expect_err("default is unsupported");
        assert!(
            matches!(&e, ProfileError::UnsupportedRunner { runner, ty } if runner == "g" && ty == "agent-task")
        );
        assert_eq!(
            e.to_string(),
            "runner `g` has type `agent-task`, which this runtime does not implement (supported: javascript, cli-tool)"
        );
        assert!(p.runner(Some("j")).is_ok());
        // The nested form carries its type inside `run:`.
        let p = ok("skill: s\nrun:\n  run: { type: graph, steps: [] }\n");
        assert!(matches!(
            p.runner(None),
            Err(ProfileError::UnsupportedRunner { .. })
        ));
    }

    #[test]
    fn runner_selection_rules() {
        let two = ok(
            "skill: s\nrunners:\n  a: { type: javascript, module: a.js }\n  b: { type: cli-tool, command: b }\n",
        );
        let e = two.runner(None).expect_err("ambiguous");
        assert!(matches!(e, ProfileError::NoDefaultRunner { .. }));
        assert!(
            e.to_string().contains("a (javascript), b (cli-tool)"),
            "{e}"
        );
        assert_eq!(two.runner(Some("b")).expect("b").name, "b");
        let e = two.runner(Some("c")).expect_err("unknown");
        assert!(matches!(&e, ProfileError::UnknownRunner { runner, .. } if runner == "c"));
        assert!(e.to_string().contains("no runner `c`"), "{e}");
        assert!(
            e.to_string().contains("a (javascript), b (cli-tool)"),
            "{e}"
        );

        let one = ok("skill: s\nrunners:\n  only: { type: javascript, module: a.js }\n");
        assert_eq!(one.runner(None).expect("only").name, "only");

        let dflt = ok(
            "skill: s\nrunners:\n  a: { type: javascript, module: a.js }\n  b: { type: javascript, module: b.js, default: true }\n",
        );
        assert_eq!(dflt.runner(None).expect("default").name, "b");
        assert_eq!(dflt.runner(Some("a")).expect("named").name, "a");
    }

    #[test]
    fn two_defaults_rejected() {
        let e = err(
            "skill: s\nrunners:\n  a: { type: javascript, module: a.js, default: true }\n  b: { type: graph, default: true }\n",
        );
        assert!(e.contains("`a`, `b` are all marked `default: true`"), "{e}");
    }

    #[test]
    fn top_level_errors() {
        assert!(err("").contains("empty"));
        assert!(
            err("runners:\n  a: { type: javascript, module: a.js }\n")
                .contains("`skill:` is missing")
        );
        assert!(
            err("skill: ''\nrun: { type: javascript, module: a.js }\n")
                .contains("`skill` is empty")
        );
        assert!(err("skill: s\n").contains("no runner is declared"));
        assert!(err("skill: s\nrunners: {}\n").contains("`runners:` is empty"));
        assert!(
            err("skill: s\nrun: { type: javascript, module: a.js }\nrunners:\n  a: { type: javascript, module: a.js }\n")
                .contains("both `runners:` and a top-level `run:`")
        );
        assert!(err("- a\n- b\n").contains("skill profile mapping"));
    }

    #[test]
    fn yaml_errors_carry_file_and_line() {
        match parse_str("skill: s\nrunners:\n  a:\n    type: javascript\n    module: [\n") {
            Err(ProfileError::Invalid { file, line, .. }) => {
                assert_eq!(file, Path::new("/pkg/X.yaml"));
                assert!(line.is_some());
            }
            other => panic!("{other:?}"),
        }
        let e = parse_str("skill: s\nrunners:\n  a:\n    type: javascript\n    module: a.js\n    timeout_seconds: soon\n")
            .expect_err("bad type");
        let ProfileError::Invalid { line, message, .. } = &e else {
            panic!("{e:?}")
        };
        assert_eq!(*line, Some(6));
        assert!(
            message.starts_with("runners.a.timeout_seconds: "),
            "{message}"
        );
        assert!(e.to_string().starts_with("/pkg/X.yaml:6:"), "{e}");
        // Duplicate keys are caught by the YAML reader.
        assert!(
            err("skill: s\nskill: t\nrun: { type: javascript, module: a.js }\n")
                .contains("duplicate")
        );
    }

    #[test]
    fn semantic_errors_name_runner_key_and_line() {
        let e = parse_str("skill: s\nrunners:\n  main:\n    type: javascript\n    module: a.js\n    timeout_seconds: 45\n")
            .expect_err("timeout");
        let ProfileError::Invalid { line, message, .. } = &e else {
            panic!("{e:?}")
        };
        assert_eq!(*line, Some(4), "line of the runner mapping");
        assert_eq!(
            message,
            "runners.main: `timeout_seconds` is 45; a javascript runner allows 1 to 30 seconds"
        );
    }

    #[test]
    fn unknown_types_name_the_key() {
        let e = err(
            "skill: s\nrun:\n  type: javascript\n  module: a.js\n  outputs: { greeting: strnig }\n",
        );
        assert!(e.contains("run.outputs.greeting"), "{e}");
        assert!(e.contains("unknown type `strnig`"), "{e}");
        let e = err(
            "skill: s\nrun:\n  type: javascript\n  module: a.js\n  inputs: { name: { type: text } }\n",
        );
        assert!(e.contains("run.inputs.name.type"), "{e}");
        assert!(e.contains("unknown type `text`"), "{e}");
    }

    #[test]
    fn every_value_type_parses() {
        let p = ok(
            "skill: s\nrun:\n  type: javascript\n  module: a.js\n  outputs: { a: string, b: number, c: integer, d: boolean, e: object, f: array, g: \"null\", h: any, i: { schema: { type: string } }, j: { type: null } }\n",
        );
        let kinds: Vec<_> = p.runners["default"]
            .outputs
            .values()
            .map(|o| o.ty.name())
            .collect();
        assert_eq!(
            kinds,
            [
                "string", "number", "integer", "boolean", "object", "array", "null", "any", "any",
                "null"
            ]
        );
    }

    #[test]
    fn empty_short_declaration_is_an_error() {
        let e = err("skill: s\nrun:\n  type: javascript\n  module: a.js\n  inputs:\n    name:\n");
        assert!(
            e.contains("run.inputs.name: the declaration is empty"),
            "{e}"
        );
    }

    #[test]
    fn missing_type_and_type_errors() {
        assert!(
            err("skill: s\nrunners:\n  a: { module: a.js }\n")
                .contains("runner `a` has no `type:`")
        );
        let e = err("skill: s\nrunners:\n  a: { type: 5, module: a.js }\n");
        assert!(e.contains("runners.a: runner `a` has type `5`"), "{e}");
    }

    fn js_err(extra: &str) -> String {
        err(&format!(
            "skill: s\nrunners:\n  r:\n    type: javascript\n{extra}"
        ))
    }

    fn cli_err(extra: &str) -> String {
        err(&format!(
            "skill: s\nrunners:\n  r:\n    type: cli-tool\n{extra}"
        ))
    }

    #[test]
    fn javascript_validation_errors() {
        let cases: &[(&str, &str)] = &[
            ("    export: run\n", "`module` is missing"),
            ("    module: ''\n", "`module` is empty"),
            ("    module: /abs/a.mjs\n", "is absolute"),
            ("    module: 'src\\a.mjs'\n", "backslashes"),
            ("    module: 'https://x/a.mjs'\n", "contains `:`"),
            ("    module: a.ts\n", "must end in .mjs or .js"),
            (
                "    module: a.js\n    export: 'not-ok'\n",
                "not a JavaScript export name",
            ),
            (
                "    module: a.js\n    timeout_seconds: 0\n",
                "`timeout_seconds` is 0",
            ),
            (
                "    module: a.js\n    timeout_seconds: 31\n",
                "allows 1 to 30",
            ),
            (
                "    module: a.js\n    command: x\n",
                "`command` applies only to cli-tool",
            ),
            (
                "    module: a.js\n    retry: { attempts: 1 }\n",
                "`retry` applies only to cli-tool",
            ),
            (
                "    module: a.js\n    inputs: { runx_page: object }\n",
                "`inputs.runx_page` is reserved",
            ),
        ];
        for (extra, want) in cases {
            let e = js_err(extra);
            assert!(e.contains(want), "{extra:?}: {e}");
            assert!(e.contains("runners.r"), "{extra:?}: {e}");
        }
        assert!(ok("skill: s\nrun: { type: javascript, module: a.js, timeout_seconds: 30, export: $x_1 }\n").runners.contains_key("default"));
    }

    #[test]
    fn environment_validation_errors() {
        assert!(
            js_err("    module: a.js\n    environment: { required: [1BAD] }\n")
                .contains("`environment.required` entry `1BAD`")
        );
        assert!(
            js_err("    module: a.js\n    environment: { optional: [A-B] }\n")
                .contains("`environment.optional` entry `A-B`")
        );
        assert!(
            js_err("    module: a.js\n    environment: { required: [A], optional: [A] }\n")
                .contains("lists `A` more than once")
        );
        assert!(
            js_err("    module: a.js\n    environment: { requird: [A] }\n")
                .contains("unknown field `requird`")
        );
        let p = ok(
            "skill: s\nrun: { type: javascript, module: a.js, environment: { required: [_A1] } }\n",
        );
        assert_eq!(p.runners["default"].environment.required, vec!["_A1"]);
    }

    #[test]
    fn pages_validation_errors() {
        let page = |p: &str| js_err(&format!("    module: a.js\n    pages: {p}\n"));
        assert!(
            page("{ path_from: 'a b', path_scope_from: s }").contains("`pages.path_from` is `a b`")
        );
        assert!(
            page("{ path_from: f, path_scope_from: 's/x' }")
                .contains("`pages.path_scope_from` is `s/x`")
        );
        assert!(page("{ path_from: f, path_scope_from: f }").contains("must be different inputs"));
        assert!(
            page("{ path_from: runx_page, path_scope_from: s }").contains("may not be `runx_page`")
        );
        assert!(
            page("{ path_from: f, path_scope_from: runx_page }")
                .contains("`pages.path_scope_from` may not be `runx_page`")
        );
        assert!(
            page("{ path_from: f, path_scope_from: s, framing: ndjson }")
                .contains("only framing is `json_array`")
        );
        assert!(
            page("{ path_from: f, path_scope_from: s, page_bytes: 0 }")
                .contains("`pages.page_bytes` is 0")
        );
        assert!(
            page("{ path_from: f, path_scope_from: s, page_bytes: 4194305 }")
                .contains("allowed 1 to 4194304")
        );
        assert!(
            page("{ path_from: f, path_scope_from: s, media_type: json }")
                .contains("`pages.media_type`")
        );
        assert!(
            page("{ path_from: f, path_scope_from: s, size: 1 }").contains("unknown field `size`")
        );
        assert!(page("{ path_from: f }").contains("missing field `path_scope_from`"));
        assert!(js_err("    module: a.js\n    inputs: { f: integer }\n    pages: { path_from: f, path_scope_from: s }\n")
            .contains("declared `integer`"));
        assert!(ok("skill: s\nrun: { type: javascript, module: a.js, pages: { path_from: f, path_scope_from: s, page_bytes: 4194304 } }\n")
            .runners.contains_key("default"));
    }

    #[test]
    fn cli_tool_validation_errors() {
        let cases: &[(&str, &str)] = &[
            ("    args: [a]\n", "`command` is missing"),
            ("    command: ' '\n", "`command` is empty"),
            (
                "    command: x\n    module: a.js\n",
                "`module` applies only to javascript",
            ),
            (
                "    command: x\n    pages: { path_from: f, path_scope_from: s }\n",
                "`pages` applies only to javascript",
            ),
            (
                "    command: x\n    input_mode: args\n",
                "`input_mode` is `args`",
            ),
            (
                "    command: x\n    timeout_seconds: 3601\n",
                "allows 1 to 3600",
            ),
            (
                "    command: x\n    retry: { attempts: 1 }\n",
                "requires `idempotent: true`",
            ),
            (
                "    command: x\n    idempotent: false\n    retry: { attempts: 1 }\n",
                "requires `idempotent: true`",
            ),
            (
                "    command: x\n    idempotent: true\n    retry: { attempts: 0 }\n",
                "`retry.attempts` is 0",
            ),
            (
                "    command: x\n    idempotent: true\n    retry: { attempts: 4 }\n",
                "`retry.attempts` is 4",
            ),
            (
                "    command: x\n    idempotent: true\n    retry: { attempts: 1, on: [timeout] }\n",
                "`retry.on` contains `timeout`",
            ),
            (
                "    command: x\n    idempotent: true\n    retry: { attempts: 1, on: [] }\n",
                "`retry.on` is empty",
            ),
            (
                "    command: x\n    idempotent: true\n    retry: { attempts: 1, backoff_seconds: 301 }\n",
                "`retry.backoff_seconds` is 301",
            ),
            (
                "    command: x\n    idempotent: true\n    retry: { attempts: 1, tries: 2 }\n",
                "unknown field `tries`",
            ),
        ];
        for (extra, want) in cases {
            let e = cli_err(extra);
            assert!(e.contains(want), "{extra:?}: {e}");
            assert!(e.contains("runners.r"), "{extra:?}: {e}");
        }
        let p = ok(
            "skill: s\nrun: { type: cli-tool, command: x, timeout_seconds: 3600, idempotent: true, retry: { attempts: 3 } }\n",
        );
        let r = &p.runners["default"];
        assert_eq!(r.timeout, Duration::from_secs(3600));
        let c = cli(r);
        assert_eq!(c.input_mode, InputMode::Closed);
        assert_eq!(c.args, Vec::<String>::new());
        assert_eq!(c.cwd, None);
        assert_eq!(
            c.retry,
            Some(RetryDecl {
                attempts: 3,
                on: vec![RetryOn::Crash],
                backoff: Duration::from_secs(30)
            })
        );
    }

    #[test]
    fn input_declaration_checks() {
        assert!(
            js_err("    module: a.js\n    inputs: { n: { type: integer, default: 1.5 } }\n")
                .contains("`default` is a number, but the input is declared `integer`")
        );
        assert!(js_err("    module: a.js\n    inputs: { n: { type: string, default: ab, schema: { minLength: 3 } } }\n")
            .contains("`default` does not match `schema`"));
        assert!(
            js_err("    module: a.js\n    inputs: { n: { schema: { type: 7 } } }\n")
                .contains("not a usable JSON Schema")
        );
        assert!(
            js_err(
                "    module: a.js\n    outputs: { n: { type: object, schema: { type: wrong } } }\n"
            )
            .contains("runners.r.outputs.n")
        );
        let p = ok(
            "skill: s\nrun: { type: javascript, module: a.js, inputs: { n: { default: null, examples: [1] }, m: { type: integer, default: 2.0 } } }\n",
        );
        let inputs = &p.runners["default"].inputs;
        assert_eq!(inputs["n"].ty, ValueType::Any);
        assert_eq!(inputs["n"].default, Some(Value::Null));
        assert!(!inputs["n"].required);
        assert_eq!(inputs["m"].default, Some(json!(2.0)));
    }

    #[test]
    fn remote_schema_refs_are_not_fetched() {
        let e = js_err(
            "    module: a.js\n    inputs: { n: { schema: { $ref: 'https://example.invalid/s.json' } } }\n",
        );
        assert!(e.contains("not a usable JSON Schema"), "{e}");
    }

    #[test]
    fn value_type_matching() {
        assert!(ValueType::Integer.matches(&json!(3)));
        assert!(ValueType::Integer.matches(&json!(-3)));
        assert!(ValueType::Integer.matches(&json!(3.0)));
        assert!(!ValueType::Integer.matches(&json!(3.5)));
        assert!(ValueType::Number.matches(&json!(3.5)));
        assert!(!ValueType::Number.matches(&json!("3")));
        assert!(ValueType::Null.matches(&Value::Null));
        assert!(ValueType::Any.matches(&json!({"a": 1})));
        assert_eq!(ValueType::describe(&json!(1.5)), "number");
        assert_eq!(ValueType::describe(&json!(1)), "integer");
        assert_eq!(with_article("integer"), "an integer");
        assert_eq!(with_article("string"), "a string");
        assert_eq!(PathScope::from_name("skill"), Some(PathScope::Skill));
        assert_eq!(
            PathScope::from_name("workspace"),
            Some(PathScope::Workspace)
        );
        assert_eq!(PathScope::from_name("home"), None);
    }

    #[test]
    fn load_reads_and_canonicalises() {
        let dir = tempfile::tempdir().expect("tempdir");
        let e = load(dir.path()).expect_err("no profile yet");
        assert!(matches!(&e, ProfileError::NotAPackage { .. }), "{e}");
        assert!(
            e.to_string()
                .ends_with("has no X.yaml; a skill package keeps its execution profile there"),
            "{e}"
        );
        std::fs::write(
            dir.path().join(PROFILE_FILE),
            "skill: s\nrun: { type: javascript, module: a.js }\n",
        )
        .expect("write");
        let p = load(&dir.path().join(".")).expect("load");
        assert_eq!(p.dir, dir.path().canonicalize().expect("canonical"));
        assert!(matches!(
            load(&dir.path().join("missing")),
            Err(ProfileError::Read { .. })
        ));
        std::fs::write(
            dir.path().join(PROFILE_FILE),
            "skill: s\nrun: { type: javascript, module: 3 }\n",
        )
        .expect("write");
        let e = load(dir.path()).expect_err("bad profile").to_string();
        assert!(e.contains("X.yaml:2:"), "{e}");
    }
}
