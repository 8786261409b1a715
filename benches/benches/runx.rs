//! `cargo bench -p runx-benches`: latency, page throughput (beside the engine's own limit and
//! Node.js), memory and scaling for every engine built, and the per-step overhead of
//! `runx serve` (`serve_bench.py`), each measured in the same run.
//!
//! Archive sizes in MiB come from `RUNX_BENCH_SIZES_MIB` (default "8,64"; the full run uses
//! "8,64,256,512"); page sizes are 256 KiB, 1 MiB and 4 MiB. Needs the release worker and, for
//! the end-to-end and memory parts, the release `runx`:
//! `cargo build --release -p runx-worker -p runx-cli`. With `--features v8` (and the worker
//! and `runx` built with `--features runx-worker/v8,runx-cli/v8`), V8 is measured beside
//! QuickJS and the report ends with the side-by-side tables of the dated results pages
//! (`docs/src/results/`).

use runx_profile::STATE_BYTES;
use runx_runtime::{Framer, PageBudget, Runtime};
use runx_worker::{
    Call, Engine, EngineCall, Limits, ModuleBundle, PageInput, PagePayload, PageRecords, Pool,
    PoolConfig, WorkerCommand, engine_by_name, engines_built, spans_of_ends,
};
use runx_workload::{
    AGGREGATE_MODULE, Bench, PAGE_SIZES, Peaks, Sampler, Stats, TimeSplit, growth_exponent, stats,
    system_shmem_kib,
};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Runs of each throughput measurement (median and spread are over these).
const RUNS: usize = 3;
/// Rounds of a paged run through runx and a run of the engine alone, back to back (in turn
/// which goes first).
const ROUNDS: usize = 5;
/// Pairs of one page run in this process and in a worker, per cell ([`Alone::parity`]).
const PARITY_PAIRS: usize = 64;
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
    let engines = engines_answering(&worker);
    println!(
        "runx benchmarks: engines {engines:?}, sizes {sizes:?} MiB (RUNX_BENCH_SIZES_MIB), page sizes 256 KiB / 1 MiB / 4 MiB, {ROUNDS} rounds of a paged run and the engine alone back to back (each first in turn), {RUNS} runs of everything else, {cpus} CPUs"
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
    if let Err(e) =
        runx_workload::write_package(&pkg, &PAGE_SIZES).and_then(|()| write_node_script(&ws))
    {
        println!(
            "skipped: cannot write the bench package under {}: {e}",
            ws.display()
        );
        return;
    }
    match runx_workload::new_file_writes(&ws, 256 << 20, Duration::from_secs(8)) {
        Ok((after_idle, at_once)) => println!(
            "machine: a new 256 MiB file written after 8 s idle in {:.0} ms, again at once in {:.0} ms (the copy into a paged run's snapshot writes such a file, beside the pages: where the two differ, its cost depends on what ran before it; see runx_workload::new_file_writes)",
            ms(after_idle),
            ms(at_once)
        ),
        Err(e) => println!("machine: cannot time a new file's writes: {e}"),
    }
    let latencies: Vec<Latency> = engines
        .iter()
        .map(|e| latency(&worker, runx.as_deref(), &pkg, e))
        .collect();
    let node = node_version();
    let mut rows = Vec::new();
    for &size in &sizes {
        if let Some(row) = throughput(
            &worker,
            runx.as_deref(),
            node.as_deref(),
            &ws,
            size,
            &engines,
        ) {
            rows.push(row);
        }
    }
    scaling(&worker, &rows, runx.is_some());
    if let Some(runx) = runx.as_deref() {
        concurrency_memory(runx, &ws);
    }
    serve_overhead(runx.as_deref());
    summary(&engines, &latencies, &rows, node.as_deref());
    let _ = std::fs::remove_dir_all(&ws);
}

/// The engines built into this bench whose worker answers a call (a worker built without V8
/// refuses `--engine v8`).
fn engines_answering(worker: &WorkerCommand) -> Vec<&'static str> {
    let call = Call::new(bundle(AGGREGATE_MODULE), Some("trivial"), b"{}".to_vec());
    engines_built()
        .iter()
        .copied()
        .filter(|name| {
            let ok = Pool::new(PoolConfig::new(worker.clone().engine(name)).size(1))
                .map_err(|e| e.to_string())
                .and_then(|p| p.call(&call).map(|_| ()).map_err(|e| e.failure.to_string()));
            if let Err(e) = &ok {
                println!(
                    "note: engine {name} skipped: its worker does not answer ({e}); build the worker with `--features runx-worker/{name}`"
                );
            }
            ok.is_ok()
        })
        .collect()
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

