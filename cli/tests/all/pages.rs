//! Paged json_array runners through `runx skill`.

use super::*;
use serde_json::json;

/// The archive package plus generated data: `n` tweet records behind the YTD prefix, and runners
/// at 64 KiB, 512 KiB and 4 MiB pages.
fn archive(n: usize) -> (tempfile::TempDir, PathBuf) {
    let (ws, pkg) = workspace_with("archive");
    let mut yaml = std::fs::read_to_string(pkg.join("X.yaml")).unwrap();
    yaml.push_str(
        "  select-512k:\n    type: javascript\n    module: select.mjs\n    export: selectPage\n    timeout_seconds: 5\n    inputs:\n      archive_file: { type: string, required: true }\n      archive_base: { type: string, default: workspace }\n      keyword: { type: string, default: \"\" }\n      stop_after: { type: integer, default: 0 }\n    pages: { path_from: archive_file, path_scope_from: archive_base, page_bytes: 524288 }\n",
    );
    std::fs::write(pkg.join("X.yaml"), yaml).unwrap();
    let mut text = String::from("window.YTD.tweets.part0 = [\n");
    for i in 0..n {
        if i > 0 {
            text.push_str(",\n");
        }
        let body = if i % 5 == 0 {
            "runx \"pages\" ],[ ünï"
        } else {
            "plain"
        };
        text.push_str(&json!({"tweet": {"id_str": format!("{i}"), "full_text": format!("{body} {i}"), "n": [i, i * 2]}}).to_string());
    }
    text.push_str("\n]\n");
    std::fs::write(ws.path().join("tweets.js"), text).unwrap();
    (ws, pkg)
}

fn select(ws: &Path, runner: &str, extra: &[&str]) -> (Value, i32) {
    let mut args = vec![
        "skill",
        "pkg",
        runner,
        "-i",
        "archive_file=tweets.js",
        "-i",
        "keyword=runx",
    ];
    args.extend_from_slice(extra);
    json_in(ws, &args, &[])
}

/// The evidence of the receipt a run wrote.
fn run_evidence(v: &Value) -> Value {
    evidence(&receipt_of(v)).clone()
}

#[test]
fn output_is_identical_across_page_sizes_and_runs() {
    let (ws, _) = archive(6000);
    let (a, code) = select(ws.path(), "select", &[]);
    assert_eq!(code, 0, "{a}");
    let (b, _) = select(ws.path(), "select-512k", &[]);
    let (c, _) = select(ws.path(), "select-large-pages", &[]);
    let (d, _) = select(ws.path(), "select", &[]);
    assert_eq!(a["result"]["scanned"], 6000);
    assert_eq!(a["result"], b["result"]);
    assert_eq!(a["result"], c["result"]);
    assert_eq!(a["result"], d["result"]);
    let (ra, rd) = (run_evidence(&a), run_evidence(&d));
    assert!(ra["artifact"]["page_count"].as_u64().unwrap() > 5);
    assert_eq!(run_evidence(&c)["artifact"]["page_count"], 1);
    assert_eq!(
        ra["artifact"]["whole_digest"],
        rd["artifact"]["whole_digest"]
    );
    assert_eq!(ra["artifact"]["finished"], true);
    assert_ne!(
        ra["artifact"]["artifact_ref"],
        rd["artifact"]["artifact_ref"]
    );
    assert_eq!(ra["output_digest"], rd["output_digest"]);
    assert!(
        !a["result"].to_string().contains("artifact:"),
        "artifact_ref stays out of output"
    );
}

#[test]
fn done_stops_early() {
    let (ws, _) = archive(6000);
    let (v, code) = select(ws.path(), "select", &["-i", "stop_after=300"]);
    assert_eq!(code, 0, "{v}");
    let scanned = v["result"]["scanned"].as_u64().unwrap();
    assert!((300..6000).contains(&scanned), "{scanned}");
    let r = run_evidence(&v);
    assert_eq!(r["artifact"]["finished"], true);
}

