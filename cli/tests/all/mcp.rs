//! `runx mcp serve`: the MCP server driven over its real stdin and stdout (one JSON message a
//! line) and over Streamable HTTP, against the fixture packages; and the attacks of issue 26.

use super::*;
use serde_json::json;
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::process::{Child, ChildStdin};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

const PATIENCE: Duration = Duration::from_secs(20);
const LATEST: &str = "2025-11-25";

/// One `runx mcp serve` on stdio.
struct Mcp {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    pending: VecDeque<Value>,
}

impl Mcp {
    fn start(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Mcp {
        let mut c = runx();
        c.current_dir(cwd)
            .args(["mcp", "serve"])
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
        Mcp {
            stdin: child.stdin.take(),
            child,
            lines,
            pending: VecDeque::new(),
        }
    }

    /// A server of the fixtures hello, archive and hostile, initialized at `version`.
    fn fixtures(cwd: &Path, version: &str, extra: &[&str]) -> Mcp {
        let f = fixtures();
        let mut args: Vec<String> = ["hello", "archive", "hostile"]
            .iter()
            .map(|p| f.join(p).display().to_string())
            .collect();
        args.extend(extra.iter().map(|s| s.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut m = Mcp::start(cwd, &args, &[("REGION", "eu-west")]);
        let init = m.call(0, "initialize", initialize(version));
        assert_eq!(init["result"]["protocolVersion"], json!(version), "{init}");
        m.notify("notifications/initialized", json!({}));
        m
    }

    fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    fn send(&mut self, message: Value) {
        let mut line = message.to_string().into_bytes();
        line.push(b'\n');
        self.send_raw(&line);
    }

    fn request(&mut self, id: i64, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    fn call(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.request(id, method, params);
        self.answer(id)
    }

    fn tool(&mut self, id: i64, name: &str, arguments: Value) -> Value {
        self.call(
            id,
            "tools/call",
            json!({"name": name, "arguments": arguments}),
        )
    }

    fn next_within(&mut self, wait: Duration) -> Option<Value> {
        if let Some(v) = self.pending.pop_front() {
            return Some(v);
        }
        match self.lines.recv_timeout(wait) {
            Ok(line) => Some(
                serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {line}")),
            ),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => panic!("the server closed its stdout"),
        }
    }

    /// The answer to `id`; other messages wait in `pending`.
    fn answer(&mut self, id: i64) -> Value {
        let id = json!(id);
        if let Some(i) = self
            .pending
            .iter()
            .position(|v| v["id"] == id && v.get("method").is_none())
        {
            return self.pending.remove(i).unwrap();
        }
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = match self.lines.recv_timeout(left) {
                Ok(l) => l,
                Err(e) => panic!(
                    "no answer to {id} within {PATIENCE:?} ({e:?}); seen {:?}",
                    self.pending
                ),
            };
            let v: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {line}"));
            if v["id"] == id && v.get("method").is_none() {
                return v;
            }
            self.pending.push_back(v);
        }
    }

    fn close(mut self) -> i32 {
        drop(self.stdin.take());
        self.child.wait().unwrap().code().unwrap_or(-1)
    }
}

fn initialize(version: &str) -> Value {
    json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "runx-tests", "version": "1"}})
}

/// The `_meta` a `2026-07-28` request carries instead of a handshake.
fn meta_2026() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "runx-tests", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

fn receipt_of(result: &Value) -> Value {
    let meta = &result["result"]["_meta"]["runx/receipt"];
    let path = meta["path"]
        .as_str()
        .unwrap_or_else(|| panic!("no receipt in {result}"));
    let text = std::fs::read_to_string(path).unwrap();
    let receipt: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(receipt["id"], meta["id"]);
    assert_eq!(receipt["digest"], meta["digest"]);
    assert_eq!(receipt["seal"]["disposition"], meta["disposition"]);
    // The status is the run's, from this runtime's evidence in the receipt.
    assert_eq!(receipt["metadata"]["evidence"]["status"], meta["status"]);
    receipt["metadata"]["evidence"].clone()
}