/// An engine of this process by name (only names from [`engines_built`] are asked for).
fn engine(name: &str) -> Box<dyn Engine> {
    match engine_by_name(name) {
        Ok(e) => e,
        Err(e) => panic!("engine {name} is built but cannot be made: {e}"),
    }
}

/// What the latency section measured for one engine.
struct Latency {
    warm: Stats,
    fresh: Stats,
    first: Stats,
    cold_runx: Option<Stats>,
}

// Long on purpose: a benchmark reads top to bottom in the order of the report it prints.
fn latency(worker: &WorkerCommand, runx: Option<&Path>, pkg: &Path, name: &str) -> Latency {
    let worker = worker.clone().engine(name);
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
    drop(pool);
    let mut engine = engine(name);
    let env = BTreeMap::new();
    let b = bundle(AGGREGATE_MODULE);
    let mut in_process = || {
        let t = Instant::now();
        engine
            .call(&EngineCall {
                bundle: &b,
                export: Some("trivial"),
                input: b"{}",
                page: None,
                environment: &env,
                limits: Limits::default(),
                continues: false,
                probe: false,
            })
            .expect("in-process call");
        t.elapsed()
    };
    in_process();
    let mut fresh: Vec<Duration> = (0..1000).map(|_| in_process()).collect();
    let w = stats(&mut warm);
    let f = stats(&mut fresh);
    println!("\nlatency (trivial export), engine {name}");
    println!("  warm call through the pool (1000 calls):   {}", line(&w));
    println!("  in-process fresh context (1000 calls):     {}", line(&f));
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
    println!("  first call on a new pool (20 pools):       {}", line(&s));
    println!(
        "  => worker spawn to ready (first − warm p50): p50 {:.3} ms  p99 {:.3} ms",
        ms(s.p50) - ms(w.p50),
        ms(s.p99) - ms(w.p50)
    );
    let cold_runx = runx.and_then(|runx| cold_runx(runx, pkg, name));
    Latency {
        warm: w,
        fresh: f,
        first: s,
        cold_runx,
    }
}

fn line(s: &Stats) -> String {
    format!(
        "p50 {:.3} ms  p99 {:.3} ms  (min {:.3}, max {:.3})",
        ms(s.p50),
        ms(s.p99),
        ms(s.min),
        ms(s.max)
    )
}

/// `runx skill` of the trivial runner from process start to exit, 20 times.
fn cold_runx(runx: &Path, pkg: &Path, name: &str) -> Option<Stats> {
    let receipts = pkg.with_file_name("cold-receipts");
    let mut cold = Vec::new();
    for _ in 0..20 {
        let t = Instant::now();
        let status = Command::new(runx)
            .args(["--engine", name, "skill", "pkg", "trivial", "--receipt-dir"])
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
                println!(
                    "  cold `runx --engine {name} skill` end to end: failed: {other:?} (is `runx` built with this engine?)"
                );
                return None;
            }
        }
    }
    let _ = std::fs::remove_dir_all(&receipts);
    let c = stats(&mut cold);
    println!(
        "  cold `runx skill` trivial, process start to exit (20 runs): {}",
        line(&c)
    );
    Some(c)
}

/// One engine's figures for one page size.
#[derive(Clone, Copy, Default)]
struct EngineCell {
    /// Median MB/s of the paged run through runx.
    paged: f64,
    /// Median MB/s of the same module on pre-framed pages in-process.
    alone: Option<f64>,
    /// Median over rounds of runx's throughput over the engine's alone, each round's two runs
    /// made one after the other.
    paired: Option<f64>,
    /// Share of the paged wall spent in JavaScript, in %.
    javascript_percent: f64,
    /// The worker's JavaScript time over the same pages run in this process, page by page
    /// ([`Alone::parity`]).
    parity: Option<f64>,
    /// Share of the paged wall spent outside JavaScript and outside the framing that overlaps
    /// it (admission, transport, result handling), in %.
    outside_percent: f64,
    /// Admission's part of `outside_percent` (the whole-file hash before page 0), in %.
    admission_percent: f64,
}

