//! Reading an `X.yaml`, in three passes over the same text.
//!
//! 1. The document is read as a plain YAML value only to learn each runner's `type`. Runner types
//!    this runtime does not implement (`graph`, `agent-task`, ...) have shapes of their own, so
//!    they are recorded as [`OtherRunner`]s with their values uninterpreted; the package still
//!    loads, and the error appears only if such a runner is selected.
//! 2. `input_definitions` is read, typed, so runner inputs can refer to it wherever it stands in
//!    the document.
//! 3. The document is deserialized through typed serde structures and explicit visitors.
//!    Validation happens inside them, so `serde_yaml_ng` attaches the line, column and key path
//!    of the offending node to every error, including the semantic ones (timeout ranges, page
//!    settings, unknown keys, ...).

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use runx_rules::{Scope, ScopeError};

use std::collections::BTreeSet;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::decl::{DeclContext, InputDecl, InputsSeed};
use crate::limits::PROFILE_BYTES;
use crate::model::{
    DEFAULT_RUN_NAME, Diagnostic, OtherRunner, PROFILE_FILE, Profile, ProfileError, Runner,
};
use crate::packet::PacketFinder;
use crate::runner_map::{ClosedKey, RunnerMap, RunnerMapSeed};
use crate::validate::build_runner;

/// Top-level keys this runtime acts on.
const TOP_RUN_KEYS: &[&str] = &[
    "skill",
    "version",
    "runners",
    "run",
    "harness",
    "input_definitions",
];
/// Top-level keys of runx packages this runtime reads and shows but does not act on.
const TOP_DECLARED_ONLY_KEYS: &[&str] = &["runx", "policy", "emits", "catalog", "credentials"];

/// Reads and parses `dir/X.yaml`: opened inside `dir` through [`Scope`] (no symlink, a regular
/// file, opened without blocking), read up to [`PROFILE_BYTES`], checked for nesting depth
/// ([`check_depth`](crate::check_depth)) and parsed. `runx skill`, `runx skill inspect` and `runx harness` all read
/// profiles here.
pub fn load(dir: &Path) -> Result<Profile, ProfileError> {
    load_with_text(dir).map(|(profile, _)| profile)
}

/// [`load`], also giving the text the profile was parsed from (for positions of keys, or to
/// tell later whether `X.yaml` still holds it).
pub fn load_with_text(dir: &Path) -> Result<(Profile, String), ProfileError> {
    let (dir, text) = read_text(dir)?;
    let file = dir.join(PROFILE_FILE);
    let profile = parse(&text, &dir, &file)?;
    Ok((profile, text))
}

/// The canonical package directory and the text of its `X.yaml`, read as [`load`] reads it.
pub fn read_text(dir: &Path) -> Result<(PathBuf, String), ProfileError> {
    let dir = dir.canonicalize().map_err(|source| ProfileError::Read {
        path: dir.to_path_buf(),
        source,
    })?;
    let file = dir.join(PROFILE_FILE);
    let read_err = |source| ProfileError::Read {
        path: file.clone(),
        source,
    };
    let scope = Scope::open(&dir).map_err(read_err)?;
    let bytes = match scope.read(PROFILE_FILE, PROFILE_BYTES.max) {
        Ok(bytes) => bytes,
        Err(ScopeError::NotFound { .. }) => return Err(ProfileError::NotAPackage { dir }),
        Err(ScopeError::TooLarge { bytes, .. }) => {
            return Err(ProfileError::TooLarge { path: file, bytes });
        }
        Err(e) => return Err(read_err(std::io::Error::other(e.to_string()))),
    };
    let text = String::from_utf8(bytes).map_err(|e| {
        read_err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "not UTF-8 (first invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ),
        ))
    })?;
    Ok((dir, text))
}

