//! The runners: what runs one step once its package, inputs and environment are resolved.
//!
//! - `javascript`: one call of a module export in a pooled no-host worker;
//! - `paged`: the `runx_page` loop of a paged javascript runner over an admitted artifact;
//! - `cli_tool`: a supervised subprocess;
//! - `module`: the module side of a javascript run (bundle, limits, engine), for both
//!   javascript runners;
//! - `step`: what a runner is given and what it gives back.
//!
//! A runner receives a [`Step`] (what to run, with what) and a [`RunContext`] (the pool,
//! cancellation and the runtime instance it runs in), and returns what it [`Ran`]: its result
//! and the provenance the receipt records, whether it succeeded or not. Runners never see the
//! `Runtime` or the receipt; the runtime turns what they return into both.

pub(crate) mod cli_tool;
mod javascript;
pub(crate) mod module;
pub(crate) mod paged;
pub(crate) mod step;

use runx_profile::RunnerKind;
use step::{Ran, RunContext, Step};

/// Runs `step` on the runner its declaration names.
pub(crate) fn dispatch(ctx: &RunContext<'_>, step: Step<'_>) -> Ran {
    match &step.runner.kind {
        RunnerKind::Javascript(js) => match &js.pages {
            Some(pages) => paged::run(ctx, step, js, pages),
            None => javascript::run(ctx, step, js),
        },
        RunnerKind::CliTool(tool) => cli_tool::run(ctx, step, tool),
    }
}
