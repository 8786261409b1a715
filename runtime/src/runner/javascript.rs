//! `type: javascript` runners: one call of a module export in a pooled no-host worker.

use super::{Produced, Provenance, Ran, RunContext, Step, paged};
use runx_receipts::digest;
use crate::failure::{FailureKind, RunError};
use runx_profile::JsRunner;
use runx_worker::bundle::{self, ModuleBundle};
use runx_worker::limits::Limits;
use runx_worker::process::Call;
use serde_json::Value;
use std::sync::Arc;

/// The module side of a javascript run: the bundle, hashed once, the call limits and the engine
/// it runs on.
pub(crate) struct Module {
    pub bundle: Arc<ModuleBundle>,
    pub digest: String,
    pub limits: Limits,
    pub engine: String,
}

/// Runs a javascript runner: one call, or the page loop when it declares `pages`.
pub(crate) fn run(ctx: &RunContext<'_>, step: Step<'_>, js: &JsRunner) -> Ran {
    let mut provenance = Provenance {
        limits: runx_profile::limits_for(step.runner),
        ..Provenance::default()
    };
    let limits = runx_profile::worker_limits(step.runner);
    let engine = match ctx.workers.engine_for(step.runner, js.engine.as_deref()) {
        Ok(engine) => {
            provenance.engine = Some(engine.clone());
            engine
        }
        Err(e) => {
            return Ran {
                result: Err(e),
                provenance,
            };
        }
    };
    let module = match bundle::collect(&step.profile.dir, &js.module, limits.source_bytes) {
        Ok(bundle) => Module {
            digest: bundle.digest(),
            bundle: Arc::new(bundle),
            limits,
            engine,
        },
        Err(e) => {
            return Ran {
                result: Err(e.into()),
                provenance,
            };
        }
    };
    provenance.bundle_digest = Some(module.digest.clone());
    if let Some(pages) = &js.pages {
        return paged::run(ctx, step, js, pages, module, provenance);
    }
    let result = call(ctx, step, js, module, &mut provenance);
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
