//! Partitions of a paged run (`pages.workers`, `pages.module`): page `i` runs in partition
//! `i mod N` on a worker of its own, so what a page sees (its module's state, its isolate's
//! registry and heap, the depth its stack reaches) depends on the package and the bytes alone:
//! never on the pool's size, the schedule, or which worker was free.

use super::*;
use proptest::prelude::*;
use serde_json::json;

/// The module of the generated packages. `seen` counts the calls this module instance has had;
/// `map`, `fold` and `page` report it with the page, so a test reads which pages shared an
/// instance. `filler` registers `Symbol.for` keys (isolate-wide state), `depth` returns how
/// deep a caught stack overflow let it go, `grow` keeps 4 MiB more per call.
const MODULE: &str = r#"
let seen = 0;
const kept = [];
function sum(p) {
  let s = 0;
  for (const r of p.records) s += JSON.parse(r);
  return s;
}
export function map(i) {
  const p = i.runx_page;
  seen += 1;
  return { page: p.page_index, seen, sum: sum(p) };
}
export function fold(i) {
  const p = i.runx_page;
  const s = p.state ?? { pages: [], sum: 0, folds: 0 };
  seen += 1;
  s.pages.push([p.result.page, p.result.seen]);
  s.sum += p.result.sum;
  s.folds = seen;
  if (p.eof) return { runx_page: { state: s }, ...s };
  return { runx_page: { state: s } };
}
export function page(i) {
  const p = i.runx_page;
  const s = p.state ?? { pages: [], sum: 0 };
  seen += 1;
  s.pages.push([p.page_index, seen]);
  s.sum += sum(p);
  if (p.eof) return { runx_page: { state: s }, ...s };
  return { runx_page: { state: s } };
}
export function filler(i) {
  const p = i.runx_page;
  for (let k = 0; k < 40000; k++) Symbol.for(`${p.page_index}:${k}:` + "x".repeat(64));
  return { page: p.page_index, seen: 0, sum: sum(p) };
}
export function depth(i) {
  const p = i.runx_page;
  const g = (n) => { try { return g(n + 1); } catch { return n; } };
  return { page: p.page_index, seen: g(0), sum: sum(p) };
}
export function grow(i) {
  const p = i.runx_page;
  kept.push(new Array(512 * 1024).fill(p.page_index));
  seen += 1;
  return { page: p.page_index, seen, sum: sum(p) };
}
"#;

/// The evidence of the receipt a run wrote.
fn run_evidence(v: &Value) -> Value {
    evidence(&receipt_of(v)).clone()
}

/// Partitions of the map/fold runners.
const PARTITIONS: usize = 3;

/// A workspace with package `pkg` whose runners page `data.json` at `page_bytes`:
/// `seq-page`/`seq-part` (sequential, module per page / per partition), `mf-page`/`mf-part`
/// (map/fold in [`PARTITIONS`] partitions), and `filler`, `depth`, `grow-part` (map/fold with
/// the hostile maps).
fn package(page_bytes: usize) -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    let pkg = ws.path().join("pkg");
    std::fs::create_dir(&pkg).unwrap();
    std::fs::write(pkg.join("part.mjs"), MODULE).unwrap();
    let head = "    type: javascript\n    module: part.mjs\n    timeout_seconds: 20\n    inputs:\n      data: { type: string, required: true }\n      data_base: { type: string, default: workspace }\n";
    let pages = format!("path_from: data, path_scope_from: data_base, page_bytes: {page_bytes}");
    let mut yaml = String::from("skill: partitions\nversion: \"0.1.0\"\nrunners:\n");
    for (name, module) in [("seq-page", "page"), ("seq-part", "partition")] {
        yaml += &format!(
            "  {name}:\n{head}    export: page\n    pages: {{ {pages}, module: {module} }}\n"
        );
    }
    for (name, map, module) in [
        ("mf-page", "map", "page"),
        ("mf-part", "map", "partition"),
        ("filler", "filler", "page"),
        ("depth", "depth", "page"),
        ("grow-part", "grow", "partition"),
    ] {
        yaml += &format!(
            "  {name}:\n{head}    pages: {{ {pages}, map: {map}, fold: fold, workers: {PARTITIONS}, module: {module} }}\n"
        );
    }
    std::fs::write(pkg.join("X.yaml"), yaml).unwrap();
    ws
}

