//! The worker's side of the frame protocol, driven with raw bytes through its stdin.

use proptest::prelude::*;
use runx_worker::{
    ConsoleLog, Engine, EngineCall, EngineOutput, Failure, Header, Limits, MemoryCap, Message,
    ModuleBundle, PageLayout, read_frame, run_session, split_payload, write_frame,
};
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
    let bundle = runx_worker::ModuleBundle::from_sources(
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
            limits: runx_worker::Limits::default(),
            input_len: 2,
            probe: false,
            keep_module: false,
            run: None,
            page: Some(runx_worker::PageLayout {
                meta_len: 2,
                record_count: 1,
                blob_len: 1,
                range: Some(runx_worker::ByteRange { offset: 0, len: 1 }),
                keep_state: false,
                state_from: None,
                run: None,
            }),
        },
    );
    let mut input = Vec::new();
    let spans = runx_worker::encode_spans(&[(0, 1)]);
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
    let quickjs = runx_worker::engine_version("quickjs").unwrap();
    // QuickJS-ng spells its release `MAJOR.MINOR.PATCH`.
    let parts: Vec<&str> = quickjs.split('.').collect();
    assert_eq!(parts.len(), 3, "{quickjs}");
    assert!(parts.iter().all(|p| p.parse::<u32>().is_ok()), "{quickjs}");
    assert_eq!(runx_worker::engine_version("spidermonkey"), None);
    assert_eq!(
        runx_worker::engine_version("v8").is_some(),
        cfg!(feature = "v8")
    );
}

/// Issue 13, item 4: a worker busy in a call notices at once that its host is gone (the pipe
/// it answers on has no reader left) and exits, instead of running out the call's wall.
#[test]
fn a_worker_whose_host_pipe_closes_exits_at_once() {
    use runx_worker::{Limits, ModuleBundle};
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
            probe: false,
            keep_module: false,
            run: None,
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

/// A stand-in engine for the request path: it answers `{"ok":true}`, or sleeps first when the
/// input says so. The worker's own checks (limits, layout, sizes, the wall at return) are what
/// these tests are about, not JavaScript.
struct Stub;

impl Engine for Stub {
    fn name(&self) -> &'static str {
        "stub"
    }

    fn memory_cap(&self) -> MemoryCap {
        MemoryCap::AddressSpace(1 << 30)
    }

    fn call(&mut self, call: &EngineCall<'_>) -> Result<EngineOutput, (Failure, ConsoleLog)> {
        let input: Value = serde_json::from_slice(call.input).unwrap_or_default();
        if let Some(ms) = input.get("sleep_ms").and_then(Value::as_u64) {
            std::thread::sleep(std::time::Duration::from_millis(ms));
        }
        let output = match input.get("emit").and_then(Value::as_str) {
            Some(text) => text.as_bytes().to_vec(),
            None => br#"{"ok":true}"#.to_vec(),
        };
        Ok(EngineOutput {
            output,
            log: ConsoleLog::default(),
        })
    }
}

/// An engine that records, for each call, whether the worker let it continue on what the call
/// before it built, and each time the worker told it it was idle.
#[derive(Default)]
struct Recorder {
    events: Vec<String>,
}

impl Engine for Recorder {
    fn name(&self) -> &'static str {
        "recorder"
    }

    fn memory_cap(&self) -> MemoryCap {
        MemoryCap::AddressSpace(1 << 30)
    }

    fn call(&mut self, call: &EngineCall<'_>) -> Result<EngineOutput, (Failure, ConsoleLog)> {
        self.events
            .push(format!("call continues={}", call.continues));
        Ok(EngineOutput {
            output: br#"{"ok":true}"#.to_vec(),
            log: ConsoleLog::default(),
        })
    }

    fn idle(&mut self) {
        self.events.push("idle".to_string());
    }
}

