//! `cargo bench -p runx-benches`: latency, page throughput (beside the engine's own limit and
//! Node.js), map/fold against sequential and against Node.js's `worker_threads`, memory and
//! scaling for every engine built, and the per-step overhead of `runx serve`
//! (`serve_bench.py`), each measured in the same run.
//!
//! Archive sizes in MiB come from `RUNX_BENCH_SIZES_MIB` (default "8,64"; the full run uses
//! "8,64,256,512"); page sizes are 256 KiB, 1 MiB and 4 MiB (the map/fold comparison: 1 MiB,
//! on `RUNX_BENCH_WORKERS` workers, default 2). `RUNX_BENCH_ONLY=map_fold` runs the map/fold
//! comparison alone, `RUNX_BENCH_ONLY=runx_worker` runx 0.8.2 on its own worker and on this
//! one alone (`upstream`). Needs the release worker and, for the end-to-end and memory parts, the
//! release `runx`: `cargo build --release -p runx-worker -p runx-cli`. With `--features v8`
//! (and the worker and `runx` built with `--features runx-worker/v8,runx-cli/v8`), V8 is
//! measured beside QuickJS and the report ends with the side-by-side tables of the dated
//! results pages (`docs/src/results/`).
//!
//! | module | what it measures |
//! |---|---|
//! | `latency` | a trivial call: warm, fresh context, first call, cold `runx skill` |
//! | `throughput` | paged runs per archive and page size, beside the engine alone and Node.js |
//! | `alone` | the engine alone on runx's pages, and page by page against a worker |
//! | `map_fold` | map/fold against sequential, per engine, and against Node.js |
//! | `node` | the Node.js script and its runs |
//! | `memory` | peak memory of `runx skill` children |
//! | `scaling` | growth with the archive, independent runs on growing pools |
//! | `summary` | the markdown tables |
//! | `upstream` | runx 0.8.2's twitter `select` graph on runx's own worker and on `runx-js-worker` |
//! | `common` | run counts, units, the module and the engines |

mod alone;
mod common;
mod latency;
mod map_fold;
mod memory;
mod node;
mod scaling;
mod summary;
mod throughput;
mod upstream;

use common::{ROUNDS, RUNS, bundle, ms, payload_bytes, target_bin};
use runx_worker::{Call, Pool, PoolConfig, WorkerCommand, engines_built};
use runx_workload::AGGREGATE_MODULE;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

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
    let workers = std::env::var("RUNX_BENCH_WORKERS")
        .ok()
        .and_then(|w| w.trim().parse::<usize>().ok())
        .filter(|w| (1..=16).contains(w))
        .unwrap_or(2);
    let only = std::env::var("RUNX_BENCH_ONLY").unwrap_or_default();
    if only == "runx_worker" {
        let ws = std::env::temp_dir().join(format!("runx-bench-{}", std::process::id()));
        upstream::runx_on_this_worker(&ws);
        let _ = std::fs::remove_dir_all(&ws);
        return;
    }
    let only_map_fold = only == "map_fold";
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let engines = engines_answering(&worker);
    println!(
        "runx benchmarks: engines {engines:?}, sizes {sizes:?} MiB (RUNX_BENCH_SIZES_MIB), page sizes 256 KiB / 1 MiB / 4 MiB, {ROUNDS} rounds of a paged run and the engine alone back to back (each first in turn), {RUNS} runs of everything else, map/fold on {workers} workers (RUNX_BENCH_WORKERS), {cpus} CPUs{}",
        if only_map_fold {
            "; only the map/fold comparison (RUNX_BENCH_ONLY=map_fold)"
        } else {
            ""
        }
    );
    println!(
        "note: a page spans at most its page size of the file and carries at most {} bytes of records (the worker's input bound less the state reserve), so 4 MiB pages hold about 2 MiB",
        payload_bytes()
    );
    println!(
        "note: Node.js runs a script that reads the file, cuts it into the same pages (one record per line, runx's span and payload rules), makes each record a string and calls the same exports per page: `page` with the state carried as JSON, or `mapPage` (in the main thread or on worker_threads sharing the file) and `foldPages` in page order on the main thread; timed inside the script, process and worker start excluded. Unlike runx, it neither hashes nor copies the file nor validates records apart from the module's JSON.parse"
    );
    println!(
        "note: paged/engine compares runx's whole wall (admission, framing, protocol) with engine calls alone on pre-framed pages"
    );
    let ws = std::env::temp_dir().join(format!("runx-bench-{}", std::process::id()));
    let pkg = ws.join("pkg");
    if let Err(e) = runx_workload::write_package(&pkg, &runx_workload::PAGE_SIZES, &[workers])
        .and_then(|()| node::write_node_script(&ws))
    {
        println!(
            "skipped: cannot write the bench package under {}: {e}",
            ws.display()
        );
        return;
    }
    if !only_map_fold {
        match runx_workload::new_file_writes(&ws, 256 << 20, Duration::from_secs(8)) {
            Ok((after_idle, at_once)) => println!(
                "machine: a new 256 MiB file written after 8 s idle in {:.0} ms, again at once in {:.0} ms (the copy into a paged run's snapshot writes such a file, beside the pages: where the two differ, its cost depends on what ran before it; see runx_workload::new_file_writes)",
                ms(after_idle),
                ms(at_once)
            ),
            Err(e) => println!("machine: cannot time a new file's writes: {e}"),
        }
    }
    let latencies: Vec<latency::Latency> = if only_map_fold {
        Vec::new()
    } else {
        engines
            .iter()
            .map(|e| latency::latency(&worker, runx.as_deref(), &pkg, e))
            .collect()
    };
    let node = node::node_version();
    let setup = throughput::Setup {
        worker: &worker,
        runx: runx.as_deref(),
        node: node.as_deref(),
        ws: &ws,
        engines: &engines,
        workers,
        only_map_fold,
    };
    let rows: Vec<throughput::SizeRow> = sizes
        .iter()
        .filter_map(|&size| throughput::throughput(&setup, size))
        .collect();
    if !only_map_fold {
        scaling::scaling(&worker, &rows, runx.is_some());
        if let Some(runx) = runx.as_deref() {
            memory::concurrency_memory(runx, &ws);
        }
        serve_overhead(runx.as_deref());
        upstream::runx_on_this_worker(&ws);
    }
    summary::summary(&engines, &latencies, &rows, node.as_deref());
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
