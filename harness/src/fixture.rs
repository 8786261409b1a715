//! What a fixture case says: its kind and target, runner, inputs, environment, files, caller and
//! expectations. Two forms are read: this runtime's (`cases:` lists, `files:`, `expect.error`)
//! and runx packages' (one case per file with `kind`, `target`, `metadata`, `operator_journeys`,
//! `caller`, `setup`; inline `harness: {files, cases}`). Unknown keys are errors with their
//! line.

use serde::Deserialize;
use serde::de::{self, Deserializer};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::{Component, Path};

/// The directory of fixture files inside a package.
pub const FIXTURES_DIR: &str = "fixtures";
/// The directory inside [`FIXTURES_DIR`] copied into every scratch workspace (as `data/`).
pub const DATA_DIR: &str = "data";

/// One fixture case.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// The case's name (unique within its package by convention).
    pub name: String,
    /// What the case exercises; absent in this runtime's own format (a run of the package).
    #[serde(default)]
    pub kind: Option<CaseKind>,
    /// The package (or graph file) the case runs, relative to the fixture file; the fixture's
    /// own package when absent.
    #[serde(default)]
    pub target: Option<String>,
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
    /// What the caller would answer to agents, approvals and requests. javascript and cli-tool
    /// runners ask for none of them.
    #[serde(default)]
    pub caller: Caller,
    /// What the run must produce.
    #[serde(default)]
    pub expect: Expect,
    /// How an operator would ask for this case (documentation; checked, never run).
    #[serde(default)]
    pub operator_journeys: Vec<Journey>,
    /// Free-form labels.
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
    /// Receipts seeded before the run (read by graph runners; checked, not used here).
    #[serde(default)]
    pub setup: Option<Setup>,
}

/// What a case exercises.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CaseKind {
    /// One runner of a package.
    Skill,
    /// A graph document.
    Graph,
    /// An agent runner.
    Agent,
    /// An agent task.
    AgentTask,
    /// An MCP server.
    Mcp,
    /// An A2A agent.
    A2a,
}

impl CaseKind {
    /// The kind as written.
    pub fn name(self) -> &'static str {
        match self {
            CaseKind::Skill => "skill",
            CaseKind::Graph => "graph",
            CaseKind::Agent => "agent",
            CaseKind::AgentTask => "agent_task",
            CaseKind::Mcp => "mcp",
            CaseKind::A2a => "a2a",
        }
    }
}

/// A case declared inline in `X.yaml` under `harness.cases` (no `kind`, `target`, `metadata` or
/// `setup`): a `skill` case of its own package.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct InlineCase {
    name: String,
    #[serde(default)]
    runner: Option<String>,
    #[serde(default)]
    inputs: Map<String, Value>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    files: BTreeMap<RelPath, String>,
    #[serde(default)]
    caller: Caller,
    #[serde(default)]
    expect: Expect,
    #[serde(default)]
    operator_journeys: Vec<Journey>,
}

impl From<InlineCase> for Case {
    fn from(c: InlineCase) -> Case {
        Case {
            name: c.name,
            kind: Some(CaseKind::Skill),
            target: None,
            runner: c.runner,
            inputs: c.inputs,
            env: c.env,
            files: c.files,
            caller: c.caller,
            expect: c.expect,
            operator_journeys: c.operator_journeys,
            metadata: None,
            setup: None,
        }
    }
}

/// A relative path inside the scratch workspace (no `..`, not absolute, not empty).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct RelPath(pub String);

impl<'de> Deserialize<'de> for RelPath {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<RelPath, D::Error> {
        let s = String::deserialize(d)?;
        if is_relative_inside(&s) {
            Ok(RelPath(s))
        } else {
            Err(de::Error::custom(format!(
                "file path `{s}` must be relative and stay inside the workspace (no `..`, not absolute)"
            )))
        }
    }
}

fn is_relative_inside(s: &str) -> bool {
    let p = Path::new(s);
    !s.is_empty()
        && p.components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
        && p.components().any(|c| matches!(c, Component::Normal(_)))
}

/// What the caller of a graph would supply: agent answers, approvals, canned HTTP and provider
/// responses. Checked for shape; a javascript or cli-tool run consumes none of them.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Caller {
    /// Request id → agent answer.
    #[serde(default)]
    pub answers: Map<String, Value>,
    /// Gate → approved.
    #[serde(default)]
    pub approvals: BTreeMap<String, bool>,
    /// Exact URL → canned response.
    #[serde(default)]
    pub http_responses: Map<String, Value>,
    /// Provider grants and operations.
    #[serde(default)]
    pub provider_responses: Option<Value>,
}

/// How an operator would ask for a case: documentation, checked for shape, never run.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(try_from = "RawJourney")]
pub struct Journey {
    /// `standalone`, `composed` or `refusal`.
    pub mode: JourneyMode,
    /// What the operator asks.
    pub request: String,
    /// What should come of it.
    pub expected_outcome: String,
    /// The runner the request should select.
    pub exercises_runner: Option<String>,
    /// Skills the request could be confused with.
    pub confusors: Vec<String>,
    /// What a composed request already has.
    pub prior_evidence: Vec<String>,
    /// What a composed request must not do again.
    pub must_not_repeat: Vec<String>,
}