/// An invoke frame of an empty module: a page of one record of run `page_run` when that is
/// given, else a plain call, naming `call_run` as its own run.
fn run_frame(
    bundle: &ModuleBundle,
    call_id: u64,
    page_run: Option<u64>,
    call_run: Option<u64>,
) -> Vec<u8> {
    let page = page_run.map(|run| PageLayout {
        meta_len: 2,
        record_count: 1,
        blob_len: 1,
        range: None,
        keep_state: false,
        state_from: None,
        run: Some(run),
    });
    let header = Header::new(
        call_id,
        Message::Invoke {
            bundle_digest: bundle.digest(),
            bundle: Some(bundle.clone()),
            export: None,
            environment: Default::default(),
            limits: Limits::default(),
            input_len: 2,
            probe: false,
            keep_module: false,
            run: call_run,
            page,
        },
    );
    let mut tail = b"{}".to_vec();
    if page_run.is_some() {
        tail.extend_from_slice(b"{}");
        tail.extend_from_slice(&1u32.to_le_bytes());
        tail.extend_from_slice(b"1");
    }
    let mut out = Vec::new();
    write_frame(&mut out, &header.to_bytes(), &[&tail]).unwrap();
    out
}

/// Only the next page of the run the worker's last call belonged to continues on what that
/// call built (V8 keeps its isolate for it); a page of another run, a call without a page and
/// a page after one of them start clean, and the worker prepares the clean start while idle
/// (the first call's before it reads anything).
#[test]
fn only_the_next_page_of_the_same_run_continues() {
    let bundle = ModuleBundle::from_sources("main.mjs", [("main.mjs", "")]);
    let frame = |call_id: u64, run: Option<u64>| run_frame(&bundle, call_id, run, None);
    let mut input = Vec::new();
    for (id, run) in [
        (1, Some(7)),
        (2, Some(7)),
        (3, Some(8)),
        (4, None),
        (5, Some(8)),
        (6, Some(8)),
    ] {
        input.extend(frame(id, run));
    }
    let mut engine = Recorder::default();
    let mut out = Vec::new();
    run_session(&mut engine, &input[..], &mut out).unwrap();
    assert_eq!(
        engine.events,
        [
            "idle",
            "call continues=false",
            "call continues=true",
            "call continues=false",
            "call continues=false",
            "idle",
            "call continues=false",
            "call continues=true",
        ]
    );
}

/// A call that is not a page but names its run (a map/fold run's fold) continues on what the
/// run's previous call on this worker built, and the run's next page continues after it; a
/// call naming another run does not.
#[test]
fn a_fold_of_the_run_continues_it_between_its_pages() {
    let bundle = ModuleBundle::from_sources("main.mjs", [("main.mjs", "")]);
    let mut input = Vec::new();
    for (id, page_run, call_run) in [
        (1, Some(7), None),
        (2, None, Some(7)),
        (3, Some(7), None),
        (4, None, Some(9)),
        (5, Some(7), None),
    ] {
        input.extend(run_frame(&bundle, id, page_run, call_run));
    }
    let mut engine = Recorder::default();
    let mut out = Vec::new();
    run_session(&mut engine, &input[..], &mut out).unwrap();
    let calls: Vec<&str> = engine
        .events
        .iter()
        .map(String::as_str)
        .filter(|e| e.starts_with("call"))
        .collect();
    assert_eq!(
        calls,
        [
            "call continues=false",
            "call continues=true",
            "call continues=true",
            "call continues=false",
            "call continues=false",
        ]
    );
}

/// Serves `input` (whole frames) in-process with the stub engine; returns the reply headers.
fn serve_stub(input: &[u8]) -> Vec<Value> {
    let mut out = Vec::new();
    let _ = run_session(&mut Stub, input, &mut out);
    let mut r: &[u8] = &out;
    let mut headers = Vec::new();
    while let Ok(Some(frame)) = read_frame(&mut r) {
        let (h, _) = split_payload(&frame).unwrap();
        headers.push(serde_json::from_slice(h).unwrap());
    }
    headers
}

