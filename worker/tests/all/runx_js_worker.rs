//! `runx-js-worker`, the worker runx itself runs: its protocol (runx's version 3) spoken to the
//! executable as runx speaks it, and runx 0.8.2 running a package on it.

use serde_json::{Value, json};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

/// This workspace's `runx-js-worker`, as cargo built it for the tests.
pub const WORKER: &str = env!("CARGO_BIN_EXE_runx-js-worker");

/// The worker, started as runx starts it: no arguments, an empty environment, piped stdio.
struct Worker {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: ChildStdout,
}

impl Worker {
    fn start() -> Worker {
        let mut child = Command::new(WORKER)
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start runx-js-worker");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        Worker {
            child,
            stdin,
            stdout,
        }
    }

    fn send_bytes(&mut self, payload: &[u8]) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin
            .write_all(&(payload.len() as u32).to_be_bytes())
            .unwrap();
        stdin.write_all(payload).unwrap();
        stdin.flush().unwrap();
    }

    fn send(&mut self, message: &Value) {
        self.send_bytes(message.to_string().as_bytes());
    }

    fn receive(&mut self) -> Value {
        let mut len = [0u8; 4];
        self.stdout.read_exact(&mut len).expect("a frame's length");
        let mut payload = vec![0u8; u32::from_be_bytes(len) as usize];
        self.stdout.read_exact(&mut payload).expect("a frame");
        serde_json::from_slice(&payload).expect("a JSON frame")
    }

    fn handshake(&mut self) {
        self.send(&json!({ "type": "hello", "protocol_version": 3 }));
        assert_eq!(
            self.receive(),
            json!({ "type": "ready", "protocol_version": 3 })
        );
    }

    /// Closes stdin and waits: the exit status and what the worker wrote on stderr.
    /// Asserts the worker answers a plain call `id` after what came before.
    fn still_serves(&mut self, id: &str) {
        self.send(&invoke(id, MODULE, "add", json!({ "a": 2, "b": 3 }), 2000));
        assert_eq!(self.receive()["output"]["sum"], 5);
    }

    fn finish(mut self) -> (Option<i32>, String) {
        drop(self.stdin.take());
        let mut rest = Vec::new();
        self.stdout.read_to_end(&mut rest).unwrap();
        let out = self.child.wait_with_output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

fn invoke(id: &str, source: &str, export: &str, inputs: Value, wall_ms: u64) -> Value {
    json!({
        "type": "invoke",
        "protocol_version": 3,
        "invocation_id": id,
        "entry_module": "main.mjs",
        "export_name": export,
        "modules": { "main.mjs": source, "lib.mjs": "export const twice = (n) => n * 2;" },
        "inputs": inputs,
        "environment": { "REGION": "eu-west" },
        "limits": {
            "source_bytes": 4194304, "input_bytes": 4194304, "output_bytes": 4194304,
            "heap_bytes": 67108864, "stack_bytes": 4194304, "wall_milliseconds": wall_ms,
            "queued_jobs": 4096
        }
    })
}

const MODULE: &str = r#"import { twice } from "./lib.mjs";
export function add(i, c) { return { sum: twice(i.a + i.b) / 2, now: Date.now(), region: c.environment.REGION }; }
export function random() { return { r: Math.random() }; }
export function fail() { throw new Error("no such order"); }
export function spin() { for (;;) {} }
export function reach() {
  const f = Function("return this")();
  const names = ["process", "require", "Deno", "Bun", "fetch", "setTimeout", "XMLHttpRequest", "WebAssembly", "SharedArrayBuffer", "Atomics"];
  return { host: names.filter((n) => typeof f[n] !== "undefined" || typeof globalThis[n] !== "undefined"), url: Runx.parseUrl("https://Example.com/a").hostname };
}
export function bomb() { const a = new Array(1e9).fill(1); return { n: a.length }; }
"#;

#[test]
fn a_handshake_then_calls_on_one_worker() {
    let mut w = Worker::start();
    w.handshake();
    w.send(&invoke(
        "c1",
        MODULE,
        "add",
        json!({ "a": 2, "b": 3 }),
        2000,
    ));
    assert_eq!(
        w.receive(),
        json!({
            "type": "result", "protocol_version": 3, "invocation_id": "c1",
            "output": { "sum": 5, "now": 0, "region": "eu-west" }
        })
    );
    w.send(&invoke("c2", MODULE, "fail", json!({}), 2000));
    let failure = w.receive();
    assert_eq!(failure["type"], "failure");
    assert_eq!(failure["invocation_id"], "c2");
    assert_eq!(failure["code"], "execution_failed");
    assert_eq!(failure["disposition"], "reuse");
    assert!(failure.get("limit").is_none(), "{failure}");
    let message = failure["message"].as_str().unwrap();
    assert!(message.contains("no such order"), "{message}");
    w.send(&invoke("c3", MODULE, "random", json!({}), 2000));
    let failure = w.receive();
    assert_eq!(failure["code"], "execution_failed");
    assert!(
        failure["message"].as_str().unwrap().contains("Math.random"),
        "{failure}"
    );
    // Reused after both failures.
    w.send(&invoke(
        "c4",
        MODULE,
        "add",
        json!({ "a": 1, "b": 1 }),
        2000,
    ));
    assert_eq!(w.receive()["output"]["sum"], 2);
    assert_eq!(w.finish(), (Some(0), String::new()));
}

#[test]
fn limits_runx_would_not_send_are_an_invalid_request() {
    let mut w = Worker::start();
    w.handshake();
    let mut request = invoke("c1", MODULE, "add", json!({ "a": 2, "b": 3 }), 2000);
    request["limits"]["heap_bytes"] = json!(1024);
    w.send(&request);
    let failure = w.receive();
    assert_eq!(
        (&failure["code"], &failure["disposition"]),
        (&json!("invalid_request"), &json!("reuse"))
    );
    let request = invoke("c2", MODULE, "add", json!({ "a": 2, "b": 3 }), 31_000);
    w.send(&request);
    assert_eq!(w.receive()["code"], "invalid_request");
}

#[test]
fn a_spin_loop_ends_at_the_wall() {
    let mut w = Worker::start();
    w.handshake();
    let started = Instant::now();
    w.send(&invoke("c1", MODULE, "spin", json!({}), 100));
    let failure = w.receive();
    assert_eq!(failure["code"], "resource_limit");
    assert_eq!(failure["limit"], "wall_milliseconds");
    assert!(started.elapsed() < Duration::from_secs(5));
    w.still_serves("c2");
}

/// `new Array(1e9).fill(1)` runs out of heap inside a builtin. QuickJS fails the call and the
/// worker goes on; V8 ends the process, and the worker still answers the invoke first, in
/// runx's words: `resource_limit` with the heap named in the message (runx has no name for
/// it), and a worker to discard. runx reads that answer, not "worker exited".
#[test]
fn a_heap_bomb_in_a_builtin_is_answered_with_the_heap_limit() {
    let mut w = Worker::start();
    w.handshake();
    let bomb =
        "export default () => { const a = new Array(1e9).fill(1); return { n: a.length }; };";
    w.send(&invoke("c1", bomb, "default", json!({}), 30_000));
    let failure = w.receive();
    assert_eq!(failure["type"], "failure", "{failure}");
    assert_eq!(failure["invocation_id"], "c1", "{failure}");
    assert_eq!(failure["code"], "resource_limit", "{failure}");
    assert!(failure.get("limit").is_none(), "{failure}");
    assert!(
        failure["message"]
            .as_str()
            .unwrap()
            .contains("heap exceeded its limit"),
        "{failure}"
    );
    if cfg!(feature = "v8") {
        // V8 ended the process after the answer made ahead of the call.
        assert_eq!(failure["disposition"], "discard", "{failure}");
        let (code, stderr) = w.finish();
        assert_ne!(code, Some(0), "{stderr}");
    } else {
        assert_eq!(failure["disposition"], "reuse", "{failure}");
        w.still_serves("c2");
    }
}

#[test]
fn an_oversize_frame_ends_the_worker_as_runx_own_does() {
    let mut w = Worker::start();
    w.handshake();
    let stdin = w.stdin.as_mut().unwrap();
    stdin
        .write_all(&(10 * 1024 * 1024 + 1u32).to_be_bytes())
        .unwrap();
    let (code, stderr) = w.finish();
    assert_eq!(code, Some(70), "{stderr}");
    assert!(stderr.contains("exceeds limit 10485760"), "{stderr}");
}

#[test]
fn a_bad_message_ends_the_worker_and_a_second_hello_is_refused() {
    let mut w = Worker::start();
    w.handshake();
    w.send(&json!({ "type": "goodbye" }));
    let (code, stderr) = w.finish();
    assert_eq!(code, Some(70), "{stderr}");
    assert!(stderr.contains("worker frame JSON is invalid"), "{stderr}");

    let mut w = Worker::start();
    w.handshake();
    let mut request = invoke("c1", MODULE, "add", json!({}), 2000);
    request["unexpected"] = json!(true);
    w.send(&request);
    assert_eq!(w.finish().0, Some(70), "a field runx does not send");

    let mut w = Worker::start();
    w.handshake();
    w.send(&json!({ "type": "hello", "protocol_version": 3 }));
    let failure = w.receive();
    assert_eq!(failure["code"], "invalid_protocol");
    assert_eq!(failure["disposition"], "discard");
    assert_eq!(failure["invocation_id"], Value::Null);
    assert_eq!(w.finish().0, Some(0));

    let mut w = Worker::start();
    w.send(&json!({ "type": "hello", "protocol_version": 2 }));
    assert_eq!(w.receive()["code"], "invalid_protocol");
}

#[test]
fn an_inherited_environment_is_refused() {
    let out = Command::new(WORKER)
        .env_clear()
        .env("HOME", "/root")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(70));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("inherited an environment"), "{stderr}");
    assert!(out.stdout.is_empty());
}

