//! A dry run: everything a run of one runner would do, resolved by the code a run uses, without
//! starting a worker or a process and without writing a receipt ([`Runtime::plan`]).
//!
//! - this module: the [`Plan`] and what every runner type shares (the package, the inputs
//!   after defaults, the declared environment names, the limits);
//! - `process`: what a cli-tool would start ([`ProcessPlan`]);
//! - `module`: the module closure of a javascript runner ([`ModulePlan`]), and for a paged
//!   runner the artifact it would admit ([`ArtifactPlan`]) and its pages ([`PagePlan`]).
//!
//! A dry run refuses what a run refuses, with the same failure, because both start at the same
//! place ([`Runtime::with_step`]) and call the same functions until the point where a run
//! would start something. No environment value is ever part of a plan: only names.

mod module;
mod process;

use crate::failure::RunError;
use crate::runner::step::{RunContext, Step};
use crate::runtime::{RunRequest, Runtime};
pub use module::{ArtifactPlan, ModuleFile, ModulePlan, PagePlan, PageStop, PlannedPage};
pub use process::{EnvName, EnvOrigin, HiddenValues, ProcessPlan};
use runx_profile::{RunnerKind, RunnerType};
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// What a run of one runner would do, resolved: [`Runtime::plan`]. Serialized, it is the
/// `plan` object of `runx skill --dry-run --json`.
#[derive(Clone, Debug, Serialize)]
pub struct Plan {
    /// The package's skill name.
    pub skill: String,
    /// The package's version (empty when it declares none).
    pub version: String,
    /// The runner that would run.
    pub runner: String,
    /// Its type.
    #[serde(rename = "type")]
    pub runner_type: RunnerType,
    /// The package directory, as loaded (absolute).
    pub dir: String,
    /// The workspace root (`RUNX_CWD`).
    pub workspace: String,
    /// The inputs the runner would be given: the caller's, with declared defaults applied.
    pub inputs: Map<String, Value>,
    /// The digest the receipt would record of the inputs the code sees (for a paged runner,
    /// without the two path inputs).
    pub input_digest: String,
    /// The declared environment names and which of them are set; never a value.
    pub environment: EnvNames,
    /// Every limit that would apply, by name, as the receipt records them.
    pub limits: BTreeMap<String, u64>,
    /// The wall-clock limit of the run (a cli-tool process, or each javascript call).
    pub timeout_ms: u64,
    /// A cli-tool runner's process.
    pub process: Option<ProcessPlan>,
    /// A javascript runner's module closure.
    pub module: Option<ModulePlan>,
    /// The artifact a paged runner would admit.
    pub artifact: Option<ArtifactPlan>,
    /// The pages a paged runner would call its export with.
    pub pages: Option<PagePlan>,
}

/// A runner's declared environment names, and which are set where the run would read them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct EnvNames {
    /// Names that must be set (a dry run with one missing fails like the run).
    pub required: Vec<String>,
    /// Names passed when set.
    pub optional: Vec<String>,
    /// The declared names that are set, in declaration order (required first).
    pub set: Vec<String>,
    /// The optional names that are not set.
    pub unset: Vec<String>,
}

/// How a dry run ended: the plan, or the failure the run would have been refused with.
#[derive(Clone, Debug)]
pub struct PlanOutcome {
    /// The package's skill name (empty when the profile did not load).
    pub skill: String,
    /// The runner (or the one asked for, when none was selected).
    pub runner: String,
    /// The plan, or why the run could not start.
    pub result: Result<Plan, RunError>,
}

impl PlanOutcome {
    /// The exit code the run would have been refused with, or 0 when it could start.
    pub fn exit_code(&self) -> i32 {
        self.result.as_ref().err().map_or(0, RunError::exit_code)
    }
}

impl Runtime {
    /// Resolves what [`Runtime::run`] would do with `req`, without starting a worker or a
    /// process and without writing a receipt: the package is loaded, the runner selected, its
    /// inputs and environment resolved; a cli-tool's arguments, working directory, command,
    /// environment names and staged files are computed; a javascript runner's module closure is
    /// collected and hashed; a paged runner's artifact is admitted, hashed and framed into its
    /// pages (no JavaScript runs). Whatever would refuse the run refuses the plan, with the
    /// same failure.
    ///
    /// A failure the run could only meet once started (a page that does not frame, more pages
    /// than a run may deliver) is part of the plan ([`PagePlan::stop`]), not a refusal: a run
    /// whose module ends early (`done: true`) never reaches it.
    pub fn plan(&self, req: &RunRequest) -> PlanOutcome {
        self.plan_or_refuse(req, None)
    }

    /// The dry run of a request refused before its runner could start, for a reason found
    /// outside the runtime ([`Runtime::refuse`]): the failure a run would report, without the
    /// receipt.
    pub fn refuse_plan(&self, req: &RunRequest, error: RunError) -> PlanOutcome {
        self.plan_or_refuse(req, Some(error))
    }

    fn plan_or_refuse(&self, req: &RunRequest, refused: Option<RunError>) -> PlanOutcome {
        let ctx = self.context(&req.cancel);
        // A plan is small beside its run: it keeps the request whole.
        let inputs = req.inputs.clone();
        let (identity, result) =
            self.with_step(req, inputs, refused, |step| plan_step(&ctx, &step));
        PlanOutcome {
            skill: identity.skill,
            runner: identity.runner,
            result: result.and_then(|plan| plan),
        }
    }
}

/// The plan of a step, by its runner's type.
fn plan_step(ctx: &RunContext<'_>, step: &Step<'_>) -> Result<Plan, RunError> {
    let runner = step.runner;
    let mut plan = Plan {
        skill: step.profile.skill.clone(),
        version: step.profile.version.clone(),
        runner: runner.name.clone(),
        runner_type: runner.kind.runner_type(),
        dir: step.profile.dir.display().to_string(),
        workspace: step.workspace.display().to_string(),
        inputs: step.inputs.clone(),
        input_digest: runx_receipts::digest(&Value::Object(step.inputs.clone())),
        environment: env_names(step),
        limits: runx_profile::limits_for(runner).to_map(),
        timeout_ms: runx_profile::millis(runner.timeout),
        process: None,
        module: None,
        artifact: None,
        pages: None,
    };
    match &runner.kind {
        RunnerKind::CliTool(tool) => plan.process = Some(process::plan(step, tool)?),
        RunnerKind::Javascript(js) => {
            let planned = module::plan(ctx, step, js)?;
            plan.module = Some(planned.module);
            if let Some(paged) = planned.paged {
                plan.input_digest = paged.input_digest;
                plan.artifact = Some(paged.artifact);
                plan.pages = Some(paged.pages);
            }
        }
    }
    Ok(plan)
}

/// The declared names of `step`'s runner and which are set, from the values the run read.
fn env_names(step: &Step<'_>) -> EnvNames {
    let declared = &step.runner.environment;
    let names = declared.required.iter().chain(&declared.optional);
    let (set, unset) = names
        .cloned()
        .partition(|name| step.environment.contains_key(name));
    EnvNames {
        required: declared.required.clone(),
        optional: declared.optional.clone(),
        set,
        unset,
    }
}

#[cfg(test)]
mod tests;
