//! What a fixture case says: its runner, inputs, environment, files and expectations.

use serde::Deserialize;
use serde::de::{self, Deserializer};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::{Component, Path};

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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ExpectStatus {
    /// The run produced an output that met the contract.
    Sealed,
    /// The run failed.
    Failure,
}

impl ExpectStatus {
    /// `sealed` or `failure`.
    pub fn name(self) -> &'static str {
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
pub(crate) struct CasesFile {
    #[serde(default)]
    pub(crate) cases: Vec<Case>,
}

/// The part of `X.yaml` the harness reads.
#[derive(Deserialize)]
pub(crate) struct ProfileHarness {
    #[serde(default)]
    pub(crate) harness: Option<CasesFile>,
}
