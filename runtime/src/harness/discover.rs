//! Finding packages and their fixture cases.

use super::fixture::{Case, CasesFile, ProfileHarness};
use super::{FIXTURES_DIR, HarnessError};
use crate::limits::FIXTURE_BYTES;
use crate::profile::PROFILE_FILE;
use runx_worker::scope::{EntryKind, Scope, ScopeError};
use std::path::{Path, PathBuf};

/// A case together with where it was declared.
#[derive(Clone, Debug)]
pub struct SuiteCase {
    /// The case.
    pub case: Case,
    /// The file declaring it (`X.yaml` or a fixture file).
    pub source: PathBuf,
}

/// The cases of one package.
#[derive(Clone, Debug)]
pub struct Suite {
    /// The package's name: its directory name.
    pub package: String,
    /// The package directory.
    pub dir: PathBuf,
    /// The cases to run, in declaration order (inline first, then fixture files by name).
    pub cases: Vec<SuiteCase>,
}

/// Turns harness paths into suites. A path is a package directory (it has `X.yaml`: its inline
/// cases and every `fixtures/*.yaml`), a fixture file (`.yaml` inside a package's `fixtures/`:
/// only its cases), or a directory of packages (each immediate subdirectory with `X.yaml`, in
/// name order). Fails on the first malformed fixture, naming file and line.
pub fn discover(paths: &[PathBuf]) -> Result<Vec<Suite>, HarnessError> {
    let mut suites = Vec::new();
    for path in paths {
        let meta = std::fs::metadata(path)
            .map_err(|e| HarnessError::path(path, format!("cannot read: {e}")))?;
        if meta.is_file() {
            suites.push(fixture_file_suite(path)?);
        } else if path.join(PROFILE_FILE).is_file() {
            suites.push(package_suite(path)?);
        } else if meta.is_dir() {
            let mut dirs = Vec::new();
            let entries = std::fs::read_dir(path)
                .map_err(|e| HarnessError::path(path, format!("cannot list: {e}")))?;
            for entry in entries {
                let entry =
                    entry.map_err(|e| HarnessError::path(path, format!("cannot list: {e}")))?;
                let p = entry.path();
                if p.is_dir() && p.join(PROFILE_FILE).is_file() {
                    dirs.push(p);
                }
            }
            if dirs.is_empty() {
                return Err(HarnessError::path(
                    path,
                    format!(
                        "is neither a skill package (no {PROFILE_FILE}) nor a directory of skill packages"
                    ),
                ));
            }
            dirs.sort();
            for d in dirs {
                suites.push(package_suite(&d)?);
            }
        } else {
            return Err(HarnessError::path(
                path,
                "is neither a file nor a directory",
            ));
        }
    }
    Ok(suites)
}

fn package_name(dir: &Path) -> String {
    let canonical = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    canonical
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| dir.display().to_string())
}

/// Reads a YAML file of a package through its scope (no symlink, a regular file, at most `cap`
/// bytes) and checks its nesting depth before any parser sees it.
fn read_yaml(scope: &Scope, rel: &Path, cap: u64) -> Result<String, HarnessError> {
    let file = scope.path().join(rel);
    let bytes = scope
        .read(rel, cap)
        .map_err(|e| HarnessError::path(&file, format!("cannot read: {e}")))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| HarnessError::path(&file, "cannot read: not UTF-8"))?;
    checked_depth(&file, text)
}

/// `text` when it nests no deeper than the YAML depth limit, else a malformed-fixture error.
fn checked_depth(file: &Path, text: String) -> Result<String, HarnessError> {
    match crate::yaml::check_depth(&text) {
        Ok(()) => Ok(text),
        Err(deep) => Err(HarnessError::Malformed {
            file: file.to_path_buf(),
            line: Some(deep.line),
            column: Some(deep.column),
            message: deep.to_string(),
        }),
    }
}

