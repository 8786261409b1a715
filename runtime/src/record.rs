//! What a run records in its receipt: the package and runner that ran, how the run closed,
//! the engine it used, and the receipt itself, filled from all of these.

use crate::failure::{FailureKind, RunError};
use crate::runner::step::Provenance;
use runx_profile::{JS_WALL, RunnerType};
use runx_receipts::{
    Disposition, EVIDENCE_SCHEMA, EngineRecord, RUNX_VERSION, RunEvidence, RunStatus, SEALED_STATE,
    digest,
};
use serde_json::Value;

/// The package and runner a run was for, as far as they were known when it ended.
pub(crate) struct Identity {
    pub skill: String,
    pub version: String,
    pub runner: String,
    pub runner_type: Option<RunnerType>,
    pub profile_digest: Option<String>,
    /// The run's id by runx 0.8.2's rule (`run_identity`), where runx would have one.
    pub runx_run_id: Option<String>,
}

/// A run's closure: its disposition and reason code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Closure {
    /// How it closed.
    pub disposition: Disposition,
    /// Why.
    pub reason_code: &'static str,
}

impl Closure {
    /// The closure of a run that ended with `result`: sealed → `closed`/`process_closed`;
    /// inputs refused before start → `blocked`/`preflight_refused` (as runx refuses a direct
    /// run), or `failed`/`input_contract_invalid` in a fixture `case` (as runx's harness
    /// closes one); the wall-clock limit →
    /// `timed_out`/`process_timed_out`; interrupted → `killed`/`process_killed`; any other
    /// failure → `failed`/`process_failed`.
    pub fn of(result: &Result<serde_json::Value, RunError>, case: bool) -> Closure {
        let (disposition, reason_code) = match result {
            Ok(_) => (Disposition::Closed, "process_closed"),
            Err(e) => match e.kind {
                FailureKind::Input if case => (Disposition::Failed, "input_contract_invalid"),
                FailureKind::Input => (Disposition::Blocked, "preflight_refused"),
                FailureKind::ResourceLimit if e.code == JS_WALL.name => {
                    (Disposition::TimedOut, "process_timed_out")
                }
                FailureKind::Interrupted => (Disposition::Killed, "process_killed"),
                _ => (Disposition::Failed, "process_failed"),
            },
        };
        Closure {
            disposition,
            reason_code,
        }
    }
}

/// The record of the engine `name` built into this executable.
pub fn engine_record(name: &str) -> EngineRecord {
    EngineRecord {
        name: name.to_string(),
        version: runx_worker::engine_version(name).unwrap_or_else(|| "unknown".to_string()),
    }
}

/// The evidence of a run that ended with `result`. The artifact and process records move from
/// `provenance` into it.
pub(crate) fn evidence_of(
    identity: Identity,
    case: Option<&str>,
    provenance: &mut Provenance,
    result: &Result<Value, RunError>,
    started_at_ms: u64,
    duration_ms: u64,
) -> RunEvidence {
    let closure = Closure::of(result, case.is_some());
    RunEvidence {
        schema: EVIDENCE_SCHEMA.to_string(),
        id: RunEvidence::new_id(started_at_ms),
        run_id: String::new(),
        case: case.map(str::to_string),
        skill: identity.skill,
        version: identity.version,
        runner: identity.runner,
        runner_type: identity.runner_type.map(|t| t.name().to_string()),
        status: if result.is_ok() {
            RunStatus::Sealed
        } else {
            RunStatus::Failure
        },
        state: SEALED_STATE.to_string(),
        disposition: closure.disposition,
        reason_code: closure.reason_code.to_string(),
        failure: result.as_ref().err().map(RunError::record),
        input_digest: provenance.input_digest.take(),
        output_digest: result.as_ref().ok().map(digest),
        bundle_digest: provenance.bundle_digest.take(),
        runx_version: RUNX_VERSION.to_string(),
        engine: provenance.engine.as_deref().map(engine_record),
        profile_digest: identity.profile_digest,
        limits: provenance.limits.to_map(),
        duration_ms,
        started_at_ms,
        artifact: provenance.artifact.take(),
        process: provenance.process.take(),
        console_dropped_bytes: (provenance.log.dropped_bytes > 0)
            .then_some(provenance.log.dropped_bytes),
    }
}
