//! The limits that apply to one runner: the catalogue's values, with what the runner declares.

use crate::limits::{
    ARTIFACT_BYTES, CAPTURE_BYTES, CLI_WALL, HEAP_BYTES, INPUT_BYTES, INPUT_INLINE,
    INPUTS_JSON_INLINE, JS_WALL, KILL_GRACE, LOG_BYTES, LimitDef, OUTPUT_BYTES, OUTPUT_DEPTH,
    PAGE_BYTES, PAGE_COUNT, PAGE_WORKERS, RETRY_ATTEMPTS, RETRY_BACKOFF, SOURCE_BYTES, STACK_BYTES,
    STATE_BYTES, millis,
};
use crate::model::{Runner, RunnerKind};
use runx_rules::Limits;
use std::collections::BTreeMap;

/// The limits that apply to one run, with their values.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AppliedLimits(Vec<(&'static LimitDef, u64)>);

impl AppliedLimits {
    /// Every limit with its value, in a stable order.
    pub fn entries(&self) -> &[(&'static LimitDef, u64)] {
        &self.0
    }

    /// The value of the limit named `name`, if it applies.
    pub fn get(&self, name: &str) -> Option<u64> {
        self.0.iter().find(|(d, _)| d.name == name).map(|(_, v)| *v)
    }

    /// The limits as a name → value map, as receipts and `inspect` record them.
    pub fn to_map(&self) -> BTreeMap<String, u64> {
        self.0
            .iter()
            .map(|(d, v)| (d.name.to_string(), *v))
            .collect()
    }

    pub(crate) fn push(&mut self, def: &'static LimitDef, value: u64) {
        self.0.push((def, value));
    }
}

/// The worker limits of one javascript call of `runner` (its declared wall applied).
pub fn worker_limits(runner: &Runner) -> Limits {
    Limits::default().with_wall(runner.timeout)
}

/// Every limit that applies to a run of `runner`, with the values it declares.
pub fn limits_for(runner: &Runner) -> AppliedLimits {
    let mut applied = AppliedLimits::default();
    match &runner.kind {
        RunnerKind::Javascript(js) => {
            let call = worker_limits(runner);
            for def in [
                &INPUT_BYTES,
                &OUTPUT_BYTES,
                &OUTPUT_DEPTH,
                &SOURCE_BYTES,
                &HEAP_BYTES,
                &STACK_BYTES,
            ] {
                applied.push(def, def.default);
            }
            applied.push(&JS_WALL, call.wall_milliseconds);
            applied.push(&LOG_BYTES, LOG_BYTES.default);
            if let Some(pages) = &js.pages {
                applied.push(&PAGE_BYTES, pages.page_bytes as u64);
                for def in [&STATE_BYTES, &PAGE_COUNT, &ARTIFACT_BYTES] {
                    applied.push(def, def.default);
                }
                if let Some(parallel) = &pages.parallel {
                    applied.push(&PAGE_WORKERS, parallel.workers as u64);
                }
            }
        }
        RunnerKind::CliTool(tool) => {
            applied.push(&CLI_WALL, millis(runner.timeout));
            for def in [
                &CAPTURE_BYTES,
                &KILL_GRACE,
                &INPUTS_JSON_INLINE,
                &INPUT_INLINE,
            ] {
                applied.push(def, def.default);
            }
            if let Some(retry) = tool.active_retry() {
                applied.push(&RETRY_ATTEMPTS, u64::from(retry.attempts));
                applied.push(&RETRY_BACKOFF, millis(retry.backoff));
            }
        }
    }
    applied
}
