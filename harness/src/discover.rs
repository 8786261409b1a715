//! Finding packages and their fixture cases.
//!
//! Every package found is reported with its own result: a package whose profile does not load,
//! or one of whose fixtures is malformed, becomes a [`Suite`] with [`Suite::broken`] set (its
//! cases are not run) instead of stopping the whole harness.

use crate::error::HarnessError;
use crate::fixture::{Case, CasesFile, FIXTURES_DIR, ProfileHarness, RelPath};
use runx_profile::{
    Diagnostic, FIXTURE_BYTES, HARNESS_SEARCH_DEPTH, HARNESS_SEARCH_DIRS, PROFILE_FILE,
    ProfileError,
};
use runx_worker::{EntryKind, Scope, ScopeError};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// A case together with where it was declared.
#[derive(Clone, Debug)]
pub struct SuiteCase {
    /// The case.
    pub case: Case,
    /// The file declaring it (`X.yaml` or a fixture file).
    pub source: PathBuf,
    /// Package files copied into the case's workspace (inline `harness.files`), relative to the
    /// package.
    pub copies: Vec<RelPath>,
}

/// The cases of one package.
#[derive(Clone, Debug)]
pub struct Suite {
    /// The package's name: its path below the directory given to the harness (its directory
    /// name when it was given itself), like `agency/graph/plan`.
    pub package: String,
    /// The package directory.
    pub dir: PathBuf,
    /// The cases to run, in declaration order (inline first, then fixture files by name).
    pub cases: Vec<SuiteCase>,
    /// Why the package cannot run: its profile does not load, or a fixture is malformed.
    pub broken: Option<PackageError>,
    /// What loading the profile noticed without refusing it.
    pub diagnostics: Vec<Diagnostic>,
}

/// Why a package cannot run, with the file and line concerned.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PackageError {
    /// The file concerned (`X.yaml` or a fixture file).
    pub file: PathBuf,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// 1-based column, when known.
    pub column: Option<usize>,
    /// What is wrong, with the file and line in front.
    pub message: String,
}

impl From<HarnessError> for PackageError {
    fn from(e: HarnessError) -> PackageError {
        let message = e.to_string();
        match e {
            HarnessError::Malformed {
                file, line, column, ..
            } => PackageError {
                file,
                line,
                column,
                message,
            },
            HarnessError::Path { path, .. } => PackageError {
                file: path,
                line: None,
                column: None,
                message,
            },
            HarnessError::Workspace { .. } => PackageError {
                file: PathBuf::new(),
                line: None,
                column: None,
                message,
            },
        }
    }
}

impl PackageError {
    fn of_profile(dir: &Path, e: ProfileError) -> PackageError {
        let message = format!("the profile does not load: {e}");
        match e {
            ProfileError::Invalid {
                file, line, column, ..
            } => PackageError {
                file,
                line,
                column,
                message,
            },
            _ => PackageError {
                file: dir.join(PROFILE_FILE),
                line: None,
                column: None,
                message,
            },
        }
    }
}