/// A run that ends with `done` before a malformed part of its artifact succeeds with a clean
/// receipt, although the framer (ahead of the calls) already met the malformed part.
#[test]
fn done_before_a_malformed_page_leaves_no_failure_behind() {
    let (ws, _) = archive(6000);
    let path = ws.path().join("tweets.js");
    let text = std::fs::read_to_string(&path).unwrap();
    // Past the first 64 KiB page, a record that is not JSON.
    let cut = text[100_000..].find(",\n").unwrap() + 100_000;
    std::fs::write(&path, format!("{},{{bad}}{}", &text[..cut], &text[cut..])).unwrap();
    let (broken, code) = select(ws.path(), "select", &[]);
    assert_eq!(code, 1, "{broken}");
    assert!(run_evidence(&broken)["artifact"]["failed_offset"].is_u64());
    let (v, code) = select(ws.path(), "select", &["-i", "stop_after=300"]);
    assert_eq!(code, 0, "{v}");
    let r = run_evidence(&v);
    assert_eq!(r["artifact"]["finished"], true);
    assert!(r["artifact"]["failed_page_index"].is_null(), "{r}");
    assert!(r["artifact"]["failed_offset"].is_null(), "{r}");
}

#[test]
fn module_failures_name_page_and_offset() {
    let (ws, _) = archive(200);
    for (runner, kind, code, page) in [
        ("throw-on-page-3", "execution_failed", "execution_failed", 3),
        ("fat-state", "resource_limit", "state_bytes", 0),
        ("extra-keys", "output_rejected", "page_result", 0),
    ] {
        let (v, exit) = json_in(
            ws.path(),
            &["skill", "pkg", runner, "-i", "archive_file=tweets.js"],
            &[],
        );
        assert_eq!(exit, 1, "{runner}");
        assert_eq!(v["error"]["kind"], kind, "{runner}: {v}");
        assert_eq!(v["error"]["code"], code, "{runner}: {v}");
        let msg = v["error"]["message"].as_str().unwrap();
        assert!(msg.contains(&format!("page {page} (byte offset")), "{msg}");
        let r = run_evidence(&v);
        assert_eq!(r["artifact"]["failed_page_index"], page);
        assert_eq!(r["artifact"]["finished"], false);
    }
}

#[test]
fn framing_errors_name_the_offset() {
    let (ws, _) = archive(10);
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("truncated.js", b"[{\"a\":1},{\"b\":".to_vec(), "byte"),
        ("utf8.js", b"[{\"a\":\"\xff\"}]".to_vec(), "UTF-8"),
        ("json.js", b"[{\"a\":1},{a:2}]".to_vec(), "invalid JSON"),
        ("garbage.js", b"[1,2] trailing".to_vec(), "byte 6"),
        (
            "big.js",
            format!("[\"{}\"]", "x".repeat(70_000)).into_bytes(),
            "byte 1",
        ),
    ];
    for (name, bytes, needle) in cases {
        std::fs::write(ws.path().join(name), bytes).unwrap();
        let arg = format!("archive_file={name}");
        let (v, exit) = json_in(ws.path(), &["skill", "pkg", "-i", &arg], &[]);
        assert_eq!(exit, 1, "{name}: {v}");
        assert_eq!(v["error"]["kind"], "page", "{name}: {v}");
        assert!(
            v["error"]["message"].as_str().unwrap().contains(needle),
            "{name}: {v}"
        );
        assert!(
            run_evidence(&v)["artifact"]["failed_offset"].is_u64(),
            "{name}"
        );
    }
}

#[test]
fn admission_refuses_escapes_directories_and_huge_files() {
    let (ws, _) = archive(10);
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("x.js"), "[]").unwrap();
    std::os::unix::fs::symlink(outside.path().join("x.js"), ws.path().join("link.js")).unwrap();
    std::fs::create_dir(ws.path().join("dir.js")).unwrap();
    let huge = std::fs::File::create(ws.path().join("huge.js")).unwrap();
    huge.set_len(512 * 1024 * 1024 + 1).unwrap();
    for (path, code) in [
        ("../x.js", "artifact_scope"),
        ("link.js", "artifact_scope"),
        ("dir.js", "artifact_type"),
        ("huge.js", "artifact_bytes"),
        ("/etc/passwd", "artifact_path"),
    ] {
        let arg = format!("archive_file={path}");
        let (v, exit) = json_in(ws.path(), &["skill", "pkg", "-i", &arg], &[]);
        assert_eq!(exit, 1, "{path}: {v}");
        assert_eq!(v["error"]["code"], code, "{path}: {v}");
    }
}

