//! The documentation is kept true by these checks: the failure table of the book's Failures
//! page, the code map of ARCHITECTURE.md, the book's table of contents, and every code block
//! marked runnable in README.md and the book (`docs/src/`).
//!
//! A runnable block is a fenced block whose info string is `sh run` or `console run` (mdBook
//! and GitHub take the first word as the language and ignore the rest):
//!
//! - `sh run`: the whole block is one shell script (`sh -eu`), so a line may set a variable a
//!   later line uses; it must exit 0.
//! - `console run`: every `$ ` line is a command, run with `sh -c`; it must exit 0, and when
//!   lines follow it before the next `$ ` line, they are its stdout, line for line, where `…`
//!   stands for any text (a timing, a receipt path, a digest).
//!
//! Every block runs from a fresh scratch copy of the repository's `skill-fixtures/`, with `runx`
//! on `PATH` being the binary under test (on `RUNX_TEST_ENGINE` when set), so receipts and
//! other files a command writes land in a temporary directory, never in the tree. Only mark
//! blocks that work from the repository root without other setup.

use crate::{copy_dir, fixtures, test_engine};
use runx_runtime::FailureKind;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(relative: &str) -> String {
    let path = root().join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
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
    let rows = table_after(&read("docs/src/failures.md"), "# Failures");
    for kind in FailureKind::ALL {
        let row = rows
            .iter()
            .find(|r| r.starts_with(&format!("| `{}` |", kind.name())))
            .unwrap_or_else(|| panic!("docs/src/failures.md has no row for `{kind}`"));
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
    let root = root();
    let rows = table_after(&read("ARCHITECTURE.md"), "## Code map");
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

/// Whether `text` holds `value` as a whole number: not the tail of a longer one (`4 KiB` is
/// not in `64 KiB`). Thousands may be written with commas (`10,000`).
fn mentions(text: &str, value: &str) -> bool {
    let text = text.replace(',', "");
    text.match_indices(value).any(|(i, _)| {
        !text[..i]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_ascii_digit() || c == '.')
    })
}

#[test]
fn every_limit_of_the_catalogue_has_a_row_with_its_value() {
    let rows = table_after(&read("ARCHITECTURE.md"), "## Where each limit is enforced");
    for def in runx_profile::CATALOGUE {
        let name = format!("`{}`", def.name);
        let row = rows
            .iter()
            .find(|r| r.split('|').nth(1).unwrap_or_default().contains(&name))
            .unwrap_or_else(|| panic!("ARCHITECTURE.md's limits table has no row for {name}"));
        // A declared limit's row gives its range and where it is declared, in words.
        if def.is_declarable() {
            continue;
        }
        let value = runx_profile::human(def, def.default);
        assert!(
            mentions(row, &value),
            "the row of {name} does not give its value, {value}: {row}"
        );
    }
    assert!(mentions("| 10,000 dirs |", "10000"));
    assert!(!mentions("| 64 KiB |", "4 KiB"));
}

/// Every Markdown file under `dir`, as paths relative to the repository root.
fn pages_under(dir: &str) -> Vec<String> {
    let mut pages = Vec::new();
    let mut dirs = vec![PathBuf::from(dir)];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(root().join(&d)).unwrap() {
            let entry = entry.unwrap();
            let relative = d.join(entry.file_name());
            if entry.file_type().unwrap().is_dir() {
                dirs.push(relative);
            } else if relative.extension().is_some_and(|e| e == "md") {
                pages.push(relative.to_string_lossy().into_owned());
            }
        }
    }
    pages.sort();
    pages
}

/// The targets of `[text](target)` links in `text`, without their `#anchor`.
fn link_targets(text: &str) -> Vec<String> {
    text.split("](")
        .skip(1)
        .filter_map(|rest| rest.split(')').next())
        .map(|t| t.split('#').next().unwrap_or_default().to_string())
        .filter(|t| !t.is_empty() && !t.contains("://"))
        .collect()
}

