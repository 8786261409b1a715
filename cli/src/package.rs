//! Finding the package a command names: a directory, its `SKILL.md` or `X.yaml` (as runx
//! takes them), or a bare skill name found as `skills/NAME` (the runx convention); when
//! nothing is there, where runx looked and the nearest package it saw.

use std::path::{Path, PathBuf};

/// The file names that stand for the package directory holding them, as in runx:
/// `runx skill skills/helpdesk/SKILL.md` runs `skills/helpdesk`.
const PACKAGE_FILES: [&str; 2] = ["SKILL.md", runx_profile::PROFILE_FILE];

/// The directory holding `path` when `path` is a package's `SKILL.md` or `X.yaml` file;
/// `None` for anything else.
pub fn package_of_file(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?.to_str()?;
    if !PACKAGE_FILES.contains(&name) || !path.is_file() {
        return None;
    }
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
    Some(parent.map_or_else(|| PathBuf::from("."), Path::to_path_buf))
}

/// The package directory `dir` names, as [`package_dir`] finds it; when nothing is there, a
/// message saying where it looked and naming the nearest package it saw.
pub fn find_package(dir: &Path) -> Result<PathBuf, String> {
    let found = package_dir(dir);
    if let Ok(meta) = std::fs::metadata(&found) {
        if !meta.is_dir() {
            if let Some(package) = package_of_file(&found) {
                return Ok(package);
            }
            return Err(format!(
                "`{}` is a file, not a skill package: a package is a directory holding {}; \
                 name the directory, its SKILL.md or its {1}",
                dir.display(),
                runx_profile::PROFILE_FILE
            ));
        }
        return Ok(found);
    }
    if std::fs::symlink_metadata(&found).is_ok() {
        // A dangling link: the load says what it points at.
        return Ok(found);
    }
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // Packages beside the one asked for: in its parent directory, and for a bare name in
    // `skills/` too, named as the caller would name them.
    let mut candidates: Vec<String> = Vec::new();
    let mut look_in = |folder: &Path, shown: &dyn Fn(&str) -> String| {
        if let Ok(entries) = std::fs::read_dir(folder) {
            for entry in entries.flatten().take(10_000) {
                let entry_name = entry.file_name().to_string_lossy().into_owned();
                if entry.path().join(runx_profile::PROFILE_FILE).is_file() {
                    candidates.push(shown(&entry_name));
                }
            }
        }
    };
    let parent = dir.parent().filter(|p| !p.as_os_str().is_empty());
    look_in(parent.unwrap_or(Path::new(".")), &|n: &str| {
        parent.map_or(n.to_string(), |p| p.join(n).display().to_string())
    });
    let looked = if runx_runtime::is_bare_name(dir) {
        look_in(Path::new("skills"), &|n: &str| n.to_string());
        format!("neither `{name}` nor `skills/{name}` exists here")
    } else {
        format!("`{}` does not exist", dir.display())
    };
    candidates.sort();
    candidates.dedup();
    let wanted = dir.display().to_string();
    Err(format!(
        "no skill package `{wanted}`: {looked}{}",
        runx_profile::did_you_mean(&wanted, candidates.iter().map(String::as_str))
    ))
}

/// The package directory `dir` names: `dir` itself, or, for a bare name that is not a
/// directory here, `skills/NAME` when that is one (the runx convention).
pub fn package_dir(dir: &Path) -> PathBuf {
    runx_runtime::package_dir(Path::new(""), dir)
}