/// Turns harness paths into suites. A path is a fixture file (`.yaml` inside a package's
/// `fixtures/`: only its cases; elsewhere, cases that name their package with `target`), or a
/// directory: every package at or below it (a directory with
/// `X.yaml`, nested ones included, like `agency/graph/plan`), in path order, each with its inline
/// cases and every `fixtures/*.yaml`; a directory without packages, its fixture files (runx
/// takes them one by one; this takes the directory too). Only unusable paths are errors here; a broken package is a
/// suite with [`Suite::broken`].
pub fn discover(paths: &[PathBuf]) -> Result<Vec<Suite>, HarnessError> {
    let mut suites = Vec::new();
    for path in paths {
        let meta = std::fs::metadata(path)
            .map_err(|e| HarnessError::path(path, format!("cannot read: {e}")))?;
        if meta.is_file() {
            suites.push(fixture_file_suite(path)?);
        } else if meta.is_dir() {
            let found = find_packages(path)?;
            if found.is_empty() {
                // A directory of fixture files (runx's `fixtures/harness`): each file's cases,
                // each naming its package with `target`.
                let files = fixture_files(path)?;
                if files.is_empty() {
                    return Err(HarnessError::path(
                        path,
                        format!(
                            "is neither a skill package (no {PROFILE_FILE}), nor a directory holding skill packages, nor one holding fixture files (*.yaml)"
                        ),
                    ));
                }
                for file in files {
                    suites.push(fixture_file_suite(&file)?);
                }
                continue;
            }
            for (dir, label) in found {
                suites.push(package_suite(&dir, label));
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

/// The fixture files directly inside `dir` (`*.yaml`, `*.yml`; regular files only, no link
/// followed), by name.
fn fixture_files(dir: &Path) -> Result<Vec<PathBuf>, HarnessError> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| HarnessError::path(dir, format!("cannot list: {e}")))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
        .collect();
    files.sort();
    Ok(files)
}

/// Names that are never searched for packages.
fn skipped(name: &str) -> bool {
    name.starts_with('.') || name == "node_modules" || name == "target"
}

/// Every package directory at or below `root`, with its label, in path order. Symbolic links
/// are not followed; the search is bounded in depth and in directories examined.
fn find_packages(root: &Path) -> Result<Vec<(PathBuf, String)>, HarnessError> {
    let prefix = if root.join(PROFILE_FILE).is_file() {
        package_name(root)
    } else {
        String::new()
    };
    let mut found = Vec::new();
    let mut examined = 0u64;
    let mut stack = vec![(root.to_path_buf(), prefix, 0u64)];
    while let Some((dir, label, depth)) = stack.pop() {
        examined += 1;
        if examined > HARNESS_SEARCH_DIRS.max {
            return Err(HarnessError::path(
                root,
                format!(
                    "holds more than {} directories; name the packages to run",
                    HARNESS_SEARCH_DIRS.max
                ),
            ));
        }
        if dir.join(PROFILE_FILE).is_file() {
            let label = if label.is_empty() {
                package_name(&dir)
            } else {
                label.clone()
            };
            found.push((dir.clone(), label));
        }
        if depth >= HARNESS_SEARCH_DEPTH.max {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut children: Vec<(PathBuf, String)> = entries
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .filter_map(|e| {
                let name = e.file_name().to_str()?.to_string();
                (!skipped(&name)).then(|| (e.path(), name))
            })
            .collect();
        // Reversed onto the stack, so they come off in name order.
        children.sort();
        for (child, name) in children.into_iter().rev() {
            let child_label = if label.is_empty() {
                name
            } else {
                format!("{label}/{name}")
            };
            stack.push((child, child_label, depth + 1));
        }
    }
    found.sort_by(|a, b| a.1.cmp(&b.1));
    Ok(found)
}

fn package_name(dir: &Path) -> String {
    let canonical = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    canonical
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| dir.display().to_string())
}

/// Reads a YAML file through `scope` (no symlink, a regular file, at most `cap` bytes) and
/// checks its nesting depth before any parser sees it.
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
    match runx_profile::check_depth(&text) {
        Ok(()) => Ok(text),
        Err(deep) => Err(HarnessError::Malformed {
            file: file.to_path_buf(),
            line: Some(deep.line),
            column: Some(deep.column),
            message: deep.to_string(),
        }),
    }
}

fn open_scope(dir: &Path) -> Result<Scope, HarnessError> {
    Scope::open(dir).map_err(|e| HarnessError::path(dir, format!("cannot open: {e}")))
}

/// The suite of one package directory, without cases yet: broken when its profile does not
/// load.
fn loaded_suite(dir: &Path, package: String) -> Suite {
    let mut suite = Suite {
        package,
        dir: dir.to_path_buf(),
        cases: Vec::new(),
        broken: None,
        diagnostics: Vec::new(),
    };
    match runx_profile::load(dir) {
        Ok(p) => suite.diagnostics = p.diagnostics,
        Err(e) => suite.broken = Some(PackageError::of_profile(dir, e)),
    }
    suite
}

/// The suite of one package directory: broken when its profile does not load or a fixture is
/// malformed.
fn package_suite(dir: &Path, package: String) -> Suite {
    let mut suite = loaded_suite(dir, package);
    if suite.broken.is_none() {
        match package_cases(dir) {
            Ok(cases) => suite.cases = cases,
            Err(e) => suite.broken = Some(e.into()),
        }
    }
    suite
}

/// The inline cases of `dir/X.yaml`, then the cases of every `fixtures/*.yaml`.
fn package_cases(dir: &Path) -> Result<Vec<SuiteCase>, HarnessError> {
    let profile = dir.join(PROFILE_FILE);
    // The same capped, contained, depth-checked read as `runx skill`.
    let (_, text) =
        runx_profile::read_text(dir).map_err(|e| HarnessError::path(&profile, e.to_string()))?;
    let text = checked_depth(&profile, text)?;
    let doc: ProfileHarness =
        serde_yaml_ng::from_str(&text).map_err(|e| HarnessError::yaml(&profile, &e))?;
    let mut cases = Vec::new();
    if let Some(h) = doc.harness {
        for file in &h.files {
            check_package_file(dir, &profile, file)?;
        }
        cases.extend(h.cases.into_iter().map(|c| SuiteCase {
            case: c.into(),
            source: profile.clone(),
            copies: h.files.clone(),
        }));
    }
    let scope = open_scope(dir)?;
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
        let mut names: Vec<std::ffi::OsString> = entries
            .into_iter()
            .filter(|(name, kind)| *kind != EntryKind::Dir && is_yaml(Path::new(name)))
            .map(|(name, _)| name)
            .collect();
        names.sort();
        for name in names {
            let rel = Path::new(FIXTURES_DIR).join(name);
            cases.extend(read_fixture_file(&scope, &rel)?);
        }
    }
    Ok(cases)
}

