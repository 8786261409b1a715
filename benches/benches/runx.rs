//! `cargo bench -p runx-benches`: latency, page throughput (beside the engine's own limit and
//! Node.js), scaling, and the per-step overhead of `runx serve` (`serve_bench.py`), each
//! measured in the same run.
//!
//! Archive sizes in MiB come from `RUNX_BENCH_SIZES_MIB` (default "8,64"; the full run uses
//! "8,64,256,512"); page sizes are 256 KiB, 1 MiB and 4 MiB. Needs the release worker and, for
//! the end-to-end and memory parts, the release `runx`:
//! `cargo build --release -p runx-worker -p runx-cli`.

use runx_benches::memory::{Peaks, Sampler, system_shmem_kib};
use runx_benches::workload::{self, AGGREGATE_MODULE, Bench, PAGE_SIZES, TimeSplit};
use runx_benches::{growth_exponent, stats};
use runx_runtime::Runtime;
use runx_runtime::framing::{Framer, PageBudget};
use runx_runtime::limits::STATE_BYTES;
use runx_worker::bundle::ModuleBundle;
use runx_worker::engine::{Engine, EngineCall, PageInput};
use runx_worker::limits::Limits;
use runx_worker::pool::{Pool, PoolConfig};
use runx_worker::process::{Call, WorkerCommand};
use runx_worker::quickjs::QuickJs;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Runs of each throughput measurement (median and spread are over these).
const RUNS: usize = 3;
/// Independent skill runs of the pool-scaling workload.
const K: usize = 8;

fn target_bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_default();
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .unwrap_or(Path::new("."));
    dir.join(name)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn page_label(bytes: usize) -> String {
    if bytes >= 1 << 20 {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{} KiB", bytes >> 10)
    }
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let worker = if target_bin("runx-worker").is_file() {
        WorkerCommand::new(target_bin("runx-worker"))
    } else if target_bin("runx").is_file() {
        WorkerCommand::new(target_bin("runx")).arg("__worker")
    } else {
        println!(
            "skipped: no worker next to the bench; build it first: cargo build --release -p runx-worker -p runx-cli"
        );
        return;
    };
    let runx = Some(target_bin("runx")).filter(|p| p.is_file());
    let sizes_env = std::env::var("RUNX_BENCH_SIZES_MIB").unwrap_or_else(|_| "8,64".to_string());
    let mut sizes: Vec<u64> = sizes_env
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .filter(|&s| s > 0)
        .collect();
    sizes.sort_unstable();
    sizes.dedup();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "runx benchmarks: sizes {sizes:?} MiB (RUNX_BENCH_SIZES_MIB), page sizes 256 KiB / 1 MiB / 4 MiB, {RUNS} runs each, {cpus} CPUs"
    );
    let payload = Limits::default()
        .input_bytes
        .saturating_sub(2 + 16 * 1024 + STATE_BYTES.max as usize);
    println!(
        "note: a page spans at most its page size of the file and carries at most {payload} bytes of records (the worker's input bound less the state reserve), so 4 MiB pages hold about 2 MiB"
    );
    println!(
        "note: Node.js runs a script that reads the file, cuts it into the same pages (one record per line, same span rule), and calls the same `page` export per page with the state carried as JSON; timed inside the script, process start excluded"
    );
    println!(
        "note: paged/engine compares runx's whole wall (admission, framing, protocol) with engine calls alone on pre-framed pages"
    );
    let ws = std::env::temp_dir().join(format!("runx-bench-{}", std::process::id()));
    let pkg = ws.join("pkg");
    if let Err(e) = workload::write_package(&pkg, &PAGE_SIZES).and_then(|()| write_node_script(&ws))
    {
        println!(
            "skipped: cannot write the bench package under {}: {e}",
            ws.display()
        );
        return;
    }
    latency(&worker, runx.as_deref(), &pkg);
    let node = node_version();
    let mut rows = Vec::new();
    for &size in &sizes {
        if let Some(row) = throughput(&worker, runx.as_deref(), node.as_deref(), &ws, size) {
            rows.push(row);
        }
    }
    scaling(&worker, &rows, runx.is_some());
    if let Some(runx) = runx.as_deref() {
        concurrency_memory(runx, &ws);
    }
    serve_overhead(runx.as_deref());
    let _ = std::fs::remove_dir_all(&ws);
}