#[test]
fn lists_and_calls_tools_with_structured_output_and_receipts() {
    let ws = tempfile::tempdir().unwrap();
    let mut m = Mcp::fixtures(ws.path(), LATEST, &[]);
    let list = m.call(1, "tools/list", json!({}));
    let tools = list["result"]["tools"].as_array().unwrap();
    let greet = tools.iter().find(|t| t["name"] == "hello").expect("hello");
    assert_eq!(greet["title"], json!("hello: greet"));
    assert_eq!(greet["inputSchema"]["required"], json!(["name"]));
    assert_eq!(greet["inputSchema"]["additionalProperties"], json!(false));
    assert_eq!(
        greet["outputSchema"]["properties"]["output"]["required"],
        json!(["greeting", "region"])
    );
    assert_eq!(greet["annotations"]["readOnlyHint"], json!(true));
    assert!(
        tools.iter().all(|t| t["name"] != "hello.graph"),
        "graph runners are not tools"
    );
    assert!(tools.iter().any(|t| t["name"] == "archive"));

    let ok = m.tool(2, "hello", json!({"name": "Ada"}));
    assert_eq!(ok["result"]["isError"], json!(false), "{ok}");
    assert_eq!(
        ok["result"]["structuredContent"]["output"]["greeting"],
        json!("Hello, Ada.")
    );
    assert_eq!(
        ok["result"]["structuredContent"]["output"]["region"],
        json!("eu-west")
    );
    let text: Value =
        serde_json::from_str(ok["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text, ok["result"]["structuredContent"]["output"]);
    // runx's shape: the output, and runx's object beside it.
    let runx = &ok["result"]["structuredContent"]["runx"];
    assert_eq!(runx["status"], json!("completed"), "{ok}");
    assert_eq!(runx["skillName"], json!("hello"), "{ok}");
    assert_eq!(runx["events"], json!([]), "{ok}");
    assert_eq!(runx["output"], ok["result"]["structuredContent"]["output"]);
    assert!(
        runx["runId"].as_str().unwrap().starts_with("run_greet_"),
        "{ok}"
    );
    assert_eq!(
        runx["receiptId"],
        ok["result"]["_meta"]["runx/receipt"]["id"]
    );
    let receipt = receipt_of(&ok);
    assert_eq!(receipt["status"], json!("sealed"));
    // Made without a key: runx's local-development issuer.
    assert_eq!(
        ok["result"]["_meta"]["runx/receipt"]["signer"]["type"],
        json!("local")
    );
    assert!(
        ws.path().join(".runx/receipts").is_dir(),
        "receipts go under the working directory"
    );

    let failed = m.tool(3, "hello.wrong-output", json!({}));
    assert_eq!(failed["result"]["isError"], json!(true), "{failed}");
    let error = &failed["result"]["_meta"]["runx/error"];
    assert_eq!(error["kind"], json!("output_rejected"), "{failed}");
    let runx = &failed["result"]["structuredContent"]["runx"];
    assert_eq!(runx["status"], json!("failed"), "{failed}");
    assert!(runx.get("output").is_none(), "{failed}");
    assert!(
        failed["result"]["structuredContent"]
            .get("output")
            .is_none()
    );
    let text = failed["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with(&format!(
            "hello failed. Inspect receipt {}. output `count`",
            runx["receiptId"].as_str().unwrap()
        )),
        "{text}"
    );
    assert_eq!(receipt_of(&failed)["status"], json!("failure"));

    let invalid = m.tool(4, "hello", json!({"name": 7}));
    assert_eq!(invalid["result"]["isError"], json!(true));
    let error = &invalid["result"]["_meta"]["runx/error"];
    assert_eq!(error["kind"], json!("input"));
    assert!(
        error["message"].as_str().unwrap().contains("`name`"),
        "{error}"
    );
    let undeclared = m.tool(5, "hello", json!({"name": "A", "nmae": "B"}));
    assert!(
        undeclared["result"]["_meta"]["runx/error"]["message"]
            .as_str()
            .unwrap()
            .contains("`nmae`")
    );

    let unknown = m.tool(6, "hello.shuot", json!({}));
    assert_eq!(unknown["error"]["code"], json!(-32602), "{unknown}");
    assert!(
        unknown["error"]["message"]
            .as_str()
            .unwrap()
            .contains("hello.shout"),
        "{unknown}"
    );
    // A megabyte-long argument name is refused as any undeclared name, at once.
    let mut huge = serde_json::Map::new();
    huge.insert("n".repeat(1 << 20), json!(1));
    huge.insert("name".into(), json!("A"));
    let started = Instant::now();
    let refused = m.tool(9, "hello", Value::Object(huge));
    assert_eq!(
        refused["result"]["_meta"]["runx/error"]["code"],
        json!("undeclared_input")
    );
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    let long = m.tool(8, &"x".repeat(100_000), json!({}));
    assert_eq!(long["error"]["code"], json!(-32602));
    assert!(
        long.to_string().len() < 1000,
        "the name is quoted in part: {}",
        long.to_string().len()
    );
    assert_eq!(m.call(7, "ping", json!({}))["result"], json!({}));
    assert_eq!(m.close(), 0);
}

