//! `runx serve`: the JSON-RPC step server driven over its real stdin and stdout.

use super::*;
use serde_json::json;
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

/// How long any one answer may take before a test gives up (steps here take well under it).
const PATIENCE: Duration = Duration::from_secs(20);

/// A package with the runners these tests need, written at test time.
fn package(root: &Path) -> PathBuf {
    let dir = root.join("steps");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("X.yaml"),
        r#"skill: steps
version: "1.0.0"
runners:
  echo:
    default: true
    type: javascript
    module: steps.mjs
    export: echo
    environment: { optional: [REGION, SECRET] }
    inputs: { n: number, x: any, i: any }
  spin:
    type: javascript
    module: steps.mjs
    export: spin
    timeout_seconds: 30
  burn:
    type: javascript
    module: steps.mjs
    export: burn
  count:
    type: javascript
    module: steps.mjs
    export: count
    inputs:
      file: { type: string, required: true }
      base: { type: string, default: workspace }
    pages: { path_from: file, path_scope_from: base, page_bytes: 64 }
  sleep:
    type: cli-tool
    command: /bin/sleep
    args: ["{{input.seconds}}"]
    timeout_seconds: 60
    inputs:
      seconds: { type: number, default: 30 }
  fail:
    type: javascript
    module: steps.mjs
    export: fail
  env:
    type: cli-tool
    command: /usr/bin/env
  python:
    type: cli-tool
    command: python3
    args: ["-c", "import json; print(json.dumps({'ok': True}))"]
  region:
    type: cli-tool
    command: /bin/sh
    args: ["-c", "printf '{\"region\":\"%s\",\"path\":\"%s\"}' \"$REGION\" \"$PATH\""]
    environment: { optional: [REGION] }
"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("steps.mjs"),
        r#"export function echo(inputs, { environment }) {
  console.log("echo", JSON.stringify(inputs));
  return { inputs, environment };
}
export function spin() { for (;;) {} }
export function fail() { console.warn("about to fail"); throw new Error("boom"); }
export function burn(inputs) { let x = 0; for (let i = 0; i < inputs.n; i++) x += i % 7; return { x }; }
export function count(inputs) {
  const p = inputs.runx_page;
  const n = (p.state ?? 0) + p.records.length;
  return p.eof ? { n } : { runx_page: { state: n } };
}
"#,
    )
    .unwrap();
    let records: Vec<String> = (0..40).map(|i| format!("{{\"i\":{i}}}")).collect();
    std::fs::write(root.join("items.json"), format!("[{}]", records.join(","))).unwrap();
    dir
}

/// One `runx serve` process: requests go to its stdin, its stdout lines come back on a channel.
struct Session {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    /// Lines read while waiting for another answer.
    pending: VecDeque<Value>,
}

impl Session {
    fn start(cwd: &Path, args: &[&str]) -> Session {
        Session::start_with_env(cwd, args, &[])
    }