#[test]
fn the_book_lists_every_page_and_every_link_leads_somewhere() {
    let summary = read("docs/src/SUMMARY.md");
    let listed = link_targets(&summary);
    for page in pages_under("docs/src") {
        let name = page.trim_start_matches("docs/src/");
        if name == "SUMMARY.md" {
            continue;
        }
        assert!(
            listed.iter().any(|l| l == name),
            "{page} is not in docs/src/SUMMARY.md, so the book leaves it out"
        );
        let dir = Path::new(&page).parent().unwrap().to_path_buf();
        for target in link_targets(&read(&page)) {
            assert!(
                root().join(&dir).join(&target).exists(),
                "{page} links to {target}, which does not exist"
            );
        }
    }
    for target in link_targets(&read("README.md")) {
        assert!(
            root().join(&target).exists(),
            "README.md links to {target}, which does not exist"
        );
    }
}

#[test]
fn the_readme_stays_short() {
    let lines = read("README.md").lines().count();
    assert!(
        lines <= 200,
        "README.md has {lines} lines; the manual is docs/src/"
    );
}

/// A code block marked runnable.
struct Block {
    page: String,
    line: usize,
    kind: BlockKind,
    text: String,
}

#[derive(PartialEq)]
enum BlockKind {
    Script,
    Console,
}

/// The runnable blocks of a page.
fn runnable_blocks(page: &str, text: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut open: Option<(usize, Option<BlockKind>, String)> = None;
    for (n, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        match open.take() {
            None => {
                if let Some(info) = trimmed.strip_prefix("```") {
                    let words: Vec<&str> = info.split_whitespace().collect();
                    let kind = match words.as_slice() {
                        ["sh", "run"] => Some(BlockKind::Script),
                        ["console", "run"] => Some(BlockKind::Console),
                        _ => None,
                    };
                    open = Some((n + 1, kind, String::new()));
                }
            }
            Some((start, kind, mut body)) => {
                if trimmed.starts_with("```") {
                    if let Some(kind) = kind {
                        blocks.push(Block {
                            page: page.to_string(),
                            line: start,
                            kind,
                            text: body,
                        });
                    }
                } else {
                    body.push_str(line);
                    body.push('\n');
                    open = Some((start, kind, body));
                }
            }
        }
    }
    assert!(open.is_none(), "{page}: a code block is never closed");
    blocks
}