/// What the later sections need of one archive size.
struct SizeRow {
    size_mib: u64,
    file_bytes: u64,
    /// Median wall of the default engine per page size, in [`PAGE_SIZES`] order.
    walls: Vec<Duration>,
    /// Per page size (in [`PAGE_SIZES`] order), per engine (in the order measured).
    cells: Vec<Vec<EngineCell>>,
    /// Node.js MB/s per page size.
    node: Vec<Option<f64>>,
    /// Peak memory of a child `runx skill` over this archive (1 MiB pages), per engine.
    memory: Vec<Option<Memory>>,
}

#[derive(Clone, Copy, Default)]
struct Memory {
    /// Peaks over `runx` and its worker (see `runx_workload`).
    peaks: Peaks,
}

// Long on purpose: a benchmark reads top to bottom in the order of the report it prints.
fn throughput(
    worker: &WorkerCommand,
    runx: Option<&Path>,
    node: Option<&str>,
    ws: &Path,
    size_mib: u64,
    engines: &[&str],
) -> Option<SizeRow> {
    let archive_path = ws.join("archive.js");
    let (data, records) = runx_workload::archive((size_mib << 20) as usize);
    if let Err(e) = std::fs::write(&archive_path, &data) {
        println!("\npage throughput {size_mib} MiB: skipped, cannot write the archive: {e}");
        return None;
    }
    let mb = data.len() as f64 / 1e6;
    println!(
        "\npage throughput: {size_mib} MiB archive ({} bytes), {records} records of ~{} bytes, {ROUNDS} rounds (Node.js: {RUNS} runs)",
        data.len(),
        data.len() / records.max(1)
    );
    let runtimes: Vec<Runtime> = engines
        .iter()
        .map(|e| {
            Runtime::new(worker.clone())
                .with_engine(e)
                .with_pool_size(1)
        })
        .collect();
    let bench = Bench {
        workspace: ws.to_path_buf(),
        package: ws.join("pkg"),
        archive: "archive.js".to_string(),
    };
    let mut walls = Vec::new();
    let mut cells = Vec::new();
    let mut nodes = Vec::new();
    for page_bytes in PAGE_SIZES {
        let label = page_label(page_bytes);
        let mut row = Vec::new();
        for (rt, name) in runtimes.iter().zip(engines) {
            let (cell, wall) = paged_cell(rt, worker, &bench, &data, page_bytes, records, name)?;
            if row.is_empty() {
                walls.push(wall);
            }
            row.push(cell);
        }
        cells.push(row);
        let n = match node {
            None => {
                println!("      Node.js: skipped, `node` is not on PATH");
                None
            }
            Some(version) => match node_pages(ws, page_bytes, records) {
                Ok(mut n) => {
                    let s = stats(&mut n);
                    let rate = mb / s.p50.as_secs_f64();
                    println!(
                        "      Node.js {version}, same module and pages, {label:>7} pages: median {rate:>6.1} MB/s (spread {:.1}–{:.1})",
                        mb / s.max.as_secs_f64(),
                        mb / s.min.as_secs_f64(),
                    );
                    Some(rate)
                }
                Err(e) => {
                    println!("      Node.js: failed: {e}");
                    None
                }
            },
        };
        nodes.push(n);
    }
    drop(runtimes);
    let file_bytes = data.len() as u64;
    drop(data);
    let memory = engines
        .iter()
        .map(|name| {
            runx.and_then(|runx| match child_memory(runx, ws, name) {
                Ok(m) => {
                    println!(
                        "  peak memory of a child `runx --engine {name} skill` and its worker (1 MiB pages): non-evictable {:.1} MiB, resident {:.1} MiB",
                        m.peaks.non_evictable_kib as f64 / 1024.0,
                        m.peaks.resident_kib as f64 / 1024.0,
                    );
                    Some(m)
                }
                Err(e) => {
                    println!("  peak memory of `runx --engine {name} skill`: failed: {e}");
                    None
                }
            })
        })
        .collect();
    let _ = std::fs::remove_file(&archive_path);
    Some(SizeRow {
        size_mib,
        file_bytes,
        walls,
        cells,
        node: nodes,
        memory,
    })
}

