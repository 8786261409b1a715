//! The map/fold paged runner (`pages.map`, `pages.fold`, `pages.workers`) through `runx skill`:
//! the same bytes for any number of workers and as a sequential run, the first failing page in
//! page order, the fold's state limit, and a cancelled run that leaves no worker behind.

use super::*;
use proptest::prelude::*;
use serde_json::json;
use std::time::{Duration, Instant};

/// Runner inputs every runner of the generated packages declares.
const INPUTS: &str = "    inputs:\n      data: { type: string, required: true }\n      data_base: { type: string, default: workspace }\n      keyword: { type: string, default: \"\" }\n      stop_after: { type: integer, default: 0 }\n";

/// A workspace with a package `pkg` around the archive fixture's `tally.mjs`, framed into
/// pages of `page_bytes`: `seq` (the sequential reference, one page function doing both), and
/// `w1`, `w2`, `w4`, `w8` (map/fold on 1, 2, 4 and 8 workers).
fn tally_package(page_bytes: usize) -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    let pkg = ws.path().join("pkg");
    std::fs::create_dir(&pkg).unwrap();
    std::fs::copy(
        fixtures().join("archive").join("tally.mjs"),
        pkg.join("tally.mjs"),
    )
    .unwrap();
    let head = "    type: javascript\n    module: tally.mjs\n    timeout_seconds: 10\n";
    let mut yaml = String::from("skill: tally\nversion: \"0.1.0\"\nrunners:\n");
    yaml += &format!(
        "  seq:\n{head}    export: tallySequential\n{INPUTS}    pages: {{ path_from: data, path_scope_from: data_base, page_bytes: {page_bytes} }}\n"
    );
    for n in [1, 2, 4, 8] {
        yaml += &format!(
            "  w{n}:\n{head}{INPUTS}    pages: {{ path_from: data, path_scope_from: data_base, page_bytes: {page_bytes}, map: tallyPage, fold: mergeTallies, workers: {n} }}\n"
        );
    }
    std::fs::write(pkg.join("X.yaml"), yaml).unwrap();
    ws
}

/// Runs `runner` of `pkg` over `data.json` in `ws` with a pool of eight workers.
fn tally(ws: &Path, runner: &str, extra: &[&str]) -> (Value, i32) {
    let mut args = vec![
        "skill",
        "pkg",
        runner,
        "--pool-size",
        "8",
        "-i",
        "data=data.json",
        "-i",
        "keyword=runx",
    ];
    args.extend_from_slice(extra);
    json_in(ws, &args, &[])
}