/// The mode of an operator journey.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JourneyMode {
    /// Asked on its own.
    Standalone,
    /// Asked after earlier steps.
    Composed,
    /// A request the skill must refuse.
    Refusal,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawJourney {
    mode: JourneyMode,
    request: String,
    expected_outcome: String,
    #[serde(default)]
    exercises_runner: Option<String>,
    #[serde(default)]
    confusors: Vec<String>,
    #[serde(default)]
    prior_evidence: Vec<String>,
    #[serde(default)]
    must_not_repeat: Vec<String>,
}

impl TryFrom<RawJourney> for Journey {
    type Error = String;
    fn try_from(r: RawJourney) -> Result<Journey, String> {
        if r.mode == JourneyMode::Composed
            && (r.prior_evidence.is_empty() || r.must_not_repeat.is_empty())
        {
            return Err(
                "a `composed` operator journey needs `prior_evidence` and `must_not_repeat`"
                    .to_string(),
            );
        }
        Ok(Journey {
            mode: r.mode,
            request: r.request,
            expected_outcome: r.expected_outcome,
            exercises_runner: r.exercises_runner,
            confusors: r.confusors,
            prior_evidence: r.prior_evidence,
            must_not_repeat: r.must_not_repeat,
        })
    }
}

/// Most receipts a case may seed.
const MAX_SETUP_RECEIPTS: usize = 32;

/// Receipts seeded into the receipt store before a graph run.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(try_from = "RawSetup")]
pub struct Setup {
    /// Package-relative `.json` receipt files.
    pub receipts: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSetup {
    #[serde(default)]
    receipts: Vec<String>,
}

impl TryFrom<RawSetup> for Setup {
    type Error = String;
    fn try_from(r: RawSetup) -> Result<Setup, String> {
        if r.receipts.len() > MAX_SETUP_RECEIPTS {
            return Err(format!(
                "`setup.receipts` lists {} files; at most {MAX_SETUP_RECEIPTS}",
                r.receipts.len()
            ));
        }
        if let Some(bad) = r
            .receipts
            .iter()
            .find(|p| !is_relative_inside(p) || !p.ends_with(".json"))
        {
            return Err(format!(
                "`setup.receipts` entry `{bad}` must be a relative .json path inside the package"
            ));
        }
        Ok(Setup {
            receipts: r.receipts,
        })
    }
}

/// What a case expects.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// The run's status; when absent, `failure` if `error` is given, else `sealed`.
    #[serde(default)]
    pub status: Option<ExpectStatus>,
    /// The output, matched exactly and/or as a subset.
    #[serde(default)]
    pub output: Option<OutputExpect>,
    /// The failure.
    #[serde(default)]
    pub error: Option<ErrorExpect>,
    /// A subset of the receipt written for the run (as read back from disk).
    #[serde(default)]
    pub receipt: Option<Map<String, Value>>,
    /// The step ids of a graph run, in order; a javascript or cli-tool run has none.
    #[serde(default)]
    pub steps: Option<Vec<String>>,
    /// Step id → `{exact, subset}` of a graph run's step outputs.
    #[serde(default)]
    pub step_outputs: Option<Map<String, Value>>,
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

/// The expected run status. This runtime's runs end `sealed` or `failure`; the other statuses
/// are those of runx graph and agent runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ExpectStatus {
    /// The run produced an output that met the contract.
    Sealed,
    /// The run failed.
    Failure,
    /// The run waits for an agent's answer.
    NeedsAgent,
    /// A policy refused the run.
    PolicyDenied,
    /// The run was escalated to a person.
    Escalated,
}

impl ExpectStatus {
    /// The status as written.
    pub fn name(self) -> &'static str {
        match self {
            ExpectStatus::Sealed => "sealed",
            ExpectStatus::Failure => "failure",
            ExpectStatus::NeedsAgent => "needs_agent",
            ExpectStatus::PolicyDenied => "policy_denied",
            ExpectStatus::Escalated => "escalated",
        }
    }
}

/// How the output is matched: `{exact: VALUE}`, `{subset: VALUE}` or both.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(try_from = "RawOutputExpect")]
pub struct OutputExpect {
    /// Equal values.
    pub exact: Option<Value>,
    /// Every key/element given matches (see the module docs of [`super`]).
    pub subset: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOutputExpect {
    // Present-but-null (`exact: null`) is an expectation of null, hence the double option.
    #[serde(default, deserialize_with = "present")]
    exact: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    subset: Option<Value>,
}

fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

impl TryFrom<RawOutputExpect> for OutputExpect {
    type Error = String;
    fn try_from(r: RawOutputExpect) -> Result<OutputExpect, String> {
        if r.exact.is_none() && r.subset.is_none() {
            return Err("`output` takes `exact: VALUE`, `subset: VALUE` or both".to_string());
        }
        Ok(OutputExpect {
            exact: r.exact,
            subset: r.subset,
        })
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

/// A fixture file of this runtime's format: many cases.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CasesFile {
    #[serde(default)]
    pub(crate) cases: Vec<Case>,
}

/// The `harness:` block of an `X.yaml`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct InlineHarness {
    /// Files under the package's `fixtures/` copied into every case's workspace.
    #[serde(default)]
    pub(crate) files: Vec<RelPath>,
    #[serde(default)]
    pub(crate) cases: Vec<InlineCase>,
}

/// The part of `X.yaml` the harness reads.
#[derive(Deserialize)]
pub(crate) struct ProfileHarness {
    #[serde(default)]
    pub(crate) harness: Option<InlineHarness>,
}
