//! `type: javascript` runners: one call of a module export in a pooled no-host worker.

use super::module::Module;
use super::step::{Produced, Provenance, Ran, RunContext, Step};
use crate::failure::{FailureKind, RunError};
use runx_profile::JsRunner;
use runx_receipts::digest;
use runx_worker::Call;
use serde_json::Value;

/// Runs a javascript runner: one call of its export.
pub(crate) fn run(ctx: &RunContext<'_>, step: Step<'_>, js: &JsRunner) -> Ran {
    let mut provenance = Provenance::of(step.runner);
    let result = Module::load(ctx, &step, js, &mut provenance)
        .and_then(|module| call(ctx, step, js, module, &mut provenance));
    Ran { result, provenance }
}

/// One call of the export with the step's inputs.
fn call(
    ctx: &RunContext<'_>,
    step: Step<'_>,
    js: &JsRunner,
    module: Module,
    provenance: &mut Provenance,
) -> Result<Produced, RunError> {
    let input_value = Value::Object(step.inputs);
    provenance.input_digest = Some(digest(&input_value));
    let input = serde_json::to_vec(&input_value)
        .map_err(|e| RunError::internal("encode", e.to_string()))?;
    let call_limits = module.limits;
    let pool = ctx.workers.pool(&module.engine)?;
    let call = Call {
        bundle: module.bundle,
        bundle_digest: module.digest,
        export: js.export.clone(),
        input,
        page: None,
        environment: step.environment,
        limits: call_limits,
        // A deterministic call may run again on another worker if its worker dies mid-call.
        idempotent: true,
        probe: false,
        keep_module: false,
        run: None,
    };
    // The log is bounded again on this side: a worker is not trusted to have kept its bound.
    let bound = call_limits.log_bytes;
    let reply = match pool.call_cancellable(&call, ctx.cancel) {
        Ok(reply) => reply,
        Err(e) => {
            provenance.log.absorb(e.log, bound);
            return Err(e.failure.into());
        }
    };
    provenance.log.absorb(reply.log, bound);
    let output = serde_json::from_slice(&reply.output).map_err(|e| {
        RunError::new(
            FailureKind::OutputRejected,
            "invalid_json",
            format!("the worker returned invalid JSON: {e}"),
        )
    })?;
    Ok(Produced { output })
}
