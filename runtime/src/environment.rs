//! Where a run's environment values come from, and the one check of a runner's declared names.

use crate::failure::{FailureKind, RunError};
use crate::profile::Runner;
use std::collections::BTreeMap;
use std::ffi::OsString;

/// Where declared environment names are read from.
#[derive(Clone, Debug, Default)]
pub enum EnvSource {
    /// The calling process's environment (only declared names are read).
    #[default]
    Process,
    /// Exactly these values; nothing else is visible (harness cases, embedders).
    Map(BTreeMap<String, String>),
}

impl EnvSource {
    /// The value of `name`, if set.
    pub fn get(&self, name: &str) -> Option<String> {
        match self {
            EnvSource::Process => std::env::var(name).ok(),
            EnvSource::Map(m) => m.get(name).cloned(),
        }
    }
}

/// The values of the names `runner` declares: every required name (a missing one fails the run
/// before anything starts) and the optional names that are set.
pub fn declared(runner: &Runner, env: &EnvSource) -> Result<BTreeMap<String, String>, RunError> {
    let mut out = BTreeMap::new();
    for name in &runner.environment.required {
        let Some(value) = env.get(name) else {
            return Err(RunError::new(
                FailureKind::Environment,
                "missing_environment",
                format!(
                    "runner `{}` requires the environment variable `{name}`, which is not set; set it and run again",
                    runner.name
                ),
            ));
        };
        out.insert(name.clone(), value);
    }
    for name in &runner.environment.optional {
        if let Some(v) = env.get(name) {
            out.insert(name.clone(), v);
        }
    }
    Ok(out)
}

/// A host environment value outside the declared names (the cli-tool baseline: `PATH`, `HOME`,
/// locale, certificates), read from the calling process.
pub(crate) fn host_value(name: &str) -> Option<OsString> {
    std::env::var_os(name)
}
