//! The worker's side of the frame protocol, driven with raw bytes through its stdin.

use runx_worker::frame::{read_frame, split_payload, write_frame};
use runx_worker::protocol::{Header, Message};
use serde_json::Value;
use std::io::Write;
use std::process::{Command, Stdio};

/// Runs the worker with `input` on stdin; returns the reply headers and the exit code.
fn exchange(input: &[u8]) -> (Vec<Value>, Option<i32>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_runx-worker"))
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input).unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let mut r: &[u8] = &out.stdout;
    let mut headers = Vec::new();
    while let Ok(Some(frame)) = read_frame(&mut r) {
        let (h, _) = split_payload(&frame).unwrap();
        headers.push(serde_json::from_slice(h).unwrap());
    }
    (headers, out.status.code())
}

fn frame(header: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    write_frame(&mut v, header, &[]).unwrap();
    v
}

#[test]
fn hello_ready_health_and_shutdown() {
    let mut input = frame(&Header::new(0, Message::Hello).to_bytes());
    input.extend(frame(
        &Header::new(5, Message::Health { nonce: 77 }).to_bytes(),
    ));
    input.extend(frame(&Header::new(0, Message::Shutdown).to_bytes()));
    input.extend(frame(
        &Header::new(6, Message::Health { nonce: 1 }).to_bytes(),
    ));
    let (replies, code) = exchange(&input);
    assert_eq!(code, Some(0));
    assert_eq!(replies.len(), 2, "nothing is answered after shutdown");
    assert_eq!(replies[0]["type"], "ready");
    assert_eq!(replies[0]["engine"], "quickjs");
    // Started by hand, without fd 3, the worker has no descriptor channel and says so.
    assert_eq!(replies[0]["pages_by_descriptor"], false);
    assert_eq!(replies[1]["type"], "healthy");
    assert_eq!(replies[1]["nonce"], 77);
    assert_eq!(replies[1]["call_id"], 5);
}

#[test]
fn oversize_length_is_rejected() {
    let (replies, code) = exchange(&[0x7f, 0xff, 0xff, 0xff, 0, 0]);
    assert_eq!(code, Some(2));
    assert_eq!(replies[0]["failure"]["code"], "invalid_request");
    assert!(
        replies[0]["failure"]["message"]
            .as_str()
            .unwrap()
            .contains("exceeds")
    );
}

#[test]
fn truncated_frame_is_rejected() {
    let (replies, code) = exchange(&[0, 0, 0, 50, 0, 0, 0, 2, b'{']);
    assert_eq!(code, Some(2));
    assert!(
        replies[0]["failure"]["message"]
            .as_str()
            .unwrap()
            .contains("ended inside")
    );
}

#[test]
fn wrong_version_is_refused() {
    let (replies, code) = exchange(&frame(br#"{"v":99,"call_id":0,"type":"hello"}"#));
    assert_eq!(code, Some(2));
    assert!(
        replies[0]["failure"]["message"]
            .as_str()
            .unwrap()
            .contains("version 99")
    );
}

#[test]
fn unknown_message_is_answered_and_the_worker_continues() {
    let mut input = frame(br#"{"v":1,"call_id":3,"type":"teleport"}"#);
    input.extend(frame(
        &Header::new(4, Message::Health { nonce: 2 }).to_bytes(),
    ));
    let (replies, code) = exchange(&input);
    assert_eq!(code, Some(0));
    assert_eq!(replies[0]["call_id"], 3);
    assert_eq!(replies[0]["failure"]["code"], "invalid_request");
    assert!(
        replies[0]["failure"]["message"]
            .as_str()
            .unwrap()
            .contains("teleport")
    );
    assert_eq!(replies[1]["type"], "healthy");
}

#[test]
fn a_non_empty_environment_is_refused() {
    let out = Command::new(env!("CARGO_BIN_EXE_runx-worker"))
        .env_clear()
        .env("SECRET", "x")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("environment must be empty"));
}

#[test]
fn a_page_by_descriptor_without_a_channel_is_refused() {
    let bundle = runx_worker::bundle::ModuleBundle::from_sources(
        "main.mjs",
        [("main.mjs", "export default () => ({});")],
    );
    let invoke = Header::new(
        9,
        Message::Invoke {
            bundle_digest: bundle.digest(),
            bundle: Some(bundle),
            export: None,
            environment: Default::default(),
            limits: runx_worker::limits::Limits::default(),
            input_len: 2,
            page: Some(runx_worker::protocol::PageLayout {
                meta_len: 2,
                record_count: 1,
                blob_len: 1,
                range: Some(runx_worker::protocol::ByteRange { offset: 0, len: 1 }),
            }),
        },
    );
    let mut input = Vec::new();
    let spans = runx_worker::protocol::encode_spans(&[(0, 1)]);
    write_frame(&mut input, &invoke.to_bytes(), &[b"{}", b"{}", &spans]).unwrap();
    let (replies, code) = exchange(&input);
    assert_eq!(code, Some(0));
    assert_eq!(replies[0]["call_id"], 9);
    assert_eq!(replies[0]["failure"]["code"], "invalid_request");
    assert!(
        replies[0]["failure"]["message"]
            .as_str()
            .unwrap()
            .contains("no descriptor channel"),
        "{}",
        replies[0]
    );
}

#[test]
fn engine_versions_are_reported_for_built_engines_only() {
    let quickjs = runx_worker::serve::engine_version("quickjs").unwrap();
    // QuickJS-ng spells its release `MAJOR.MINOR.PATCH`.
    let parts: Vec<&str> = quickjs.split('.').collect();
    assert_eq!(parts.len(), 3, "{quickjs}");
    assert!(parts.iter().all(|p| p.parse::<u32>().is_ok()), "{quickjs}");
    assert_eq!(runx_worker::serve::engine_version("spidermonkey"), None);
    assert_eq!(
        runx_worker::serve::engine_version("v8").is_some(),
        cfg!(feature = "v8")
    );
}

/// Issue 13, item 4: a worker busy in a call notices at once that its host is gone (the pipe
/// it answers on has no reader left) and exits, instead of running out the call's wall.
#[test]
fn a_worker_whose_host_pipe_closes_exits_at_once() {
    use runx_worker::bundle::ModuleBundle;
    use runx_worker::limits::Limits;
    use std::time::{Duration, Instant};
    let mut child = Command::new(env!("CARGO_BIN_EXE_runx-worker"))
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    stdin
        .write_all(&frame(&Header::new(0, Message::Hello).to_bytes()))
        .unwrap();
    assert!(read_frame(&mut stdout).unwrap().is_some(), "ready");
    let bundle = ModuleBundle::from_sources(
        "main.mjs",
        [("main.mjs", "export default () => { for (;;) {} };")],
    );
    let input = b"{}";
    let header = Header::new(
        1,
        Message::Invoke {
            bundle_digest: bundle.digest(),
            bundle: Some(bundle),
            export: None,
            environment: Default::default(),
            limits: Limits::default().with_wall(Duration::from_secs(30)),
            input_len: input.len() as u32,
            page: None,
        },
    )
    .to_bytes();
    write_frame(&mut stdin, &header, &[input]).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert!(child.try_wait().unwrap().is_none(), "the call is running");
    // The host goes away: its read end closes (stdin stays open, as after a SIGKILL of a host
    // whose descriptor was inherited elsewhere).
    drop(stdout);
    let closed = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(
            closed.elapsed() < Duration::from_secs(5),
            "the worker kept running its 30 s call after its host left"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    drop(stdin);
}
