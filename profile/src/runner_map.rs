//! Reading one runner's map: the closed set of runner keys, each value read where it stands so
//! every error carries the line and column of its key or value.
//!
//! A runner key is one this runtime runs ([`RUN_KEYS`]), one runx packages use that this runtime
//! reads and shows without acting on it ([`DECLARED_ONLY_KEYS`]), or an error. A nested `run:` or
//! `source:` block holds runner keys too and is merged into the runner (`validate`). Runners of
//! types this runtime does not run are read with the same key rules, but their values are kept
//! as JSON, uninterpreted.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use crate::decl::{DeclContext, InputDecl, InputsSeed, OutputDecl};

/// Runner keys this runtime acts on.
pub(crate) const RUN_KEYS: &[&str] = &[
    "type",
    "default",
    "module",
    "export",
    "engine",
    "timeout_seconds",
    "environment",
    "inputs",
    "outputs",
    "pages",
    "command",
    "args",
    "cwd",
    "input_mode",
    "idempotent",
    "retry",
    "run",
    "source",
];

/// Runner keys of runx packages this runtime reads, checks where their shape is known
/// (`artifacts`, `examples`, `idempotency`) and shows, but does not act on.
pub(crate) const DECLARED_ONLY_KEYS: &[&str] = &[
    "act",
    "agent",
    "agent_card_url",
    "agent_identity",
    "allowed_tools",
    "arguments",
    "artifacts",
    "auth",
    "credential",
    "context",
    "context_skills",
    "examples",
    "execution",
    "external_adapter",
    "graph",
    "headers",
    "hook",
    "http",
    "idempotency",
    "method",
    "mutating",
    "policy",
    "risk",
    "runx",
    "runtime",
    "server",
    "scopes",
    "task",
    "thread_outbox_provider",
    "tool",
    "url",
    "allow_private_network",
];

/// A key of a closed mapping, refused (at the key's own line) when it is not in `allowed`, when
/// it was already given, or when `special` has a dedicated message for it.
pub(crate) struct ClosedKey<'a> {
    /// The key sets allowed here, with the words that introduce each in a message.
    pub allowed: &'a [(&'a str, &'a [&'a str])],
    /// Keys already read from this mapping.
    pub seen: &'a BTreeSet<String>,
    /// What the mapping is, for messages (`runner key`, `top-level key`).
    pub what: &'a str,
    /// A dedicated message for a key that belongs elsewhere.
    pub special: fn(&str) -> Option<String>,
}

impl<'de> DeserializeSeed<'de> for ClosedKey<'_> {
    type Value = String;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        // Checked inside the visitor, so the YAML reader reports the key's own line and column.
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for ClosedKey<'_> {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a {}", self.what)
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<String, E> {
        if let Some(message) = (self.special)(key) {
            return Err(E::custom(message));
        }
        if !self.allowed.iter().any(|(_, keys)| keys.contains(&key)) {
            let every = self
                .allowed
                .iter()
                .flat_map(|(_, keys)| keys.iter().copied());
            // A near miss is named alone; the whole list only helps when nothing is near.
            if let Some(near) = runx_rules::nearest(key, every) {
                return Err(E::custom(format!(
                    "`{key}` is not a {}; did you mean `{near}`?",
                    self.what
                )));
            }
            let sets: Vec<String> = self
                .allowed
                .iter()
                .map(|(words, keys)| format!("{words}: {}", keys.join(", ")))
                .collect();
            return Err(E::custom(format!(
                "`{key}` is not a {} ({})",
                self.what,
                sets.join("; ")
            )));
        }
        if self.seen.contains(key) {
            return Err(E::custom(format!(
                "`{key}` is given twice; give each key once"
            )));
        }
        Ok(key.to_string())
    }
}

