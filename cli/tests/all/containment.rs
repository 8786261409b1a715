//! Contained opens through `runx skill` and `runx harness` under attack: symlink races, FIFOs,
//! `/dev/zero`, unbounded stdin, deep YAML, huge profiles, symlinked fixture data.

use super::*;
use std::os::unix::fs::symlink;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Writes `files` (path → text) under `dir`.
pub fn write_files(dir: &Path, files: &[(&str, &str)]) {
    for (p, text) in files {
        let dest = dir.join(p);
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::write(dest, text).unwrap();
    }
}

/// Runs `runx` with `args` in `cwd`, killing it if it is still running after `limit`, so a
/// hang fails the test instead of stalling the suite. Returns the output and whether it had to
/// be killed.
pub fn run_bounded(cwd: &Path, args: &[&str], stdin: Stdio, limit: Duration) -> (Output, bool) {
    let child = runx()
        .current_dir(cwd)
        .args(args)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    let done = Arc::new(AtomicBool::new(false));
    let killed = Arc::new(AtomicBool::new(false));
    let watchdog = {
        let (done, killed) = (done.clone(), killed.clone());
        std::thread::spawn(move || {
            let start = Instant::now();
            while !done.load(Ordering::SeqCst) {
                if start.elapsed() > limit {
                    killed.store(true, Ordering::SeqCst);
                    let _ = nix::sys::signal::kill(
                        nix::unistd::Pid::from_raw(pid),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    let out = child.wait_with_output().unwrap();
    done.store(true, Ordering::SeqCst);
    watchdog.join().unwrap();
    (out, killed.load(Ordering::SeqCst))
}

fn parse_json(out: &Output) -> Value {
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.trim()).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {text}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

const PICK: &str = r#"
export function pick(inputs) {
  const p = inputs.runx_page;
  return { text: p.records.map((r) => JSON.parse(r)).join(",") };
}
"#;

fn paged_profile(base_default: &str) -> String {
    format!(
        "skill: race\nrun:\n  type: javascript\n  module: pick.mjs\n  export: pick\n  inputs:\n    file: {{ type: string, required: true }}\n    base: {{ type: string, default: {base_default} }}\n  outputs:\n    text: string\n  pages: {{ path_from: file, path_scope_from: base }}\n"
    )
}

/// Issue 13, item 1: `race.json` is swapped between a regular file and a symlink to a file
/// outside the package while the harness admits it again and again. The old code (resolve,
/// check, then open by path) read the outside file in about 5% of tries; every admission must
/// now read the inside file or refuse the link, never read outside.
#[test]
fn a_file_swapped_for_a_symlink_is_never_read_outside_the_scope() {
    const CASES: usize = 1000;
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.json"), r#"["OUTSIDE"]"#).unwrap();
    let pkg = ws.path().join("race");
    let mut cases = String::from("cases:\n");
    for n in 0..CASES {
        cases.push_str(&format!(
            "  - {{ name: c{n}, inputs: {{ file: race.json }}, expect: {{ output: {{ exact: {{ text: inside }} }} }} }}\n"
        ));
    }
    write_files(
        &pkg,
        &[
            ("X.yaml", &paged_profile("skill")),
            ("pick.mjs", PICK),
            ("race.json", r#"["inside"]"#),
            ("fixtures/race.yaml", &cases),
        ],
    );
    symlink(outside.path().join("secret.json"), pkg.join("other")).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (pkg, stop) = (pkg.clone(), stop.clone());
        std::thread::spawn(move || {
            // One system call per swap: `race.json` and `other` trade places, so `race.json`
            // is a regular file and a symlink to the outside file in turn, as fast as the
            // kernel allows.
            let dir = std::fs::File::open(&pkg).unwrap();
            let mut swaps = 0u64;
            while !stop.load(Ordering::Relaxed) {
                nix::fcntl::renameat2(
                    &dir,
                    "race.json",
                    &dir,
                    "other",
                    nix::fcntl::RenameFlags::RENAME_EXCHANGE,
                )
                .unwrap();
                swaps += 1;
            }
            swaps
        })
    };
    let (out, killed) = run_bounded(
        ws.path(),
        &["harness", "race", "--json"],
        Stdio::null(),
        Duration::from_secs(300),
    );
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert!(!killed, "the harness hung");
    let report = parse_json(&out);
    let cases = report["cases"].as_array().unwrap();
    assert_eq!(cases.len(), CASES, "{report}");
    let outside_reads = report["failures"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f.to_string().contains("OUTSIDE"))
        .count();
    let inside = cases.iter().filter(|c| c["passed"] == true).count();
    assert_eq!(
        outside_reads, 0,
        "read the outside file {outside_reads} times in {CASES} ({swaps} swaps)"
    );
    assert!(inside > 0, "no admission succeeded: {report}");
    // The refusals say why.
    if let Some(f) = report["failures"].as_array().unwrap().first() {
        assert!(f.to_string().contains("symlink"), "{f}");
    }
}

/// Issue 13, item 2: a FIFO or `/dev/zero` as the artifact, `X.yaml` or inputs file must not
/// hang or exhaust memory.
#[test]
fn special_files_are_refused_without_hanging() {
    let ws = tempfile::tempdir().unwrap();
    write_files(
        ws.path(),
        &[
            ("pkg/X.yaml", &paged_profile("workspace")),
            ("pkg/pick.mjs", PICK),
        ],
    );
    let fifo = ws.path().join("fifo.json");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    symlink("/dev/zero", ws.path().join("zero.json")).unwrap();
    let limit = Duration::from_secs(20);
    for (file, code, needle) in [
        ("fifo.json", "artifact_type", "a FIFO"),
        ("zero.json", "artifact_scope", "symlink"),
    ] {
        let arg = format!("file={file}");
        let (out, killed) = run_bounded(
            ws.path(),
            &["skill", "pkg", "-i", &arg, "--json"],
            Stdio::null(),
            limit,
        );
        assert!(!killed, "{file}: runx hung");
        let v = parse_json(&out);
        assert_eq!(v["error"]["code"], code, "{file}: {v}");
        assert!(
            v["error"]["message"].as_str().unwrap().contains(needle),
            "{v}"
        );
    }
    // The inputs file.
    for (file, needle) in [("fifo.json", "a FIFO"), ("zero.json", "symlink")] {
        let (out, killed) = run_bounded(
            ws.path(),
            &["skill", "pkg", "--inputs", file, "--json"],
            Stdio::null(),
            limit,
        );
        assert!(!killed, "--inputs {file}: runx hung");
        assert_eq!(out.status.code(), Some(64));
        let v = parse_json(&out);
        assert_eq!(v["error"]["code"], "inputs_file", "{v}");
        assert!(
            v["error"]["message"].as_str().unwrap().contains(needle),
            "{v}"
        );
    }
    // X.yaml as a FIFO, and as a link to /dev/zero (its reported size is 0).
    for (name, make) in [
        (
            "fifo-pkg",
            Box::new(|p: &Path| {
                nix::unistd::mkfifo(&p.join("X.yaml"), nix::sys::stat::Mode::S_IRWXU).unwrap()
            }) as Box<dyn Fn(&Path)>,
        ),
        (
            "zero-pkg",
            Box::new(|p: &Path| symlink("/dev/zero", p.join("X.yaml")).unwrap()),
        ),
    ] {
        let pkg = ws.path().join(name);
        std::fs::create_dir_all(&pkg).unwrap();
        make(&pkg);
        for args in [
            vec!["skill", name, "--json"],
            vec!["skill", "inspect", name],
            vec!["harness", name],
        ] {
            let (out, killed) = run_bounded(ws.path(), &args, Stdio::null(), limit);
            assert!(!killed, "{args:?}: runx hung");
            assert_eq!(out.status.code(), Some(64), "{args:?}: {out:?}");
        }
    }
}

/// Issue 13, item 2: `--inputs -` reads at most the documented cap, then fails as an input
/// error instead of reading `/dev/zero` until memory runs out.
#[test]
fn stdin_inputs_are_capped() {
    let ws = tempfile::tempdir().unwrap();
    write_files(
        ws.path(),
        &[
            ("pkg/X.yaml", &paged_profile("workspace")),
            ("pkg/pick.mjs", PICK),
        ],
    );
    let zero = std::fs::File::open("/dev/zero").unwrap();
    let (out, killed) = run_bounded(
        ws.path(),
        &["skill", "pkg", "--inputs", "-", "--json"],
        Stdio::from(zero),
        Duration::from_secs(20),
    );
    assert!(!killed, "runx read /dev/zero without bound");
    assert_eq!(out.status.code(), Some(64));
    let v = parse_json(&out);
    assert_eq!(v["error"]["kind"], "input", "{v}");
    assert_eq!(v["error"]["code"], "inputs_bytes", "{v}");
    assert!(
        v["error"]["message"].as_str().unwrap().contains("67108864"),
        "{v}"
    );
}

/// Issue 13, item 6: a megabyte of nested brackets (under the 1 MiB profile cap) is refused
/// before parsing, through `runx skill` and `runx harness`; the old parser took minutes.
#[test]
fn deep_yaml_is_refused_before_parsing() {
    let ws = tempfile::tempdir().unwrap();
    let depth = 500_000;
    let deep = format!(
        "skill: s\nrun: {{ type: javascript, module: a.mjs }}\nx: {}{}\n",
        "[".repeat(depth),
        "]".repeat(depth)
    );
    write_files(
        ws.path(),
        &[
            ("deep/X.yaml", &deep),
            ("deep/a.mjs", "export default () => ({});"),
            (
                "fix/X.yaml",
                "skill: fix\nrun: { type: javascript, module: a.mjs }\n",
            ),
            ("fix/a.mjs", "export default () => ({});"),
            (
                "fix/fixtures/deep.yaml",
                &format!(
                    "name: x\ninputs: {}{}\n",
                    "{a: ".repeat(2000),
                    "}".repeat(2000)
                ),
            ),
        ],
    );
    let limit = Duration::from_secs(30);
    let (out, killed) = run_bounded(
        ws.path(),
        &["skill", "deep", "--json"],
        Stdio::null(),
        limit,
    );
    assert!(
        !killed,
        "runx skill spent more than {limit:?} on a deep profile"
    );
    let v = parse_json(&out);
    assert_eq!(v["error"]["code"], "invalid_profile", "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("X.yaml:3:") && message.contains("yaml_depth"),
        "{message}"
    );
    for pkg in ["deep", "fix"] {
        let (out, killed) = run_bounded(ws.path(), &["harness", pkg], Stdio::null(), limit);
        assert!(!killed, "runx harness {pkg} hung");
        assert_eq!(out.status.code(), Some(64), "{pkg}: {out:?}");
        // The harness reports a broken package on stdout, with the other packages' results.
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("64 levels"),
            "{out:?}"
        );
    }
}

/// Issue 13, item 6: `runx harness` reads profiles through the same capped path as `runx skill`:
/// a 100 MB profile is refused by its size, not read.
#[test]
fn the_harness_does_not_read_a_huge_profile() {
    let ws = tempfile::tempdir().unwrap();
    let pkg = ws.path().join("huge");
    std::fs::create_dir_all(&pkg).unwrap();
    let mut text = b"skill: huge\nrun: { type: javascript, module: a.mjs }\n#".to_vec();
    text.resize(100 * 1024 * 1024, b'x');
    std::fs::write(pkg.join("X.yaml"), &text).unwrap();
    for args in [vec!["harness", "huge"], vec!["skill", "huge"]] {
        let mut c = runx();
        c.current_dir(ws.path()).args(&args).stdin(Stdio::null());
        let out = c.output().unwrap();
        assert_eq!(out.status.code(), Some(64), "{args:?}: {out:?}");
        // `runx skill` says so on stderr, `runx harness` in its report on stdout.
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(said.contains("at most 1048576 bytes"), "{args:?}: {said}");
    }
}

/// Issue 13, item 8: a symlinked `fixtures/data`, and symlinks inside it, never bring files
/// from outside the package into a case workspace.
#[test]
fn harness_data_copies_only_what_lies_inside_the_package() {
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "OUTSIDE").unwrap();
    let profile =
        "skill: data\nrun:\n  type: cli-tool\n  command: ./list.sh\n  cwd: \"{{env.RUNX_CWD}}\"\n";
    let list = "#!/bin/sh\nfind data | sort | tr '\\n' ' '; cat data/*.txt data/*/*.txt 2>/dev/null; exit 0\n";
    for (name, linked_root) in [("inner", false), ("root", true)] {
        let pkg = ws.path().join(name);
        write_files(
            &pkg,
            &[
                ("X.yaml", profile),
                ("list.sh", list),
                (
                    "fixtures/case.yaml",
                    "name: lists\nexpect: { output: { subset: { stdout: never } } }\n",
                ),
            ],
        );
        make_executable(&pkg.join("list.sh"));
        if linked_root {
            symlink(outside.path(), pkg.join("fixtures/data")).unwrap();
        } else {
            write_files(
                &pkg,
                &[
                    ("fixtures/data/own.txt", "OWN"),
                    ("fixtures/data/sub/deep.txt", "DEEP"),
                ],
            );
            symlink(
                outside.path().join("secret.txt"),
                pkg.join("fixtures/data/link.txt"),
            )
            .unwrap();
            symlink(outside.path(), pkg.join("fixtures/data/dirlink")).unwrap();
        }
        let out = run_in(ws.path(), &["harness", name, "--json"], &[]);
        let report = parse_json(&out);
        let failure = report["failures"][0].to_string();
        assert!(!failure.contains("OUTSIDE"), "{name}: {failure}");
        if linked_root {
            assert!(failure.contains("symlink"), "{failure}");
        } else {
            assert!(
                failure.contains("data/own.txt") && failure.contains("OWNDEEP"),
                "{failure}"
            );
            assert!(!failure.contains("link"), "{failure}");
        }
    }
}

pub fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}