/// `runx serve` through its Python client against `runx skill` per step, and concurrent
/// throughput with pools of 1 and 2: `benches/serve_bench.py`, which needs only `python3`.
fn serve_overhead(runx: Option<&Path>) {
    println!();
    let Some(runx) = runx else {
        println!(
            "runx serve: skipped, no release `runx` next to the bench; build it: cargo build --release -p runx-cli"
        );
        return;
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("serve_bench.py");
    match Command::new("python3")
        .arg(&script)
        .arg("--runx")
        .arg(runx)
        .status()
    {
        Ok(s) if s.success() => {}
        Ok(s) => println!("runx serve: {} exited with {s}", script.display()),
        Err(e) => println!("runx serve: skipped, cannot run python3: {e}"),
    }
}

fn bundle(source: &str) -> Arc<ModuleBundle> {
    Arc::new(ModuleBundle::from_sources(
        "main.mjs",
        [("main.mjs", source)],
    ))
}

// Long on purpose: a benchmark reads top to bottom in the order of the report it prints.
fn latency(worker: &WorkerCommand, runx: Option<&Path>, pkg: &Path) {
    let pool = Pool::new(PoolConfig::new(worker.clone()).size(1)).expect("pool");
    let call = Call::new(bundle(AGGREGATE_MODULE), Some("trivial"), b"{}".to_vec());
    for _ in 0..50 {
        pool.call(&call).expect("warm-up");
    }
    let mut warm: Vec<Duration> = (0..1000)
        .map(|_| {
            let t = Instant::now();
            pool.call(&call).expect("call");
            t.elapsed()
        })
        .collect();
    let mut engine = QuickJs::new();
    let env = BTreeMap::new();
    let b = bundle(AGGREGATE_MODULE);
    let mut fresh: Vec<Duration> = (0..1000)
        .map(|_| {
            let t = Instant::now();
            engine
                .call(&EngineCall {
                    bundle: &b,
                    export: Some("trivial"),
                    input: b"{}",
                    page: None,
                    environment: &env,
                    limits: Limits::default(),
                })
                .expect("in-process call");
            t.elapsed()
        })
        .collect();
    let w = stats(&mut warm);
    let f = stats(&mut fresh);
    println!("\nlatency (trivial export)");
    println!(
        "  warm call through the pool (1000 calls):   p50 {:.3} ms  p99 {:.3} ms  (min {:.3}, max {:.3})",
        ms(w.p50),
        ms(w.p99),
        ms(w.min),
        ms(w.max)
    );
    println!(
        "  in-process fresh context (1000 calls):     p50 {:.3} ms  p99 {:.3} ms  (min {:.3}, max {:.3})",
        ms(f.p50),
        ms(f.p99),
        ms(f.min),
        ms(f.max)
    );
    println!(
        "  => process + protocol overhead at p50:     {:.3} ms ({:.2}x the fresh context)",
        ms(w.p50) - ms(f.p50),
        w.p50.as_secs_f64() / f.p50.as_secs_f64()
    );
    let mut first: Vec<Duration> = (0..20)
        .map(|_| {
            let p = Pool::new(PoolConfig::new(worker.clone()).size(1)).expect("pool");
            let t = Instant::now();
            p.call(&call).expect("first call");
            t.elapsed()
        })
        .collect();
    let s = stats(&mut first);
    println!(
        "  first call on a new pool (20 pools):       p50 {:.3} ms  p99 {:.3} ms  (min {:.3}, max {:.3})",
        ms(s.p50),
        ms(s.p99),
        ms(s.min),
        ms(s.max)
    );
    println!(
        "  => worker spawn to ready (first − warm p50): p50 {:.3} ms  p99 {:.3} ms",
        ms(s.p50) - ms(w.p50),
        ms(s.p99) - ms(w.p50)
    );
    let Some(runx) = runx else {
        println!(
            "  cold `runx skill` end to end: skipped, no release `runx` next to the bench; build it: cargo build --release -p runx-cli"
        );
        return;
    };
    let receipts = pkg.with_file_name("cold-receipts");
    let mut cold = Vec::new();
    for _ in 0..20 {
        let t = Instant::now();
        let status = Command::new(runx)
            .args(["skill", "pkg", "trivial", "--receipt-dir"])
            .arg(&receipts)
            .current_dir(pkg.parent().unwrap_or(Path::new(".")))
            .env_remove("RUNX_WORKER")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let took = t.elapsed();
        match status {
            Ok(s) if s.success() => cold.push(took),
            other => {
                println!("  cold `runx skill` end to end: failed: {other:?}");
                return;
            }
        }
    }
    let _ = std::fs::remove_dir_all(&receipts);
    let c = stats(&mut cold);
    println!(
        "  cold `runx skill` trivial, process start to exit (20 runs): p50 {:.3} ms  p99 {:.3} ms  (min {:.3}, max {:.3})",
        ms(c.p50),
        ms(c.p99),
        ms(c.min),
        ms(c.max)
    );
}

/// What the scaling section needs of one archive size.
struct SizeRow {
    file_bytes: u64,
    /// Median wall per page size, in [`PAGE_SIZES`] order.
    walls: Vec<Duration>,
    /// Peak memory of a child `runx skill` over this archive (1 MiB pages).
    memory: Option<Memory>,
}

#[derive(Clone, Copy, Default)]
struct Memory {
    /// Peaks over `runx` and its worker (see `runx_benches::memory`).
    peaks: Peaks,
}

// Long on purpose: a benchmark reads top to bottom in the order of the report it prints.
fn throughput(
    worker: &WorkerCommand,
    runx: Option<&Path>,
    node: Option<&str>,
    ws: &Path,
    size_mib: u64,
) -> Option<SizeRow> {
    let archive_path = ws.join("archive.js");
    let (data, records) = workload::archive((size_mib << 20) as usize);
    if let Err(e) = std::fs::write(&archive_path, &data) {
        println!("\npage throughput {size_mib} MiB: skipped, cannot write the archive: {e}");
        return None;
    }
    let mb = data.len() as f64 / 1e6;
    println!(
        "\npage throughput: {size_mib} MiB archive ({} bytes), {records} records of ~{} bytes, {RUNS} runs each",
        data.len(),
        data.len() / records.max(1)
    );
    let rt = Runtime::new(worker.clone()).with_pool_size(1);
    let bench = Bench {
        workspace: ws.to_path_buf(),
        package: ws.join("pkg"),
        archive: "archive.js".to_string(),
    };
    let mut walls = Vec::new();
    for page_bytes in PAGE_SIZES {
        let label = page_label(page_bytes);
        let mut runs = Vec::new();
        for _ in 0..RUNS {
            match bench.run_pages(&rt, page_bytes, None) {
                Ok(r) if r.records == records as u64 => runs.push(r),
                Ok(r) => {
                    println!(
                        "  {label} pages: wrong result: {} records counted, {records} expected",
                        r.records
                    );
                    return None;
                }
                Err(e) => {
                    println!("  {label} pages: failed: {e}");
                    return None;
                }
            }
        }
        runs.sort_by_key(|r| r.wall);
        let median = &runs[runs.len() / 2];
        let (fast, slow) = (runs[0].wall, runs[runs.len() - 1].wall);
        let secs = median.wall.as_secs_f64();
        walls.push(median.wall);
        println!(
            "  runx paged, {label:>7} pages: median {:>6.1} MB/s  (spread {:.1}–{:.1}), {:>9.0} records/s, {} pages, wall {:.0} ms",
            mb / secs,
            mb / slow.as_secs_f64(),
            mb / fast.as_secs_f64(),
            records as f64 / secs,
            median.pages,
            ms(median.wall)
        );
        println!(
            "      split of the median run: {}",
            split_line(&median.split)
        );
        let engine = engine_limit(&data, page_bytes, records);
        match &engine {
            Ok(e) => {
                let mut e = e.clone();
                let s = stats(&mut e);
                println!(
                    "      engine in-process, fresh context per page: median {:>6.1} MB/s (spread {:.1}–{:.1}); paged/engine time = {:.2}x (runtime overhead)",
                    mb / s.p50.as_secs_f64(),
                    mb / s.max.as_secs_f64(),
                    mb / s.min.as_secs_f64(),
                    secs / s.p50.as_secs_f64()
                );
            }
            Err(e) => println!("      engine in-process: failed: {e}"),
        }
        match node {
            None => println!("      Node.js: skipped, `node` is not on PATH"),
            Some(version) => match node_pages(ws, page_bytes, records) {
                Ok(mut n) => {
                    let s = stats(&mut n);
                    println!(
                        "      Node.js {version}, same module and pages: median {:>6.1} MB/s (spread {:.1}–{:.1}); runx/Node time = {:.2}x",
                        mb / s.p50.as_secs_f64(),
                        mb / s.max.as_secs_f64(),
                        mb / s.min.as_secs_f64(),
                        secs / s.p50.as_secs_f64()
                    );
                }
                Err(e) => println!("      Node.js: failed: {e}"),
            },
        }
    }
    drop(rt);
    let file_bytes = data.len() as u64;
    drop(data);
    let memory = runx.and_then(|runx| match child_memory(runx, ws) {
        Ok(m) => Some(m),
        Err(e) => {
            println!("  peak memory of `runx skill`: failed: {e}");
            None
        }
    });
    let _ = std::fs::remove_file(&archive_path);
    Some(SizeRow {
        file_bytes,
        walls,
        memory,
    })
}

fn split_line(s: &TimeSplit) -> String {
    let parts: Vec<String> = s
        .parts()
        .iter()
        .map(|(name, v)| format!("{name} {:.0} ms ({:.1}%)", v, s.percent(*v)))
        .collect();
    format!("{} of {:.0} ms wall", parts.join(", "), s.wall_ms)
}

/// The same module over the same pages run directly in the engine: fresh context per page, no
/// framing, pool or protocol in the timing. One time per run.
fn engine_limit(data: &[u8], page_bytes: usize, records: usize) -> Result<Vec<Duration>, String> {
    let limits = Limits::default().with_wall(Duration::from_secs(600));
    let budget = PageBudget {
        page_bytes,
        payload_bytes: limits
            .input_bytes
            .saturating_sub(2 + 16 * 1024 + STATE_BYTES.max as usize),
        per_record_overhead: 4,
    };
    let mut framer = Framer::new(data).map_err(|e| e.to_string())?;
    let mut pages = Vec::new();
    while let Some(p) = framer.next_page(&budget).map_err(|e| e.to_string())? {
        let mut blob = Vec::with_capacity(p.record_bytes());
        let mut ends = Vec::with_capacity(p.records.len());
        for r in &p.records {
            blob.extend_from_slice(&data[r.clone()]);
            ends.push(blob.len() as u32);
        }
        pages.push((blob, ends, p.eof));
    }
    let b = bundle(AGGREGATE_MODULE);
    let env = BTreeMap::new();
    let mut engine = QuickJs::new();
    let mut times = Vec::new();
    for _ in 0..RUNS {
        let t = Instant::now();
        let mut state = "null".to_string();
        let mut counted = 0;
        for (i, (blob, ends, eof)) in pages.iter().enumerate() {
            let meta = format!("{{\"page_index\":{i},\"eof\":{eof},\"state\":{state}}}");
            let out = engine
                .call(&EngineCall {
                    bundle: &b,
                    export: Some("page"),
                    input: b"{}",
                    page: Some(PageInput {
                        meta: meta.as_bytes(),
                        blob,
                        ends,
                    }),
                    environment: &env,
                    limits,
                })
                .map_err(|e| format!("page {i}: {e:?}"))?;
            let v: serde_json::Value =
                serde_json::from_slice(&out.output).map_err(|e| e.to_string())?;
            state = v["runx_page"]["state"].to_string();
            counted = v["records"].as_u64().unwrap_or(counted);
        }
        times.push(t.elapsed());
        if counted != records as u64 {
            return Err(format!("{counted} records counted, {records} expected"));
        }
    }
    Ok(times)
}

/// The Node.js version, when `node` runs.
fn node_version() -> Option<String> {
    let out = Command::new("node").arg("--version").output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// What a Node.js user would write: read the file, cut it into the same pages of record texts
/// (the generator writes one record per line; a page spans at most `page_bytes` from its first
/// record's start to its last record's end, as in runx), and call the same `page` export per
/// page, carrying the state along as JSON. Times from reading the file to the last page.
const NODE_SCRIPT: &str = r#"
import { readFileSync } from 'node:fs';
import { page } from './pkg/main.mjs';
const [file, pageBytesArg] = process.argv.slice(2);
const pageBytes = Number(pageBytesArg);
const t0 = performance.now();
const buf = readFileSync(file);
let pos = buf.indexOf(10) + 1;
let state = null, pages = 0, last = null, recs = [], first = -1;
const flush = (eof) => {
  const carried = state === null ? null : JSON.parse(JSON.stringify(state));
  last = page({ runx_page: { page_index: pages, eof, state: carried, records: recs } });
  pages += 1; state = last.runx_page ? last.runx_page.state : null; recs = []; first = -1;
};
while (pos < buf.length && buf[pos] !== 93) {
  let nl = buf.indexOf(10, pos); if (nl < 0) nl = buf.length;
  const end = buf[nl - 1] === 44 ? nl - 1 : nl;
  if (first >= 0 && end - first > pageBytes) flush(false);
  if (first < 0) first = pos;
  recs.push(buf.toString('utf8', pos, end));
  pos = nl + 1;
}
flush(true);
console.log(JSON.stringify({ ms: performance.now() - t0, pages, records: last.records }));
"#;

fn write_node_script(ws: &Path) -> std::io::Result<()> {
    std::fs::write(ws.join("node_pages.mjs"), NODE_SCRIPT)
}

fn node_pages(ws: &Path, page_bytes: usize, records: usize) -> Result<Vec<Duration>, String> {
    let mut times = Vec::new();
    for _ in 0..RUNS {
        let out = Command::new("node")
            .arg("--max-old-space-size=8192")
            .arg("node_pages.mjs")
            .arg("archive.js")
            .arg(page_bytes.to_string())
            .current_dir(ws)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
        }
        let v: serde_json::Value =
            serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())?;
        if v["records"].as_u64() != Some(records as u64) {
            return Err(format!("wrong result: {v}"));
        }
        let took = v["ms"].as_f64().unwrap_or(0.0);
        times.push(Duration::from_secs_f64(took / 1000.0));
    }
    Ok(times)
}