#[test]
fn the_three_protocol_revisions() {
    let ws = tempfile::tempdir().unwrap();
    // 2025-06-18 is kept; a version the server does not know gets its latest with a handshake.
    let m = Mcp::fixtures(ws.path(), "2025-06-18", &[]);
    assert_eq!(m.close(), 0);
    let hello = fixtures().join("hello").display().to_string();
    let mut m = Mcp::start(ws.path(), &[&hello], &[("REGION", "eu")]);
    // Notifications and responses before the session opens are dropped, not fatal.
    m.notify("notifications/initialized", json!({}));
    m.send(json!({"jsonrpc": "2.0", "id": 77, "result": {}}));
    let init = m.call(1, "initialize", initialize("2099-01-01"));
    assert_eq!(init["result"]["protocolVersion"], json!(LATEST), "{init}");
    assert_eq!(m.close(), 0);

    // 2026-07-28: no handshake; discovery, then requests that carry their own `_meta`.
    let mut m = Mcp::start(ws.path(), &[&hello], &[("REGION", "eu")]);
    let found = m.call(1, "server/discover", json!({"_meta": meta_2026()}));
    let versions = &found["result"]["supportedVersions"];
    for v in ["2025-06-18", "2025-11-25", "2026-07-28"] {
        assert!(versions.as_array().unwrap().contains(&json!(v)), "{found}");
    }
    assert!(
        found["result"]["capabilities"]["tools"].is_object(),
        "{found}"
    );
    let list = m.call(2, "tools/list", json!({"_meta": meta_2026()}));
    assert!(
        list["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "hello"),
        "{list}"
    );
    let ok = m.call(
        3,
        "tools/call",
        json!({"_meta": meta_2026(), "name": "hello", "arguments": {"name": "Ada"}}),
    );
    assert_eq!(
        ok["result"]["structuredContent"]["output"]["greeting"],
        json!("Hello, Ada."),
        "{ok}"
    );
    let bare = m.call(4, "tools/list", json!({}));
    assert!(
        bare.get("error").is_some(),
        "a 2026-07-28 session's request without _meta is refused: {bare}"
    );
    assert_eq!(m.close(), 0);
}

#[test]
fn progress_per_page_of_a_paged_run() {
    let ws = tempfile::tempdir().unwrap();
    let mut m = Mcp::fixtures(ws.path(), LATEST, &[]);
    m.request(
        1,
        "tools/call",
        json!({
            "name": "archive",
            "arguments": {"archive_file": "data/tweets.js", "archive_base": "skill"},
            "_meta": {"progressToken": "pages"},
        }),
    );
    let done = m.answer(1);
    assert_eq!(done["result"]["isError"], json!(false), "{done}");
    let progress: Vec<Value> = m
        .pending
        .drain(..)
        .filter(|v| v["method"] == "notifications/progress")
        .collect();
    assert!(!progress.is_empty(), "no progress before the result");
    let mut last = 0.0;
    for p in &progress {
        assert_eq!(p["params"]["progressToken"], json!("pages"));
        let at = p["params"]["progress"].as_f64().unwrap();
        assert!(
            at > last && at <= p["params"]["total"].as_f64().unwrap(),
            "{p}"
        );
        last = at;
    }
    assert_eq!(
        Some(last),
        progress[0]["params"]["total"].as_f64(),
        "the last page covers the file"
    );
    assert_eq!(m.close(), 0);
}

#[test]
fn a_cancelled_call_kills_its_worker_and_sends_no_answer() {
    let ws = tempfile::tempdir().unwrap();
    let mut m = Mcp::fixtures(ws.path(), LATEST, &["--pool-size", "1"]);
    m.request(
        1,
        "tools/call",
        json!({"name": "hostile.spin", "arguments": {}}),
    );
    std::thread::sleep(Duration::from_millis(300));
    m.notify(
        "notifications/cancelled",
        json!({"requestId": 1, "reason": "the user changed their mind"}),
    );
    // The next call is answered (the one slot is free again), and call 1 never is; its receipt
    // says `interrupted`, where a spin left alone would end `timeout` at its 1 s wall.
    let ok = m.tool(2, "hello", json!({"name": "Ada"}));
    assert_eq!(ok["result"]["isError"], json!(false), "{ok}");
    while let Some(v) = m.next_within(Duration::from_millis(1500)) {
        assert_ne!(v["id"], json!(1), "a cancelled call was answered: {v}");
    }
    let receipts = ws.path().join(".runx/receipts");
    let interrupted = std::fs::read_dir(&receipts).unwrap().filter(|e| {
        let text = std::fs::read_to_string(e.as_ref().unwrap().path()).unwrap();
        let r: Value = serde_json::from_str(&text).unwrap();
        let e = &r["metadata"]["evidence"];
        e["runner"] == "spin" && e["failure"]["kind"] == "interrupted"
    });
    assert_eq!(
        interrupted.count(),
        1,
        "the cancelled run leaves an interrupted receipt"
    );
    assert_eq!(m.close(), 0);
}

#[test]
fn cancel_races_leave_the_server_answering() {
    let ws = tempfile::tempdir().unwrap();
    let mut m = Mcp::fixtures(ws.path(), LATEST, &["--pool-size", "1"]);
    // A cancel of an id never sent, twice; of a call at once, before it can start; of a call
    // already answered; and of the initialize request.
    m.notify("notifications/cancelled", json!({"requestId": 99}));
    m.notify("notifications/cancelled", json!({"requestId": 99}));
    m.request(
        1,
        "tools/call",
        json!({"name": "hello", "arguments": {"name": "A"}}),
    );
    m.notify("notifications/cancelled", json!({"requestId": 1}));
    m.notify("notifications/cancelled", json!({"requestId": 1}));
    let answered = m.tool(2, "hello", json!({"name": "B"}));
    m.notify("notifications/cancelled", json!({"requestId": 2}));
    m.notify("notifications/cancelled", json!({"requestId": 0}));
    m.notify(
        "notifications/cancelled",
        json!({"requestId": "not-a-number"}),
    );
    m.notify("notifications/cancelled", json!({}));
    assert_eq!(answered["result"]["isError"], json!(false));
    // The same id again after its answer is a new call.
    let again = m.tool(2, "hello", json!({"name": "C"}));
    assert_eq!(
        again["result"]["structuredContent"]["output"]["greeting"],
        json!("Hello, C.")
    );
    assert_eq!(m.close(), 0);
}

#[test]
fn oversized_and_malformed_messages_are_dropped_and_the_server_goes_on() {
    let ws = tempfile::tempdir().unwrap();
    let mut m = Mcp::fixtures(ws.path(), LATEST, &["--max-message-bytes", "4096"]);
    // A line past the limit (it is counted, never held), then a whole request.
    let huge = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"pad\":\"{}\"}}\n",
        "x".repeat(1 << 20)
    );
    m.send_raw(huge.as_bytes());
    assert_eq!(m.call(2, "ping", json!({}))["result"], json!({}));
    m.send_raw(b"{not json\n\n\xff\xfe\n[1,2\n");
    assert_eq!(m.call(3, "ping", json!({}))["result"], json!({}));
    // JSON that is not a message is answered -32600.
    m.send_raw(b"{\"hello\":\"world\"}\n");
    let refused = m.next_within(PATIENCE).expect("an answer");
    assert_eq!(refused["error"]["code"], json!(-32600), "{refused}");
    // A batch, a request with params of the wrong shape.
    m.send_raw(b"[{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}]\n");
    let call = m.call(5, "tools/call", json!({"name": 5}));
    assert!(call.get("error").is_some(), "{call}");
    assert_eq!(m.call(6, "ping", json!({}))["result"], json!({}));
    assert_eq!(m.close(), 0);
}