/// An inline `harness.files` entry: a regular file under the package's `fixtures/`.
fn check_package_file(dir: &Path, profile: &Path, file: &RelPath) -> Result<(), HarnessError> {
    let under_fixtures = Path::new(&file.0)
        .components()
        .find(|c| !matches!(c, std::path::Component::CurDir))
        .is_some_and(|c| c.as_os_str() == FIXTURES_DIR);
    // Opened as the copy will open it: inside the package, through no symbolic link at any
    // component, a regular file.
    let regular = Scope::open(dir)
        .ok()
        .is_some_and(|scope| scope.open_file(&file.0).is_ok());
    if under_fixtures && regular {
        return Ok(());
    }
    Err(HarnessError::Malformed {
        file: profile.to_path_buf(),
        line: None,
        column: None,
        message: format!(
            "`harness.files` entry `{}` must name a regular file under `{FIXTURES_DIR}/` of the package",
            file.0
        ),
    })
}

fn is_yaml(p: &Path) -> bool {
    matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml"))
}

/// The suite of one fixture file. Inside a package's `fixtures/` its package is the parent of
/// `fixtures/`; elsewhere (a collection of cases, like runx's `fixtures/harness/`) every case
/// names its package with `target`.
fn fixture_file_suite(file: &Path) -> Result<Suite, HarnessError> {
    let canonical = file
        .canonicalize()
        .map_err(|e| HarnessError::path(file, format!("cannot read: {e}")))?;
    if !is_yaml(&canonical) {
        return Err(HarnessError::path(
            file,
            "is not a fixture file: expected a .yaml or .yml file",
        ));
    }
    let package = canonical
        .parent()
        .filter(|p| p.file_name().is_some_and(|n| n == FIXTURES_DIR))
        .and_then(Path::parent)
        .filter(|p| p.join(PROFILE_FILE).is_file());
    let mut suite = match package {
        Some(dir) => loaded_suite(dir, package_name(dir)),
        None => Suite {
            package: canonical
                .file_stem()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            dir: canonical.parent().unwrap_or(Path::new("/")).to_path_buf(),
            cases: Vec::new(),
            broken: None,
            diagnostics: Vec::new(),
        },
    };
    if suite.broken.is_some() {
        return Ok(suite);
    }
    // Read inside the directory that holds the file, without following a symlink to it.
    let read = match (canonical.parent(), canonical.file_name()) {
        (Some(parent), Some(name)) => {
            open_scope(parent).and_then(|scope| read_fixture_file(&scope, Path::new(name)))
        }
        _ => Err(HarnessError::path(file, "is not a fixture file")),
    };
    match read {
        Ok(cases) => {
            let untargeted = cases.iter().find(|c| c.case.target.is_none());
            match (package, untargeted) {
                (None, Some(c)) => {
                    suite.broken = Some(PackageError {
                        file: canonical.clone(),
                        line: None,
                        column: None,
                        message: format!(
                            "{}: case `{}` has no `target`; outside a package's `{FIXTURES_DIR}/` a case names its package with `target`",
                            canonical.display(),
                            c.case.name
                        ),
                    })
                }
                _ => suite.cases = cases,
            }
        }
        Err(e) => suite.broken = Some(e.into()),
    }
    Ok(suite)
}

/// Reads a fixture file `rel` of `scope`: a mapping with `cases:`, or a single case.
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
            copies: Vec::new(),
        })
        .collect())
}
