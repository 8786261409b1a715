//! Page throughput per archive and page size: runx's paged runner beside the engine alone
//! and Node.js, then the map/fold comparison and the memory of a child run.

use crate::alone::Alone;
use crate::common::{ROUNDS, RUNS, ms, page_label, split_line};
use crate::map_fold::{self, MapFoldRow};
use crate::memory::{Memory, child_memory};
use crate::node::node_pages;
use runx_runtime::Runtime;
use runx_worker::{Pool, PoolConfig, WorkerCommand};
use runx_workload::{Bench, PAGE_SIZES, stats};
use std::path::Path;
use std::time::Duration;

/// Pairs of one page run in this process and in a worker, per cell ([`Alone::parity`]).
const PARITY_PAIRS: usize = 64;

/// One engine's figures for one page size.
#[derive(Clone, Copy, Default)]
pub struct EngineCell {
    /// Median MB/s of the paged run through runx.
    pub paged: f64,
    /// Median MB/s of the same module on pre-framed pages in-process.
    pub alone: Option<f64>,
    /// Median over rounds of runx's throughput over the engine's alone, each round's two runs
    /// made one after the other.
    pub paired: Option<f64>,
    /// Share of the paged wall spent in JavaScript, in %.
    pub javascript_percent: f64,
    /// The worker's JavaScript time over the same pages run in this process, page by page
    /// ([`Alone::parity`]).
    pub parity: Option<f64>,
    /// Share of the paged wall spent outside JavaScript and outside the framing that overlaps
    /// it (admission, transport, result handling), in %.
    pub outside_percent: f64,
    /// Admission's part of `outside_percent` (the whole-file hash before page 0), in %.
    pub admission_percent: f64,
}

/// What the later sections need of one archive size.
pub struct SizeRow {
    pub size_mib: u64,
    pub file_bytes: u64,
    /// Median wall of the default engine per page size, in [`PAGE_SIZES`] order.
    pub walls: Vec<Duration>,
    /// Per page size (in [`PAGE_SIZES`] order), per engine (in the order measured).
    pub cells: Vec<Vec<EngineCell>>,
    /// Node.js MB/s per page size.
    pub node: Vec<Option<f64>>,
    /// Peak memory of a child `runx skill` over this archive (1 MiB pages), per engine.
    pub memory: Vec<Option<Memory>>,
    /// Map/fold against sequential and Node.js (1 MiB pages).
    pub map_fold: Option<MapFoldRow>,
}

/// What every archive size is measured with.
pub struct Setup<'a> {
    pub worker: &'a WorkerCommand,
    /// The release `runx`, for the memory of child runs.
    pub runx: Option<&'a Path>,
    /// The Node.js version, when `node` runs.
    pub node: Option<&'a str>,
    /// The bench's directory: the package, the Node.js script and the archive.
    pub ws: &'a Path,
    pub engines: &'a [&'static str],
    /// Map workers of the map/fold comparison.
    pub workers: usize,
    /// Only the map/fold comparison (`RUNX_BENCH_ONLY=map_fold`).
    pub only_map_fold: bool,
}

// Long on purpose: a benchmark reads top to bottom in the order of the report it prints.
pub fn throughput(setup: &Setup<'_>, size_mib: u64) -> Option<SizeRow> {
    let Setup {
        worker,
        runx,
        node,
        ws,
        engines,
        ..
    } = *setup;
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
    let bench = Bench {
        workspace: ws.to_path_buf(),
        package: ws.join("pkg"),
        archive: "archive.js".to_string(),
    };
    let mut walls = Vec::new();
    let mut cells = Vec::new();
    let mut nodes = Vec::new();
    let runtimes: Vec<Runtime> = engines
        .iter()
        .filter(|_| !setup.only_map_fold)
        .map(|e| {
            Runtime::new(worker.clone())
                .with_engine(e)
                .with_pool_size(1)
        })
        .collect();
    for page_bytes in PAGE_SIZES.iter().copied().filter(|_| !setup.only_map_fold) {
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
    let map_fold = map_fold::compare(&map_fold::Setup {
        worker,
        engines,
        node,
        bench: &bench,
        workers: setup.workers,
        file_bytes,
    });
    let memory = engines
        .iter()
        .filter(|_| !setup.only_map_fold)
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
        map_fold,
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
        match bench.run_pages(rt, page_bytes, false, None) {
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
