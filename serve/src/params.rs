//! The parameters of each method. A `run`'s inputs and environment are kept as the request
//! wrote them, checked but not built, until a step thread takes the request: their trees cost
//! 32 bytes and more a value (a map entry more), where their text may cost two bytes a value,
//! and a queued request should cost what its line did.

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

/// `run` parameters.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunParams {
    /// The package directory; relative to the server's working directory.
    pub skill: PathBuf,
    /// The runner; the package's default when absent.
    #[serde(default)]
    pub runner: Option<String>,
    /// The input object, as text until a step thread takes the request.
    #[serde(default)]
    pub inputs: Inputs,
    /// The only environment the step sees (declared names, and a cli-tool's baseline names),
    /// as text until a step thread takes the request.
    #[serde(default)]
    pub env: Env,
    /// The step's workspace (`RUNX_CWD`); the server's working directory when absent.
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    /// Where the receipt goes; `<cwd>/.runx/receipts` when absent.
    #[serde(default)]
    pub receipt_dir: Option<PathBuf>,
    /// Whether to send `progress` notifications after each page of a paged run.
    #[serde(default)]
    pub progress: bool,
    /// Whether the result carries the receipt document itself as `receipt_body` (the object
    /// written to the receipt file), so that it can travel with the result.
    #[serde(default)]
    pub receipt_body: bool,
}

/// `inspect` parameters.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InspectParams {
    /// The package directory; relative to the server's working directory.
    pub skill: PathBuf,
}

/// `info` parameters: none.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InfoParams {}

/// `cancel` parameters.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CancelParams {
    /// The id of the request to cancel.
    pub id: Value,
}

/// `shutdown` parameters (all optional).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShutdownParams {
    /// Cancel the steps in flight (they answer `interrupted`) instead of letting them finish.
    #[serde(default)]
    pub cancel: bool,
}

/// The input object of a `run`, kept as the request wrote it (checked to be an object whose keys
/// are each named once) until a step thread takes the request: a queued request holds the bytes
/// of its inputs, never their tree, which costs 32 bytes and more a value.
#[derive(Debug, Default)]
pub struct Inputs(Option<Box<RawValue>>);

impl Inputs {
    /// The input object, parsed (empty when the request gave none).
    pub fn parse(&self) -> Result<Map<String, Value>, serde_json::Error> {
        match &self.0 {
            None => Ok(Map::new()),
            Some(raw) => serde_json::from_str(raw.get()),
        }
    }

    /// The input object as the request wrote it, if it gave one.
    pub fn text(&self) -> Option<&str> {
        self.0.as_deref().map(RawValue::get)
    }
}

impl<'de> Deserialize<'de> for Inputs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Inputs, D::Error> {
        let raw = Box::<RawValue>::deserialize(d)?;
        if raw.get().starts_with('{') {
            Ok(Inputs(Some(raw)))
        } else {
            Err(de::Error::custom("`inputs` must be an object"))
        }
    }
}

/// The environment of a `run`, kept as the request wrote it until a step thread takes the
/// request. It was checked as it was read: an object of strings, each name one a process
/// environment can hold (not empty, no `=`, no NUL) and each value without a NUL byte.
#[derive(Debug, Default)]
pub struct Env(Option<Box<RawValue>>);

impl Env {
    /// The environment, parsed (empty when the request gave none).
    pub fn parse(&self) -> Result<BTreeMap<String, String>, serde_json::Error> {
        match &self.0 {
            None => Ok(BTreeMap::new()),
            Some(raw) => serde_json::from_str(raw.get()),
        }
    }
}

impl<'de> Deserialize<'de> for Env {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Env, D::Error> {
        let raw = Box::<RawValue>::deserialize(d)?;
        serde_json::from_str::<EnvChecked>(raw.get())
            .map_err(|e| de::Error::custom(without_position(&e)))?;
        Ok(Env(Some(raw)))
    }
}

/// An environment object that was checked one entry at a time and dropped.
struct EnvChecked;

impl<'de> Deserialize<'de> for EnvChecked {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<EnvChecked, D::Error> {
        d.deserialize_map(EnvChecked)
    }
}

impl<'de> Visitor<'de> for EnvChecked {
    type Value = EnvChecked;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object of environment strings")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<EnvChecked, A::Error> {
        while let Some(name) = map.next_key::<String>()? {
            let value: String = map.next_value()?;
            if name.is_empty() || name.contains('=') || name.contains('\0') {
                return Err(de::Error::custom(format!(
                    "environment name {name:?} is empty or holds `=` or a NUL byte"
                )));
            }
            if value.contains('\0') {
                return Err(de::Error::custom(format!(
                    "the value of environment name `{name}` holds a NUL byte"
                )));
            }
        }
        Ok(EnvChecked)
    }
}

/// A serde error without its position: the position is within the text it was read from (the
/// `params` of a request, an environment object), not the line, so it would mislead.
pub fn without_position(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let at = format!(" at line {} column {}", e.line(), e.column());
    match text.strip_suffix(&at) {
        Some(t) => t.to_string(),
        None => text,
    }
}
