//! The message corpus (`cli/tests/messages/`): broken packages and mistaken command lines, each
//! with the exact words runx must answer, so a change of wording is a reviewed change.

use super::runx;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// One case of `cases.yaml`.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct MessageCase {
    name: String,
    run: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    env: BTreeMap<String, String>,
    exit: i32,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    stdout: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    stderr: String,
}

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/messages")
}

/// `text` with the workspace written `$WS`, receipt path lines left out and every
/// `<digits> ms` written `N ms`.
fn normalized(text: &str, ws: &Path) -> String {
    let text = text.replace(&ws.display().to_string(), "$WS");
    let mut out = String::new();
    for line in text.lines() {
        if line.starts_with("runx: receipt ") || line.starts_with("runx: harness receipt ") {
            continue;
        }
        out.push_str(&without_millis(line));
        out.push('\n');
    }
    out
}

/// `12 ms` and `(12 ms)` written `N ms`.
fn without_millis(line: &str) -> String {
    let mut out = String::new();
    let mut digits = String::new();
    let mut rest = line;
    while let Some(c) = rest.chars().next() {
        rest = &rest[c.len_utf8()..];
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        if !digits.is_empty() {
            let before_ms =
                c == ' ' && rest.starts_with("ms") && !rest[2..].starts_with(char::is_alphanumeric);
            out.push_str(if before_ms { "N" } else { &digits });
            digits.clear();
        }
        out.push(c);
    }
    out.push_str(&digits);
    out
}