/// One engine at one page size: rounds of a paged run through runx followed at once by a run
/// of the engine alone, so that each ratio compares two runs made under the same load (this
/// machine's speed drifts by more than the overhead being measured).
fn paged_cell(
    rt: &Runtime,
    worker: &WorkerCommand,
    bench: &Bench,
    data: &[u8],
    page_bytes: usize,
    records: usize,
    name: &str,
) -> Option<(EngineCell, Duration)> {
    let label = page_label(page_bytes);
    let mb = data.len() as f64 / 1e6;
    let mut alone = match Alone::new(data, page_bytes, name) {
        Ok(a) => Some(a),
        Err(e) => {
            println!("      {name} in-process: cannot frame the pages: {e}");
            None
        }
    };
    let mut runs = Vec::new();
    let mut alone_times = Vec::new();
    for round in 0..ROUNDS {
        // Every other round runs the engine alone first, so that a machine speeding up or
        // slowing down through a round favours neither side.
        let alone_first = round % 2 == 1;
        if alone_first {
            alone_round(&mut alone, &mut alone_times, records, name);
        }
        match bench.run_pages(rt, page_bytes, None) {
            Ok(r) if r.records == records as u64 => runs.push(r),
            Ok(r) => {
                println!(
                    "  {name} {label} pages: wrong result: {} records counted, {records} expected",
                    r.records
                );
                return None;
            }
            Err(e) => {
                println!("  {name} {label} pages: failed: {e}");
                return None;
            }
        }
        if !alone_first {
            alone_round(&mut alone, &mut alone_times, records, name);
        }
    }
    // runx / engine alone in throughput = engine time / runx time, round by round.
    let mut ratios: Vec<f64> = runs
        .iter()
        .zip(&alone_times)
        .map(|(r, a)| a.as_secs_f64() / r.wall.as_secs_f64())
        .collect();
    ratios.sort_by(f64::total_cmp);
    runs.sort_by_key(|r| r.wall);
    let median = &runs[runs.len() / 2];
    let (fast, slow) = (runs[0].wall, runs[runs.len() - 1].wall);
    let secs = median.wall.as_secs_f64();
    println!(
        "  runx paged, {name:>7}, {label:>7} pages: median {:>6.1} MB/s  (spread {:.1}–{:.1}), {:>9.0} records/s, {} pages, wall {:.0} ms",
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
    let alone_rate = (!alone_times.is_empty()).then(|| {
        let s = stats(&mut alone_times);
        println!(
            "      {name} in-process, fresh context per page: median {:>6.1} MB/s (spread {:.1}–{:.1}); runx / engine alone, paired by round: median {:.2} ({:.2}–{:.2})",
            mb / s.p50.as_secs_f64(),
            mb / s.max.as_secs_f64(),
            mb / s.min.as_secs_f64(),
            ratios[ratios.len() / 2],
            ratios[0],
            ratios[ratios.len() - 1],
        );
        mb / s.p50.as_secs_f64()
    });
    let javascript_percent = median.split.percent(median.split.engine_ms);
    let parity = alone.as_mut().and_then(|a| {
        let pool = Pool::new(PoolConfig::new(worker.clone().engine(name)).size(1)).ok()?;
        match a.parity(&pool, PARITY_PAIRS) {
            Ok(p) => {
                println!(
                    "      {name} JavaScript in a worker over in-process, median of {PARITY_PAIRS} pairs or more of one page each: {p:.3}; runx / engine alone composed from it and the JavaScript share: {:.2}",
                    javascript_percent / 100.0 / p
                );
                Some(p)
            }
            Err(e) => {
                println!("      {name} page-by-page comparison failed: {e}");
                None
            }
        }
    });
    let cell = EngineCell {
        paged: mb / secs,
        alone: alone_rate,
        paired: (!ratios.is_empty()).then(|| ratios[ratios.len() / 2]),
        javascript_percent,
        parity,
        outside_percent: median.split.percent(
            median.split.admission_ms + median.split.transport_ms + median.split.result_ms,
        ),
        admission_percent: median.split.percent(median.split.admission_ms),
    };
    Some((cell, median.wall))
}

fn split_line(s: &TimeSplit) -> String {
    let parts: Vec<String> = s
        .parts()
        .iter()
        .map(|(name, v)| format!("{name} {:.0} ms ({:.1}%)", v, s.percent(*v)))
        .collect();
    format!("{} of {:.0} ms wall", parts.join(", "), s.wall_ms)
}

/// One framed page: its records back to back, their spans, and whether it is the last.
type FramedPage = (Vec<u8>, Vec<(u32, u32)>, bool);

/// The pages of `data` as the runtime frames them.
fn frame_pages(data: &[u8], page_bytes: usize) -> Result<Vec<FramedPage>, String> {
    let limits = Limits::default();
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
        pages.push((blob, spans_of_ends(&ends), p.eof));
    }
    Ok(pages)
}