#[test]
fn a_full_server_answers_busy() {
    let ws = tempfile::tempdir().unwrap();
    let mut m = Mcp::fixtures(ws.path(), LATEST, &["--pool-size", "1", "--queue", "0"]);
    m.request(
        1,
        "tools/call",
        json!({"name": "hostile.spin", "arguments": {}}),
    );
    std::thread::sleep(Duration::from_millis(200));
    let busy = m.tool(2, "hello", json!({"name": "A"}));
    assert_eq!(busy["error"]["code"], json!(-32001), "{busy}");
    assert_eq!(busy["error"]["data"]["pool_size"], json!(1));
    let spun = m.answer(1);
    assert_eq!(
        spun["result"]["_meta"]["runx/error"]["code"],
        json!("wall_milliseconds"),
        "{spun}"
    );
    assert_eq!(
        m.tool(3, "hello", json!({"name": "A"}))["result"]["isError"],
        json!(false)
    );
    assert_eq!(m.close(), 0);
}

#[test]
fn environment_comes_from_the_server_and_env_flags() {
    let ws = tempfile::tempdir().unwrap();
    let hello = fixtures().join("hello").display().to_string();
    let mut m = Mcp::start(
        ws.path(),
        &[&hello, "--env", "TRACE_LABEL=t1", "--env", "REGION=flag"],
        &[("REGION", "proc")],
    );
    m.call(0, "initialize", initialize(LATEST));
    let ok = m.tool(1, "hello", json!({"name": "A"}));
    assert_eq!(
        ok["result"]["structuredContent"]["output"]["region"],
        json!("flag"),
        "{ok}"
    );
    assert_eq!(m.close(), 0);
    let mut m = Mcp::start(ws.path(), &[&hello], &[]);
    m.call(0, "initialize", initialize(LATEST));
    let missing = m.tool(1, "hello", json!({"name": "A"}));
    assert_eq!(
        missing["result"]["_meta"]["runx/error"]["kind"],
        json!("environment"),
        "{missing}"
    );
    assert_eq!(m.close(), 0);
}

