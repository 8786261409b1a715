//! The checks of `runx skill check`, made before a package's cases run: a package with an error
//! there is that package's error, never a package with nothing declared.

use crate::discover::{PackageError, Suite};
use crate::fixture::ExpectStatus;
use runx_profile::PROFILE_FILE;
use runx_runtime::Runtime;

/// The errors `runx skill check` finds in a package that loaded, as one package error; `None`
/// when there are none. A runner that a case of the package names and expects to fail is
/// exempt: the case is there to show that failure (a module that imports `node:fs`, a command
/// that does not exist).
pub(crate) fn check_errors(rt: &Runtime, suite: &Suite) -> Option<PackageError> {
    // A fixture folder outside any package names its packages by `target:`; it has nothing
    // of its own to check.
    if !suite.dir.join(PROFILE_FILE).is_file() {
        return None;
    }
    let expected_to_fail: Vec<&str> = suite
        .cases
        .iter()
        .filter(|sc| sc.case.target.is_none() && sc.case.expect.status() == ExpectStatus::Failure)
        .filter_map(|sc| sc.case.runner.as_deref())
        .collect();
    let checked = rt.check(&suite.dir);
    let errors: Vec<&runx_runtime::Problem> = checked
        .problems
        .iter()
        .filter(|p| p.severity == runx_runtime::Severity::Error)
        .filter(|p| {
            p.runner
                .as_deref()
                .is_none_or(|r| !expected_to_fail.contains(&r))
        })
        .collect();
    let first = errors.first()?;
    let lines: Vec<String> = errors.iter().map(|p| p.to_string()).collect();
    Some(PackageError {
        file: first.file.clone(),
        line: first.line,
        column: first.column,
        message: lines.join("\n"),
    })
}