/// One run of the engine alone, if it still runs; a failure drops it from the cell.
fn alone_round(alone: &mut Option<Alone>, times: &mut Vec<Duration>, records: usize, name: &str) {
    if let Some(a) = alone.as_mut() {
        match a.run(records) {
            Ok(t) => times.push(t),
            Err(e) => {
                println!("      {name} in-process: failed: {e}");
                *alone = None;
                times.clear();
            }
        }
    }
}

/// The same module over the same pages run directly in the engine `name`: fresh context per
/// page, no framing, pool or protocol in the timing.
struct Alone {
    pages: Vec<FramedPage>,
    bundle: Arc<ModuleBundle>,
    engine: Box<dyn Engine>,
}

impl Alone {
    /// Frames `data` once, as the runtime would, for runs of the engine `name`.
    fn new(data: &[u8], page_bytes: usize, name: &str) -> Result<Alone, String> {
        Ok(Alone {
            pages: frame_pages(data, page_bytes)?,
            bundle: bundle(AGGREGATE_MODULE),
            engine: engine(name),
        })
    }

    /// One pass over every page; fails unless the module counted `records` records.
    fn run(&mut self, records: usize) -> Result<Duration, String> {
        let t = Instant::now();
        let mut state = "null".to_string();
        let mut counted = 0;
        for i in 0..self.pages.len() {
            let meta = self.meta(i, &state);
            let v = answer(&self.call_here(i, &meta)?)?;
            state = v["runx_page"]["state"].to_string();
            counted = v["records"].as_u64().unwrap_or(counted);
        }
        let took = t.elapsed();
        if counted != records as u64 {
            return Err(format!("{counted} records counted, {records} expected"));
        }
        Ok(took)
    }

    /// The `runx_page` metadata of page `i` after `state`.
    fn meta(&self, i: usize, state: &str) -> String {
        let eof = self.pages.get(i).is_some_and(|p| p.2);
        format!("{{\"page_index\":{i},\"eof\":{eof},\"state\":{state}}}")
    }

    /// Page `i` with its metadata `meta`, run in this process: the export's answer.
    fn call_here(&mut self, i: usize, meta: &str) -> Result<Vec<u8>, String> {
        let (blob, spans, _) = &self.pages[i];
        let out = self
            .engine
            .call(&EngineCall {
                bundle: &self.bundle,
                export: Some("page"),
                input: b"{}",
                page: Some(PageInput {
                    meta: meta.as_bytes(),
                    blob,
                    spans,
                }),
                environment: &BTreeMap::new(),
                limits: Limits::default().with_wall(Duration::from_secs(600)),
                continues: i > 0,
                probe: false,
            })
            .map_err(|e| format!("page {i}: {e:?}"))?;
        Ok(out.output)
    }

    /// The worker's JavaScript time over this process's, page by page: the median over at
    /// least `pairs` pairs (passes over the pages repeat until there are enough) of one page
    /// run here and in a worker of `pool` (pages inline, same state), one right after the
    /// other and each first in turn, so both sides of a pair see the machine at the same
    /// moment. The two must answer alike.
    fn parity(&mut self, pool: &Pool, pairs: usize) -> Result<f64, String> {
        let mut ratios = Vec::new();
        while ratios.len() < pairs {
            self.parity_pass(pool, &mut ratios)?;
        }
        ratios.sort_by(f64::total_cmp);
        Ok(ratios[ratios.len() / 2])
    }

