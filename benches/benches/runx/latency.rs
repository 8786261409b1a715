//! Latency of a trivial call: warm through the pool, a fresh context in this process, the
//! first call on a new worker and a cold `runx skill`.

use crate::common::{bundle, engine, ms};
use runx_worker::{Call, EngineCall, Limits, Pool, PoolConfig, WorkerCommand};
use runx_workload::{AGGREGATE_MODULE, Stats, stats};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What the latency section measured for one engine.
pub struct Latency {
    pub warm: Stats,
    pub fresh: Stats,
    pub first: Stats,
    pub cold_runx: Option<Stats>,
}

// Long on purpose: a benchmark reads top to bottom in the order of the report it prints.
pub fn latency(worker: &WorkerCommand, runx: Option<&Path>, pkg: &Path, name: &str) -> Latency {
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
                keep_module: false,
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
