//! The README's tables are kept true by these checks.

use runx_runtime::FailureKind;
use std::path::Path;

fn readme() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md");
    std::fs::read_to_string(path).unwrap()
}

/// The rows of the table that follows `heading`.
fn table_after(text: &str, heading: &str) -> Vec<String> {
    let start = text
        .find(heading)
        .unwrap_or_else(|| panic!("no `{heading}`"));
    text[start..]
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(str::to_string)
        .collect()
}

#[test]
fn every_failure_kind_has_a_row_with_its_exit_code() {
    let rows = table_after(&readme(), "## Failures");
    for kind in FailureKind::ALL {
        let row = rows
            .iter()
            .find(|r| r.starts_with(&format!("| `{}` |", kind.name())))
            .unwrap_or_else(|| panic!("README has no row for `{kind}`"));
        assert!(
            row.trim_end()
                .ends_with(&format!("| {} |", kind.exit_code())),
            "exit code of `{kind}`: {row}"
        );
    }
    assert_eq!(rows.len(), FailureKind::ALL.len(), "a row names no kind");
}

#[test]
fn every_path_in_the_code_map_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let rows = table_after(&readme(), "## Code map");
    assert!(rows.len() > 10);
    for row in rows {
        let first = row.split('|').nth(1).unwrap_or_default();
        for path in first.split('`').skip(1).step_by(2) {
            let path = path.trim_end_matches('/');
            let full = if path.contains('/') {
                root.join(path)
            } else {
                // A bare file name after a path names a sibling of the row's first path.
                let dir = first.split('`').nth(1).unwrap_or_default();
                root.join(Path::new(dir).parent().unwrap_or(Path::new("")))
                    .join(path)
            };
            assert!(full.exists(), "{path} (row {row}) does not exist");
        }
    }
}