/// The suite of one package directory.
fn package_suite(dir: &Path) -> Result<Suite, HarnessError> {
    let profile = dir.join(PROFILE_FILE);
    // The same capped, contained read as `runx skill`.
    let (_, text) = crate::profile::parse::read(dir)
        .map_err(|e| HarnessError::path(&profile, e.to_string()))?;
    let text = checked_depth(&profile, text)?;
    let doc: ProfileHarness =
        serde_yaml_ng::from_str(&text).map_err(|e| HarnessError::yaml(&profile, &e))?;
    let mut cases: Vec<SuiteCase> = doc
        .harness
        .map(|h| h.cases)
        .unwrap_or_default()
        .into_iter()
        .map(|case| SuiteCase {
            case,
            source: profile.clone(),
        })
        .collect();
    let scope = package_scope(dir)?;
    let fixtures = match scope.open_dir(FIXTURES_DIR) {
        Ok(f) => Some(f),
        Err(ScopeError::NotFound { .. }) => None,
        Err(e) => return Err(HarnessError::path(&dir.join(FIXTURES_DIR), e.to_string())),
    };
    if let Some(fixtures) = fixtures {
        let entries = fixtures
            .entries()
            .map_err(|e| HarnessError::path(fixtures.path(), format!("cannot list: {e}")))?;
        // Symlinks are listed too, so that reading them fails loudly instead of being skipped.
        for (name, _) in entries
            .into_iter()
            .filter(|(name, kind)| *kind != EntryKind::Dir && is_yaml(Path::new(name)))
        {
            let rel = Path::new(FIXTURES_DIR).join(name);
            cases.extend(read_fixture_file(&scope, &rel)?);
        }
    }
    Ok(Suite {
        package: package_name(dir),
        dir: dir.to_path_buf(),
        cases,
    })
}

fn package_scope(dir: &Path) -> Result<Scope, HarnessError> {
    Scope::open(dir).map_err(|e| HarnessError::path(dir, format!("cannot open: {e}")))
}

fn is_yaml(p: &Path) -> bool {
    matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml"))
}

/// The suite of one fixture file: its package is the parent of `fixtures/`.
fn fixture_file_suite(file: &Path) -> Result<Suite, HarnessError> {
    let canonical = file
        .canonicalize()
        .map_err(|e| HarnessError::path(file, format!("cannot read: {e}")))?;
    let package = canonical
        .parent()
        .filter(|p| p.file_name().is_some_and(|n| n == FIXTURES_DIR))
        .and_then(Path::parent)
        .filter(|p| p.join(PROFILE_FILE).is_file());
    let Some(dir) = package.filter(|_| is_yaml(&canonical)) else {
        return Err(HarnessError::path(
            file,
            format!(
                "is not a fixture file: expected a .yaml file in the `{FIXTURES_DIR}/` directory of a skill package"
            ),
        ));
    };
    let (Some(name), scope) = (canonical.file_name(), package_scope(dir)?) else {
        return Err(HarnessError::path(file, "is not a fixture file"));
    };
    Ok(Suite {
        package: package_name(dir),
        dir: dir.to_path_buf(),
        cases: read_fixture_file(&scope, &Path::new(FIXTURES_DIR).join(name))?,
    })
}

/// Reads a fixture file of the package `scope`: a mapping with `cases:`, or a single case.
fn read_fixture_file(scope: &Scope, rel: &Path) -> Result<Vec<SuiteCase>, HarnessError> {
    let file = scope.path().join(rel);
    let text = read_yaml(scope, rel, FIXTURE_BYTES.max)?;
    let doc: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(&text).map_err(|e| HarnessError::yaml(&file, &e))?;
    let many = doc
        .as_mapping()
        .is_some_and(|m| m.contains_key(serde_yaml_ng::Value::from("cases")));
    let cases = if doc.is_null() {
        Vec::new()
    } else if many {
        serde_yaml_ng::from_str::<CasesFile>(&text)
            .map_err(|e| HarnessError::yaml(&file, &e))?
            .cases
    } else {
        vec![serde_yaml_ng::from_str::<Case>(&text).map_err(|e| HarnessError::yaml(&file, &e))?]
    };
    Ok(cases
        .into_iter()
        .map(|case| SuiteCase {
            case,
            source: file.clone(),
        })
        .collect())
}
