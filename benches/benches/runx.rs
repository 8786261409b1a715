//! `cargo bench -p runx-benches`: call latency and page throughput, each beside a baseline
//! measured in the same run. Sizes: RUNX_BENCH_SIZES_MIB (default "64"), e.g. "8,64,256,512".

use runx_benches::{AGGREGATE_MODULE, archive, stats};
use runx_runtime::{RunRequest, Runtime};
use runx_worker::bundle::ModuleBundle;
use runx_worker::engine::{Engine, EngineCall, PageInput};
use runx_worker::limits::Limits;
use runx_worker::pool::{Pool, PoolConfig};
use runx_worker::process::{Call, WorkerCommand};
use runx_worker::quickjs::QuickJs;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn target_bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("current exe");
    let dir = exe.parent().and_then(Path::parent).expect("target dir");
    dir.join(name)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let worker = target_bin("runx-worker");
    if !worker.is_file() {
        eprintln!("build the worker first: cargo build --release -p runx-worker");
        return;
    }
    latency(&worker);
    let sizes: Vec<usize> = std::env::var("RUNX_BENCH_SIZES_MIB")
        .unwrap_or_else(|_| "64".to_string())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    for size in sizes {
        throughput(&worker, size);
    }
}

fn bundle() -> Arc<ModuleBundle> {
    Arc::new(ModuleBundle::from_sources(
        "main.mjs",
        [("main.mjs", AGGREGATE_MODULE)],
    ))
}

fn latency(worker: &Path) {
    let pool = Pool::new(PoolConfig::new(WorkerCommand::new(worker)).size(1)).expect("pool");
    let call = Call::new(bundle(), Some("trivial"), b"{}".to_vec());
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
    let b = bundle();
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
    println!("latency (trivial export, 1000 calls each)");
    println!(
        "  warm call through the pool:      p50 {:.3} ms  p99 {:.3} ms  (min {:.3}, max {:.3})",
        ms(w.p50),
        ms(w.p99),
        ms(w.min),
        ms(w.max)
    );
    println!(
        "  baseline: in-process fresh context: p50 {:.3} ms  p99 {:.3} ms  (min {:.3}, max {:.3})",
        ms(f.p50),
        ms(f.p99),
        ms(f.min),
        ms(f.max)
    );
    println!(
        "  => process + protocol overhead at p50: {:.3} ms ({:.2}x)",
        ms(w.p50) - ms(f.p50),
        w.p50.as_secs_f64() / f.p50.as_secs_f64()
    );
    let mut spawn: Vec<Duration> = (0..20)
        .map(|_| {
            let p = Pool::new(PoolConfig::new(WorkerCommand::new(worker)).size(1)).expect("pool");
            let t = Instant::now();
            p.call(&call).expect("first call");
            t.elapsed()
        })
        .collect();
    let s = stats(&mut spawn);
    println!(
        "  cold first call (spawn + ready + call): p50 {:.3} ms  p99 {:.3} ms",
        ms(s.p50),
        ms(s.p99)
    );
}

fn throughput(worker: &Path, size_mib: usize) {
    let ws = std::env::temp_dir().join(format!("runx-bench-{}", std::process::id()));
    let pkg = ws.join("pkg");
    std::fs::create_dir_all(&pkg).expect("bench dir");
    let (data, records) = archive(size_mib * 1024 * 1024);
    std::fs::write(ws.join("archive.js"), &data).expect("archive");
    std::fs::write(pkg.join("main.mjs"), AGGREGATE_MODULE).expect("module");
    let mut yaml = String::from("skill: bench\nversion: '1'\nrunners:\n");
    for (name, bytes) in [("p256k", 262_144), ("p1m", 1_048_576), ("p4m", 4_194_304)] {
        yaml.push_str(&format!(
            "  {name}:\n    type: javascript\n    module: main.mjs\n    export: page\n    timeout_seconds: 30\n    inputs: {{ archive_file: {{ type: string }}, archive_base: {{ type: string, default: workspace }} }}\n    outputs: {{ records: integer }}\n    pages: {{ path_from: archive_file, path_scope_from: archive_base, page_bytes: {bytes} }}\n"
        ));
    }
    std::fs::write(pkg.join("X.yaml"), yaml).expect("profile");
    let rt = Runtime::new(WorkerCommand::new(worker)).with_pool_size(1);
    let mb = data.len() as f64 / 1e6;
    println!(
        "\npage throughput: {size_mib} MiB archive, {records} records of ~{} bytes",
        data.len() / records
    );
    // The engine's own limit: the same module over the same records, in-process, one fresh
    // context per 1 MiB of records, no framing, pool or protocol.
    let limit = engine_limit(&data);
    println!(
        "  engine in-process (1 MiB chunks):   {:>7.1} MB/s",
        mb / limit.as_secs_f64()
    );
    for runner in ["p256k", "p1m", "p4m"] {
        let mut samples = Vec::new();
        for _ in 0..3 {
            let mut inputs = serde_json::Map::new();
            inputs.insert("archive_file".into(), "archive.js".into());
            let mut req = RunRequest::new(&pkg, inputs);
            req.runner = Some(runner.to_string());
            req.workspace = ws.clone();
            req.receipt_dir = Some(ws.join("receipts"));
            let t = Instant::now();
            let out = rt.run(&req);
            samples.push(t.elapsed());
            if let Some(e) = out.error {
                println!("  {runner}: failed: {e}");
                return;
            }
        }
        let s = stats(&mut samples);
        println!(
            "  runx paged {runner:>5}: median {:>7.1} MB/s ({:.0} records/s), spread {:.1}–{:.1} MB/s, ratio to engine limit {:.2}",
            mb / s.p50.as_secs_f64(),
            records as f64 / s.p50.as_secs_f64(),
            mb / s.max.as_secs_f64(),
            mb / s.min.as_secs_f64(),
            limit.as_secs_f64() / s.p50.as_secs_f64()
        );
    }
    let _ = std::fs::remove_dir_all(&ws);
}

fn engine_limit(data: &[u8]) -> Duration {
    let mut framer = runx_runtime::framing::Framer::new(data).expect("frame");
    let budget = runx_runtime::framing::PageBudget {
        page_bytes: 1 << 20,
        payload_bytes: 3 << 20,
        per_record_overhead: 4,
    };
    let mut pages = Vec::new();
    while let Some(p) = framer.next_page(&budget).expect("page") {
        let mut blob = Vec::new();
        let mut ends = Vec::new();
        for r in &p.records {
            blob.extend_from_slice(&data[r.clone()]);
            ends.push(blob.len() as u32);
        }
        pages.push((blob, ends, p.eof));
    }
    let b = bundle();
    let env = BTreeMap::new();
    let mut engine = QuickJs::new();
    let t = Instant::now();
    let mut state = "null".to_string();
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
                limits: Limits::default().with_wall(Duration::from_secs(30)),
            })
            .expect("engine page");
        let v: serde_json::Value = serde_json::from_slice(&out.output).expect("json");
        state = v["runx_page"]["state"].to_string();
    }
    t.elapsed()
}