/// Runs `runx skill` over the archive (1 MiB pages) as a child, sampling the resident and
/// non-evictable memory of it and its worker.
fn child_memory(runx: &Path, ws: &Path) -> Result<Memory, String> {
    let runs = concurrent_runs(runx, ws, 1)?;
    Ok(Memory { peaks: runs })
}

/// Runs `n` `runx skill` over the same archive at once (1 MiB pages), sampling the sum of
/// their trees and the growth of the system's shared memory.
fn concurrent_runs(runx: &Path, ws: &Path, n: usize) -> Result<Peaks, String> {
    let mut children = Vec::new();
    let mut samplers = Vec::new();
    let baseline = system_shmem_kib();
    for i in 0..n {
        let child = Command::new(runx)
            .args([
                "skill",
                "pkg",
                &workload::runner_name(1 << 20),
                "-i",
                "archive_file=archive.js",
                "--receipt-dir",
                &format!("mem-receipts-{i}"),
            ])
            .current_dir(ws)
            .env_remove("RUNX_WORKER")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| e.to_string())?;
        samplers.push(Sampler::start(child.id(), Duration::from_millis(10)));
        children.push(child);
    }
    let mut total = Peaks::default();
    let mut failure = None;
    for (i, (child, sampler)) in children.into_iter().zip(samplers).enumerate() {
        let out = child.wait_with_output().map_err(|e| e.to_string())?;
        let p = sampler.finish();
        // Trees run side by side: their peaks are summed (an upper bound of the joint peak).
        total.resident_kib += p.resident_kib;
        total.non_evictable_kib += p.non_evictable_kib;
        let _ = std::fs::remove_dir_all(ws.join(format!("mem-receipts-{i}")));
        if !out.status.success() {
            failure = Some(format!(
                "{}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
    }
    total.shmem_growth_kib = system_shmem_kib().saturating_sub(baseline);
    match failure {
        Some(f) => Err(f),
        None => Ok(total),
    }
}

const BURN_MODULE: &str = r#"
export function burn(inputs) {
  let x = 0;
  for (let i = 0; i < inputs.iterations; i++) x = (x * 31 + i) % 1000003;
  return { x };
}
"#;

/// Iterations of [`BURN_MODULE`] that take about 50 ms in the engine.
fn calibrate_burn() -> u64 {
    let b = bundle(BURN_MODULE);
    let env = BTreeMap::new();
    let mut engine = QuickJs::new();
    let probe = 1_000_000u64;
    let input = format!("{{\"iterations\":{probe}}}");
    let t = Instant::now();
    let ok = engine
        .call(&EngineCall {
            bundle: &b,
            export: Some("burn"),
            input: input.as_bytes(),
            page: None,
            environment: &env,
            limits: Limits::default(),
        })
        .is_ok();
    let took = t.elapsed().as_secs_f64();
    if !ok || took <= 0.0 {
        return probe;
    }
    ((probe as f64) * 0.050 / took) as u64
}

/// Memory of N concurrent paged runs over one archive of M MiB: `RUNX_BENCH_CONCURRENT=NxM`
/// (default 4x64; the issue's check is 8x400).
fn concurrency_memory(runx: &Path, ws: &Path) {
    let spec = std::env::var("RUNX_BENCH_CONCURRENT").unwrap_or_else(|_| "4x64".to_string());
    let parsed = spec
        .split_once('x')
        .and_then(|(n, m)| Some((n.parse::<usize>().ok()?, m.parse::<u64>().ok()?)));
    let Some((n, mib)) = parsed.filter(|&(n, m)| n > 0 && m > 0) else {
        println!("\nconcurrent memory: skipped, RUNX_BENCH_CONCURRENT is `{spec}`, not NxMIB");
        return;
    };
    let path = ws.join("archive.js");
    let written =
        std::fs::File::create(&path).and_then(|mut f| workload::write_archive(&mut f, mib << 20));
    if let Err(e) = written {
        println!("\nconcurrent memory: skipped, cannot write the archive: {e}");
        return;
    }
    match concurrent_runs(runx, ws, n) {
        Ok(p) => println!(
            "\nconcurrent memory: {n} runs of `runx skill` over one {mib} MiB archive at once (1 MiB pages): non-evictable {:.1} MiB in all ({:.1} MiB per run), resident {:.1} MiB in all, system Shmem grew {:.1} MiB",
            p.non_evictable_kib as f64 / 1024.0,
            p.non_evictable_kib as f64 / 1024.0 / n as f64,
            p.resident_kib as f64 / 1024.0,
            p.shmem_growth_kib as f64 / 1024.0,
        ),
        Err(e) => println!("\nconcurrent memory: failed: {e}"),
    }
    let _ = std::fs::remove_file(&path);
}

// Long on purpose: a benchmark reads top to bottom in the order of the report it prints.
fn scaling(worker: &WorkerCommand, rows: &[SizeRow], have_runx: bool) {
    println!("\nscaling");
    if rows.len() >= 2 {
        for (i, page_bytes) in PAGE_SIZES.iter().enumerate() {
            let points: Vec<(f64, f64)> = rows
                .iter()
                .map(|r| (r.file_bytes as f64, r.walls[i].as_secs_f64()))
                .collect();
            let fit = growth_exponent(&points).map_or("n/a".to_string(), |b| format!("{b:.3}"));
            println!(
                "  wall-time growth exponent, {:>7} pages, {} → {} MiB (least squares on log-log): {fit}",
                page_label(*page_bytes),
                (rows[0].file_bytes + (1 << 19)) >> 20,
                (rows[rows.len() - 1].file_bytes + (1 << 19)) >> 20
            );
        }
    } else {
        println!("  wall-time growth exponent: needs at least two sizes in RUNX_BENCH_SIZES_MIB");
    }
    if have_runx {
        println!(
            "  peak memory of a child `runx skill` and its worker (1 MiB pages): non-evictable = RssAnon + the larger of RssShmem and the growth of the system's Shmem; resident = RssAnon + RssFile + RssShmem:"
        );
        for r in rows {
            match r.memory {
                Some(m) => println!(
                    "    {:>4} MiB: non-evictable {:>6.1} MiB, resident {:>6.1} MiB",
                    (r.file_bytes + (1 << 19)) >> 20,
                    m.peaks.non_evictable_kib as f64 / 1024.0,
                    m.peaks.resident_kib as f64 / 1024.0,
                ),
                None => println!(
                    "    {:>4} MiB: not measured",
                    (r.file_bytes + (1 << 19)) >> 20
                ),
            }
        }
    } else {
        println!(
            "  peak memory of `runx skill`: skipped, no release `runx` next to the bench; build it: cargo build --release -p runx-cli"
        );
    }
    let dir = std::env::temp_dir().join(format!("runx-bench-burn-{}", std::process::id()));
    let yaml = "skill: burn\nversion: '1'\nrunners:\n  burn:\n    type: javascript\n    module: main.mjs\n    export: burn\n    inputs: { iterations: { type: integer } }\n";
    if let Err(e) = std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::write(dir.join("main.mjs"), BURN_MODULE))
        .and_then(|()| std::fs::write(dir.join("X.yaml"), yaml))
    {
        println!("  pool scaling: skipped: {e}");
        return;
    }
    let iterations = calibrate_burn();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "  {K} independent skill runs (each ~50 ms of CPU: {iterations} iterations), threads sharing one Runtime, {RUNS} runs each:"
    );
    let mut base = None;
    for n in 1..=cpus {
        let rt = Runtime::new(worker.clone()).with_pool_size(n);
        let run_all = || -> Result<Duration, String> {
            let t = Instant::now();
            std::thread::scope(|s| {
                let handles: Vec<_> = (0..K)
                    .map(|_| {
                        s.spawn(|| {
                            let mut inputs = serde_json::Map::new();
                            inputs.insert("iterations".into(), iterations.into());
                            let mut req = runx_runtime::RunRequest::new(&dir, inputs);
                            req.workspace = dir.clone();
                            req.receipt_dir = Some(dir.join("receipts"));
                            rt.run(&req).error().map(|e| e.to_string())
                        })
                    })
                    .collect();
                for h in handles {
                    if let Ok(Some(e)) = h.join() {
                        return Err(e);
                    }
                }
                Ok(())
            })?;
            Ok(t.elapsed())
        };
        // Start the workers and load the bundle everywhere first.
        if let Err(e) = run_all() {
            println!("    pool of {n}: failed: {e}");
            continue;
        }
        let mut walls = Vec::new();
        for _ in 0..RUNS {
            match run_all() {
                Ok(w) => walls.push(w),
                Err(e) => {
                    println!("    pool of {n}: failed: {e}");
                    break;
                }
            }
        }
        if walls.is_empty() {
            continue;
        }
        let s = stats(&mut walls);
        let b = *base.get_or_insert(s.p50);
        println!(
            "    pool of {n} worker(s): median {:>7.1} ms (spread {:.1}–{:.1}), {:.1} ms a run, speed-up {:.2}x",
            ms(s.p50),
            ms(s.min),
            ms(s.max),
            ms(s.p50) * n as f64 / K as f64,
            b.as_secs_f64() / s.p50.as_secs_f64()
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