/// `data.json`: the numbers `0..n`, each padded to eight bytes.
fn numbers(n: u32) -> String {
    let items: Vec<String> = (0..n).map(|i| format!("{i:>7}")).collect();
    format!("[{}]", items.join(","))
}

/// Runs `runner` over `data.json` with a pool of `pool` workers: its JSON envelope and exit
/// code.
fn run(ws: &Path, runner: &str, pool: usize) -> (Value, i32) {
    let pool = pool.to_string();
    json_in(
        ws,
        &[
            "skill",
            "pkg",
            runner,
            "--pool-size",
            &pool,
            "-i",
            "data=data.json",
        ],
        &[],
    )
}

/// What a run gave, for comparing runs: the result, or the error and the page it failed at.
fn outcome(v: &Value, code: i32) -> Value {
    let record = &run_evidence(v)["artifact"];
    if code == 0 {
        json!({ "result": v["result"], "page_count": record["page_count"] })
    } else {
        json!({
            "kind": v["error"]["kind"],
            "code": v["error"]["code"],
            "failed_page_index": record["failed_page_index"],
        })
    }
}

/// The `[page, seen]` pairs of a result.
fn seen(v: &Value) -> Vec<(u64, u64)> {
    v["result"]["pages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_u64().unwrap(), p[1].as_u64().unwrap()))
        .collect()
}

fn config() -> ProptestConfig {
    let mut config = ProptestConfig {
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    // Each case runs runx sixteen times: keep the default run short.
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = 4;
    }
    config
}

proptest! {
    #![proptest_config(config())]

    /// The bytes of a run are the same for pool sizes 1, 2, 4 and 8, for both module lifetimes,
    /// sequential and map/fold: a module kept per partition sees exactly its partition's pages,
    /// in order, and a module per page sees one page.
    #[test]
    fn a_runs_bytes_do_not_depend_on_the_pool(n in 1u32..400, page_bytes in 64usize..600) {
        let ws = package(page_bytes);
        std::fs::write(ws.path().join("data.json"), numbers(n)).unwrap();
        let total = u64::from(n) * u64::from(n.saturating_sub(1)) / 2;
        for runner in ["seq-page", "seq-part", "mf-page", "mf-part"] {
            let mut first: Option<Value> = None;
            for pool in [1, 2, 4, 8] {
                let (v, code) = run(ws.path(), runner, pool);
                prop_assert_eq!(code, 0, "{} on {}: {}", runner, pool, v);
                prop_assert_eq!(&v["result"]["sum"], &json!(total));
                let record = &run_evidence(&v)["artifact"];
                let partitions = if runner.starts_with("mf") { PARTITIONS } else { 1 };
                prop_assert_eq!(&record["partitions"], &json!(partitions));
                let module = if runner.ends_with("part") { "partition" } else { "page" };
                prop_assert_eq!(&record["module_lifetime"], &json!(module));
                for (i, (page, seen)) in seen(&v).into_iter().enumerate() {
                    prop_assert_eq!(page, i as u64);
                    let expected = match (runner, module) {
                        (_, "page") => 1,
                        ("seq-part", _) => page + 1,
                        _ => page / PARTITIONS as u64 + 1,
                    };
                    prop_assert_eq!(seen, expected, "{} page {}: {}", runner, page, v);
                }
                if runner == "mf-part" {
                    // The fold's instance saw every fold, in its own partition.
                    prop_assert_eq!(&v["result"]["folds"], &record["page_count"]);
                }
                let digest = run_evidence(&v)["output_digest"].clone();
                match &first {
                    None => first = Some(digest),
                    Some(d) => prop_assert_eq!(&digest, d, "{} on {}", runner, pool),
                }
            }
        }
    }
}

/// Runs `runner` twenty times over pool sizes 1, 2, 4 and 8 in turn: every outcome the same.
fn same_every_time(ws: &Path, runner: &str) -> Value {
    let mut first = None;
    for k in 0..20 {
        let pool = [1, 2, 4, 8][k % 4];
        let (v, code) = run(ws, runner, pool);
        let got = outcome(&v, code);
        match &first {
            None => first = Some(got),
            Some(f) => assert_eq!(&got, f, "{runner}, run {k} on a pool of {pool}: {v}"),
        }
    }
    first.unwrap()
}

/// `Symbol.for` keys stay in an engine's registry for the life of its isolate: a map that
/// registers 40,000 keys a page fills a partition's isolate at the same page on every run and
/// every pool size, or never.
#[test]
fn the_symbol_for_filler_ends_the_same_way_every_time() {
    let ws = package(256);
    std::fs::write(ws.path().join("data.json"), numbers(400)).unwrap();
    let outcome = same_every_time(ws.path(), "filler");
    if outcome.get("result").is_none() {
        assert_eq!(outcome["code"], "heap_bytes", "{outcome}");
    }
}

/// A caught stack overflow returns the depth it reached: the same for a page on every run,
/// whatever the pool (and on QuickJS the same on every page).
#[test]
fn a_caught_overflow_depth_is_the_same_every_time() {
    let ws = package(512);
    std::fs::write(ws.path().join("data.json"), numbers(200)).unwrap();
    let outcome = same_every_time(ws.path(), "depth");
    let pages = outcome["result"]["pages"].as_array().unwrap();
    assert!(pages.len() > 3, "{outcome}");
    let depths: Vec<&Value> = pages.iter().map(|p| &p[1]).collect();
    assert!(depths[0].as_u64().unwrap() > 1000, "{depths:?}");
    // QuickJS reaches one depth on every page. V8's later pages on a partition's isolate reach
    // other depths as its compiler tiers the function up, in the same sequence on every run.
    if test_engine().is_none_or(|e| e == "quickjs") {
        assert!(depths.iter().all(|d| *d == depths[0]), "{depths:?}");
    }
}

/// A module kept per partition that keeps 4 MiB more on every page fails `heap_bytes` at the
/// same page on every run and every pool size.
#[test]
fn module_state_that_grows_fails_at_the_same_page_every_time() {
    let ws = package(64);
    std::fs::write(ws.path().join("data.json"), numbers(400)).unwrap();
    let outcome = same_every_time(ws.path(), "grow-part");
    assert_eq!(outcome["code"], "heap_bytes", "{outcome}");
    assert!(outcome["failed_page_index"].as_u64().unwrap() > PARTITIONS as u64);
}

/// A map/fold run whose workers are killed one by one at random moments either gives the
/// undisturbed answer (the kill came too late) or fails `worker_crashed` at a page: never
/// another answer.
#[test]
fn a_killed_partition_worker_never_changes_the_answer() {
    let ws = package(64);
    std::fs::write(ws.path().join("data.json"), numbers(3000)).unwrap();
    let (calm, code) = run(ws.path(), "mf-part", 2);
    assert_eq!(code, 0, "{calm}");
    let mut failed = 0;
    for k in 0..4u64 {
        let child = runx()
            .current_dir(ws.path())
            .args(["skill", "pkg", "mf-part", "--pool-size", "2"])
            .args(["-i", "data=data.json", "--json"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let workers = workers_of(
            child.id(),
            std::time::Duration::from_secs(10),
            std::time::Duration::from_millis(5),
        );
        std::thread::sleep(std::time::Duration::from_millis(20 + 37 * k));
        let victim = workers[k as usize % workers.len()];
        let _ = std::process::Command::new("kill")
            .args(["-9", &victim.to_string()])
            .status();
        let out = child.wait_with_output().unwrap();
        let (v, code) = json_of(&out);
        if code == 0 {
            assert_eq!(v["result"], calm["result"]);
            continue;
        }
        failed += 1;
        assert_eq!(v["error"]["kind"], "worker_crashed", "{v}");
        let record = &run_evidence(&v)["artifact"];
        assert!(record["failed_page_index"].is_u64(), "{v}");
        assert_eq!(record["finished"], false);
    }
    assert!(failed > 0, "no kill landed mid-run");
}

/// `runx skill check` and `inspect` show each paged runner's partitions and module lifetime.
#[test]
fn check_and_inspect_show_partitions_and_module_lifetime() {
    let ws = package(256);
    let out = run_in(ws.path(), &["skill", "check", "pkg"], &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("mf-part (javascript, paged in 3 partitions, module per partition)"),
        "{text}"
    );
    assert!(
        text.contains("seq-page (javascript, paged in 1 partition, module per page)"),
        "{text}"
    );
    let out = run_in(ws.path(), &["skill", "inspect", "pkg", "--json"], &[]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let runner = |name: &str| {
        v["runners"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .unwrap()["pages"]
            .clone()
    };
    assert_eq!(runner("mf-part")["partitions"], 3);
    assert_eq!(runner("mf-part")["module"], "partition");
    assert_eq!(runner("seq-page")["partitions"], 1);
    assert_eq!(runner("seq-page")["module"], "page");
}