fn invoke_frame(call_id: u64, limits: Limits, input: &[u8]) -> Vec<u8> {
    let bundle =
        ModuleBundle::from_sources("main.mjs", [("main.mjs", "export default () => ({});")]);
    let header = Header::new(
        call_id,
        Message::Invoke {
            bundle_digest: bundle.digest(),
            bundle: Some(bundle),
            export: None,
            environment: Default::default(),
            limits,
            input_len: input.len() as u32,
            probe: false,
            keep_module: false,
            run: None,
            page: None,
        },
    );
    let mut v = Vec::new();
    write_frame(&mut v, &header.to_bytes(), &[input]).unwrap();
    v
}

/// A call that comes back after its wall (time spent where the engine's interrupt never
/// looked) is a wall failure, not a result.
#[test]
fn a_call_returning_after_its_wall_is_a_wall_failure() {
    let limits = Limits {
        wall_milliseconds: 50,
        ..Limits::default()
    };
    let replies = serve_stub(&invoke_frame(1, limits, br#"{"sleep_ms":120}"#));
    assert_eq!(replies[0]["type"], "failure", "{}", replies[0]);
    assert_eq!(replies[0]["failure"]["code"], "resource_limit");
    assert_eq!(replies[0]["failure"]["limit"], "wall_milliseconds");
    let replies = serve_stub(&invoke_frame(2, limits, br#"{"sleep_ms":0}"#));
    assert_eq!(replies[0]["type"], "result", "{}", replies[0]);
}

/// Whatever an engine hands back must be JSON the host can read: a lone surrogate escape is
/// refused by the worker, not found by the host.
#[test]
fn output_the_host_cannot_read_is_refused_by_the_worker() {
    let input = serde_json::to_vec(&serde_json::json!({"emit": "{\"s\":\"\\ud800\"}"})).unwrap();
    let replies = serve_stub(&invoke_frame(1, Limits::default(), &input));
    assert_eq!(
        replies[0]["failure"]["code"], "output_rejected",
        "{}",
        replies[0]
    );
}

#[test]
fn zero_or_oversized_limits_are_invalid_requests() {
    let c = Limits::CEILING;
    for bad in [
        Limits { heap_bytes: 0, ..c },
        Limits {
            stack_bytes: 0,
            ..c
        },
        Limits {
            heap_bytes: c.heap_bytes + 1,
            ..c
        },
        Limits {
            stack_bytes: usize::MAX,
            ..c
        },
        Limits {
            wall_milliseconds: 0,
            ..c
        },
        Limits {
            input_bytes: 0,
            ..c
        },
        Limits {
            output_depth: 0,
            ..c
        },
    ] {
        let replies = serve_stub(&invoke_frame(7, bad, b"{}"));
        assert_eq!(replies[0]["call_id"], 7);
        assert_eq!(
            replies[0]["failure"]["code"], "invalid_request",
            "{bad:?}: {}",
            replies[0]
        );
    }
}

/// A bundle's module paths count toward its source limit: 60,000 names of empty modules are
/// 13 MB, not 0 bytes.
#[test]
fn module_names_count_toward_the_source_limit() {
    let mut modules: Vec<(String, String)> = (0..60_000)
        .map(|i| (format!("{}{i}.mjs", "m".repeat(200)), String::new()))
        .collect();
    modules.push((
        "main.mjs".to_string(),
        "export default () => ({});".to_string(),
    ));
    let bundle = ModuleBundle::from_sources("main.mjs", modules);
    assert!(bundle.source_bytes() > Limits::CEILING.source_bytes);
    let header = Header::new(
        3,
        Message::Invoke {
            bundle_digest: bundle.digest(),
            bundle: Some(bundle),
            export: None,
            environment: Default::default(),
            limits: Limits::default(),
            input_len: 2,
            probe: false,
            keep_module: false,
            run: None,
            page: None,
        },
    );
    let mut input = Vec::new();
    write_frame(&mut input, &header.to_bytes(), &[b"{}"]).unwrap();
    let replies = serve_stub(&input);
    assert_eq!(
        replies[0]["failure"]["limit"], "source_bytes",
        "{}",
        replies[0]
    );
}

/// The number of cases of each property test: modest in CI, and as many as
/// `PROPTEST_CASES` says for a long run (docs/src/results/ records one of a million each).
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

fn any_limit(ceiling: u64) -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        1..=ceiling,
        Just(ceiling),
        Just(ceiling + 1),
        (ceiling + 1)..u64::from(u32::MAX),
    ]
}

fn any_limits() -> impl Strategy<Value = Limits> {
    let c = Limits::CEILING;
    (
        any_limit(c.input_bytes as u64),
        any_limit(c.output_bytes as u64),
        any_limit(c.heap_bytes as u64),
        any_limit(c.stack_bytes as u64),
        any_limit(30_000),
        any_limit(c.log_bytes as u64),
        any_limit(c.output_depth as u64),
    )
        .prop_map(move |(i, o, h, s, w, l, d)| Limits {
            input_bytes: i as usize,
            output_bytes: o as usize,
            heap_bytes: h as usize,
            stack_bytes: s as usize,
            wall_milliseconds: w,
            log_bytes: l as usize,
            output_depth: d as usize,
            ..c
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    /// Every invoke gets exactly one answer under its own call id: `invalid_request` when its
    /// limits are out of range or its tail does not match its declared layout, the input limit
    /// when the input is too large, else a result. Nothing panics or hangs.
    #[test]
    fn invoke_requests_are_validated(
        call_id in any::<u64>(),
        limits in any_limits(),
        input in proptest::collection::vec(any::<u8>(), 0..64),
        declared in proptest::option::of(0u32..128),
        page in proptest::option::of((0u32..16, 0u32..8, 0u32..64)),
        extra in proptest::collection::vec(any::<u8>(), 0..128),
    ) {
        let bundle = ModuleBundle::from_sources("main.mjs", [("main.mjs", "")]);
        let input_len = declared.unwrap_or(input.len() as u32);
        let header = Header::new(call_id, Message::Invoke {
            bundle_digest: bundle.digest(),
            bundle: Some(bundle),
            export: None,
            environment: Default::default(),
            limits,
            input_len,
            page: page.map(|(meta_len, record_count, blob_len)| PageLayout { meta_len, record_count, blob_len, range: None, keep_state: false, state_from: None, run: None }),
            probe: false,
            keep_module: false,
            run: None,
        });
        let mut tail = input.clone();
        tail.extend_from_slice(&extra);
        let mut frame = Vec::new();
        write_frame(&mut frame, &header.to_bytes(), &[&tail]).unwrap();
        let replies = serve_stub(&frame);
        prop_assert_eq!(replies.len(), 1);
        let reply = &replies[0];
        prop_assert_eq!(reply["call_id"].as_u64(), Some(call_id));
        let code = reply["failure"]["code"].as_str().unwrap_or("result");
        if limits.check().is_err() {
            prop_assert_eq!(code, "invalid_request");
        } else if reply["type"] == "result" {
            // Only a tail that matches its layout and fits the input limit gets this far.
            prop_assert!(tail.len() <= limits.input_bytes);
            prop_assert!(input_len as usize <= tail.len());
        } else {
            prop_assert!(
                code == "invalid_request" || reply["failure"]["limit"] == "input_bytes",
                "{}", reply
            );
        }
    }

    /// Arbitrary bytes as a frame payload, or as a whole stream, never panic the worker and are
    /// answered or end the stream.
    #[test]
    fn arbitrary_requests_are_answered(
        payload in proptest::collection::vec(any::<u8>(), 0..256),
        raw in proptest::collection::vec(any::<u8>(), 0..64),
    ) {
        let mut framed = Vec::new();
        write_frame(&mut framed, &payload, &[]).unwrap();
        let replies = serve_stub(&framed);
        prop_assert!(replies.len() <= 1);
        for r in &replies {
            prop_assert!(r["type"] == "failure" || r["type"] == "ready" || r["type"] == "healthy", "{}", r);
        }
        let _ = serve_stub(&raw);
    }
}
