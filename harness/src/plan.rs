//! What to do with one case before anything runs: run its package, skip it (it needs what only
//! runx itself has: a graph or agent runner, an MCP or A2A client), or fail it (its target is
//! not a package that loads).

use crate::discover::{Suite, SuiteCase};
use crate::fixture::CaseKind;
use runx_profile::{PROFILE_FILE, ProfileError};
use std::path::PathBuf;

/// What to do with one case.
pub(crate) enum Plan {
    /// Run the package in this directory.
    Run(PathBuf),
    /// Do not run: the case needs a runner this runtime does not have.
    Skip(Skip),
    /// The case cannot run: its target does not exist or does not load.
    Fail(String),
}

/// A case not run: what it needs, and the reason shown, which says how to run it.
pub(crate) struct Skip {
    /// `graph`, `agent`, `mcp`, `a2a`, or the runner type it names.
    pub(crate) needs: String,
    /// One sentence for the person reading the report.
    pub(crate) reason: String,
}

impl Skip {
    /// A case that needs `needs`; `what` names the case or runner.
    fn needing(needs: &str, what: String) -> Skip {
        let part = match needs {
            "graph" => "its graph runner",
            "agent" => "its agent runner",
            "mcp" => "its MCP client",
            "a2a" => "its A2A client",
            _ => "a runner of that type",
        };
        Skip {
            needs: needs.to_string(),
            reason: format!(
                "{what} needs runx itself ({part}); this runtime runs javascript and cli-tool runners. Run it with runx, its javascript steps on this runtime through runx-js-worker (RUNX_JS_WORKER_PATH; see the book's \"runx on this engine\")"
            ),
        }
    }
}

/// What a runner type or case kind needs, in the words of [`Skip::needs`].
fn needs_of(ty: &str) -> &str {
    match ty {
        "agent-task" | "agent_task" => "agent",
        other => other,
    }
}

/// Decides whether and where a case runs: its kind, its target, its target's runner.
pub(crate) fn plan(suite: &Suite, sc: &SuiteCase) -> Plan {
    let case = &sc.case;
    if let Some(kind) = case.kind.filter(|k| *k != CaseKind::Skill) {
        return Plan::Skip(Skip::needing(
            needs_of(kind.name()),
            format!("a case of kind `{}`", kind.name()),
        ));
    }
    let dir = match &case.target {
        None => suite.dir.clone(),
        Some(target) => {
            let base = sc.source.parent().unwrap_or(&suite.dir);
            match base.join(target).canonicalize() {
                Ok(dir) if dir.join(PROFILE_FILE).is_file() => dir,
                Ok(dir) => {
                    return Plan::Fail(format!(
                        "target `{target}` ({}) is not a skill package: it has no {PROFILE_FILE}",
                        dir.display()
                    ));
                }
                Err(e) => {
                    return Plan::Fail(format!(
                        "target `{target}` (relative to {}) cannot be opened: {e}",
                        base.display()
                    ));
                }
            }
        }
    };
    if case.kind.is_none() && case.target.is_none() {
        // This runtime's own cases run the suite's package, which loaded; runner errors are
        // what some of them expect.
        return Plan::Run(dir);
    }
    let loaded = match runx_profile::load(&dir) {
        Ok(p) => p,
        Err(e) => return Plan::Fail(format!("the target package does not load: {e}")),
    };
    match loaded.runner(case.runner.as_deref()) {
        Err(ProfileError::UnsupportedRunner { runner, ty }) => Plan::Skip(Skip::needing(
            needs_of(&ty),
            format!("runner `{runner}` of type `{ty}`"),
        )),
        _ => Plan::Run(dir),
    }
}
