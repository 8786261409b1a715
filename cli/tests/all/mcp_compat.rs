//! `runx mcp serve` beside runx 0.8.2's on the same package: the same tool names, and a call
//! answered in the same shape with the same output.
//!
//! runx's server reads and writes its stdio messages framed by a `Content-Length` header; this
//! one reads one JSON message per line, as MCP's stdio transport says. runx signs every receipt
//! of its server and refuses to run a tool without a signing key in its environment, so it is
//! given one.

use super::runx_flags::upstream_runx;
use super::*;
use serde_json::json;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, ChildStdout};

/// One MCP server over stdio, in either framing.
struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    /// runx 0.8.2's `Content-Length` framing, else one message per line.
    framed: bool,
}

impl Server {
    fn start(bin: &Path, cwd: &Path, args: &[&str], framed: bool) -> Server {
        let mut child = Command::new(bin)
            .current_dir(cwd)
            .args(args)
            .env("HOME", cwd.join("home"))
            .env_remove("RUNX_RECEIPT_DIR")
            // runx 0.8.2's server runs nothing without a signing key (bytes 0..31 as the seed).
            .env("RUNX_RECEIPT_SIGN_KID", "compat-key")
            .env(
                "RUNX_RECEIPT_SIGN_ED25519_SEED_BASE64",
                "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
            )
            .env("RUNX_RECEIPT_SIGN_ISSUER_TYPE", "ci")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Server {
            child,
            stdin,
            stdout,
            framed,
        }
    }

    fn send(&mut self, message: &Value) {
        let text = message.to_string();
        if self.framed {
            write!(self.stdin, "Content-Length: {}\r\n\r\n{text}", text.len()).unwrap();
        } else {
            writeln!(self.stdin, "{text}").unwrap();
        }
        self.stdin.flush().unwrap();
    }

    fn receive(&mut self) -> Value {
        if !self.framed {
            let mut line = String::new();
            self.stdout.read_line(&mut line).unwrap();
            return serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
        }
        let mut length = None;
        loop {
            let mut line = String::new();
            self.stdout.read_line(&mut line).unwrap();
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse::<usize>().ok();
            }
        }
        let mut body = vec![0; length.expect("a Content-Length header")];
        self.stdout.read_exact(&mut body).unwrap();
        serde_json::from_slice(&body).unwrap()
    }

    /// Sends a request and returns its answer.
    fn call(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.receive()
    }

    /// `initialize`, `notifications/initialized`, `tools/list` and one `tools/call`.
    fn session(mut self, tool: &str, arguments: Value) -> (Value, Value) {
        let init = self.call(
            1,
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "compat", "version": "1"}}),
        );
        assert!(init.get("result").is_some(), "{init}");
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        let list = self.call(2, "tools/list", json!({}));
        let called = self.call(
            3,
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
        );
        drop(self.stdin);
        let _ = self.child.kill();
        let _ = self.child.wait();
        (list, called)
    }
}

#[test]
fn runx_0_8_2_and_this_runx_serve_the_same_tools_and_results() {
    let Some(upstream) = upstream_runx() else {
        eprintln!("runx 0.8.2 is not on this machine (../shared/runx/runx.gz): not compared");
        return;
    };
    let ours = PathBuf::from(env!("CARGO_BIN_EXE_runx"));
    let mut answers = Vec::new();
    for (bin, framed) in [(&upstream, true), (&ours, false)] {
        let ws = tempfile::tempdir().unwrap();
        copy_dir(
            &fixtures().join("hello-world"),
            &ws.path().join("hello-world"),
        );
        let server = Server::start(bin, ws.path(), &["mcp", "serve", "hello-world"], framed);
        answers.push(server.session("hello-world", json!({"message": "hi"})));
    }
    let ((theirs_list, theirs), (ours_list, ours)) = (&answers[0], &answers[1]);
    let names = |list: &Value| -> Vec<String> {
        list["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("{list}"))
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(names(theirs_list), ["hello-world"], "{theirs_list}");
    assert_eq!(names(ours_list), names(theirs_list), "{ours_list}");
    let required = |list: &Value| list["result"]["tools"][0]["inputSchema"]["required"].clone();
    assert_eq!(required(ours_list), required(theirs_list));

    let (t, o) = (&theirs["result"], &ours["result"]);
    assert_eq!(t["isError"], json!(false), "{theirs}");
    assert_eq!(o["isError"], t["isError"], "{ours}");
    assert_eq!(o["content"], t["content"], "{ours} / {theirs}");
    let (ts, os) = (&t["structuredContent"], &o["structuredContent"]);
    assert_eq!(os["output"], ts["output"], "{ours} / {theirs}");
    assert_eq!(os["output"], json!({"message": "hi"}));
    for key in ["status", "skillName", "events", "output"] {
        assert_eq!(os["runx"][key], ts["runx"][key], "{key}: {ours} / {theirs}");
    }
    let keys = |v: &Value| -> Vec<String> { v.as_object().unwrap().keys().cloned().collect() };
    assert_eq!(keys(&os["runx"]), keys(&ts["runx"]), "{ours} / {theirs}");
    for id in ["runId", "receiptId"] {
        assert!(os["runx"][id].is_string(), "{id}: {ours}");
    }
}