/// The runner types runx itself knows: the two this runtime runs first, then the ones it shows
/// but does not run.
pub(crate) const RUNX_RUNNER_TYPES: &[&str] = &[
    "javascript",
    "cli-tool",
    "graph",
    "agent",
    "agent-task",
    "mcp",
    "a2a",
    "external-adapter",
    "thread-outbox-provider",
];

/// Refuses a `type:` runx does not know, with the nearest known type. `http` and `catalog` were
/// runner types of earlier runx versions; runx refuses them now, and says where they went.
fn check_runner_type(ty: &str) -> Result<(), String> {
    match ty {
        "http" => Err(
            "`type: http` is no longer a runner type; call `http.read`, `http.query` or `http.execute` from a graph step instead".to_string(),
        ),
        "catalog" => Err(
            "`type: catalog` is no longer a runner type; call catalog tools from a graph's tool step instead".to_string(),
        ),
        _ if RUNX_RUNNER_TYPES.contains(&ty) => Ok(()),
        _ => Err(format!(
            "`{ty}` is not a runner type runx knows ({}){}",
            RUNX_RUNNER_TYPES.join(", "),
            runx_rules::did_you_mean(ty, RUNX_RUNNER_TYPES.iter().copied()),
        )),
    }
}

fn runner_special(key: &str) -> Option<String> {
    (key == "instructions").then(|| {
        "`instructions` belongs in the package's SKILL.md, not in a runner of X.yaml".to_string()
    })
}

/// Every runner key as written: the ones this runtime runs, typed; the others as JSON.
#[derive(Default)]
pub(crate) struct RawRunner {
    pub ty: Option<String>,
    pub default: Option<bool>,
    pub module: Option<String>,
    pub export: Option<String>,
    pub engine: Option<String>,
    pub timeout_seconds: Option<u64>,
    pub environment: Option<RawEnv>,
    pub inputs: Option<BTreeMap<String, InputDecl>>,
    pub outputs: Option<BTreeMap<String, OutputDecl>>,
    pub pages: Option<RawPages>,
    pub command: Option<String>,
    pub args: Option<Vec<String>>,
    pub cwd: Option<String>,
    pub input_mode: Option<String>,
    pub idempotent: Option<bool>,
    pub retry: Option<RawRetry>,
    /// The nested `run:` or `source:` block, with the key it was given under.
    pub nested: Option<(String, Box<RawRunner>)>,
    pub artifacts: Option<RawArtifacts>,
    pub examples: Option<Vec<Map<String, Value>>>,
    pub idempotency: Option<RawIdempotency>,
    /// Every declared-only key, as JSON (`artifacts`, `examples` and `idempotency` included,
    /// after their shape was checked).
    pub declared_only: BTreeMap<String, Value>,
}

/// Reads a runner map. `other` is set for a runner of a type this runtime does not run: its
/// values are then kept as JSON. `nested` is set inside a `run:`/`source:` block.
pub(crate) struct RunnerMapSeed<'a> {
    pub name: &'a str,
    pub ctx: &'a DeclContext<'a>,
    pub other: bool,
    pub nested: bool,
}

/// What a runner map held.
pub(crate) enum RunnerMap {
    Runnable(Box<RawRunner>),
    Other {
        default: Option<bool>,
        keys: BTreeMap<String, Value>,
    },
}

