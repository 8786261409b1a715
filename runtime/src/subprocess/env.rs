//! The child's environment, rebuilt from nothing.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::Path;

use runx_profile::EnvDecl;

/// Names copied from the caller's environment when present (process launch/user
/// paths, certificates, locale/terminal). No proxy variables: proxy URLs may
/// carry credentials, so a skill that needs one declares it explicitly.
pub const BASELINE_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "TMPDIR",
    "TMP",
    "TEMP",
    "USER",
    "LOGNAME",
    "CURL_CA_BUNDLE",
    "GIT_SSL_CAINFO",
    "NODE_EXTRA_CA_CERTS",
    "REQUESTS_CA_BUNDLE",
    "SSL_CERT_DIR",
    "SSL_CERT_FILE",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "TERM",
    "COLORTERM",
    "TZ",
];

/// Builds the complete child environment: the baseline names the host has (unless the runner
/// declares them, in which case only the run's value counts), the declared names that have
/// values (`declared`, already checked: a missing required name never gets here), then
/// `RUNX_CWD` and the staged input pairs. Nothing else is inherited. Later sources override
/// earlier ones for the same name, so runtime variables cannot be shadowed by declarations.
pub fn build_env(
    host: &dyn Fn(&str) -> Option<OsString>,
    declaration: &EnvDecl,
    declared: &BTreeMap<String, String>,
    runx_cwd: &Path,
    staged: &[(String, String)],
) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = Vec::new();
    let mut set = |name: &str, value: OsString| {
        if let Some(slot) = env
            .iter_mut()
            .find(|(k, _)| k.as_os_str() == OsStr::new(name))
        {
            slot.1 = value;
        } else {
            env.push((OsString::from(name), value));
        }
    };
    for name in BASELINE_ENV {
        if !declaration.declares(name)
            && let Some(value) = host(name)
        {
            set(name, value);
        }
    }
    for (name, value) in declared {
        set(name, OsString::from(value));
    }
    set("RUNX_CWD", runx_cwd.as_os_str().to_os_string());
    for (name, value) in staged {
        set(name, OsString::from(value));
    }
    env
}