/// A scratch workspace holding a copy of `skill-fixtures/`, and a directory with a `runx`
/// that runs the binary under test.
fn workspace() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&fixtures(), &tmp.path().join("skill-fixtures"));
    let bin = tmp.path().join(".bin");
    std::fs::create_dir(&bin).unwrap();
    let quoted = |s: &str| format!("'{}'", s.replace('\'', r"'\''"));
    let mut exec = format!("exec {}", quoted(env!("CARGO_BIN_EXE_runx")));
    if let Some(engine) = test_engine() {
        exec.push_str(&format!(" --engine {}", quoted(&engine)));
    }
    let shim = bin.join("runx");
    std::fs::write(&shim, format!("#!/bin/sh\n{exec} \"$@\"\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&shim, std::fs::Permissions::from_mode(0o755)).unwrap();
    (tmp, bin)
}

/// What a shell command printed, and how it ended.
struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs `args` of `sh` in `cwd` with `bin` first on `PATH`, for at most two minutes.
fn shell(cwd: &Path, bin: &Path, args: &[&str]) -> Ran {
    let out_path = bin.join("stdout");
    let err_path = bin.join("stderr");
    let path = std::env::var("PATH").unwrap_or_default();
    let mut child = Command::new("sh")
        .args(args)
        .current_dir(cwd)
        .env("PATH", format!("{}:{path}", bin.display()))
        .env_remove("RUST_LOG")
        .env_remove("RUNX_CWD")
        .env_remove("INIT_CWD")
        .env_remove("RUNX_RECEIPT_SIGN_KID")
        .env_remove("RUNX_RECEIPT_SIGN_ED25519_SEED_BASE64")
        .env_remove("RUNX_RECEIPT_SIGN_ISSUER_TYPE")
        .env_remove("RUNX_RECEIPT_REQUIRE_SIGNED")
        .env_remove("RUNX_RECEIPT_VERIFY_KID")
        .env_remove("RUNX_RECEIPT_VERIFY_ED25519_PUBLIC_KEY_BASE64")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Ran {
        code: status.and_then(|s| s.code()),
        stdout: std::fs::read_to_string(&out_path).unwrap_or_default(),
        stderr: std::fs::read_to_string(&err_path).unwrap_or_default(),
    }
}

/// Whether `actual` is `expected`, where each `…` in `expected` stands for any text.
fn line_matches(expected: &str, actual: &str) -> bool {
    let parts: Vec<&str> = expected.split('…').collect();
    if parts.len() == 1 {
        return expected == actual;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !actual.starts_with(first) || actual.len() < first.len() + last.len() {
        return false;
    }
    let mut rest = &actual[first.len()..];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.ends_with(last)
}

/// The commands of a `console run` block, each with the stdout lines shown after it.
fn console_commands(text: &str) -> Vec<(String, Vec<String>)> {
    let mut commands: Vec<(String, Vec<String>)> = Vec::new();
    for line in text.lines() {
        if let Some(command) = line.strip_prefix("$ ") {
            commands.push((command.to_string(), Vec::new()));
        } else if let Some((_, expected)) = commands.last_mut() {
            expected.push(line.to_string());
        } else {
            panic!("a `console run` block starts with output, not a `$ ` line: {line}");
        }
    }
    commands
}

fn run_block(block: &Block) -> Result<(), String> {
    let (ws, bin) = workspace();
    let at = format!("{}:{}", block.page, block.line);
    let failed = |what: &str, ran: &Ran| {
        format!(
            "{at}: {what}\nexit: {:?}\nstdout:\n{}\nstderr:\n{}",
            ran.code, ran.stdout, ran.stderr
        )
    };
    match block.kind {
        BlockKind::Script => {
            let ran = shell(ws.path(), &bin, &["-euc", &block.text]);
            if ran.code != Some(0) {
                return Err(failed(&format!("the block\n{}failed", block.text), &ran));
            }
        }
        BlockKind::Console => {
            for (command, expected) in console_commands(&block.text) {
                let ran = shell(ws.path(), &bin, &["-c", &command]);
                if ran.code != Some(0) {
                    return Err(failed(&format!("`{command}` failed"), &ran));
                }
                if expected.is_empty() {
                    continue;
                }
                let actual: Vec<&str> = ran.stdout.lines().collect();
                let same = actual.len() == expected.len()
                    && expected
                        .iter()
                        .zip(&actual)
                        .all(|(e, a)| line_matches(e, a));
                if !same {
                    return Err(failed(
                        &format!(
                            "`{command}` printed other than the page shows:\n{}",
                            expected.join("\n")
                        ),
                        &ran,
                    ));
                }
            }
        }
    }
    Ok(())
}

#[test]
fn every_runnable_block_runs() {
    let mut pages = vec!["README.md".to_string()];
    pages.extend(pages_under("docs/src"));
    let blocks: Vec<Block> = pages
        .iter()
        .flat_map(|page| runnable_blocks(page, &read(page)))
        .collect();
    assert!(
        blocks.len() >= 5,
        "only {} runnable blocks found; the marks are `sh run` and `console run`",
        blocks.len()
    );
    assert!(
        blocks.iter().any(|b| b.page == "README.md"),
        "README.md has no runnable block"
    );
    for block in &blocks {
        assert!(
            block.text.contains("runx "),
            "{}:{}: a runnable block must run runx",
            block.page,
            block.line
        );
    }
    let failures: Vec<String> = blocks.iter().filter_map(|b| run_block(b).err()).collect();
    assert!(
        failures.is_empty(),
        "{} of {} runnable blocks failed:\n\n{}",
        failures.len(),
        blocks.len(),
        failures.join("\n\n")
    );
}

#[test]
fn a_console_line_matches_with_ellipses() {
    assert!(line_matches("PASS a (… ms)", "PASS a (25 ms)"));
    assert!(line_matches(
        "{…\"total\":10}…",
        "{\"labels\":[],\"total\":10}"
    ));
    assert!(!line_matches("PASS a (… ms)", "FAIL a (25 ms)"));
    assert!(!line_matches("a…a", "a"));
    assert!(line_matches("exact", "exact"));
    assert!(!line_matches("exact", "exact!"));
}