impl<'de> DeserializeSeed<'de> for RunnerMapSeed<'_> {
    type Value = RunnerMap;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<RunnerMap, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for RunnerMapSeed<'_> {
    type Value = RunnerMap;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "runner `{}` as a mapping with a `type:`", self.name)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RunnerMap, A::Error> {
        let mut seen = BTreeSet::new();
        let mut raw = RawRunner::default();
        let mut other_keys = BTreeMap::new();
        loop {
            let key = map.next_key_seed(ClosedKey {
                allowed: &[
                    ("keys runx runs", RUN_KEYS),
                    ("keys runx reads without running", DECLARED_ONLY_KEYS),
                ],
                seen: &seen,
                what: "runner key",
                special: runner_special,
            })?;
            let Some(key) = key else { break };
            seen.insert(key.clone());
            if (key == "run" || key == "source")
                && let Some(first) = seen
                    .iter()
                    .find(|k| (k.as_str() == "run" || k.as_str() == "source") && k.as_str() != key)
            {
                return Err(de::Error::custom(format!(
                    "both `{first}` and `{key}` are given; a runner has at most one nested block"
                )));
            }
            if (key == "run" || key == "source") && self.nested {
                return Err(de::Error::custom(format!(
                    "a nested `run:`/`source:` block may not contain another `{key}:`"
                )));
            }
            if self.other {
                match key.as_str() {
                    "type" => {
                        if let Value::String(ty) = map.next_value::<Value>()? {
                            check_runner_type(&ty).map_err(de::Error::custom)?;
                        }
                    }
                    "default" => raw.default = map.next_value()?,
                    "run" | "source" => {
                        let inner = map.next_value_seed(RunnerMapSeed {
                            nested: true,
                            ..self
                        })?;
                        if let RunnerMap::Other { default, mut keys } = inner {
                            if let Some(d) = default {
                                keys.insert("default".to_string(), Value::Bool(d));
                            }
                            other_keys.insert(key, Value::Object(keys.into_iter().collect()));
                        }
                    }
                    _ => {
                        other_keys.insert(key, map.next_value::<Value>()?);
                    }
                }
                continue;
            }
            read_runnable(&mut raw, &key, &mut map, &self)?;
        }
        if self.other {
            return Ok(RunnerMap::Other {
                default: raw.default,
                keys: other_keys,
            });
        }
        Ok(RunnerMap::Runnable(Box::new(raw)))
    }
}