#[test]
fn skill_scope_reads_from_the_package() {
    let (ws, _) = archive(1);
    let (v, code) = json_in(
        ws.path(),
        &[
            "skill",
            "pkg",
            "-i",
            "archive_file=data/tweets.js",
            "-i",
            "archive_base=skill",
            "-i",
            "keyword=runx",
        ],
        &[],
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["result"]["scanned"], 60);
}

/// A package whose pages each add up their records after a busy loop, over an array of
/// `n` small numbers framed into pages of about 256 bytes.
fn slow_pages(n: usize) -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    let pkg = ws.path().join("pkg");
    std::fs::create_dir(&pkg).unwrap();
    std::fs::write(
        pkg.join("X.yaml"),
        "skill: slow\nversion: \"0.1.0\"\nrunners:\n  sum:\n    type: javascript\n    module: sum.mjs\n    export: page\n    timeout_seconds: 10\n    inputs:\n      data: { type: string, required: true }\n      data_base: { type: string, default: workspace }\n    pages: { path_from: data, path_scope_from: data_base, page_bytes: 256 }\n",
    )
    .unwrap();
    std::fs::write(
        pkg.join("sum.mjs"),
        "export function page(i) {\n  const p = i.runx_page;\n  const s = p.state ?? { sum: 0, pages: 0 };\n  let spin = 0;\n  for (let k = 0; k < 1000000; k++) spin = (spin + k) % 7;\n  for (const r of p.records) s.sum += JSON.parse(r);\n  s.pages += spin >= 0 ? 1 : 0;\n  if (p.eof) return { runx_page: { state: s }, sum: s.sum, pages: s.pages };\n  return { runx_page: { state: s } };\n}\n",
    )
    .unwrap();
    let numbers: Vec<String> = (1..=n).map(|i| format!("{:>7}", i)).collect();
    std::fs::write(
        ws.path().join("data.json"),
        format!("[{}]", numbers.join(",")),
    )
    .unwrap();
    ws
}

