//! Finding a cli-tool's executable, without a shell, and checking that what it is given can be
//! passed to it.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::error::SubprocessError;

/// Resolves a declared command to an executable path without a shell.
///
/// A command containing `/` is a path: absolute as given, otherwise relative
/// to `base_dir` (the skill directory). Any other command is looked up in the
/// absolute directories of `path_var` (empty and relative entries are ignored
/// so the process cwd never takes part in the lookup).
pub fn resolve_command(
    command: &str,
    path_var: Option<&OsStr>,
    base_dir: &Path,
) -> Result<PathBuf, SubprocessError> {
    let not_found = |reason: String| SubprocessError::NotFound {
        command: command.to_string(),
        reason,
    };
    if command.is_empty() {
        return Err(not_found("the command is empty".to_string()));
    }
    if command.contains('\0') {
        return Err(not_found("the command contains a NUL byte".to_string()));
    }

    if command.contains('/') {
        let given = Path::new(command);
        // `./bin/x.sh` names `bin/x.sh` of the package: printed as such, never as `pkg/./bin`.
        let given: PathBuf = given
            .components()
            .filter(|c| !matches!(c, std::path::Component::CurDir))
            .collect();
        let candidate = if given.is_absolute() {
            given
        } else {
            base_dir.join(given)
        };
        return match executable_problem(&candidate) {
            None => Ok(candidate),
            Some(problem) => Err(not_found(format!("`{}` {problem}", candidate.display()))),
        };
    }

    let Some(path_var) = path_var else {
        return Err(not_found(
            "PATH is not set in the skill environment, so the command cannot be looked up"
                .to_string(),
        ));
    };
    for dir in std::env::split_paths(path_var) {
        if !dir.is_absolute() {
            continue;
        }
        let candidate = dir.join(command);
        if executable_problem(&candidate).is_none() {
            return Ok(candidate);
        }
    }
    Err(not_found(format!(
        "no executable file with that name in PATH ({})",
        path_var.to_string_lossy()
    )))
}

/// `None` when `path` is an executable regular file, otherwise why not.
fn executable_problem(path: &Path) -> Option<&'static str> {
    match fs::metadata(path) {
        Err(_) => Some("does not exist"),
        Ok(meta) if !meta.is_file() => Some("is not a regular file"),
        Ok(meta) if meta.permissions().mode() & 0o111 == 0 => Some("is not executable"),
        Ok(_) => None,
    }
}

/// Most bytes the kernel copies for one argument or one `NAME=value` environment string
/// (`MAX_ARG_STRLEN`: 32 pages).
const MAX_ARG_STRLEN: usize = 32 * 4096;

/// Checks what `execve` will be handed before anything starts: no argument or environment
/// value may hold a NUL byte (it would cut the string), no single string may pass the kernel's
/// per-string limit, and all of them together must fit in `ARG_MAX`. `labels` names each
/// argument for messages (its template as declared).
pub fn check_exec(
    program: &Path,
    args: &[OsString],
    labels: &[String],
    env: &[(OsString, OsString)],
) -> Result<(), SubprocessError> {
    let label = |n: usize| {
        let template = labels.get(n).map_or("", String::as_str);
        format!("argument {} (`{template}`)", n + 1)
    };
    for (n, arg) in args.iter().enumerate() {
        if let Some(at) = arg.as_bytes().iter().position(|&b| b == 0) {
            return Err(SubprocessError::NulByte {
                what: label(n),
                offset: at,
            });
        }
        if arg.len() + 1 > MAX_ARG_STRLEN {
            return Err(SubprocessError::TooLong {
                what: label(n),
                bytes: arg.len() + 1,
                limit: MAX_ARG_STRLEN,
            });
        }
    }
    for (name, value) in env {
        let what = || format!("environment variable `{}`", name.to_string_lossy());
        if let Some(at) = value.as_bytes().iter().position(|&b| b == 0) {
            return Err(SubprocessError::NulByte {
                what: what(),
                offset: at,
            });
        }
        let bytes = name.len() + 1 + value.len() + 1;
        if bytes > MAX_ARG_STRLEN {
            return Err(SubprocessError::TooLong {
                what: what(),
                bytes,
                limit: MAX_ARG_STRLEN,
            });
        }
    }
    let pointer = std::mem::size_of::<usize>();
    let strings = program.as_os_str().len()
        + 1
        + args.iter().map(|a| a.len() + 1).sum::<usize>()
        + env
            .iter()
            .map(|(k, v)| k.len() + v.len() + 2)
            .sum::<usize>();
    let total = strings + pointer * (args.len() + env.len() + 3);
    let limit = arg_max();
    if total > limit {
        return Err(SubprocessError::TooLong {
            what: "the arguments and environment together".to_string(),
            bytes: total,
            limit,
        });
    }
    Ok(())
}

/// `ARG_MAX` as the kernel computes it for this process (a quarter of the stack limit on
/// Linux), or the classic 128 KiB when unknown.
pub(super) fn arg_max() -> usize {
    nix::unistd::sysconf(nix::unistd::SysconfVar::ARG_MAX)
        .ok()
        .flatten()
        .and_then(|v| usize::try_from(v).ok())
        .unwrap_or(128 * 1024)
}