/// The pids of `parent`'s children (none for 0), and of every process whose command line holds
/// `marker`.
fn processes(parent: u32, marker: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let ppid = stat
            .rsplit(')')
            .next()
            .and_then(|s| s.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let zombie = stat
            .rsplit(')')
            .next()
            .and_then(|s| s.split_whitespace().next())
            == Some("Z");
        if !zombie
            && ((parent != 0 && ppid == Some(parent))
                || String::from_utf8_lossy(&cmdline).contains(marker))
        {
            found.push(pid);
        }
    }
    found
}

#[test]
fn a_client_that_disappears_mid_run_leaves_no_worker_or_process() {
    let ws = tempfile::tempdir().unwrap();
    let pkg = ws.path().join("slow");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(pkg.join("X.yaml"), "skill: slow\nrunners:\n  spin:\n    type: javascript\n    module: m.mjs\n    export: spin\n    timeout_seconds: 30\n  sleep:\n    type: cli-tool\n    command: /bin/sleep\n    args: [\"313.25\"]\n    timeout_seconds: 60\n").unwrap();
    std::fs::write(
        pkg.join("m.mjs"),
        "export function spin() { for (;;) {} }\n",
    )
    .unwrap();
    let mut m = Mcp::start(ws.path(), &["slow", "--pool-size", "2"], &[]);
    m.call(0, "initialize", initialize(LATEST));
    m.request(
        1,
        "tools/call",
        json!({"name": "slow.spin", "arguments": {}}),
    );
    m.request(
        2,
        "tools/call",
        json!({"name": "slow.sleep", "arguments": {}}),
    );
    let pid = m.child.id();
    let deadline = Instant::now() + PATIENCE;
    let mut seen = Vec::new();
    while Instant::now() < deadline {
        seen = processes(pid, "313.25");
        if seen.len() >= 2 && processes(0, "313.25").len() == 1 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        seen.len() >= 2,
        "a worker and the sleep should run: {seen:?}"
    );
    // The client goes: both pipes close, without a word.
    let Mcp {
        mut child,
        stdin,
        lines,
        ..
    } = m;
    drop(stdin);
    drop(lines);
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the server did not end"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(0));
    std::thread::sleep(Duration::from_millis(300));
    let left: Vec<u32> = seen
        .into_iter()
        .filter(|p| Path::new(&format!("/proc/{p}")).exists())
        .filter(|p| {
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
            stat.rsplit(')')
                .next()
                .and_then(|s| s.split_whitespace().next())
                != Some("Z")
        })
        .collect();
    let described: Vec<String> = left
        .iter()
        .map(|p| {
            let cmd = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
            format!("{p}: {}", String::from_utf8_lossy(&cmd).replace('\0', " "))
        })
        .collect();
    assert!(left.is_empty(), "processes left behind: {described:?}");
    assert!(
        processes(0, "313.25").is_empty(),
        "the sleep was left running"
    );
}

// ---- Streamable HTTP

/// A server on `--listen 127.0.0.1:0`, and its address from stderr.
fn http_server(cwd: &Path, extra: &[&str]) -> (Child, String) {
    http_server_on(cwd, &["--listen", "127.0.0.1:0"], extra)
}

/// A server on the address `listen` gives, and its address from stderr.
fn http_server_on(cwd: &Path, listen: &[&str], extra: &[&str]) -> (Child, String) {
    let hello = fixtures().join("hello").display().to_string();
    let mut child = runx()
        .current_dir(cwd)
        .args(["mcp", "serve", &hello])
        .args(listen)
        .args(extra)
        .env("REGION", "eu")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let addr = line
        .trim()
        .strip_prefix("runx mcp: listening on http://")
        .and_then(|s| s.strip_suffix("/mcp"))
        .unwrap_or_else(|| panic!("no address on stderr: {line:?}"))
        .to_string();
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    (child, addr)
}