/// Parses profile text. `dir` is recorded as the package directory; `file` is used in messages.
pub fn parse(text: &str, dir: &Path, file: &Path) -> Result<Profile, ProfileError> {
    let invalid = |e: serde_yaml_ng::Error| yaml_error(file, text, e);
    if text.trim().is_empty() {
        return Err(ProfileError::Invalid {
            file: file.to_path_buf(),
            line: None,
            column: None,
            message: "the profile is empty; it needs at least `skill:` and `runners:` (or `run:`)"
                .to_string(),
        });
    }
    // The parser slows with the square of the nesting; refuse deep text before it sees it.
    if let Err(deep) = crate::yaml::check_depth(text) {
        return Err(ProfileError::Invalid {
            file: file.to_path_buf(),
            line: Some(deep.line),
            column: Some(deep.column),
            message: format!(
                "nesting deeper than {} levels (`{}`); a profile needs only a few",
                crate::limits::YAML_DEPTH.max,
                crate::limits::YAML_DEPTH.name
            ),
        });
    }
    // Pass 1: learn runner types, so other runner types are read without being interpreted.
    let doc: serde_yaml_ng::Value = serde_yaml_ng::from_str(text).map_err(invalid)?;
    let other_types = other_runner_types(&doc);
    let packets = PacketFinder::new(dir);
    // Pass 2: the reusable input declarations, wherever they stand in the document.
    let definitions = DefinitionsSeed(&DeclContext {
        definitions: None,
        packets: &packets,
    })
    .deserialize(serde_yaml_ng::Deserializer::from_str(text))
    .map_err(invalid)?;
    // Pass 3: typed parse with validation inside the visitors (which gives errors locations).
    let ctx = DeclContext {
        definitions: Some(&definitions),
        packets: &packets,
    };
    let mut diagnostics = Vec::new();
    let top = TopSeed {
        other_types: &other_types,
        ctx: &ctx,
        diagnostics: &mut diagnostics,
    }
    .deserialize(serde_yaml_ng::Deserializer::from_str(text))
    .map_err(invalid)?;
    let mut runners = BTreeMap::new();
    let mut other_runners = BTreeMap::new();
    for (name, declared) in top.runners {
        match declared {
            Declared::Runnable(r) => {
                runners.insert(name, *r);
            }
            Declared::Other(o) => {
                other_runners.insert(name, o);
            }
        }
    }
    Ok(Profile {
        skill: top.skill,
        version: top.version,
        digest: runx_receipts::sha256_hex(text.as_bytes()),
        dir: dir.to_path_buf(),
        default_runner: top.default_runner,
        runners,
        other_runners,
        input_definitions: definitions,
        declared_only: top.declared_only,
        diagnostics,
    })
}

/// Turns a YAML error into [`ProfileError::Invalid`], moving the location out of the message.
fn yaml_error(file: &Path, text: &str, e: serde_yaml_ng::Error) -> ProfileError {
    let location = e.location();
    let mut message = e.to_string();
    if location.is_none() && message.starts_with("repetition limit exceeded") {
        // The reader says no more of an alias bomb: find the alias where it goes off.
        if let Some(b) = crate::aliases::bomb(text) {
            return ProfileError::Invalid {
                file: file.to_path_buf(),
                line: Some(b.line),
                column: Some(b.column),
                message: format!(
                    "repetition limit exceeded: by this alias the document's aliases expand {} times, past the {} a document of its size may (an alias bomb): name fewer aliases, or write the repeated nodes out",
                    b.expansions, b.limit
                ),
            };
        }
    }
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
        message: plain_types(&message),
    }
}