/// A worker killed while pages go ahead ends the run at the page it was running, with
/// `worker_crashed`: its partition's pages run on one worker in order, so no page goes on with
/// another history. The run never returns an answer an undisturbed run would not.
#[test]
fn a_worker_lost_mid_run_ends_the_run_at_its_page() {
    let ws = slow_pages(1200);
    let args = ["skill", "pkg", "sum", "-i", "data=data.json"];
    let (calm, code) = json_in(ws.path(), &args, &[]);
    assert_eq!(code, 0, "{calm}");
    assert_eq!(calm["result"]["sum"], 1200 * 1201 / 2);
    let pages = calm["result"]["pages"].as_u64().unwrap();
    assert!(pages > 30, "{pages}");
    assert_eq!(run_evidence(&calm)["artifact"]["partitions"], 1, "{calm}");

    let mut c = runx();
    let mut child = c
        .current_dir(ws.path())
        .args(args)
        .arg("--json")
        .env("RUST_LOG", "runx_runtime=warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let runx_pid = child.id();
    let worker = workers_of(
        runx_pid,
        std::time::Duration::from_secs(10),
        std::time::Duration::from_millis(5),
    )[0];
    // A few pages in.
    std::thread::sleep(std::time::Duration::from_millis(200));
    let running = child.try_wait().unwrap().is_none();
    let killed_mid_run = std::process::Command::new("kill")
        .args(["-9", &worker.to_string()])
        .status()
        .unwrap()
        .success()
        && running;
    let out = child.wait_with_output().unwrap();
    let (v, code) = json_of(&out);
    if code == 0 {
        // The kill came after the last page: the undisturbed answer.
        assert_eq!(v["result"], calm["result"]);
        assert!(!killed_mid_run || test_engine().is_some_and(|e| e != "quickjs"));
        return;
    }
    assert_eq!(v["error"]["kind"], "worker_crashed", "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("page "), "{message}");
    assert!(
        message.contains("the worker of partition 0 was lost"),
        "{message}"
    );
    let record = &run_evidence(&v)["artifact"];
    assert_eq!(record["finished"], false);
    let failed = record["failed_page_index"].as_u64().unwrap();
    assert!(failed < pages, "{failed} of {pages}");
    assert!(v.get("result").is_none_or(Value::is_null), "{v}");
}

/// Pages are framed while admission still reads the file, but every call, page 0's included,
/// sees the whole digest of the file, in `runx_page`'s one key order, in a sequential run and
/// in a map/fold run's maps and folds alike.
#[test]
fn every_page_carries_the_whole_digest_in_one_key_order() {
    let ws = tempfile::tempdir().unwrap();
    let pkg = ws.path().join("pkg");
    let pages = "path_from: file, path_scope_from: base, page_bytes: 65536";
    let inputs = "inputs: { file: { type: string }, base: { type: string, default: workspace } }";
    let yaml = format!(
        "skill: keys\nversion: '1'\nrunners:\n  walk:\n    type: javascript\n    module: keys.mjs\n    export: walk\n    {inputs}\n    pages: {{ {pages} }}\n  mapped:\n    type: javascript\n    module: keys.mjs\n    {inputs}\n    pages: {{ {pages}, map: see, fold: gather, workers: 2 }}\n"
    );
    let module = r#"
const seen = (p) => Object.keys(p).filter((k) => k !== 'records' && k !== 'result').join(',') + ' ' + p.whole_digest;
export function walk({ runx_page: p }) {
  const views = [...(p.state ?? []), seen(p)];
  return p.eof ? { views } : { runx_page: { state: views } };
}
export function see({ runx_page: p }) { return { view: seen(p) }; }
export function gather({ runx_page: p }) {
  const views = [...(p.state ?? []), p.result.view, 'fold ' + seen(p)];
  return p.eof ? { views } : { runx_page: { state: views } };
}
"#;
    super::containment::write_files(&pkg, &[("X.yaml", &yaml), ("keys.mjs", module)]);
    // About 2 MiB: some 32 pages, so most are framed while admission is still reading.
    let mut text = String::from("[");
    for i in 0..20_000 {
        if i > 0 {
            text.push(',');
        }
        text.push_str(&json!({"i": i, "pad": "x".repeat(90)}).to_string());
    }
    text.push(']');
    std::fs::write(ws.path().join("data.json"), &text).unwrap();
    let whole = runx_receipts::sha256_hex(text.as_bytes());
    let keys = "artifact_bytes,artifact_ref,eof,length,media_type,next_offset,offset,page_index,range_digest,whole_digest,state";
    for runner in ["walk", "mapped"] {
        let (out, code) = json_in(
            ws.path(),
            &["skill", "pkg", runner, "-i", "file=data.json"],
            &[],
        );
        assert_eq!(code, 0, "{out}");
        let views = out["result"]["views"].as_array().unwrap();
        assert!(views.len() > 30, "{out}");
        for view in views {
            let view = view.as_str().unwrap().trim_start_matches("fold ");
            let (names, digest) = view.split_once(' ').unwrap();
            assert_eq!(digest, whole, "{runner}: {view}");
            // A map sees no state; every other call sees it last, as ever.
            let expected = if runner == "mapped" && !names.ends_with("state") {
                keys.trim_end_matches(",state")
            } else {
                keys
            };
            assert_eq!(names, expected, "{runner}");
        }
    }
}

/// A package `pkg` whose runners page at 16 bytes a page and log every call they get: `seq`
/// (one page function) and `mapfold` (a map and a fold on two workers).
fn logging_package(ws: &Path) {
    let pkg = ws.join("pkg");
    std::fs::create_dir(&pkg).unwrap();
    std::fs::write(
        pkg.join("count.mjs"),
        "function settle(p, state) {\n  return p.eof ? { runx_page: { state }, records: state } : { runx_page: { state } };\n}\nexport function page(inputs) {\n  const p = inputs.runx_page;\n  console.log(`page ${p.page_index}`);\n  return settle(p, (p.state ?? 0) + p.records.length);\n}\nexport function map(inputs) {\n  console.log(`map ${inputs.runx_page.page_index}`);\n  return inputs.runx_page.records.length;\n}\nexport function fold(inputs) {\n  const p = inputs.runx_page;\n  console.log(`fold ${p.page_index}`);\n  return settle(p, (p.state ?? 0) + p.result);\n}\n",
    )
    .unwrap();
    let runner = |name: &str, export: &str, extra: &str| {
        format!(
            "  {name}:\n    type: javascript\n    module: count.mjs\n{export}    inputs:\n      data: {{ type: string, required: true }}\n      data_base: {{ type: string, default: workspace }}\n    outputs:\n      records: integer\n    pages: {{ path_from: data, path_scope_from: data_base, page_bytes: 16{extra} }}\n"
        )
    };
    let yaml = format!(
        "skill: fit\nversion: \"0.1.0\"\nrunners:\n{}{}",
        runner("seq", "    export: page\n", ""),
        runner("mapfold", "", ", map: map, fold: fold, workers: 2"),
    );
    std::fs::write(pkg.join("X.yaml"), yaml).unwrap();
}

/// A file that cannot fit in a run's 4096 pages at its `page_bytes` is refused once admission
/// has read it, as the run would have failed at page 4096 (`resource_limit`, `page_count`),
/// but before any page is called: no console line, no page in the receipt. A sequential run,
/// a map/fold run and a dry run alike; a file as large whose whitespace lets it fit runs.
#[test]
fn a_file_that_cannot_fit_in_a_runs_pages_is_refused_before_any_page() {
    let ws = tempfile::tempdir().unwrap();
    logging_package(ws.path());
    // 30,000 records of 5 bytes, two a page at 16 bytes (15,000 pages): 180,000 bytes that
    // are not whitespace, which no 4096 pages of 16 bytes and a comma can hold.
    let records = vec!["12345"; 30_000].join(",");
    std::fs::write(ws.path().join("big.json"), format!("[{records}]")).unwrap();
    // As large, but whitespace between two records: two pages.
    let spaced = format!("[12345,{}67890]", " \n".repeat(90_000));
    std::fs::write(ws.path().join("spaced.json"), spaced).unwrap();
    for runner in ["seq", "mapfold"] {
        let started = std::time::Instant::now();
        let (v, code) = json_in(
            ws.path(),
            &["skill", "pkg", runner, "-i", "data=big.json"],
            &[],
        );
        let took = started.elapsed();
        assert_eq!(code, 1, "{runner}: {v}");
        assert_eq!(v["error"]["kind"], "resource_limit", "{runner}: {v}");
        assert_eq!(v["error"]["code"], "page_count", "{runner}: {v}");
        let message = v["error"]["message"].as_str().unwrap();
        for words in [
            "artifact `big.json` needs at least 6734 pages of page_bytes 16",
            "at most 4096",
            "its 180001 bytes hold 180001 bytes that are not whitespace",
            "declare page_bytes of at least 27",
            "split the file",
        ] {
            assert!(message.contains(words), "{runner}: {words}: {message}");
        }
        assert_eq!(
            v["console"]["line_count"], 0,
            "{runner}: no page was called: {v}"
        );
        let evidence = run_evidence(&v);
        let artifact = &evidence["artifact"];
        assert_eq!(artifact["page_count"], 0, "{runner}: {evidence}");
        assert_eq!(artifact["artifact_bytes"], 180_001, "{runner}: {evidence}");
        assert_eq!(artifact["finished"], false, "{runner}: {evidence}");
        assert!(
            artifact["failed_page_index"].is_null(),
            "{runner}: {evidence}"
        );
        assert_eq!(
            evidence["failure"]["code"], "page_count",
            "{runner}: {evidence}"
        );
        eprintln!("{runner}: refused in {took:?}");

        let (v, code) = json_in(
            ws.path(),
            &["skill", "pkg", runner, "-i", "data=spaced.json"],
            &[],
        );
        assert_eq!(code, 0, "{runner}: {v}");
        assert_eq!(v["result"]["records"], 2, "{runner}: {v}");
        assert_eq!(run_evidence(&v)["artifact"]["page_count"], 2, "{runner}");
    }
    let (v, code) = json_in(
        ws.path(),
        &["skill", "pkg", "seq", "-i", "data=big.json", "--dry-run"],
        &[],
    );
    assert_eq!(code, 1, "{v}");
    assert_eq!(v["status"], "failure", "{v}");
    assert_eq!(v["error"]["code"], "page_count", "{v}");
}