/// The `Mcp-Session-Id` an HTTP response gives.
fn session_of(response: &str) -> String {
    response
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id")
                .then(|| value.trim().to_string())
        })
        .unwrap_or_else(|| panic!("no session: {response}"))
}

/// One HTTP/1.1 POST; the status and the whole response.
fn post(addr: &str, headers: &[(&str, &str)], body: &[u8]) -> (u16, String) {
    send(addr, "POST", headers, body)
}

/// One HTTP/1.1 request; the status and the whole response.
fn send(addr: &str, method: &str, headers: &[(&str, &str)], body: &[u8]) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut head = format!(
        "{method} /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).unwrap();
    let _ = s.write_all(body);
    let mut text = Vec::new();
    let _ = s.read_to_end(&mut text);
    let text = String::from_utf8_lossy(&text).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, text)
}

#[test]
fn http_needs_the_token_refuses_foreign_origins_and_bounds_bodies() {
    let ws = tempfile::tempdir().unwrap();
    let token = ws.path().join("token");
    std::fs::write(&token, "s3cret-token\n").unwrap();
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
    let (mut child, addr) = http_server(
        ws.path(),
        &[
            "--token-file",
            token.to_str().unwrap(),
            "--max-message-bytes",
            "65536",
        ],
    );
    let init =
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize(LATEST)})
            .to_string();
    let (status, _) = post(&addr, &[], init.as_bytes());
    assert_eq!(status, 401, "no token");
    let (status, _) = post(
        &addr,
        &[("Authorization", "Bearer s3cret-tokeN")],
        init.as_bytes(),
    );
    assert_eq!(status, 401, "a wrong token");
    let (status, _) = post(&addr, &[("Authorization", "s3cret-token")], init.as_bytes());
    assert_eq!(status, 401, "not a bearer token");
    let auth = ("Authorization", "Bearer s3cret-token");
    let (status, _) = post(
        &addr,
        &[auth, ("Origin", "http://evil.example")],
        init.as_bytes(),
    );
    assert_eq!(status, 403, "a foreign origin");
    let big = vec![b' '; 70_000];
    let (status, _) = post(&addr, &[auth], &big);
    assert_eq!(status, 413, "a body over the limit");
    let (status, text) = post(&addr, &[auth], init.as_bytes());
    assert_eq!(status, 200, "{text}");
    assert!(
        text.to_ascii_lowercase().contains("mcp-session-id:"),
        "a session for 2025-11-25: {text}"
    );
    assert!(
        text.contains("\"protocolVersion\":\"2025-11-25\""),
        "{text}"
    );
    // 2026-07-28 is served without a session.
    let found = json!({"jsonrpc": "2.0", "id": 2, "method": "server/discover", "params": {"_meta": meta_2026()}}).to_string();
    let (status, text) = post(
        &addr,
        &[
            auth,
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "server/discover"),
        ],
        found.as_bytes(),
    );
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("supportedVersions"), "{text}");
    assert!(
        !text.to_ascii_lowercase().contains("mcp-session-id:"),
        "{text}"
    );
    child.kill().unwrap();
    child.wait().unwrap();
}

/// runx's flag names the HTTP transport, and a session ends with 200, which the SDKs read as
/// ended (rmcp, and runx 0.8.2, answer 202: "Session termination failed: 202").
#[test]
fn http_listen_is_runx_flag_and_a_session_ends_with_200() {
    let ws = tempfile::tempdir().unwrap();
    let (mut child, addr) = http_server_on(ws.path(), &["--http-listen", "127.0.0.1:0"], &[]);
    let init =
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize(LATEST)})
            .to_string();
    let (status, text) = post(&addr, &[], init.as_bytes());
    assert_eq!(status, 200, "{text}");
    let session = session_of(&text);
    let (status, text) = send(&addr, "DELETE", &[("Mcp-Session-Id", &session)], b"");
    assert_eq!(status, 200, "{text}");
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string();
    let (status, text) = post(
        &addr,
        &[
            ("Mcp-Session-Id", &session),
            ("MCP-Protocol-Version", LATEST),
        ],
        list.as_bytes(),
    );
    assert_eq!(status, 404, "the session is gone: {text}");
    child.kill().unwrap();
    child.wait().unwrap();

    // --http-listen and --listen are one transport: both at once is a usage error.
    let hello = fixtures().join("hello").display().to_string();
    let out = run_in(
        ws.path(),
        &[
            "mcp",
            "serve",
            &hello,
            "--listen",
            "127.0.0.1:0",
            "--http-listen",
            "127.0.0.1:0",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(64));
}