    fn start_with_env(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Session {
        let mut c = runx();
        c.current_dir(cwd)
            .arg("serve")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        for (k, v) in env {
            c.env(k, v);
        }
        let mut child = c.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Session {
            stdin: child.stdin.take(),
            child,
            lines,
            pending: VecDeque::new(),
        }
    }

    fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    fn send(&mut self, request: Value) {
        let mut line = request.to_string().into_bytes();
        line.push(b'\n');
        self.send_raw(&line);
    }

    fn request(&mut self, id: Value, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
    }

    /// The next line on stdout, as text.
    fn next_line(&mut self) -> String {
        match self.lines.recv_timeout(PATIENCE) {
            Ok(l) => l,
            Err(RecvTimeoutError::Timeout) => panic!("no answer within {PATIENCE:?}"),
            Err(RecvTimeoutError::Disconnected) => panic!("the server closed its stdout"),
        }
    }

    fn next(&mut self) -> Value {
        if let Some(v) = self.pending.pop_front() {
            return v;
        }
        let line = self.next_line();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// The answer to `id`, keeping whatever else arrives first.
    fn answer(&mut self, id: &Value) -> Value {
        if let Some(i) = self
            .pending
            .iter()
            .position(|v| &v["id"] == id && v.get("method").is_none())
        {
            return self.pending.remove(i).unwrap();
        }
        loop {
            let line = self.next_line();
            let v: Value = serde_json::from_str(&line).unwrap();
            if &v["id"] == id && v.get("method").is_none() {
                return v;
            }
            self.pending.push_back(v);
        }
    }

    /// Closes stdin and waits for the exit code.
    fn close(mut self) -> (i32, Vec<Value>) {
        drop(self.stdin.take());
        let status = self.child.wait().unwrap();
        let mut rest: Vec<Value> = self.pending.drain(..).collect();
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(5)) {
            rest.push(serde_json::from_str(&line).unwrap());
        }
        (status.code().unwrap_or(-1), rest)
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The result text of an answer line, exactly as it was written.
fn result_text(line: &str) -> &str {
    let start = line.find("\"result\":").expect("a result") + "\"result\":".len();
    &line[start..line.len() - 1]
}

/// Replaces what differs from run to run in a result's text: the receipt's path and id (a
/// content address, so of its time too) and the time the run closed.
fn without_receipt(text: &str, result: &Value) -> String {
    let mut text = text.to_string();
    for (value, placeholder) in [
        (&result["receipt_path"], "\"RECEIPT\""),
        (&result["receipt_id"], "\"RECEIPT_ID\""),
        (&result["closure"]["closed_at"], "\"CLOSED_AT\""),
    ] {
        if let Some(v) = value.as_str() {
            text = text.replace(&serde_json::to_string(v).unwrap(), placeholder);
        }
    }
    text
}

#[test]
fn a_result_is_byte_for_byte_what_skill_json_prints() {
    let ws = tempfile::tempdir().unwrap();
    let pkg = package(ws.path());
    type Case<'a> = (&'a str, Value, Vec<(&'a str, &'a str)>);
    let cases: Vec<Case> = vec![
        (
            "echo",
            json!({"a": [1, "two"]}),
            vec![("REGION", "eu"), ("OTHER", "x")],
        ),
        ("echo", json!({}), vec![]),
        ("fail", json!({}), vec![]),
        ("count", json!({"file": "items.json"}), vec![]),
        ("count", json!({"file": "missing.json"}), vec![]),
        (
            "region",
            json!({}),
            vec![("PATH", "/usr/bin"), ("REGION", "eu")],
        ),
        ("nope", json!({}), vec![]),
    ];
    let mut s = Session::start(ws.path(), &["--pool-size", "1"]);
    for (i, (runner, inputs, env)) in cases.iter().enumerate() {
        let env_map: serde_json::Map<String, Value> =
            env.iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
        s.request(
            json!(i),
            "run",
            json!({"skill": "steps", "runner": runner, "inputs": inputs, "env": env_map}),
        );
        let line = s.next_line();
        let served: Value = serde_json::from_str(result_text(&line)).unwrap();
        let served_text = without_receipt(result_text(&line), &served);

        let mut c = runx();
        c.current_dir(ws.path())
            .env_clear()
            .envs(env.iter().copied())
            .args([
                "skill",
                pkg.to_str().unwrap(),
                runner,
                "--inputs",
                "-",
                "--json",
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        let mut child = c.spawn().unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(inputs.to_string().as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let printed = String::from_utf8(out.stdout).unwrap();
        let printed = printed.trim_end();
        let cli: Value = serde_json::from_str(printed).unwrap();
        assert_eq!(
            served_text,
            without_receipt(printed, &cli),
            "runner {runner}: serve and `runx skill --json` differ"
        );
        if let Some(p) = served["receipt_path"].as_str() {
            assert!(Path::new(p).is_file(), "{p}");
            assert_eq!(receipt_of(&served)["id"], served["receipt_id"]);
        }
        // The same package, runner and inputs: the same run id.
        assert_eq!(served["run_id"], cli["run_id"], "runner {runner}");
    }
    // The cases covered sealed and failed runs, console lines and a cli-tool.
    let (code, _) = s.close();
    assert_eq!(code, 0);
}

#[test]
fn malformed_requests_get_errors_and_the_server_goes_on() {
    let ws = tempfile::tempdir().unwrap();
    package(ws.path());
    let mut s = Session::start(
        ws.path(),
        &["--pool-size", "1", "--max-request-bytes", "4096"],
    );
    let expect = |s: &mut Session, code: i64, id: Value| {
        let v = s.next();
        assert_eq!(v["error"]["code"], code, "{v}");
        assert_eq!(v["id"], id, "{v}");
        assert_eq!(v["jsonrpc"], "2.0");
    };
    s.send_raw(b"{not json\n");
    expect(&mut s, -32700, Value::Null);
    s.send_raw(b"\xff\xfe\x00garbage\n");
    expect(&mut s, -32700, Value::Null);
    s.send_raw(b"\n   \n");
    s.send_raw(format!("{}\n", "x".repeat(100_000)).as_bytes());
    expect(&mut s, -32600, Value::Null);
    s.send(json!([{"jsonrpc": "2.0", "id": 1, "method": "inspect"}]));
    expect(&mut s, -32600, Value::Null);
    s.send(json!("run"));
    expect(&mut s, -32600, Value::Null);
    s.send(json!({"jsonrpc": "1.0", "id": 2, "method": "run"}));
    expect(&mut s, -32600, json!(2));
    s.send(json!({"jsonrpc": "2.0", "id": [3], "method": "run"}));
    expect(&mut s, -32600, Value::Null);
    s.request(json!(4), "launch", json!({}));
    expect(&mut s, -32601, json!(4));
    s.request(json!(5), "run", json!({"runner": "echo"}));
    expect(&mut s, -32602, json!(5));
    s.request(json!(6), "run", json!({"skill": "steps", "inputs": [1]}));
    expect(&mut s, -32602, json!(6));
    s.request(
        json!(7),
        "run",
        json!({"skill": "steps", "cwd": "no/such/dir"}),
    );
    expect(&mut s, -32602, json!(7));
    s.request(
        json!(8),
        "run",
        json!({"skill": "steps", "env": {"A=B": "c"}}),
    );
    expect(&mut s, -32602, json!(8));
    s.request(json!(9), "inspect", json!({"skill": "no-such-package"}));
    let v = s.next();
    assert_eq!(v["error"]["code"], -32002, "{v}");
    assert_eq!(v["error"]["data"]["kind"], "profile", "{v}");
    // A member named twice: readers disagree on which counts, so the line is refused.
    s.send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"inspect\",\"params\":{\"skill\":\"a\",\"skill\":\"steps\"}}\n");
    expect(&mut s, -32700, Value::Null);
    // Ids come back as written, byte for byte, through a real step.
    s.send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":12345678901234567890123,\"method\":\"inspect\",\"params\":{\"skill\":\"steps\"}}\n");
    let line = s.next_line();
    assert!(
        line.starts_with("{\"jsonrpc\":\"2.0\",\"id\":12345678901234567890123,\"result\":"),
        "{line}"
    );
    // An input integer beyond 64 bits reads as a double: refused, as `runx skill` refuses it.
    s.send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"run\",\"params\":{\"skill\":\"steps\",\"inputs\":{\"n\":12345678901234567890123}}}\n");
    let v = s.next();
    assert_eq!(v["error"]["code"], -32602, "{v}");
    assert_eq!(v["error"]["data"]["code"], "unsafe_integer", "{v}");
    assert_eq!(v["error"]["data"]["at"], "/n", "{v}");
    // A `run` without an id is a notification: nobody could read its result, so it never runs.
    s.send(json!({"jsonrpc": "2.0", "method": "run", "params": {"skill": "steps"}}));
    // Still serving: a real request after all of that.
    s.request(
        json!("ok"),
        "run",
        json!({"skill": "steps", "inputs": {"n": 1}}),
    );
    let v = s.next();
    assert_eq!(v["id"], "ok", "the notification was answered: {v}");
    assert_eq!(v["result"]["outcome"], "completed", "{v}");
    let (code, rest) = s.close();
    assert_eq!((code, rest.len()), (0, 0), "{rest:?}");
    let receipts = std::fs::read_dir(ws.path().join(".runx/receipts")).unwrap();
    assert_eq!(receipts.count(), 1, "only the one real run left a receipt");
}

#[test]
fn concurrent_steps_answer_out_of_order_with_their_ids() {
    let ws = tempfile::tempdir().unwrap();
    package(ws.path());
    let mut s = Session::start(ws.path(), &["--pool-size", "2"]);
    s.request(
        json!("slow"),
        "run",
        json!({"skill": "steps", "runner": "sleep", "inputs": {"seconds": 2}}),
    );
    s.request(
        json!("fast"),
        "run",
        json!({"skill": "steps", "inputs": {"x": 1}}),
    );
    let first = s.next();
    let second = s.next();
    assert_eq!(first["id"], "fast", "{first}");
    assert_eq!(first["result"]["result"]["inputs"], json!({"x": 1}));
    assert_eq!(second["id"], "slow", "{second}");
    assert_eq!(second["result"]["outcome"], "completed", "{second}");
    // Many at once: every id answered exactly once, with its own inputs.
    for i in 0..20 {
        s.request(
            json!(i),
            "run",
            json!({"skill": "steps", "inputs": {"i": i}}),
        );
    }
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..20 {
        let v = s.next();
        let id = v["id"].as_i64().unwrap();
        assert_eq!(v["result"]["result"]["inputs"]["i"], id, "{v}");
        assert!(seen.insert(id));
    }
    assert_eq!(s.close().0, 0);
}

#[test]
fn cancel_kills_that_steps_worker_or_process_group_only() {
    let ws = tempfile::tempdir().unwrap();
    package(ws.path());
    let mut s = Session::start(ws.path(), &["--pool-size", "2"]);
    // Warm both workers so that the spinning one can be told apart.
    s.request(json!("warm"), "run", json!({"skill": "steps"}));
    s.answer(&json!("warm"));
    s.request(
        json!("spin"),
        "run",
        json!({"skill": "steps", "runner": "spin"}),
    );
    s.request(
        json!("sleep"),
        "run",
        json!({"skill": "steps", "runner": "sleep"}),
    );
    std::thread::sleep(Duration::from_millis(500));
    let started = Instant::now();
    s.request(json!("c1"), "cancel", json!({"id": "spin"}));
    let v = s.answer(&json!("spin"));
    assert_eq!(v["result"]["status"], "sealed", "{v}");
    assert_eq!(v["result"]["outcome"], "failed", "{v}");
    assert_eq!(v["result"]["error"]["kind"], "interrupted", "{v}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(s.answer(&json!("c1"))["result"], json!({"cancelled": true}));
    let receipt = receipt_of(&v["result"]);
    assert_eq!(
        (
            &receipt["seal"]["disposition"],
            &receipt["seal"]["reason_code"]
        ),
        (&json!("killed"), &json!("process_killed"))
    );
    assert_eq!(evidence(&receipt)["status"], "failure");
    assert_eq!(evidence(&receipt)["failure"]["kind"], "interrupted");
    // The cli-tool step was untouched by that; now cancel it too, twice at once: only the
    // first cancel cancels it (the step may still be ending when the second arrives).
    s.request(json!("c2"), "cancel", json!({"id": "sleep"}));
    s.request(json!("c2-again"), "cancel", json!({"id": "sleep"}));
    assert_eq!(s.answer(&json!("c2"))["result"], json!({"cancelled": true}));
    assert_eq!(
        s.answer(&json!("c2-again"))["result"],
        json!({"cancelled": false})
    );
    let v = s.answer(&json!("sleep"));
    assert_eq!(v["result"]["error"]["kind"], "interrupted", "{v}");
    assert!(started.elapsed() < Duration::from_secs(10));
    // Unknown and finished ids: nothing to cancel.
    s.request(json!("c3"), "cancel", json!({"id": "spin"}));
    assert_eq!(
        s.answer(&json!("c3"))["result"],
        json!({"cancelled": false})
    );
    // The killed worker was replaced: steps still run, many cancellations later too.
    for i in 0..5 {
        let id = format!("spin{i}");
        s.request(
            json!(id),
            "run",
            json!({"skill": "steps", "runner": "spin"}),
        );
        std::thread::sleep(Duration::from_millis(300));
        s.request(json!(format!("c{id}")), "cancel", json!({"id": id}));
        let v = s.answer(&json!(id));
        assert_eq!(v["result"]["error"]["kind"], "interrupted", "{v}");
    }
    s.request(
        json!("after"),
        "run",
        json!({"skill": "steps", "inputs": {"n": 2}}),
    );
    let v = s.answer(&json!("after"));
    assert_eq!(v["result"]["outcome"], "completed", "{v}");
    assert_eq!(s.close().0, 0);
}

#[test]
fn busy_past_the_queue_limit() {
    let ws = tempfile::tempdir().unwrap();
    package(ws.path());
    let mut s = Session::start(ws.path(), &["--pool-size", "1", "--queue", "1"]);
    let slow = json!({"skill": "steps", "runner": "sleep", "inputs": {"seconds": 0.5}});
    s.request(json!(1), "run", slow.clone());
    s.request(json!(2), "run", slow.clone());
    s.request(json!(3), "run", slow.clone());
    let v = s.next();
    assert_eq!(v["id"], 3, "{v}");
    assert_eq!(v["error"]["code"], -32001, "{v}");
    let data = &v["error"]["data"];
    assert_eq!(
        data["running"].as_u64().unwrap() + data["queued"].as_u64().unwrap(),
        2,
        "{v}"
    );
    assert_eq!(
        (data["pool_size"].clone(), data["queue_limit"].clone()),
        (json!(1), json!(1))
    );
    // A duplicate id of a request in flight is refused too.
    s.request(json!(2), "run", slow.clone());
    let v = s.next();
    assert_eq!(
        (v["id"].clone(), v["error"]["code"].clone()),
        (json!(2), json!(-32600)),
        "{v}"
    );
    assert_eq!(s.answer(&json!(1))["result"]["outcome"], "completed");
    assert_eq!(s.answer(&json!(2))["result"]["outcome"], "completed");
    // Room again.
    s.request(json!(4), "run", json!({"skill": "steps"}));
    assert_eq!(s.answer(&json!(4))["result"]["outcome"], "completed");
}

#[test]
fn shutdown_lets_steps_in_flight_finish_then_exits_zero() {
    let ws = tempfile::tempdir().unwrap();
    package(ws.path());
    let mut s = Session::start(ws.path(), &["--pool-size", "1"]);
    s.request(
        json!(1),
        "run",
        json!({"skill": "steps", "runner": "sleep", "inputs": {"seconds": 0.5}}),
    );
    s.request(json!(2), "run", json!({"skill": "steps"}));
    s.request(json!("bye"), "shutdown", json!({}));
    // Requests after shutdown are not read.
    s.request(json!(3), "run", json!({"skill": "steps"}));
    let answers = [s.next(), s.next(), s.next()];
    assert_eq!(answers[0]["id"], 1);
    assert_eq!(answers[0]["result"]["outcome"], "completed");
    assert_eq!(answers[1]["id"], 2);
    assert_eq!(
        answers[2],
        json!({"jsonrpc": "2.0", "id": "bye", "result": null})
    );
    for a in &answers[..2] {
        assert!(Path::new(a["result"]["receipt_path"].as_str().unwrap()).is_file());
    }
    let (code, rest) = s.close();
    assert_eq!((code, rest), (0, vec![]));
}

#[test]
fn shutdown_with_cancel_interrupts_steps_in_flight() {
    let ws = tempfile::tempdir().unwrap();
    package(ws.path());
    let mut s = Session::start(ws.path(), &["--pool-size", "2"]);
    s.request(json!(1), "run", json!({"skill": "steps", "runner": "spin"}));
    s.request(
        json!(2),
        "run",
        json!({"skill": "steps", "runner": "sleep"}),
    );
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    s.request(json!("bye"), "shutdown", json!({"cancel": true}));
    let a = s.answer(&json!(1));
    let b = s.answer(&json!(2));
    for v in [&a, &b] {
        assert_eq!(v["result"]["error"]["kind"], "interrupted", "{v}");
        assert!(Path::new(v["result"]["receipt_path"].as_str().unwrap()).is_file());
    }
    assert_eq!(s.answer(&json!("bye"))["result"], Value::Null);
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(s.close().0, 0);
}

#[test]
fn end_of_input_finishes_steps_in_flight() {
    let ws = tempfile::tempdir().unwrap();
    package(ws.path());
    let mut s = Session::start(ws.path(), &["--pool-size", "1"]);
    s.request(
        json!(1),
        "run",
        json!({"skill": "steps", "runner": "sleep", "inputs": {"seconds": 0.3}}),
    );
    let (code, rest) = s.close();
    assert_eq!(code, 0);
    assert_eq!(rest.len(), 1, "{rest:?}");
    assert_eq!(rest[0]["result"]["outcome"], "completed");
}

#[test]
fn progress_notifications_come_before_the_result_when_asked() {
    let ws = tempfile::tempdir().unwrap();
    package(ws.path());
    let total = std::fs::metadata(ws.path().join("items.json"))
        .unwrap()
        .len();
    let mut s = Session::start(ws.path(), &["--pool-size", "1"]);
    let params = json!({"skill": "steps", "runner": "count", "inputs": {"file": "items.json"}, "progress": true});
    s.request(json!("p"), "run", params);
    let mut pages = Vec::new();
    let result = loop {
        let v = s.next();
        if v.get("method").is_none() {
            break v;
        }
        assert_eq!(v["method"], "progress");
        assert!(v.get("id").is_none(), "a notification has no id: {v}");
        assert_eq!(v["params"]["id"], "p");
        assert_eq!(v["params"]["total_bytes"], total);
        pages.push((
            v["params"]["page_index"].as_u64().unwrap(),
            v["params"]["bytes"].as_u64().unwrap(),
        ));
    };
    assert_eq!(result["result"]["result"], json!({"n": 40}), "{result}");
    assert!(pages.len() > 3, "{pages:?}");
    for (i, (index, _)) in pages.iter().enumerate() {
        assert_eq!(*index, i as u64);
    }
    assert!(pages.windows(2).all(|w| w[0].1 < w[1].1));
    assert_eq!(pages.last().unwrap().1, total);
    // Not asked: no notifications.
    s.request(
        json!("q"),
        "run",
        json!({"skill": "steps", "runner": "count", "inputs": {"file": "items.json"}}),
    );
    assert_eq!(s.next()["id"], "q");
}

#[test]
fn env_and_the_hosts_baseline_are_all_a_step_sees_and_paths_are_relative_to_the_server() {
    let ws = tempfile::tempdir().unwrap();
    package(ws.path());
    std::fs::create_dir(ws.path().join("work")).unwrap();
    let mut s = Session::start_with_env(
        ws.path(),
        &["--pool-size", "1"],
        &[("SECRET", "server-only"), ("REGION", "server")],
    );
    s.request(
        json!(1),
        "run",
        json!({"skill": "steps", "runner": "env", "cwd": "work", "receipt_dir": "rcpt"}),
    );
    let v = s.next();
    let stdout = v["result"]["result"]["stdout"]
        .as_str()
        .unwrap()
        .to_string();
    let names: Vec<&str> = stdout.lines().filter_map(|l| l.split('=').next()).collect();
    // The server's own values of names no runner declares never reach a step; its baseline
    // (`PATH`, ...) does, as for `runx skill`.
    assert!(
        !names.contains(&"SECRET") && !names.contains(&"REGION"),
        "{stdout}"
    );
    let server_path = std::env::var("PATH").unwrap();
    assert!(
        stdout.contains(&format!("PATH={server_path}\n")),
        "{stdout}"
    );
    let cwd = ws.path().join("work").canonicalize().unwrap();
    assert!(
        stdout.contains(&format!("RUNX_CWD={}", ws.path().join("work").display()))
            || stdout.contains(&format!("RUNX_CWD={}", cwd.display())),
        "{stdout}"
    );
    assert!(
        v["result"]["receipt_path"]
            .as_str()
            .unwrap()
            .starts_with(ws.path().join("rcpt").to_str().unwrap()),
        "{v}"
    );
    s.request(
        json!(2),
        "run",
        json!({"skill": "steps", "env": {"REGION": "eu", "SECRET": "s"}}),
    );
    let v = s.next();
    assert_eq!(
        v["result"]["result"]["environment"],
        json!({"REGION": "eu", "SECRET": "s"})
    );
    s.request(json!(3), "run", json!({"skill": "steps"}));
    let v = s.next();
    assert_eq!(
        v["result"]["result"]["environment"],
        json!({}),
        "the server's own environment leaked: {v}"
    );
}

#[test]
fn a_worker_killed_mid_step_fails_that_step_only() {
    let ws = tempfile::tempdir().unwrap();
    package(ws.path());
    // Two slots: the first two worker starts are not replacements, so the restart budget is
    // not what this test measures.
    let mut s = Session::start(ws.path(), &["--pool-size", "2"]);
    let server = s.child.id();
    s.request(
        json!("victim"),
        "run",
        json!({"skill": "steps", "runner": "spin"}),
    );
    // The call is idempotent, so the pool retries it once on a new worker: kill until it ends.
    let deadline = Instant::now() + PATIENCE;
    let answer = loop {
        assert!(Instant::now() < deadline, "the step never ended");
        for pid in children_of(server) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        match s.lines.recv_timeout(Duration::from_millis(100)) {
            Ok(line) => break serde_json::from_str::<Value>(&line).unwrap(),
            Err(_) => continue,
        }
    };
    assert_eq!(answer["id"], "victim");
    assert_eq!(
        answer["result"]["error"]["kind"], "worker_crashed",
        "{answer}"
    );
    s.request(
        json!("next"),
        "run",
        json!({"skill": "steps", "inputs": {"n": 3}}),
    );
    let v = s.next();
    assert_eq!(v["result"]["outcome"], "completed", "{v}");
}

#[test]
fn a_cancelled_queued_step_answers_at_once() {
    let ws = tempfile::tempdir().unwrap();
    package(ws.path());
    let mut s = Session::start(ws.path(), &["--pool-size", "1", "--queue", "2"]);
    let started = Instant::now();
    s.request(
        json!("long"),
        "run",
        json!({"skill": "steps", "runner": "sleep", "inputs": {"seconds": 3}}),
    );
    s.request(json!("queued"), "run", json!({"skill": "steps"}));
    s.request(json!("c"), "cancel", json!({"id": "queued"}));
    let v = s.answer(&json!("queued"));
    assert_eq!(v["result"]["error"]["kind"], "interrupted", "{v}");
    assert_eq!(
        v["result"]["runner"], "echo",
        "the receipt names the step: {v}"
    );
    assert!(Path::new(v["result"]["receipt_path"].as_str().unwrap()).is_file());
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "it waited for the running step: {:?}",
        started.elapsed()
    );
    s.request(json!("c2"), "cancel", json!({"id": "long"}));
    assert_eq!(
        s.answer(&json!("long"))["result"]["error"]["kind"],
        "interrupted"
    );
}

/// The most memory a process has held (`VmHWM`), in bytes.
pub fn peak_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap_or_else(|| panic!("no VmHWM in {status}"));
    kib * 1024
}

/// A `run` request line with `id` whose inputs hold `zeros` zeros and `pad` bytes of string.
fn zeros_line(id: usize, zeros: usize, pad: usize) -> Vec<u8> {
    let mut line = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"run","params":{{"skill":"steps","runner":"sleep","inputs":{{"pad":"{}","a":["#,
        "x".repeat(pad)
    )
    .into_bytes();
    line.extend_from_slice(&b"0,".repeat(zeros - 1));
    line.extend_from_slice(b"0]}}}\n");
    line
}

/// A `run` request line with `id` whose environment has `names` names, each with an empty value.
fn env_line(id: usize, names: usize) -> Vec<u8> {
    let env: Vec<String> = (0..names).map(|n| format!(r#""{n:x}":"""#)).collect();
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"run","params":{{"skill":"steps","runner":"sleep","env":{{{}}}}}}}"#,
        env.join(",")
    )
    .into_bytes()
    .into_iter()
    .chain(*b"\n")
    .collect()
}

#[test]
fn queued_requests_hold_their_text_and_a_line_of_too_many_values_is_refused() {
    use runx_profile::REQUEST_VALUES;
    use runx_serve::DEFAULT_MAX_REQUEST_BYTES as LINE;
    const REFUSED: usize = 3;
    const QUEUED: usize = 8;
    let max_values = usize::try_from(REQUEST_VALUES.max).unwrap();
    let ws = tempfile::tempdir().unwrap();
    package(ws.path());
    let mut s = Session::start(ws.path(), &["--pool-size", "1"]);
    // The one step slot is taken for the whole test: every request after it waits in the queue.
    s.request(
        json!("long"),
        "run",
        json!({"skill": "steps", "runner": "sleep", "inputs": {"seconds": 30}}),
    );
    // The reader answers a `cancel` itself, after every line before it.
    s.request(json!("p0"), "cancel", json!({"id": "none"}));
    assert_eq!(s.answer(&json!("p0"))["result"]["cancelled"], false);
    let pid = s.child.id();
    let start = peak_rss(pid);

    // A line of tiny values, as long as a line may be: twice the values a request may hold.
    for id in 0..REFUSED {
        let line = zeros_line(id, (LINE - 200) / 2, 0);
        assert!(line.len() <= LINE);
        s.send_raw(&line);
        let v = s.answer(&json!(id));
        assert_eq!(v["error"]["code"], -32600, "{v}");
        assert_eq!(v["error"]["data"]["limit"], "request_values", "{v}");
        assert_eq!(v["error"]["data"]["max"], REQUEST_VALUES.max, "{v}");
    }
    // Lines of about the most bytes a line may have, with about as many values as a request
    // may hold, in its inputs or its environment: each is queued. Parsed, the zeros alone
    // would take 32 bytes each, 64 MiB a line, and the environment about 90 MiB; kept as
    // text, a line takes its own length.
    let zeros = max_values - 100;
    let pad = LINE - 2 * zeros - 200;
    for id in REFUSED..REFUSED + QUEUED {
        let line = if id % 2 == 0 {
            zeros_line(id, zeros, pad)
        } else {
            env_line(id, 700_000)
        };
        assert!(line.len() <= LINE && line.len() > LINE * 4 / 5);
        assert!(runx_receipts::count_values(&line, u64::MAX) <= REQUEST_VALUES.max);
        s.send_raw(&line);
    }
    s.request(json!("p1"), "cancel", json!({"id": "none"}));
    assert_eq!(s.answer(&json!("p1"))["result"]["cancelled"], false);
    // The queued lines, and the line being read: its text, and up to about six times that
    // while it is checked (the set of the names of its largest object, here the environment),
    // with room to spare. Parsed, the queue alone would take 600 MiB.
    let bound = start + ((QUEUED + 8) * LINE) as u64;
    let queued = peak_rss(pid);
    assert!(
        queued <= bound,
        "{QUEUED} queued lines of {LINE} bytes took the server from {start} to {queued} bytes (bound {bound})"
    );

    // Cancelled queued requests answer without their inputs ever being parsed, on threads of
    // their own beside the pool.
    for id in REFUSED..REFUSED + QUEUED {
        let cancel = json!(format!("c{id}"));
        s.request(cancel.clone(), "cancel", json!({"id": id}));
        let v = s.answer(&json!(id));
        assert_eq!(v["result"]["error"]["kind"], "interrupted", "{v}");
        assert_eq!(s.answer(&cancel)["result"]["cancelled"], true);
    }
    let end = peak_rss(pid);
    assert!(
        end <= bound,
        "answering the cancelled requests took the server to {end} bytes (bound {bound})"
    );
    s.request(json!("c"), "cancel", json!({"id": "long"}));
    assert_eq!(
        s.answer(&json!("long"))["result"]["error"]["kind"],
        "interrupted"
    );
    assert_eq!(s.close().0, 0);
}

/// A running step holds its inputs once (issue 46, item 4): the server parses a request's
/// inputs and the run resolves them in place, where it used to resolve a copy. 700,000
/// `{"a":0}` objects parse to about 700 bytes each (serde_json's map of one key); a second copy
/// took the server to about 1,430 bytes an object. The call is then refused at the worker's
/// `input_bytes`, which is checked on the text sent, after both.
#[test]
fn a_running_step_holds_its_inputs_once() {
    const OBJECTS: usize = 700_000;
    const BYTES_PER_OBJECT: u64 = 1_000;
    let ws = tempfile::tempdir().unwrap();
    package(ws.path());
    let mut s = Session::start(ws.path(), &["--pool-size", "1"]);
    s.request(json!(0), "inspect", json!({"skill": "steps"}));
    assert_eq!(s.next()["result"]["skill"], "steps");
    let pid = s.child.id();
    let start = peak_rss(pid);
    let mut line =
        br#"{"jsonrpc":"2.0","id":1,"method":"run","params":{"skill":"steps","runner":"echo","inputs":{"x":["#
            .to_vec();
    line.extend_from_slice(&br#"{"a":0},"#.repeat(OBJECTS - 1));
    line.extend_from_slice(b"{\"a\":0}]}}}\n");
    s.send_raw(&line);
    let v = s.answer(&json!(1));
    assert_eq!(v["result"]["error"]["code"], "input_bytes", "{v}");
    let peak = peak_rss(pid);
    let bound = start + OBJECTS as u64 * BYTES_PER_OBJECT;
    assert!(
        peak <= bound,
        "a step of {OBJECTS} small objects took the server from {start} to {peak} bytes (bound {bound}): its inputs are held twice"
    );
    assert_eq!(s.close().0, 0);
}

#[test]
fn ctrl_c_interrupts_every_step_answers_and_exits_130() {
    let ws = tempfile::tempdir().unwrap();
    package(ws.path());
    let mut s = Session::start(ws.path(), &["--pool-size", "2"]);
    // An answer means the server is reading, so its Ctrl-C handler is in place.
    s.request(json!(0), "inspect", json!({"skill": "steps"}));
    assert_eq!(s.next()["result"]["skill"], "steps");
    s.request(json!(1), "run", json!({"skill": "steps", "runner": "spin"}));
    s.request(
        json!(2),
        "run",
        json!({"skill": "steps", "runner": "sleep"}),
    );
    std::thread::sleep(Duration::from_millis(500));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(s.child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let mut kinds = vec![s.next(), s.next()]
        .into_iter()
        .map(|v| (v["id"].clone(), v["result"]["error"]["kind"].clone()))
        .collect::<Vec<_>>();
    kinds.sort_by_key(|(id, _)| id.as_i64());
    assert_eq!(
        kinds,
        vec![
            (json!(1), json!("interrupted")),
            (json!(2), json!("interrupted"))
        ]
    );
    let status = s.child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
}

#[test]
fn steps_are_signed_with_the_servers_key_and_half_a_key_refuses_to_start() {
    let ws = tempfile::tempdir().unwrap();
    package(ws.path());
    let seed = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
    let key = [
        ("RUNX_RECEIPT_SIGN_KID", "serve-key"),
        ("RUNX_RECEIPT_SIGN_ED25519_SEED_BASE64", seed),
        ("RUNX_RECEIPT_SIGN_ISSUER_TYPE", "ci"),
    ];
    let mut s = Session::start_with_env(ws.path(), &["--pool-size", "1"], &key);
    s.request(json!(1), "run", json!({"skill": "steps"}));
    let answer = s.answer(&json!(1));
    let receipt = answer["result"]["receipt_path"]
        .as_str()
        .unwrap()
        .to_string();
    let (code, _) = s.close();
    assert_eq!(code, 0);
    let text = std::fs::read_to_string(&receipt).unwrap();
    let r: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(r["issuer"]["kid"], "serve-key", "{r}");
    assert_eq!(r["issuer"]["type"], "ci", "{r}");
    assert_eq!(r["signature"]["alg"], "Ed25519", "{r}");
    assert!(!text.contains(seed), "the seed is in the receipt");
    // Half a key is a usage error before the server reads anything.
    let out = run_in(ws.path(), &["serve"], &key[..1]);
    assert_eq!(out.status.code(), Some(64));
    assert!(String::from_utf8_lossy(&out.stderr).contains("RUNX_RECEIPT_SIGN"));
}

/// Options out of range are refused with the usage exit, never clamped.
#[test]
fn pool_sizes_out_of_range_are_refused() {
    let ws = tempfile::tempdir().unwrap();
    for bad in ["0", "17", "99", "-1", "many"] {
        let arg = format!("--pool-size={bad}");
        let out = run_in(ws.path(), &["serve", &arg], &[]);
        assert_eq!(out.status.code(), Some(64), "--pool-size {bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--pool-size"), "--pool-size {bad}: {err}");
    }
    let out = run_in(ws.path(), &["serve", "--max-request-bytes", "0"], &[]);
    assert_eq!(out.status.code(), Some(64));
}

/// Issue 28: a cli-tool step finds its command on the server's `PATH` without an `env`, and a
/// bare skill name is found as `skills/NAME`, as with `runx skill`.
#[test]
fn a_tool_finds_python_without_env_and_bare_names_resolve_as_in_the_cli() {
    let ws = tempfile::tempdir().unwrap();
    package(ws.path());
    std::fs::create_dir(ws.path().join("skills")).unwrap();
    std::fs::rename(ws.path().join("steps"), ws.path().join("skills/steps")).unwrap();
    let mut s = Session::start(ws.path(), &["--pool-size", "1"]);
    s.request(
        json!(1),
        "run",
        json!({"skill": "steps", "runner": "python"}),
    );
    let v = s.next();
    assert_eq!(v["result"]["outcome"], "completed", "{v}");
    assert_eq!(v["result"]["result"], json!({"ok": true}), "{v}");
}

/// Issue 28: a package's profile and module closure are kept between steps while unchanged,
/// and a module or profile changed between two steps is read again by the second.
#[test]
fn a_module_changed_between_two_steps_is_read_again() {
    let ws = tempfile::tempdir().unwrap();
    let pkg = ws.path().join("kept");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(
        pkg.join("X.yaml"),
        "skill: kept\nrun:\n  type: javascript\n  module: m.mjs\n  export: v\n",
    )
    .unwrap();
    std::fs::write(pkg.join("m.mjs"), "export const v = () => ({ v: 1 });\n").unwrap();
    let mut s = Session::start(ws.path(), &["--pool-size", "1"]);
    for id in 1..=2 {
        s.request(json!(id), "run", json!({"skill": "kept"}));
        assert_eq!(s.next()["result"]["result"], json!({"v": 1}));
    }
    // The same size, within the same tick of the file system's clock: only the bytes tell.
    std::fs::write(pkg.join("m.mjs"), "export const v = () => ({ v: 2 });\n").unwrap();
    s.request(json!(3), "run", json!({"skill": "kept"}));
    assert_eq!(s.next()["result"]["result"], json!({"v": 2}));
    std::fs::write(
        pkg.join("X.yaml"),
        "skill: kept\nrun:\n  type: javascript\n  module: m.mjs\n  export: w\n",
    )
    .unwrap();
    s.request(json!(4), "run", json!({"skill": "kept"}));
    let v = s.next();
    assert_eq!(v["result"]["error"]["code"], "module_rejected", "{v}");
}

/// `info` tells a client how many requests it may hold in flight without being refused `busy`,
/// answered at once even while every step slot is taken.
#[test]
fn info_answers_the_pool_size_queue_and_version_at_once() {
    let ws = tempfile::tempdir().unwrap();
    package(ws.path());
    let mut s = Session::start(ws.path(), &["--pool-size", "1", "--queue", "3"]);
    s.request(
        json!(1),
        "run",
        json!({"skill": "steps", "runner": "sleep", "inputs": {"seconds": 2}}),
    );
    s.request(json!(2), "info", json!({}));
    let started = Instant::now();
    let v = s.next();
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "info waited for the step"
    );
    assert_eq!(
        v,
        json!({"jsonrpc": "2.0", "id": 2, "result": {
            "pool_size": 1, "queue": 3, "version": env!("CARGO_PKG_VERSION"),
        }})
    );
    // No params is the same as empty params; unknown ones are refused; a notification gets no
    // answer.
    s.send(json!({"jsonrpc": "2.0", "id": 3, "method": "info"}));
    assert_eq!(s.next()["result"]["queue"], 3);
    s.request(json!(4), "info", json!({"verbose": true}));
    assert_eq!(s.next()["error"]["code"], -32602);
    s.send(json!({"jsonrpc": "2.0", "method": "info"}));
    s.request(json!(5), "fly", json!({}));
    let v = s.next();
    assert_eq!(v["id"], 5, "the info notification was answered: {v}");
    assert!(
        v["error"]["message"].as_str().unwrap().contains("info"),
        "{v}"
    );
    assert_eq!(s.answer(&json!(1))["result"]["outcome"], "completed");
}

/// `receipt_body: true` makes the receipt travel with the result: the document of the receipt
/// file, which verifies offline once written anywhere else.
#[test]
fn receipt_body_is_the_document_of_the_receipt_file_and_verifies_elsewhere() {
    let ws = tempfile::tempdir().unwrap();
    package(ws.path());
    let key = [
        ("RUNX_RECEIPT_SIGN_KID", "serve-key"),
        (
            "RUNX_RECEIPT_SIGN_ED25519_SEED_BASE64",
            "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
        ),
        ("RUNX_RECEIPT_SIGN_ISSUER_TYPE", "ci"),
    ];
    let mut s = Session::start_with_env(ws.path(), &["--pool-size", "1"], &key);
    let collected = ws.path().join("collected");
    std::fs::create_dir(&collected).unwrap();
    for (id, runner) in [(1, "echo"), (2, "fail"), (3, "count")] {
        let inputs = if runner == "count" {
            json!({"file": "items.json"})
        } else {
            json!({})
        };
        s.request(
            json!(id),
            "run",
            json!({"skill": "steps", "runner": runner, "inputs": inputs, "receipt_body": true}),
        );
        let result = s.answer(&json!(id))["result"].clone();
        let path = result["receipt_path"]
            .as_str()
            .expect("a receipt")
            .to_string();
        let file: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(result["receipt_body"], file, "runner {runner}");
        assert_eq!(file["schema"], "runx.receipt.v1");
        assert_eq!(file["id"], result["receipt_id"]);
        assert_eq!(evidence(&file)["runner"], runner);
        std::fs::write(
            collected.join(format!("{runner}.json")),
            result["receipt_body"].to_string(),
        )
        .unwrap();
    }
    // Without the flag the result is what `runx skill --json` prints: no receipt_body.
    s.request(json!(4), "run", json!({"skill": "steps"}));
    let plain = s.answer(&json!(4));
    assert!(plain["result"].get("receipt_body").is_none(), "{plain}");
    // A package that does not load writes no receipt, so there is no document to carry.
    s.request(
        json!(5),
        "run",
        json!({"skill": "no-such-package", "receipt_body": true}),
    );
    let refused = s.answer(&json!(5));
    assert_eq!(refused["result"]["receipt_body"], Value::Null, "{refused}");
    s.request(
        json!(6),
        "run",
        json!({"skill": "steps", "receipt_body": "yes"}),
    );
    assert_eq!(s.answer(&json!(6))["error"]["code"], -32602);
    let (code, _) = s.close();
    assert_eq!(code, 0);

    let out = run_in(ws.path(), &["receipt", "verify", "collected"], &key);
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(said.contains("3 verified, 0 failed"), "{said}");
    // A changed body does not verify.
    let echo = collected.join("echo.json");
    let mut body: Value = serde_json::from_str(&std::fs::read_to_string(&echo).unwrap()).unwrap();
    body["metadata"]["evidence"]["runner"] = json!("spin");
    std::fs::write(&echo, body.to_string()).unwrap();
    let out = run_in(ws.path(), &["receipt", "verify", "collected"], &key);
    assert_eq!(out.status.code(), Some(1));
}

/// A client that sends a request as soon as it reads the previous answer never finds the
/// server full, even with no queue: a request stops counting against the pool and queue
/// before its answer is written. (Counted as running until after the write, one such request
/// in six was refused `busy`.)
#[test]
fn a_request_sent_when_an_answer_is_read_is_never_busy() {
    let ws = tempfile::tempdir().unwrap();
    package(ws.path());
    let mut s = Session::start(ws.path(), &["--pool-size", "1", "--queue", "0"]);
    for i in 0..400 {
        s.request(
            json!(i),
            "run",
            json!({"skill": "steps", "inputs": {"i": i}}),
        );
        let v = s.next();
        assert_eq!(v["id"], i, "{v}");
        assert_eq!(v["result"]["outcome"], "completed", "request {i}: {v}");
    }
    let (code, _) = s.close();
    assert_eq!(code, 0);
}
