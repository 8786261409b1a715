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
    /// Exactly these values for the declared names (harness cases, embedders); a cli-tool
    /// still gets the baseline names (`PATH`, `HOME`, locale, ...) of the calling process.
    Map(BTreeMap<String, String>),
    /// Exactly these values, for the declared names and a cli-tool's baseline names alike:
    /// nothing is read from the calling process (a step server's request).
    Only(BTreeMap<String, String>),
}

impl EnvSource {
    /// The value of `name`, if set.
    pub fn get(&self, name: &str) -> Option<String> {
        match self {
            EnvSource::Process => std::env::var(name).ok(),
            EnvSource::Map(m) | EnvSource::Only(m) => m.get(name).cloned(),
        }
    }

    /// The value of a name outside the declared ones (the cli-tool baseline: `PATH`, `HOME`,
    /// locale, certificates): the calling process's, unless this source is [`EnvSource::Only`].
    pub fn host(&self, name: &str) -> Option<OsString> {
        match self {
            EnvSource::Process | EnvSource::Map(_) => std::env::var_os(name),
            EnvSource::Only(m) => m.get(name).map(OsString::from),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::parse;
    use std::path::Path;

    fn runner_with(env: &str) -> crate::profile::Profile {
        let text =
            format!("skill: s\nrun: {{ type: javascript, module: a.mjs, environment: {env} }}\n");
        parse(&text, Path::new("/pkg"), Path::new("/pkg/X.yaml")).expect("profile")
    }

    #[test]
    fn only_declared_names_are_read_and_required_ones_must_be_set() {
        let p = runner_with("{ required: [REGION], optional: [TRACE, ABSENT] }");
        let r = p.runner(None).expect("runner");
        let source = EnvSource::Map(BTreeMap::from([
            ("REGION".to_string(), "eu".to_string()),
            ("TRACE".to_string(), "1".to_string()),
            ("SECRET".to_string(), "x".to_string()),
        ]));
        let got = declared(r, &source).expect("declared");
        assert_eq!(
            got,
            BTreeMap::from([
                ("REGION".to_string(), "eu".to_string()),
                ("TRACE".to_string(), "1".to_string()),
            ])
        );
        let e = declared(r, &EnvSource::Map(BTreeMap::new())).expect_err("missing");
        assert_eq!(
            (e.kind, e.code.as_str()),
            (FailureKind::Environment, "missing_environment")
        );
        assert!(e.message.contains("`REGION`"), "{e}");
    }

    #[test]
    fn only_reads_nothing_of_the_host_not_even_the_baseline() {
        // PATH is set in every test process; `Map` still lets it through, `Only` never.
        let only = EnvSource::Only(BTreeMap::from([("HOME".to_string(), "/h".to_string())]));
        assert_eq!(only.host("PATH"), None);
        assert_eq!(only.host("HOME"), Some(OsString::from("/h")));
        assert_eq!(only.get("HOME").as_deref(), Some("/h"));
        assert!(EnvSource::Map(BTreeMap::new()).host("PATH").is_some());
    }
}