/// `runner` run as [`tally`] runs it, on `engine` whatever `RUNX_TEST_ENGINE` says; `None` when
/// this runx was built without that engine (and the suite is not running on it).
fn tally_on(ws: &Path, engine: &str, runner: &str) -> Option<(Value, i32)> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_runx"))
        .current_dir(ws)
        .env_remove("RUNX_RECEIPT_DIR")
        .args([
            "--engine",
            engine,
            "skill",
            "pkg",
            runner,
            "--pool-size",
            "8",
        ])
        .args(["-i", "data=data.json", "-i", "keyword=runx", "--json"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let built = !(out.status.code() == Some(64)
        && String::from_utf8_lossy(&out.stderr).contains("--engine"));
    if !built {
        // On the engine the suite runs on, a missing engine is a failure, not a skip.
        assert_ne!(
            test_engine().as_deref(),
            Some(engine),
            "runx lacks `{engine}`"
        );
        return None;
    }
    Some(json_of(&out))
}

/// The artifact record of a run's evidence.
fn artifact(v: &Value) -> Value {
    evidence(&receipt_of(v))["artifact"].clone()
}

/// An archive of tweets as runx pages them: optionally behind the YTD assignment, records
/// spread over lines or not, texts with quotes, brackets, commas and non-ASCII letters.
fn archive_text(records: &[(u32, String, u16)], prefix: bool, newlines: bool) -> String {
    let sep = if newlines { ",\n  " } else { "," };
    let body: Vec<String> = records
        .iter()
        .map(|(id, text, favorites)| {
            json!({"tweet": {"id_str": id.to_string(), "full_text": text, "favorite_count": favorites}})
                .to_string()
        })
        .collect();
    let head = if prefix {
        "window.YTD.tweets.part0 = ["
    } else {
        "["
    };
    format!("{head}{}]\n", body.join(sep))
}

fn record() -> impl Strategy<Value = (u32, String, u16)> {
    let word = prop::sample::select(vec![
        "runx",
        "plain",
        "\"quoted\"",
        "],[",
        "ünïcödé",
        "a,b",
        "{x}",
        "\\\\",
        "",
    ]);
    (
        any::<u32>(),
        prop::collection::vec(word, 0..6).prop_map(|w| w.join(" ")),
        any::<u16>(),
    )
}

fn config() -> ProptestConfig {
    let mut config = ProptestConfig {
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    // Each case runs runx four times: keep the default run short; PROPTEST_CASES widens it.
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = 10;
    }
    config
}

proptest! {
    #![proptest_config(config())]

    /// The output bytes of a map/fold run are a function of the archive's bytes: identical on
    /// 1, 2, 4 and 8 workers and on both engines (where this runx has V8: the V8 stage of CI),
    /// and equal to the sequential page function doing the same work.
    #[test]
    fn map_fold_output_is_the_same_for_any_number_of_workers(
        records in prop::collection::vec(record(), 0..120),
        prefix in any::<bool>(),
        newlines in any::<bool>(),
        page_bytes in 200usize..3000,
    ) {
        let ws = tally_package(page_bytes);
        std::fs::write(ws.path().join("data.json"), archive_text(&records, prefix, newlines)).unwrap();
        let (reference, code) = tally(ws.path(), "seq", &[]);
        prop_assert_eq!(code, 0, "{}", reference);
        prop_assert_eq!(&reference["result"]["scanned"], &json!(records.len()));
        let digest = |v: &Value| evidence(&receipt_of(v))["output_digest"].clone();
        for (runner, workers) in [("w1", 1), ("w2", 2), ("w4", 4), ("w8", 8)] {
            let (v, code) = tally(ws.path(), runner, &[]);
            prop_assert_eq!(code, 0, "{}: {}", runner, v);
            prop_assert_eq!(&v["result"], &reference["result"], "{}", runner);
            prop_assert_eq!(digest(&v), digest(&reference), "{}", runner);
            let record = artifact(&v);
            prop_assert_eq!(&record["workers"], &json!(workers));
            prop_assert_eq!(&record["page_count"], &artifact(&reference)["page_count"]);
            prop_assert_eq!(&record["finished"], &json!(true));
        }
        for engine in ["quickjs", "v8"] {
            if let Some((v, code)) = tally_on(ws.path(), engine, "w2") {
                prop_assert_eq!(code, 0, "{}: {}", engine, v);
                prop_assert_eq!(&v["result"], &reference["result"], "{}", engine);
                prop_assert_eq!(digest(&v), digest(&reference), "{}", engine);
            }
        }
    }
}

/// Tweets `0..n`, every fifth matching `runx`.
fn tweets(n: u32) -> String {
    let records: Vec<(u32, String, u16)> = (0..n)
        .map(|i| {
            let text = if i % 5 == 0 { "runx page" } else { "plain" };
            (i, format!("{text} {i}"), (i % 7) as u16)
        })
        .collect();
    archive_text(&records, true, true)
}

/// A map/fold run that stops early (`done` from the fold) equals the sequential run that stops
/// at the same record, and records only the pages it folded.
#[test]
fn a_fold_that_is_done_ends_the_run_at_its_page() {
    let ws = tally_package(512);
    std::fs::write(ws.path().join("data.json"), tweets(400)).unwrap();
    let (reference, code) = tally(ws.path(), "seq", &["-i", "stop_after=100"]);
    assert_eq!(code, 0, "{reference}");
    for runner in ["w1", "w2", "w4"] {
        let (v, code) = tally(ws.path(), runner, &["-i", "stop_after=100"]);
        assert_eq!(code, 0, "{v}");
        assert_eq!(v["result"], reference["result"], "{runner}");
        assert_eq!(
            artifact(&v)["page_count"],
            artifact(&reference)["page_count"]
        );
    }
}

/// A map that fails on pages 3 and 5 (page 3 only after a long spin, so page 5 fails first on
/// more than one worker): the run fails at page 3 with its offset, on any number of workers.
#[test]
fn the_first_failing_page_in_page_order_decides() {
    let (ws, _) = workspace_with("archive");
    let mut seen = Vec::new();
    for pool in ["1", "4"] {
        let (v, code) = json_in(
            ws.path(),
            &[
                "skill",
                "pkg",
                "tally-fails-on-page-3",
                "--pool-size",
                pool,
                "-i",
                "archive_file=data/tweets.js",
                "-i",
                "archive_base=skill",
            ],
            &[],
        );
        assert_eq!(code, 1, "{v}");
        assert_eq!(v["error"]["kind"], "execution_failed", "{v}");
        let message = v["error"]["message"].as_str().unwrap().to_string();
        assert!(
            message.starts_with("page 3 (byte offset 2871): map `failingTally`"),
            "{message}"
        );
        let record = artifact(&v);
        assert_eq!(
            (&record["failed_page_index"], &record["failed_offset"]),
            (&json!(3), &json!(2871))
        );
        assert_eq!(record["finished"], false);
        // The declared partitions, whatever the pool's size.
        assert_eq!(record["workers"], json!(4));
        assert_eq!(record["partitions"], json!(4));
        assert_eq!(record["module_lifetime"], "page");
        seen.push(message);
    }
    assert_eq!(seen[0], seen[1]);
}

/// A fold whose state passes 2 MiB fails at that page with `state_bytes`.
#[test]
fn a_fold_state_over_the_limit_fails_its_page() {
    let (ws, _) = workspace_with("archive");
    let (v, code) = json_in(
        ws.path(),
        &[
            "skill",
            "pkg",
            "tally-fat-fold",
            "-i",
            "archive_file=data/tweets.js",
            "-i",
            "archive_base=skill",
        ],
        &[],
    );
    assert_eq!(code, 1, "{v}");
    assert_eq!(
        (&v["error"]["kind"], &v["error"]["code"]),
        (&json!("resource_limit"), &json!("state_bytes"))
    );
    assert_eq!(artifact(&v)["failed_page_index"], 0);
}

/// Ctrl-C in the middle of a map/fold run: the run ends `interrupted` and none of the workers
/// that were mapping pages is left.
#[test]
fn a_cancelled_map_fold_run_leaves_no_worker() {
    let ws = tempfile::tempdir().unwrap();
    let pkg = ws.path().join("pkg");
    std::fs::create_dir(&pkg).unwrap();
    std::fs::write(
        pkg.join("X.yaml"),
        "skill: slow\nversion: \"0.1.0\"\nrunners:\n  sum:\n    type: javascript\n    module: sum.mjs\n    timeout_seconds: 10\n    inputs:\n      data: { type: string, required: true }\n      data_base: { type: string, default: workspace }\n    pages: { path_from: data, path_scope_from: data_base, page_bytes: 256, map: spin, fold: add, workers: 2 }\n",
    )
    .unwrap();
    std::fs::write(
        pkg.join("sum.mjs"),
        "export function spin(i) {\n  let s = 0;\n  for (let k = 0; k < 3000000; k++) s = (s + k) % 7;\n  return i.runx_page.records.reduce((a, r) => a + JSON.parse(r), s * 0);\n}\nexport function add(i) {\n  const p = i.runx_page;\n  const sum = (p.state ?? 0) + p.result;\n  return p.eof ? { sum } : { runx_page: { state: sum } };\n}\n",
    )
    .unwrap();
    let numbers: Vec<String> = (1..=4000).map(|i| format!("{i:>7}")).collect();
    std::fs::write(
        ws.path().join("data.json"),
        format!("[{}]", numbers.join(",")),
    )
    .unwrap();
    let child = runx()
        .current_dir(ws.path())
        .args([
            "skill",
            "pkg",
            "sum",
            "--pool-size",
            "2",
            "-i",
            "data=data.json",
            "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let parent = child.id();
    let started = Instant::now();
    let workers = loop {
        let workers = children_of(parent);
        if workers.len() >= 2 {
            break workers;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "two workers never ran"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    std::thread::sleep(Duration::from_millis(150));
    let out = interrupt(child);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["error"]["kind"], "interrupted", "{v}");
    let gone = |pid: &u32| {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        // Gone, or a zombie whose parent has yet to reap it.
        status.is_empty() || status.contains("State:\tZ")
    };
    let deadline = Instant::now() + Duration::from_secs(2);
    while !workers.iter().all(gone) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let left: Vec<&u32> = workers.iter().filter(|p| !gone(p)).collect();
    assert!(left.is_empty(), "workers left after the cancel: {left:?}");
}