/// `message` with the Rust type names serde writes (`expected u64`) said in words a package
/// author reads (`expected a whole number, 0 or more`).
pub fn plain_types(message: &str) -> String {
    const WORDS: &[(&str, &str)] = &[
        ("u8", "a whole number, 0 or more"),
        ("u16", "a whole number, 0 or more"),
        ("u32", "a whole number, 0 or more"),
        ("u64", "a whole number, 0 or more"),
        ("usize", "a whole number, 0 or more"),
        ("i32", "a whole number"),
        ("i64", "a whole number"),
        ("f32", "a number"),
        ("f64", "a number"),
    ];
    let mut out = message.to_string();
    for (rust, words) in WORDS {
        for lead in ["expected ", "expected one of "] {
            let from = format!("{lead}{rust}");
            if let Some(at) = out.find(&from) {
                let end = at + from.len();
                // Only the whole word: `u64` but not `u64s`.
                if out[end..]
                    .chars()
                    .next()
                    .is_none_or(|c| !c.is_alphanumeric())
                {
                    out.replace_range(at..end, &format!("{lead}{words}"));
                }
            }
        }
    }
    out
}

/// Names and types of runners whose declared type this runtime does not implement.
fn other_runner_types(doc: &serde_yaml_ng::Value) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let declared_type = |runner: &serde_yaml_ng::Value| -> Option<String> {
        let ty = runner
            .get("type")
            .or_else(|| runner.get("run").and_then(|run| run.get("type")))
            .or_else(|| runner.get("source").and_then(|src| src.get("type")))?;
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

/// A runner as declared: one this runtime runs, or one of another type.
enum Declared {
    Runnable(Box<Runner>),
    Other(OtherRunner),
}

impl Declared {
    fn is_default(&self) -> bool {
        match self {
            Declared::Runnable(r) => r.default,
            Declared::Other(o) => o.default,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Definitions pass.

/// Reads only `input_definitions`, skipping every other key.
struct DefinitionsSeed<'a>(&'a DeclContext<'a>);

impl<'de> DeserializeSeed<'de> for DefinitionsSeed<'_> {
    type Value = BTreeMap<String, InputDecl>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for DefinitionsSeed<'_> {
    type Value = BTreeMap<String, InputDecl>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a skill profile mapping with `skill:` and `runners:` (or `run:`)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut definitions = BTreeMap::new();
        while let Some(key) = map.next_key::<String>()? {
            if key == "input_definitions" {
                definitions = map.next_value_seed(InputsSeed(self.0))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(definitions)
    }
}

// ---------------------------------------------------------------------------------------------
// Typed pass: top level.

struct TopSeed<'a> {
    other_types: &'a BTreeMap<String, String>,
    ctx: &'a DeclContext<'a>,
    diagnostics: &'a mut Vec<Diagnostic>,
}

struct Top {
    skill: String,
    version: String,
    runners: BTreeMap<String, Declared>,
    default_runner: Option<String>,
    declared_only: BTreeMap<String, Value>,
}

impl<'de> DeserializeSeed<'de> for TopSeed<'_> {
    type Value = Top;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Top, D::Error> {
        d.deserialize_map(self)
    }
}

fn top_special(key: &str) -> Option<String> {
    (key == "instructions")
        .then(|| "`instructions` belongs in the package's SKILL.md, not in X.yaml".to_string())
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
        let mut declared_only = BTreeMap::new();
        let mut seen = BTreeSet::new();
        loop {
            let key = map.next_key_seed(ClosedKey {
                allowed: &[
                    ("keys runx reads", TOP_RUN_KEYS),
                    (
                        "keys runx shows without acting on them",
                        TOP_DECLARED_ONLY_KEYS,
                    ),
                ],
                seen: &seen,
                what: "top-level key",
                special: top_special,
            })?;
            let Some(key) = key else { break };
            seen.insert(key.clone());
            match key.as_str() {
                "skill" => skill = Some(map.next_value::<String>()?),
                "version" => version = map.next_value::<Option<VersionText>>()?.map(|v| v.0),
                "runners" => {
                    runners = Some(map.next_value_seed(RunnersSeed {
                        other_types: self.other_types,
                        ctx: self.ctx,
                        diagnostics: &mut *self.diagnostics,
                    })?)
                }
                "run" => {
                    run = Some(map.next_value_seed(RunnerSeed {
                        name: DEFAULT_RUN_NAME,
                        other_type: self.other_types.get(DEFAULT_RUN_NAME),
                        ctx: self.ctx,
                        diagnostics: &mut *self.diagnostics,
                    })?)
                }
                // Read by pass 2 and by the harness.
                "input_definitions" | "harness" => {
                    map.next_value::<IgnoredAny>()?;
                }
                "catalog" | "credentials" => {
                    let value: Value = map.next_value()?;
                    if !value.is_object() {
                        return Err(de::Error::custom(format!("`{key}` must be a mapping")));
                    }
                    declared_only.insert(key, value);
                }
                _ => {
                    let value: Value = map.next_value()?;
                    declared_only.insert(key, value);
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
        let (runners, default_runner) = runner_set(runners, run).map_err(de::Error::custom)?;
        Ok(Top {
            skill,
            version: version.unwrap_or_default(),
            runners,
            default_runner,
            declared_only,
        })
    }
}

/// The runners of a package and its default, from `runners:` or a single `run:`.
fn runner_set(
    runners: Option<BTreeMap<String, Declared>>,
    run: Option<Declared>,
) -> Result<(BTreeMap<String, Declared>, Option<String>), String> {
    match (runners, run) {
        (Some(_), Some(_)) => {
            Err("both `runners:` and a top-level `run:` are declared; use one of them".to_string())
        }
        (None, None) => Err(
            "no runner is declared; add `runners:` (named runners) or a top-level `run:`"
                .to_string(),
        ),
        (None, Some(runner)) => Ok((
            BTreeMap::from([(DEFAULT_RUN_NAME.to_string(), runner)]),
            Some(DEFAULT_RUN_NAME.to_string()),
        )),
        (Some(runners), None) => {
            let defaults: Vec<&String> = runners
                .iter()
                .filter(|(_, r)| r.is_default())
                .map(|(name, _)| name)
                .collect();
            let default = match defaults.as_slice() {
                [] => None,
                [one] => Some(one.to_string()),
                many => {
                    return Err(format!(
                        "runners {} are all marked `default: true`; at most one runner may be the default",
                        many.iter()
                            .map(|n| format!("`{n}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
            };
            Ok((runners, default))
        }
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
    other_types: &'a BTreeMap<String, String>,
    ctx: &'a DeclContext<'a>,
    diagnostics: &'a mut Vec<Diagnostic>,
}

impl<'de> DeserializeSeed<'de> for RunnersSeed<'_> {
    type Value = BTreeMap<String, Declared>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for RunnersSeed<'_> {
    type Value = BTreeMap<String, Declared>;

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
                other_type: self.other_types.get(&name),
                ctx: self.ctx,
                diagnostics: &mut *self.diagnostics,
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
    /// The declared type when pass 1 found it is not one this runtime runs.
    other_type: Option<&'a String>,
    ctx: &'a DeclContext<'a>,
    diagnostics: &'a mut Vec<Diagnostic>,
}

impl<'de> DeserializeSeed<'de> for RunnerSeed<'_> {
    type Value = Declared;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Declared, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for RunnerSeed<'_> {
    type Value = Declared;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "runner `{}` as a mapping with a `type:`", self.name)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Declared, A::Error> {
        // Read and built inside this visitor, so a rule broken across keys is reported at the
        // runner's own line.
        let read = RunnerMapSeed {
            name: self.name,
            ctx: self.ctx,
            other: self.other_type.is_some(),
            nested: false,
        }
        .visit_map(map)?;
        match read {
            RunnerMap::Other { default, keys } => {
                let ty = self.other_type.cloned().unwrap_or_default();
                crate::other_runner::check(self.name, &ty, &keys, self.ctx.packets)
                    .map_err(de::Error::custom)?;
                Ok(Declared::Other(OtherRunner {
                    ty,
                    default: default.unwrap_or(false),
                    keys,
                }))
            }
            RunnerMap::Runnable(raw) => build_runner(self.name, *raw, self.diagnostics)
                .map(|r| Declared::Runnable(Box::new(r)))
                .map_err(de::Error::custom),
        }
    }
}
