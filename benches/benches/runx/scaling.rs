//! Scaling: the growth of wall time with the archive, and independent runs on pools of 1 to
//! the number of CPUs.

use crate::common::{RUNS, bundle, engine, ms, page_label};
use crate::throughput::SizeRow;
use runx_runtime::Runtime;
use runx_worker::{EngineCall, Limits, WorkerCommand};
use runx_workload::{PAGE_SIZES, growth_exponent, stats};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Independent skill runs of the pool-scaling workload.
const K: usize = 8;

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
            keep_module: false,
        })
        .is_ok();
    let took = t.elapsed().as_secs_f64();
    if !ok || took <= 0.0 {
        return probe;
    }
    ((probe as f64) * 0.050 / took) as u64
}

// Long on purpose: a benchmark reads top to bottom in the order of the report it prints.
pub fn scaling(worker: &WorkerCommand, rows: &[SizeRow], have_runx: bool) {
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
                            rt.run(req).error().map(|e| e.to_string())
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