/// runx 0.8.2 itself: `RUNX_UPSTREAM_BIN`, else `../shared/runx/runx.gz` (beside the
/// repository) unpacked once into `target/upstream-runx/`. `None` where neither is here.
pub fn upstream_runx() -> Option<PathBuf> {
    if let Some(bin) = std::env::var_os("RUNX_UPSTREAM_BIN").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(bin));
    }
    upstream("runx")
}

/// `../shared/runx/NAME.gz` (beside the repository), unpacked once into
/// `target/upstream-runx/NAME`: runx 0.8.2's `runx` or its own `runx-js-worker`. `None` where
/// it is not on this machine.
pub fn upstream(name: &str) -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let gz = root.join(format!("../shared/runx/{name}.gz"));
    if !gz.is_file() {
        return None;
    }
    let dir = root.join("target/upstream-runx");
    let bin = dir.join(name);
    if !bin.is_file() {
        std::fs::create_dir_all(&dir).unwrap();
        // One partial file per thread: two tests of this process may unpack at once.
        let partial = dir.join(format!(
            "{name}.{}.{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let done = Command::new("sh")
            .arg("-c")
            .arg("gunzip -c \"$1\" > \"$2\" && chmod +x \"$2\"")
            .args(["sh", gz.to_str().unwrap(), partial.to_str().unwrap()])
            .status()
            .unwrap();
        assert!(done.success(), "cannot unpack {}", gz.display());
        std::fs::rename(&partial, &bin).unwrap();
    }
    Some(bin)
}

const PACKAGE_YAML: &str = r#"skill: tiny
version: "0.1.0"
runners:
  add:
    default: true
    type: javascript
    module: main.mjs
    export: add
    timeout_seconds: 1
    environment:
      optional: [REGION]
    inputs:
      a: { type: number, required: true }
      b: { type: number, required: true }
  random:
    type: javascript
    module: main.mjs
    export: random
    timeout_seconds: 1
  spin:
    type: javascript
    module: main.mjs
    export: spin
    timeout_seconds: 1
  reach:
    type: javascript
    module: main.mjs
    export: reach
    timeout_seconds: 1
  bomb:
    type: javascript
    module: main.mjs
    export: bomb
    timeout_seconds: 30
"#;

/// runx 0.8.2 `skill tiny RUNNER --json ARGS` with this worker: its exit code and JSON.
fn runx_skill(runx: &Path, dir: &Path, runner: &str, args: &[&str]) -> (i32, Value) {
    let out = Command::new(runx)
        .current_dir(dir)
        .args(["skill", "tiny", runner, "--json"])
        .args(args)
        .env("HOME", dir.join("home"))
        .env("REGION", "eu-west")
        .env("RUNX_JS_WORKER_PATH", WORKER)
        .env_remove("RUNX_RECEIPT_DIR")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let json = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "runx said no JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), json)
}

#[test]
fn runx_0_8_2_runs_a_package_on_this_worker() {
    let Some(runx) = upstream_runx() else {
        eprintln!(
            "runx 0.8.2 is not on this machine (../shared/runx/runx.gz, or RUNX_UPSTREAM_BIN): \
             runx_0_8_2_runs_a_package_on_this_worker SKIPPED"
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let package = dir.path().join("tiny");
    std::fs::create_dir_all(&package).unwrap();
    std::fs::write(
        package.join("SKILL.md"),
        "---\nname: tiny\ndescription: A tiny javascript package.\n---\n\n# Tiny\n",
    )
    .unwrap();
    std::fs::write(package.join("X.yaml"), PACKAGE_YAML).unwrap();
    std::fs::write(package.join("main.mjs"), MODULE).unwrap();
    std::fs::write(
        package.join("lib.mjs"),
        "export const twice = (n) => n * 2;\n",
    )
    .unwrap();

    let (code, out) = runx_skill(&runx, dir.path(), "add", &["--a", "2", "--b", "3"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["status"], "sealed", "{out}");
    assert_eq!(out["outcome"], "completed", "{out}");
    assert_eq!(out["result"]["sum"], 5, "{out}");
    assert_eq!(out["result"]["now"], 0, "Date.now() is pinned: {out}");

    let (code, out) = runx_skill(&runx, dir.path(), "random", &[]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(out["outcome"], "failed", "{out}");
    let message = out["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("Math.random() is unavailable in deterministic modules"),
        "this runtime's refusal, through runx: {out}"
    );

    let started = Instant::now();
    let (code, out) = runx_skill(&runx, dir.path(), "spin", &[]);
    let took = started.elapsed();
    assert_eq!(code, 1, "{out}");
    assert_eq!(out["outcome"], "failed", "{out}");
    let message = out["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("deterministic JavaScript worker exceeded 1000 ms wall limit"),
        "runx's own wall failure: {out}"
    );
    assert!(took < Duration::from_secs(10), "{took:?}");

    // Nothing of a host is reachable, through runx either; runx's own global is.
    let (code, out) = runx_skill(&runx, dir.path(), "reach", &[]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["result"]["host"], json!([]), "{out}");
    assert_eq!(out["result"]["url"], "example.com", "{out}");

    // A heap bomb inside a builtin: runx records the heap limit this worker answered (on V8,
    // the answer made ahead of a process V8 ends), not a worker that vanished.
    let (code, out) = runx_skill(&runx, dir.path(), "bomb", &[]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(out["outcome"], "failed", "{out}");
    let message = out["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("heap exceeded its limit"),
        "the heap limit, through runx: {out}"
    );
}