/// Connections, sessions and bodies are bounded (issue 43, item 3): a connection past
/// --max-connections is answered 503, an `initialize` past --max-sessions 503 until a session
/// ends, and a body that does not arrive within --body-timeout 408.
#[test]
fn http_bounds_connections_sessions_and_slow_bodies() {
    let ws = tempfile::tempdir().unwrap();
    let (mut child, addr) = http_server(
        ws.path(),
        &[
            "--max-connections",
            "2",
            "--max-sessions",
            "1",
            "--body-timeout",
            "1",
        ],
    );
    let init =
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize(LATEST)})
            .to_string();

    // A body held back: 408 after the body timeout, not a connection held for good.
    let started = Instant::now();
    let mut slow = TcpStream::connect(&addr).unwrap();
    slow.set_read_timeout(Some(PATIENCE)).unwrap();
    slow.write_all(
        format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 100\r\nConnection: close\r\n\r\n{{\"jsonrpc\""
        )
        .as_bytes(),
    )
    .unwrap();
    let mut text = Vec::new();
    let _ = slow.read_to_end(&mut text);
    let text = String::from_utf8_lossy(&text);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );

    // Two connections kept open hold both places (each was answered, so each was served: a
    // place freed by the connection before may be given back a moment late on a busy
    // machine, hence the retries); a third is answered 503 and closed.
    let mut held = Vec::new();
    let started = Instant::now();
    while held.len() < 2 {
        let mut c = TcpStream::connect(&addr).unwrap();
        c.set_read_timeout(Some(PATIENCE)).unwrap();
        c.write_all(format!("GET /elsewhere HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes())
            .unwrap();
        let mut first = [0u8; 512];
        let n = c.read(&mut first).unwrap_or(0);
        let answer = String::from_utf8_lossy(&first[..n]).into_owned();
        if answer.starts_with("HTTP/1.1 404") {
            held.push(c);
        } else {
            assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
            assert!(started.elapsed() < PATIENCE, "no place came free");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    let (status, text) = post(&addr, &[], init.as_bytes());
    assert_eq!(status, 503, "{text}");
    assert!(text.contains("--max-connections"), "{text}");
    drop(held);

    // One session; a second initialize waits for it to end.
    let started = Instant::now();
    let (status, text) = loop {
        let (status, text) = post(&addr, &[], init.as_bytes());
        if status != 503 || !text.contains("--max-connections") || started.elapsed() > PATIENCE {
            break (status, text);
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(status, 200, "{text}");
    let session = session_of(&text);
    let (status, text) = post(&addr, &[], init.as_bytes());
    assert_eq!(status, 503, "{text}");
    assert!(text.contains("--max-sessions"), "{text}");
    let (status, _) = send(&addr, "DELETE", &[("Mcp-Session-Id", &session)], b"");
    assert_eq!(status, 200);
    let (status, text) = post(&addr, &[], init.as_bytes());
    assert_eq!(status, 200, "a session again once one ended: {text}");
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn http_off_loopback_needs_a_token() {
    let ws = tempfile::tempdir().unwrap();
    let hello = fixtures().join("hello").display().to_string();
    let out = run_in(
        ws.path(),
        &["mcp", "serve", &hello, "--listen", "0.0.0.0:0"],
        &[],
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("--token-file"));
    // Loopback without a token: no Authorization needed.
    let (mut child, addr) = http_server(ws.path(), &[]);
    let init =
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize(LATEST)})
            .to_string();
    let (status, text) = post(&addr, &[], init.as_bytes());
    assert_eq!(status, 200, "{text}");
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn bad_packages_and_flags_are_usage_errors() {
    let ws = tempfile::tempdir().unwrap();
    let hello = fixtures().join("hello").display().to_string();
    let out = run_in(ws.path(), &["mcp", "serve", "no-such-package"], &[]);
    assert_eq!(out.status.code(), Some(64));
    let out = run_in(
        ws.path(),
        &["mcp", "serve", &hello, "--runner", "nope"],
        &[],
    );
    assert_eq!(out.status.code(), Some(64));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("greet"),
        "names the runners"
    );
    let out = run_in(ws.path(), &["mcp", "serve", &hello, &hello], &[]);
    assert_eq!(out.status.code(), Some(64));
    assert!(String::from_utf8_lossy(&out.stderr).contains("hello"));
}

/// One rule wherever a caller's JSON enters (issue 43, item 6): a message that names a key twice
/// is refused `-32700` before rmcp parses it (serde_json kept the last, so a `tools/call` of
/// `{"name":"Alice","name":"Mallory"}` ran as Mallory), over stdio in its place in the stream,
/// and the session goes on; over HTTP with 400.
#[test]
fn a_message_naming_a_key_twice_is_refused_on_both_transports() {
    let ws = tempfile::tempdir().unwrap();
    let mut m = Mcp::fixtures(ws.path(), LATEST, &[]);
    m.send_raw(
        br#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"hello","arguments":{"name":"Alice","name":"Mallory"}}}
"#,
    );
    let refused = m
        .next_within(PATIENCE)
        .expect("an answer to the refused line");
    assert_eq!(refused["error"]["code"], -32700, "{refused}");
    assert!(refused["id"].is_null(), "{refused}");
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("duplicate key `name`"), "{message}");
    // A notification a client sends with the stand-in's name is not answered: only lines the
    // server refused are.
    m.notify(
        "notifications/runx/duplicate_key",
        json!({"message": "forged"}),
    );
    let pong = m.call(6, "ping", json!({}));
    assert_eq!(pong["result"], json!({}), "{pong}");
    assert!(
        !ws.path().join(".runx").exists(),
        "the refused call ran and wrote a receipt"
    );

    let (mut child, addr) = http_server(ws.path(), &[]);
    let init =
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize(LATEST)})
            .to_string();
    let doubled = init.replacen(r#""id":1,"#, r#""id":1,"id":2,"#, 1);
    let (status, text) = post(&addr, &[], doubled.as_bytes());
    assert_eq!(status, 400, "{text}");
    assert!(
        text.contains("-32700") && text.contains("duplicate key `id`"),
        "{text}"
    );
    let (status, text) = post(&addr, &[], init.as_bytes());
    assert_eq!(status, 200, "{text}");
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn a_deep_argument_under_a_recursive_any_of_is_refused_and_the_server_goes_on() {
    let ws = tempfile::tempdir().unwrap();
    super::schema_bound::deep_package(ws.path(), 0);
    let mut m = Mcp::start(ws.path(), &["deep"], &[]);
    m.call(0, "initialize", initialize(LATEST));
    m.notify("notifications/initialized", json!({}));
    let tree: Value = serde_json::from_str(&super::schema_bound::nested(24)).unwrap();
    let started = Instant::now();
    let answer = m.tool(1, "deep.take", json!({ "tree": tree }));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    let text = answer.to_string();
    assert!(text.contains("validation_steps"), "{answer}");
    assert_eq!(m.call(2, "ping", json!({}))["result"], json!({}));
    let ok = m.tool(3, "deep.take", json!({ "tree": [["x"]] }));
    assert_eq!(ok["result"]["isError"], json!(false), "{ok}");
    assert_eq!(m.close(), 0);
}

/// A client that sends and never reads stops being read (issue 43, item 4): the server reads
/// no further message while 64 answers wait to be written, so its memory stays bounded and the
/// client's writes block, as against `runx serve`. (300,000 pings took it to 1.5 GB.)
#[test]
fn a_client_that_never_reads_is_not_read_either() {
    let ws = tempfile::tempdir().unwrap();
    let hello = fixtures().join("hello").display().to_string();
    let mut child = runx()
        .current_dir(ws.path())
        .args(["mcp", "serve", &hello])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();
    // Held, never read: the pipe fills, then the server's writes wait.
    let _stdout = child.stdout.take().unwrap();
    let (sent, count) = channel();
    let writer = std::thread::spawn(move || {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": initialize(LATEST)});
        let mut n = 0u64;
        if writeln!(stdin, "{init}").is_err() {
            return;
        }
        for id in 1..=300_000u64 {
            let ping = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\"}}\n");
            if stdin.write_all(ping.as_bytes()).is_err() {
                break;
            }
            n = id;
            let _ = sent.send(n);
        }
        let _ = sent.send(n);
    });
    // Long enough for 300,000 pings to be read and answered by a server that reads on.
    std::thread::sleep(Duration::from_secs(4));
    let written = count.try_iter().last().unwrap_or(0);
    let peak = super::serve::peak_rss(pid);
    child.kill().unwrap();
    child.wait().unwrap();
    let _ = writer.join();
    assert!(
        written < 300_000,
        "the server read every ping its client never read an answer to"
    );
    assert!(
        peak < 200 << 20,
        "a client that never reads took the server to {peak} bytes"
    );
}