/// Reads the value of `key` into the typed field of a runner this runtime runs.
fn read_runnable<'de, A: MapAccess<'de>>(
    raw: &mut RawRunner,
    key: &str,
    map: &mut A,
    seed: &RunnerMapSeed<'_>,
) -> Result<(), A::Error> {
    match key {
        "type" => raw.ty = map.next_value()?,
        "default" => raw.default = map.next_value()?,
        "module" => raw.module = map.next_value()?,
        "export" => raw.export = map.next_value()?,
        "engine" => raw.engine = map.next_value()?,
        "timeout_seconds" => raw.timeout_seconds = map.next_value()?,
        "environment" => raw.environment = map.next_value()?,
        "inputs" => raw.inputs = Some(map.next_value_seed(InputsSeed(seed.ctx))?),
        "outputs" => raw.outputs = map.next_value()?,
        "pages" => raw.pages = map.next_value()?,
        "command" => raw.command = map.next_value()?,
        "args" => raw.args = map.next_value()?,
        "cwd" => raw.cwd = map.next_value()?,
        "input_mode" => raw.input_mode = map.next_value()?,
        "idempotent" => raw.idempotent = map.next_value()?,
        "retry" => raw.retry = map.next_value()?,
        "run" | "source" => {
            let inner = map.next_value_seed(RunnerMapSeed {
                nested: true,
                name: seed.name,
                ctx: seed.ctx,
                other: false,
            })?;
            if let RunnerMap::Runnable(inner) = inner {
                raw.nested = Some((key.to_string(), inner));
            }
        }
        "artifacts" => {
            let artifacts: RawArtifacts = map.next_value()?;
            raw.declared_only
                .insert(key.to_string(), artifacts.to_json());
            raw.artifacts = Some(artifacts);
        }
        "examples" => {
            let examples: Vec<Map<String, Value>> = map.next_value()?;
            raw.declared_only.insert(
                key.to_string(),
                Value::Array(examples.iter().cloned().map(Value::Object).collect()),
            );
            raw.examples = Some(examples);
        }
        "idempotency" => {
            let idempotency: RawIdempotency = map.next_value()?;
            raw.declared_only
                .insert(key.to_string(), idempotency.to_json());
            raw.idempotency = Some(idempotency);
        }
        _ => {
            let value: Value = map.next_value()?;
            raw.declared_only.insert(key.to_string(), value);
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The small blocks of a runner, as written.

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawEnv {
    #[serde(default)]
    pub required: Vec<String>,
    #[serde(default)]
    pub optional: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPages {
    pub path_from: String,
    pub path_scope_from: String,
    pub media_type: Option<String>,
    pub framing: Option<String>,
    pub page_bytes: Option<u64>,
    /// runx extension: the map/fold exports of a parallel paged runner, and its workers.
    pub map: Option<String>,
    pub fold: Option<String>,
    pub workers: Option<u64>,
    /// runx extension: how long a module instance lives, `page` (default) or `partition`.
    pub module: Option<String>,
}

/// `retry:` in either form: `{attempts, on, backoff_seconds}` (additional runs) or runx
/// packages' `{max_attempts}` (all runs, the first included).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRetry {
    pub attempts: Option<u32>,
    pub max_attempts: Option<u32>,
    pub on: Option<Vec<String>>,
    pub backoff_seconds: Option<u64>,
}

impl RawRetry {
    /// The block as written, for a runner that only shows it.
    pub(crate) fn to_json(&self) -> Value {
        let mut m = Map::new();
        if let Some(a) = self.attempts {
            m.insert("attempts".into(), a.into());
        }
        if let Some(a) = self.max_attempts {
            m.insert("max_attempts".into(), a.into());
        }
        if let Some(on) = &self.on {
            m.insert("on".into(), on.clone().into());
        }
        if let Some(b) = self.backoff_seconds {
            m.insert("backoff_seconds".into(), b.into());
        }
        Value::Object(m)
    }
}

/// `artifacts:` as written (`namedEmits`/`wrapAs` are the same keys spelt as in older packages).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawArtifacts {
    pub emits: Option<OneOrMany>,
    #[serde(alias = "namedEmits")]
    pub named_emits: Option<BTreeMap<String, String>>,
    pub packets: Option<BTreeMap<String, String>>,
    #[serde(alias = "wrapAs")]
    pub wrap_as: Option<String>,
    pub packet: Option<String>,
}

/// One name, or a list of names.
#[derive(Deserialize, Clone)]
#[serde(untagged)]
pub(crate) enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl RawArtifacts {
    pub(crate) fn to_json(&self) -> Value {
        let mut m = Map::new();
        match &self.emits {
            Some(OneOrMany::One(e)) => {
                m.insert("emits".into(), e.clone().into());
            }
            Some(OneOrMany::Many(e)) => {
                m.insert("emits".into(), e.clone().into());
            }
            None => {}
        }
        if let Some(n) = &self.named_emits {
            m.insert("named_emits".into(), serde_json::json!(n));
        }
        if let Some(p) = &self.packets {
            m.insert("packets".into(), serde_json::json!(p));
        }
        if let Some(w) = &self.wrap_as {
            m.insert("wrap_as".into(), w.clone().into());
        }
        if let Some(p) = &self.packet {
            m.insert("packet".into(), p.clone().into());
        }
        Value::Object(m)
    }
}

/// `idempotency:` as runx packages write it: a key template, or `{key: ...}`. Declaring one marks
/// the runner idempotent.
#[derive(Deserialize)]
#[serde(untagged)]
pub(crate) enum RawIdempotency {
    Key(String),
    Object(IdempotencyObject),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct IdempotencyObject {
    key: String,
}

impl RawIdempotency {
    pub(crate) fn key(&self) -> &str {
        match self {
            RawIdempotency::Key(k) => k,
            RawIdempotency::Object(o) => &o.key,
        }
    }

    pub(crate) fn to_json(&self) -> Value {
        match self {
            RawIdempotency::Key(k) => k.clone().into(),
            RawIdempotency::Object(o) => serde_json::json!({ "key": o.key }),
        }
    }
}