    /// One pass of [`Alone::parity`] over every page, adding each page's ratio to `ratios`.
    fn parity_pass(&mut self, pool: &Pool, ratios: &mut Vec<f64>) -> Result<(), String> {
        let mut state = "null".to_string();
        let run = PagePayload::new_run();
        for i in 0..self.pages.len() {
            let meta = self.meta(i, &state);
            let (blob, spans, _) = &self.pages[i];
            let mut call = Call::new(self.bundle.clone(), Some("page"), b"{}".to_vec());
            call.limits = Limits::default().with_wall(Duration::from_secs(600));
            call.page = Some(PagePayload {
                meta: meta.clone().into_bytes(),
                records: PageRecords::Inline {
                    ends: spans.iter().map(|&(_, end)| end).collect(),
                    blob: blob.clone(),
                },
                keep_state: false,
                state_from: None,
                run: Some(run),
            });
            let in_worker = || pool.call(&call).map_err(|e| format!("page {i}: {e}"));
            let early = if ratios.len() % 2 == 1 {
                Some(in_worker()?)
            } else {
                None
            };
            let t = Instant::now();
            let out = self.call_here(i, &meta)?;
            let here = t.elapsed();
            let reply = match early {
                Some(reply) => reply,
                None => in_worker()?,
            };
            if reply.output != out {
                return Err(format!("page {i}: the worker answered otherwise"));
            }
            if !here.is_zero() {
                ratios.push(reply.engine_time.as_secs_f64() / here.as_secs_f64());
            }
            state = answer(&out)?["runx_page"]["state"].to_string();
        }
        if ratios.is_empty() {
            return Err("no page ran".to_string());
        }
        Ok(())
    }
}

