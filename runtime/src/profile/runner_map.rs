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

use serde::Deserializer;
use serde::de::{self, DeserializeSeed, MapAccess, Visitor};
use serde_json::{Map, Value};

use super::decl::{DeclContext, InputsSeed};
use super::validate::{RawArtifacts, RawEnv, RawIdempotency, RawPages, RawRetry};
use super::{InputDecl, OutputDecl};

/// Runner keys this runtime acts on.
pub(super) const RUN_KEYS: &[&str] = &[
    "type",
    "default",
    "module",
    "export",
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
pub(super) const DECLARED_ONLY_KEYS: &[&str] = &[
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
pub(super) struct ClosedKey<'a> {
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

fn runner_special(key: &str) -> Option<String> {
    (key == "instructions").then(|| {
        "`instructions` belongs in the package's SKILL.md, not in a runner of X.yaml".to_string()
    })
}

/// Every runner key as written: the ones this runtime runs, typed; the others as JSON.
#[derive(Default)]
pub(super) struct RawRunner {
    pub ty: Option<String>,
    pub default: Option<bool>,
    pub module: Option<String>,
    pub export: Option<String>,
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
pub(super) struct RunnerMapSeed<'a> {
    pub name: &'a str,
    pub ctx: &'a DeclContext<'a>,
    pub other: bool,
    pub nested: bool,
}

/// What a runner map held.
pub(super) enum RunnerMap {
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
                        map.next_value::<Value>()?;
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
