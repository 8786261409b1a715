//! Finding a cli-tool's executable, without a shell.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::SubprocessError;

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
        let candidate = if given.is_absolute() {
            given.to_path_buf()
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
