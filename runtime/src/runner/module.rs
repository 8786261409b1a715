//! The module side of a javascript run, for one call and for the page loop alike: the bundle,
//! hashed once, the call limits and the engine it runs on.

use super::step::{Provenance, RunContext, Step};
use crate::failure::RunError;
use runx_profile::JsRunner;
use runx_worker::{Limits, ModuleBundle};
use std::sync::Arc;

/// A javascript runner's module, ready to call.
pub(crate) struct Module {
    pub bundle: Arc<ModuleBundle>,
    pub digest: String,
    pub limits: Limits,
    pub engine: String,
}

impl Module {
    /// Picks the engine of `js` and collects its module closure, recording both in
    /// `provenance`.
    pub(crate) fn load(
        ctx: &RunContext<'_>,
        step: &Step<'_>,
        js: &JsRunner,
        provenance: &mut Provenance,
    ) -> Result<Module, RunError> {
        let limits = runx_profile::worker_limits(step.runner);
        let engine = ctx.workers.engine_for(step.runner, js.engine.as_deref())?;
        provenance.engine = Some(engine.clone());
        let collected = ctx
            .packages
            .bundle(&step.profile.dir, &js.module, limits.source_bytes)?;
        let module = Module {
            digest: collected.digest,
            bundle: collected.bundle,
            limits,
            engine,
        };
        provenance.bundle_digest = Some(module.digest.clone());
        Ok(module)
    }
}
