//! Where a run's environment values come from, and the one check of a runner's declared names.

use crate::failure::{FailureKind, RunError};
use runx_profile::Runner;
use std::collections::BTreeMap;
use std::ffi::OsString;

/// Where declared environment names are read from.
#[derive(Clone, Debug, Default)]
pub enum EnvSource {
    /// The calling process's environment (only declared names are read).
    #[default]
    Process,
    /// Exactly these values for the declared names (harness cases, embedders); a cli-tool
    /// gets the fixed baseline ([`FIXED_BASELINE`], `HOME` = the workspace), the same on every
    /// machine, and nothing of the calling process.
    Map(BTreeMap<String, String>),
    /// Exactly these values, for the declared names and a cli-tool's baseline names alike:
    /// nothing is read from the calling process.
    Only(BTreeMap<String, String>),
    /// A step server's request: declared names come from these values only (never from the
    /// server's environment); a cli-tool's baseline names (`PATH`, `HOME`, locale,
    /// certificates) from these values when given, else from the calling process, as `runx
    /// skill` builds them, so a graph runner need not know a tool's baseline.
    Served(BTreeMap<String, String>),
}

impl EnvSource {
    /// The value of `name`, if set.
    pub fn get(&self, name: &str) -> Option<String> {
        match self {
            EnvSource::Process => std::env::var(name).ok(),
            EnvSource::Map(m) | EnvSource::Only(m) | EnvSource::Served(m) => m.get(name).cloned(),
        }
    }

    /// The value of a cli-tool baseline name (`PATH`, `HOME`, locale, certificates, see
    /// [`crate::subprocess::BASELINE_ENV`]) outside the declared names: the calling process's
    /// for [`EnvSource::Process`]; for [`EnvSource::Map`], only [`FIXED_BASELINE`] and `HOME` =
    /// `workspace`; for [`EnvSource::Only`], the given values alone; for
    /// [`EnvSource::Served`], the given value, else the calling process's. So nothing of the
    /// host but its baseline leaks into a harness case or a served step.
    pub fn baseline(&self, name: &str, workspace: &std::path::Path) -> Option<OsString> {
        match self {
            EnvSource::Process => std::env::var_os(name),
            EnvSource::Map(_) if name == "HOME" => Some(workspace.as_os_str().to_os_string()),
            EnvSource::Map(_) => FIXED_BASELINE
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| OsString::from(v)),
            EnvSource::Only(m) => m.get(name).map(OsString::from),
            EnvSource::Served(m) => m
                .get(name)
                .map(OsString::from)
                .or_else(|| std::env::var_os(name)),
        }
    }
}

/// The baseline a cli-tool child of an [`EnvSource::Map`] run starts from, whatever machine it
/// runs on (harness cases see exactly this plus their `env`); `HOME` is added and is the run's
/// workspace.
pub const FIXED_BASELINE: &[(&str, &str)] = &[
    ("PATH", "/usr/local/bin:/usr/bin:/bin"),
    ("LANG", "C.UTF-8"),
    ("TZ", "UTC"),
];

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
    use runx_profile::parse;
    use std::path::Path;

    fn runner_with(env: &str) -> runx_profile::Profile {
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
        // PATH is set in every test process; `Only` never lets it through, `Map` gives the
        // fixed baseline instead of the host's.
        let ws = std::path::Path::new("/ws");
        let only = EnvSource::Only(BTreeMap::from([("HOME".to_string(), "/h".to_string())]));
        assert_eq!(only.baseline("PATH", ws), None);
        assert_eq!(only.baseline("HOME", ws), Some(OsString::from("/h")));
        assert_eq!(only.get("HOME").as_deref(), Some("/h"));
        let map = EnvSource::Map(BTreeMap::new());
        assert_eq!(
            map.baseline("PATH", ws),
            Some(OsString::from("/usr/local/bin:/usr/bin:/bin"))
        );
        assert_eq!(map.baseline("HOME", ws), Some(OsString::from("/ws")));
        assert_eq!(map.baseline("USER", ws), None);
    }

    #[test]
    fn a_served_step_gets_the_hosts_baseline_but_none_of_its_declared_names() {
        let ws = std::path::Path::new("/ws");
        let served = EnvSource::Served(BTreeMap::from([("LANG".to_string(), "x".to_string())]));
        // The server's PATH, as `runx skill` gives it; the request's LANG over the server's.
        assert_eq!(served.baseline("PATH", ws), std::env::var_os("PATH"));
        assert_eq!(served.baseline("LANG", ws), Some(OsString::from("x")));
        // A declared name is the request's or nothing, even one the server has set.
        assert_eq!(served.get("PATH"), None);
        assert_eq!(served.get("LANG").as_deref(), Some("x"));
    }
}