#[test]
fn every_mistake_gets_its_exact_words() {
    // The words of engine failures (a syntax error) are the default engine's.
    if super::test_engine().is_some_and(|e| e != "quickjs") {
        return;
    }
    let file = corpus().join("cases.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    let mut cases: Vec<MessageCase> = serde_yaml_ng::from_str(&text).unwrap();
    let ws = tempfile::tempdir().unwrap();
    let ws_path = ws.path().canonicalize().unwrap();
    super::copy_dir(&corpus(), &ws_path);
    let bless = std::env::var_os("RUNX_BLESS_MESSAGES").is_some();
    let mut failures = Vec::new();
    for case in &mut cases {
        let mut c = runx();
        c.current_dir(&ws_path)
            .args(&case.run)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .envs(&case.env)
            .stdin(Stdio::null());
        let out = c.output().unwrap();
        let stdout = normalized(&String::from_utf8_lossy(&out.stdout), &ws_path);
        let stderr = normalized(&String::from_utf8_lossy(&out.stderr), &ws_path);
        let exit = out.status.code().unwrap_or(-1);
        if (exit, &stdout, &stderr) != (case.exit, &case.stdout, &case.stderr) {
            failures.push(format!(
                "case `{}` (runx {}):\n  exit {exit}, expected {}\n  stdout:\n{stdout}  expected:\n{}\n  stderr:\n{stderr}  expected:\n{}",
                case.name,
                case.run.join(" "),
                case.exit,
                case.stdout,
                case.stderr
            ));
            if bless {
                (case.exit, case.stdout, case.stderr) = (exit, stdout, stderr);
            }
        }
    }
    if bless && !failures.is_empty() {
        let header: String = text
            .lines()
            .take_while(|l| l.starts_with('#'))
            .map(|l| format!("{l}\n"))
            .collect();
        let body = serde_yaml_ng::to_string(&cases).unwrap();
        std::fs::write(&file, format!("{header}{body}")).unwrap();
    }
    assert!(
        failures.is_empty(),
        "{} of {} message cases differ (RUNX_BLESS_MESSAGES=1 writes what runx says now):\n\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}

#[test]
fn millisecond_counts_are_hidden() {
    assert_eq!(without_millis("sealed in 12 ms (x)"), "sealed in N ms (x)");
    assert_eq!(without_millis("(3 ms) 40 msgs 7"), "(N ms) 40 msgs 7");
}

/// `runx skill check` passes on every package of `skill-fixtures/` but for the runners that
/// are broken on purpose, each exercised by a case that expects its failure (and so exempt
/// from the harness's check).
#[test]
fn skill_fixtures_check_clean_but_for_their_deliberate_breakage() {
    let fixtures = super::fixtures();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&fixtures)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("X.yaml").is_file())
        .collect();
    dirs.sort();
    let mut args = vec![
        "skill".to_string(),
        "check".to_string(),
        "--json".to_string(),
    ];
    args.extend(dirs.iter().map(|d| d.display().to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = super::run_in(&fixtures, &args, &[]);
    let (v, code) = super::json_of(&out);
    assert_eq!(code, 64, "{v}");
    let mut errors = Vec::new();
    for package in v["packages"].as_array().unwrap() {
        for p in package["problems"].as_array().unwrap() {
            if p["severity"] == "error" {
                errors.push(format!(
                    "{}/{}: {}",
                    package["skill"].as_str().unwrap_or("?"),
                    p["runner"].as_str().unwrap_or("-"),
                    p["code"].as_str().unwrap_or("?")
                ));
            }
        }
    }
    assert_eq!(
        errors,
        [
            "hostile/escape: specifier",
            "tool/missing: command_not_found"
        ],
        "{v}"
    );
    assert_eq!(v["packages"].as_array().unwrap().len(), dirs.len());
}

/// What a hostile package does to `runx skill check`: top-level code that never ends or eats
/// the heap is stopped by the call's limits; a module that is a FIFO or a symbolic link is
/// refused without being opened for reading (a FIFO would block the check forever).
#[test]
fn check_stops_hostile_modules_at_the_limits_of_a_run() {
    let ws = tempfile::tempdir().unwrap();
    let pkg = ws.path().join("pkg");
    std::fs::create_dir_all(pkg.join("src")).unwrap();
    std::fs::write(
        pkg.join("X.yaml"),
        "skill: atk\nversion: \"1\"\nrunners:\n  loop:\n    type: javascript\n    module: src/loop.mjs\n    timeout_seconds: 1\n  fifo:\n    type: javascript\n    module: src/fifo.mjs\n  link:\n    type: javascript\n    module: src/link.mjs\n  bomb:\n    type: javascript\n    module: src/bomb.mjs\n",
    )
    .unwrap();
    std::fs::write(
        pkg.join("src/loop.mjs"),
        "for (;;) {}\nexport default () => 1;\n",
    )
    .unwrap();
    std::fs::write(
        pkg.join("src/bomb.mjs"),
        "const a = [];\nfor (;;) a.push('x'.repeat(1e6) + a.length);\nexport default () => 1;\n",
    )
    .unwrap();
    nix::unistd::mkfifo(&pkg.join("src/fifo.mjs"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", pkg.join("src/link.mjs")).unwrap();
    let (v, code) = super::json_in(ws.path(), &["skill", "check", "pkg"], &[]);
    assert_eq!(code, 64, "{v}");
    let problems = v["packages"][0]["problems"].as_array().unwrap();
    let got: Vec<(&str, &str, u64)> = problems
        .iter()
        .map(|p| {
            (
                p["runner"].as_str().unwrap(),
                p["code"].as_str().unwrap(),
                p["line"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("loop", "wall_milliseconds", 6),
            ("fifo", "module_file", 10),
            ("link", "module_file", 13),
            ("bomb", "heap_bytes", 16),
        ],
        "{v}"
    );
    assert!(
        problems[0]["message"]
            .as_str()
            .unwrap()
            .starts_with("the module's top-level code failed: "),
        "{v}"
    );
}

/// Found by an attack: a package of many runners whose one module spins at its top level held
/// the check for runners x wall. One probe now serves every runner of the same module closure,
/// engine and wall, and the summary counts the runners instead of naming 50 of them.
#[test]
fn one_probe_serves_every_runner_of_a_module() {
    let ws = tempfile::tempdir().unwrap();
    let pkg = ws.path().join("many");
    std::fs::create_dir_all(&pkg).unwrap();
    let mut yaml = String::from("skill: many\nrunners:\n");
    for n in 0..50 {
        yaml.push_str(&format!(
            "  r{n}:\n    type: javascript\n    module: m.mjs\n    timeout_seconds: 1\n"
        ));
    }
    std::fs::write(pkg.join("X.yaml"), yaml).unwrap();
    std::fs::write(pkg.join("m.mjs"), "for (;;) {}\nexport default () => 1;\n").unwrap();
    let out = super::run_in(ws.path(), &["skill", "check", "many"], &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(64), "{text}");
    assert_eq!(
        text.matches("ran past its wall of 1000 ms").count(),
        50,
        "{text}"
    );
    assert!(
        text.ends_with("many: 50 errors; checked 50 runners\n"),
        "{text}"
    );
}
