//! cli-tool and worker supervision under attack: redirected inputs, NUL bytes and huge
//! argument lists, signals to runx, a SIGKILLed runx, descendants that escape with `setsid`,
//! inherited descriptors, the harness environment.

use super::containment::{make_executable, write_files};
use super::*;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::json;
use std::process::Child;
use std::time::{Duration, Instant};

/// A cli-tool package `name` in `ws` whose runner `run` executes `script` (a `/bin/sh` script)
/// with `runner_extra` appended to the runner's keys.
fn tool(ws: &Path, name: &str, script: &str, runner_extra: &str) -> PathBuf {
    let pkg = ws.join(name);
    write_files(
        &pkg,
        &[
            (
                "X.yaml",
                &format!(
                    "skill: {name}\nrunners:\n  run:\n    default: true\n    type: cli-tool\n    command: ./tool.sh\n{runner_extra}"
                ),
            ),
            ("tool.sh", &format!("#!/bin/sh\n{script}")),
        ],
    );
    make_executable(&pkg.join("tool.sh"));
    pkg
}

fn spawn_runx(ws: &Path, args: &[&str], env: &[(&str, &str)]) -> Child {
    let mut c = runx();
    c.current_dir(ws)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    c.spawn().unwrap()
}

/// Waits until `file` holds a pid, and returns it.
fn wait_for_pid(file: &Path) -> i32 {
    let start = Instant::now();
    loop {
        if let Some(pid) = std::fs::read_to_string(file)
            .ok()
            .and_then(|t| t.trim().parse().ok())
        {
            return pid;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{} never appeared",
            file.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Whether `pid` is gone (or a zombie nobody has reaped yet), waiting up to `within`.
fn dies_within(pid: i32, within: Duration) -> bool {
    let start = Instant::now();
    loop {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        if stat.is_empty() || stat.contains(") Z ") {
            return true;
        }
        if start.elapsed() > within {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Issue 13, item 3: `doc_path` must not redirect the file `doc` is delivered in.
#[test]
fn an_input_cannot_redirect_another_inputs_file() {
    let ws = tempfile::tempdir().unwrap();
    tool(
        ws.path(),
        "pkg",
        "cat \"$RUNX_INPUT_DOC_PATH\"\n",
        "    inputs:\n      doc: { type: string, required: true }\n",
    );
    let redirect = [
        "skill",
        "pkg",
        "-i",
        "doc=hello",
        "-i",
        "doc_path=/etc/hostname",
    ];
    // Undeclared, `doc_path` is refused before anything is staged.
    let (v, code) = json_in(ws.path(), &redirect, &[]);
    assert_eq!(code, 64, "{v}");
    assert_eq!(v["error"]["code"], "undeclared_input", "{v}");
    // Declared too, it still cannot take the variable `doc`'s file path owns.
    tool(
        ws.path(),
        "pkg",
        "cat \"$RUNX_INPUT_DOC_PATH\"\n",
        "    inputs:\n      doc: { type: string, required: true }\n      doc_path: { type: string }\n",
    );
    let (v, code) = json_in(ws.path(), &redirect, &[]);
    assert_eq!(code, 64, "{v}");
    assert_eq!(v["error"]["kind"], "input", "{v}");
    assert_eq!(v["error"]["code"], "input_name_collision", "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("RUNX_INPUT_DOC_PATH"),
        "{v}"
    );
    let (v, code) = json_in(ws.path(), &["skill", "pkg", "-i", "doc=hello"], &[]);
    assert_eq!((code, &v["result"]["stdout"]), (0, &json!("hello")), "{v}");
    // A runner may not declare a name the runtime sets, so the caller's environment cannot
    // stand in for it either.
    tool(
        ws.path(),
        "declares",
        "true\n",
        "    environment: { optional: [RUNX_INPUT_DOC_PATH] }\n",
    );
    let (v, code) = json_in(ws.path(), &["skill", "declares"], &[]);
    assert_eq!(code, 64, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("runtime sets"),
        "{v}"
    );
}

/// Issue 13, item 3: NUL bytes and argument lists too long for the kernel are input errors
/// that say which argument and how big, before anything starts.
#[test]
fn nul_bytes_and_huge_arguments_are_input_errors() {
    let ws = tempfile::tempdir().unwrap();
    tool(
        ws.path(),
        "pkg",
        "echo started > \"$RUNX_CWD/started\"\n",
        "    args: [\"--title\", \"{{input.title}}\"]\n    cwd: \"{{env.RUNX_CWD}}\"\n    inputs:\n      title: { type: string, required: true }\n",
    );
    let (v, code) = json_in(
        ws.path(),
        &["skill", "pkg", "-i", r#"title="a\u0000b""#],
        &[],
    );
    assert_eq!(code, 64, "{v}");
    assert_eq!(v["error"]["code"], "nul_byte", "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("argument 2") && message.contains("{{input.title}}"),
        "{message}"
    );
    // One argument over the kernel's 128 KiB per-string limit.
    let big = json!({ "title": "x".repeat(200_000) }).to_string();
    std::fs::write(ws.path().join("big.json"), big).unwrap();
    let (v, code) = json_in(ws.path(), &["skill", "pkg", "--inputs", "big.json"], &[]);
    assert_eq!(code, 64, "{v}");
    assert_eq!(v["error"]["code"], "argument_list_too_long", "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("argument 2") && message.contains("200001 bytes"),
        "{message}"
    );
    // Many inputs, each mirrored inline, together over ARG_MAX.
    let mut many = serde_json::Map::new();
    many.insert("title".into(), json!("t"));
    let mut declared = String::from("      title: { type: string, required: true }\n");
    for n in 0..400 {
        many.insert(format!("extra{n}"), json!("y".repeat(8000)));
        declared.push_str(&format!("      extra{n}: string\n"));
    }
    tool(
        ws.path(),
        "pkg",
        "echo started > \"$RUNX_CWD/started\"\n",
        &format!(
            "    args: [\"--title\", \"{{{{input.title}}}}\"]\n    cwd: \"{{{{env.RUNX_CWD}}}}\"\n    inputs:\n{declared}"
        ),
    );
    std::fs::write(ws.path().join("many.json"), Value::Object(many).to_string()).unwrap();
    let (v, code) = json_in(ws.path(), &["skill", "pkg", "--inputs", "many.json"], &[]);
    assert_eq!(code, 64, "{v}");
    assert_eq!(v["error"]["code"], "argument_list_too_long", "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("together take"),
        "{v}"
    );
    assert!(!ws.path().join("started").exists(), "the tool ran");
}

/// Issue 13, item 4: SIGTERM and SIGHUP do what Ctrl-C does: the process group is killed,
/// staged inputs are removed, an `interrupted` receipt is written, and runx exits 128 + signal.
#[test]
fn sigterm_and_sighup_interrupt_like_ctrl_c() {
    for (signal, code) in [
        (Signal::SIGTERM, 143),
        (Signal::SIGHUP, 129),
        (Signal::SIGINT, 130),
    ] {
        let ws = tempfile::tempdir().unwrap();
        tool(
            ws.path(),
            "pkg",
            "echo \"$RUNX_INPUTS_PATH\" > \"$RUNX_CWD/inputs.path\"\necho $$ > \"$RUNX_CWD/tool.pid\"\nexec sleep 60\n",
            "    cwd: \"{{env.RUNX_CWD}}\"\n    timeout_seconds: 120\n",
        );
        let child = spawn_runx(ws.path(), &["skill", "pkg", "--json"], &[]);
        let tool_pid = wait_for_pid(&ws.path().join("tool.pid"));
        let staged = std::fs::read_to_string(ws.path().join("inputs.path")).unwrap();
        kill(Pid::from_raw(child.id() as i32), signal).unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(code), "{signal}: {out:?}");
        let (v, _) = json_of(&out);
        assert_eq!(v["error"]["kind"], "interrupted", "{signal}: {v}");
        let receipt = receipt_of(&v);
        assert_eq!(evidence(&receipt)["failure"]["kind"], "interrupted");
        assert_eq!(
            (
                &receipt["seal"]["disposition"],
                &receipt["seal"]["reason_code"]
            ),
            (&json!("killed"), &json!("process_killed")),
            "{signal}"
        );
        assert!(
            dies_within(tool_pid, Duration::from_secs(1)),
            "{signal}: the tool survived"
        );
        assert!(
            !Path::new(staged.trim()).exists(),
            "{signal}: staged inputs left at {staged}"
        );
    }
}

/// Issue 13, item 4: a javascript call in a loop is stopped by SIGTERM at once.
#[test]
fn sigterm_stops_a_busy_javascript_call() {
    let ws = tempfile::tempdir().unwrap();
    write_files(
        ws.path(),
        &[
            (
                "pkg/X.yaml",
                "skill: busy\nrun: { type: javascript, module: m.mjs, timeout_seconds: 30 }\n",
            ),
            ("pkg/m.mjs", "export default () => { for (;;) {} };"),
        ],
    );
    let child = spawn_runx(ws.path(), &["skill", "pkg", "--json"], &[]);
    let runx_pid = child.id() as i32;
    let start = Instant::now();
    let workers = workers_of(
        child.id(),
        Duration::from_secs(10),
        Duration::from_millis(10),
    );
    std::thread::sleep(Duration::from_millis(200));
    kill(Pid::from_raw(runx_pid), Signal::SIGTERM).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(143), "{out:?}");
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "runx waited out the call"
    );
    for w in workers {
        assert!(
            dies_within(w as i32, Duration::from_secs(2)),
            "worker {w} survived"
        );
    }
}

/// Issue 13, item 4: when runx itself is SIGKILLed, its workers and cli-tool children still
/// die (parent-death signal).
#[test]
fn a_sigkilled_runx_takes_its_children_along() {
    let ws = tempfile::tempdir().unwrap();
    tool(
        ws.path(),
        "tool",
        "echo $$ > \"$RUNX_CWD/tool.pid\"\nexec sleep 60\n",
        "    cwd: \"{{env.RUNX_CWD}}\"\n    timeout_seconds: 120\n",
    );
    write_files(
        ws.path(),
        &[
            (
                "js/X.yaml",
                "skill: busy\nrun: { type: javascript, module: m.mjs, timeout_seconds: 30 }\n",
            ),
            ("js/m.mjs", "export default () => { for (;;) {} };"),
        ],
    );
    tool(
        ws.path(),
        "escape",
        "grep '^0::' /proc/self/cgroup > \"$RUNX_CWD/cgroup\"\n\
         ( setsid sh -c 'echo $$ > \"$RUNX_CWD/escaped.pid\"; exec sleep 60' & )\n\
         echo $$ > \"$RUNX_CWD/tool.pid\"\nexec sleep 60\n",
        "    cwd: \"{{env.RUNX_CWD}}\"\n    timeout_seconds: 120\n",
    );
    tool(ws.path(), "quick", "echo hi\n", "");
    let mut child = spawn_runx(ws.path(), &["skill", "escape"], &[]);
    let tool_pid = wait_for_pid(&ws.path().join("tool.pid"));
    let escaped = wait_for_pid(&ws.path().join("escaped.pid"));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        dies_within(tool_pid, Duration::from_secs(2)),
        "the cli-tool child survived runx"
    );
    // The escaped grandchild is beyond a dead runx; where runs get a cgroup, the next runx
    // that makes one kills what the SIGKILLed runx left in its cgroup.
    let cgroup = std::fs::read_to_string(ws.path().join("cgroup")).unwrap();
    if cgroup.contains("/runx-") {
        let (v, code) = json_in(ws.path(), &["skill", "quick"], &[]);
        assert_eq!(code, 0, "{v}");
        assert!(
            dies_within(escaped, Duration::from_secs(2)),
            "the next runx left the escaped grandchild {escaped} of a killed runx alive"
        );
    } else {
        let _ = kill(Pid::from_raw(escaped), Signal::SIGKILL);
    }

    let mut child = spawn_runx(ws.path(), &["skill", "js"], &[]);
    let workers = workers_of(
        child.id(),
        Duration::from_secs(10),
        Duration::from_millis(10),
    );
    std::thread::sleep(Duration::from_millis(200));
    child.kill().unwrap();
    child.wait().unwrap();
    for w in workers {
        assert!(
            dies_within(w as i32, Duration::from_secs(2)),
            "worker {w} survived runx"
        );
    }
}

/// The double fork of issue 13, item 5: a grandchild in a session of its own, which no
/// process-group kill reaches. `wait` keeps the tool running into its timeout.
const ESCAPE: &str = "( setsid sh -c 'echo $$ > \"$RUNX_CWD/escaped.pid\"; exec sleep 60' & )\n\
while [ ! -s \"$RUNX_CWD/escaped.pid\" ]; do sleep 0.01; done\n\
[ \"$1\" = wait ] && sleep 60\n\
echo '{\"ok\": true}'\n";

/// Issue 13, item 5: descendants that escaped with `setsid` die at the normal exit and at the
/// timeout, with the per-run cgroup and with the subreaper fallback (`RUNX_CGROUP=off`).
#[test]
fn descendants_that_escape_with_setsid_are_killed() {
    for cgroup in ["auto", "off"] {
        let ws = tempfile::tempdir().unwrap();
        tool(
            ws.path(),
            "pkg",
            ESCAPE,
            "    cwd: \"{{env.RUNX_CWD}}\"\n    timeout_seconds: 1\n    args: [\"{{input.mode}}\"]\n    inputs:\n      mode: { type: string, default: exit }\n",
        );
        for (mode, outcome) in [("exit", "completed"), ("wait", "failed")] {
            let _ = std::fs::remove_file(ws.path().join("escaped.pid"));
            let arg = format!("mode={mode}");
            let (v, _) = json_in(
                ws.path(),
                &["skill", "pkg", "-i", &arg],
                &[("RUNX_CGROUP", cgroup)],
            );
            assert_eq!(v["status"], "sealed", "{cgroup}/{mode}: {v}");
            assert_eq!(v["outcome"], outcome, "{cgroup}/{mode}: {v}");
            let closure = if mode == "wait" {
                "timed_out"
            } else {
                "closed"
            };
            assert_eq!(v["closure"]["disposition"], closure, "{cgroup}/{mode}: {v}");
            let escaped = wait_for_pid(&ws.path().join("escaped.pid"));
            assert!(
                dies_within(escaped, Duration::from_millis(500)),
                "{cgroup}/{mode}: the escaped grandchild {escaped} survived"
            );
        }
    }
}

/// Issue 13, item 9: a descriptor the caller left open without close-on-exec reaches neither
/// a cli-tool child nor a worker.
#[test]
fn inherited_descriptors_do_not_reach_children() {
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;
    let ws = tempfile::tempdir().unwrap();
    tool(
        ws.path(),
        "pkg",
        "[ -e /proc/$$/fd/7 ] && echo leaked || echo clean\n",
        "",
    );
    write_files(
        ws.path(),
        &[
            (
                "js/X.yaml",
                "skill: busy\nrun: { type: javascript, module: m.mjs, timeout_seconds: 30 }\n",
            ),
            (
                "js/m.mjs",
                "export default () => { let n = 0; for (let i = 0; i < 5e6; i++) n += i; return { n }; };",
            ),
        ],
    );
    let file = std::fs::File::open("/dev/null").unwrap();
    let raw = file.as_raw_fd();
    let with_fd7 = |args: &[&str]| {
        let mut c = runx();
        c.current_dir(ws.path())
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // SAFETY: dup2 is async-signal-safe; it gives the child fd 7 without close-on-exec,
        // as a careless parent of runx would.
        unsafe {
            c.pre_exec(move || {
                if nix::libc::dup2(raw, 7) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        c
    };
    let out = with_fd7(&["skill", "pkg", "--json"]).output().unwrap();
    let (v, _) = json_of(&out);
    assert_eq!(v["result"]["stdout"], "clean\n", "{v}");
    // The worker: look at its descriptors while it computes.
    let child = with_fd7(&["skill", "js"]).spawn().unwrap();
    let runx_pid = child.id() as i32;
    let start = Instant::now();
    let mut looked = false;
    while start.elapsed() < Duration::from_secs(10) && !looked {
        for w in children_of(runx_pid as u32) {
            // Between fork and exec the child is still a copy of runx, holding runx's
            // descriptors (marked close-on-exec); only the worker program counts.
            let cmdline = std::fs::read(format!("/proc/{w}/cmdline")).unwrap_or_default();
            if !String::from_utf8_lossy(&cmdline).contains("__worker") {
                continue;
            }
            if let Ok(fds) = std::fs::read_dir(format!("/proc/{w}/fd")) {
                let fds: Vec<String> = fds
                    .flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect();
                assert!(
                    !fds.contains(&"7".to_string()),
                    "worker {w} holds fd 7: {fds:?}"
                );
                looked = true;
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(looked, "no worker was seen");
    drop(file);
}

/// Issue 13, item 8: a harness cli-tool case sees exactly the documented baseline and its own
/// `env`, whatever the harness's environment holds.
#[test]
fn harness_cli_tool_cases_see_a_fixed_baseline() {
    let ws = tempfile::tempdir().unwrap();
    let pkg = tool(
        ws.path(),
        "pkg",
        "names=$(tr '\\0' '\\n' < /proc/$$/environ | cut -d= -f1 | sort | tr '\\n' ' ')\n\
         [ \"$HOME\" = \"$RUNX_CWD\" ] && home=workspace || home=\"$HOME\"\n\
         echo \"$names|$PATH|$LANG|$TZ|$home|$REGION\"\n",
        "    environment: { optional: [REGION] }\n",
    );
    write_files(
        &pkg,
        &[(
            "fixtures/env.yaml",
            "name: baseline\nenv: { REGION: eu }\nexpect:\n  output:\n    exact:\n      stdout: \"HOME LANG PATH REGION RUNX_CWD RUNX_INPUTS_JSON RUNX_INPUTS_PATH RUNX_RECEIPT_DIR TZ |/usr/local/bin:/usr/bin:/bin|C.UTF-8|UTC|workspace|eu\\n\"\n",
        )],
    );
    let out = run_in(
        ws.path(),
        &["harness", "pkg"],
        &[
            ("HOME", "/home/leak"),
            ("LANG", "xx_XX.leak"),
            ("TZ", "Leak/Zone"),
            ("USER", "leak"),
            ("TMPDIR", "/tmp"),
            ("LC_ALL", "C"),
            ("REGION", "leak"),
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