/// A page's answer as JSON.
fn answer(output: &[u8]) -> Result<serde_json::Value, String> {
    serde_json::from_slice(output).map_err(|e| e.to_string())
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

/// Runs `runx --engine NAME skill` over the archive (1 MiB pages) as a child, sampling the
/// resident and non-evictable memory of it and its worker.
fn child_memory(runx: &Path, ws: &Path, name: &str) -> Result<Memory, String> {
    let runs = concurrent_runs(runx, ws, 1, name)?;
    Ok(Memory { peaks: runs })
}

/// Runs `n` `runx --engine NAME skill` over the same archive at once (1 MiB pages), sampling
/// the sum of their trees and the growth of the system's shared memory.
fn concurrent_runs(runx: &Path, ws: &Path, n: usize, name: &str) -> Result<Peaks, String> {
    let mut children = Vec::new();
    let mut samplers = Vec::new();
    let baseline = system_shmem_kib();
    for i in 0..n {
        let child = Command::new(runx)
            .args([
                "--engine",
                name,
                "skill",
                "pkg",
                &runx_workload::runner_name(1 << 20),
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

/// Iterations of [`BURN_MODULE`] that take about 50 ms in the default engine.
fn calibrate_burn() -> u64 {
    let b = bundle(BURN_MODULE);
    let env = BTreeMap::new();
    let mut engine = engine(runx_worker::DEFAULT_ENGINE);
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
            continues: false,
            probe: false,
        })
        .is_ok();
    let took = t.elapsed().as_secs_f64();
    if !ok || took <= 0.0 {
        return probe;
    }
    ((probe as f64) * 0.050 / took) as u64
}

/// Memory of N concurrent paged runs (default engine) over one archive of M MiB:
/// `RUNX_BENCH_CONCURRENT=NxM` (default 4x64; the issue's check is 8x400).
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
    let written = std::fs::File::create(&path)
        .and_then(|mut f| runx_workload::write_archive(&mut f, mib << 20));
    if let Err(e) = written {
        println!("\nconcurrent memory: skipped, cannot write the archive: {e}");
        return;
    }
    match concurrent_runs(runx, ws, n, runx_worker::DEFAULT_ENGINE) {
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
    println!(
        "\nscaling (default engine, {})",
        runx_worker::DEFAULT_ENGINE
    );
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
    if !have_runx {
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

// Long on purpose: one markdown table per question, in the order the results pages show them.
fn summary(engines: &[&str], latencies: &[Latency], rows: &[SizeRow], node: Option<&str>) {
    println!("\nsummary (markdown, as in docs/src/results/)\n");
    let mut head = String::from("| archive | page |");
    let mut rule = String::from("|---|---|");
    for e in engines {
        head.push_str(&format!(
            " {e} paged MB/s | {e} alone MB/s | {e} runx/alone (paired) | {e} outside JS (admission) | {e} worker/in-process JS | {e} runx/alone (composed) |"
        ));
        rule.push_str("---|---|---|---|---|---|");
    }
    head.push_str(&format!(" Node.js {} MB/s |", node.unwrap_or("(absent)")));
    rule.push_str("---|");
    let compare = engines.len() > 1;
    if compare {
        head.push_str(&format!(" {0}/Node.js | {0}/{1} |", engines[1], engines[0]));
        rule.push_str("---|---|");
    }
    println!("{head}\n{rule}");
    let num = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{v:.1}"));
    for r in rows {
        for (i, page) in PAGE_SIZES.iter().enumerate() {
            let mut line = format!("| {} MiB | {} |", r.size_mib, page_label(*page));
            for c in &r.cells[i] {
                line.push_str(&format!(
                    " {:.1} ({:.0}% JS) | {} | {} | {:.1}% ({:.1}%) | {} | {} |",
                    c.paged,
                    c.javascript_percent,
                    num(c.alone),
                    num_ratio(c.paired),
                    c.outside_percent,
                    c.admission_percent,
                    num_ratio(c.parity),
                    num_ratio(c.parity.map(|p| c.javascript_percent / 100.0 / p)),
                ));
            }
            line.push_str(&format!(" {} |", num(r.node[i])));
            if compare {
                let (q, v) = (r.cells[i][0].paged, r.cells[i][1].paged);
                let vs_node = r.node[i].map(|n| v / n);
                line.push_str(&format!(" {} | {:.2} |", num_ratio(vs_node), v / q));
            }
            println!("{line}");
        }
    }
    println!();
    let mut head = String::from("| |");
    let mut rule = String::from("|---|");
    for e in engines {
        head.push_str(&format!(" {e} |"));
        rule.push_str("---|");
    }
    println!("{head}\n{rule}");
    let row = |label: &str, f: &dyn Fn(&Latency) -> String| {
        let cells: Vec<String> = latencies.iter().map(f).collect();
        println!("| {label} | {} |", cells.join(" | "));
    };
    row("warm call through the pool, p50 / p99 ms", &|l| {
        format!("{:.3} / {:.3}", ms(l.warm.p50), ms(l.warm.p99))
    });
    row("in-process fresh context, p50 ms", &|l| {
        format!("{:.3}", ms(l.fresh.p50))
    });
    row("cold worker: spawn to first answer, p50 ms", &|l| {
        format!("{:.1}", ms(l.first.p50))
    });
    row("cold `runx skill` of a trivial runner, p50 ms", &|l| {
        l.cold_runx
            .as_ref()
            .map_or("–".to_string(), |c| format!("{:.1}", ms(c.p50)))
    });
    if let Some(r) = rows.last() {
        let mem = |i: usize, f: &dyn Fn(&Memory) -> u64| -> String {
            r.memory
                .get(i)
                .copied()
                .flatten()
                .map_or("–".to_string(), |m| {
                    format!("{:.1}", f(&m) as f64 / 1024.0)
                })
        };
        let cells: Vec<String> = (0..engines.len())
            .map(|i| mem(i, &|m| m.peaks.non_evictable_kib))
            .collect();
        println!(
            "| peak non-evictable memory of `runx skill` and its worker, {} MiB archive at 1 MiB pages, MiB | {} |",
            r.size_mib,
            cells.join(" | ")
        );
        let cells: Vec<String> = (0..engines.len())
            .map(|i| mem(i, &|m| m.peaks.resident_kib))
            .collect();
        println!(
            "| peak resident memory, same run, MiB | {} |",
            cells.join(" | ")
        );
    }
}

fn num_ratio(v: Option<f64>) -> String {
    v.map_or("–".to_string(), |v| format!("{v:.2}"))
}
