use runx_worker::bundle::ModuleBundle;
use runx_worker::engine::EngineCall;
use runx_worker::limits::Limits;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;
fn main() {
    let name = std::env::args().nth(1).unwrap_or("v8".into());
    let b = Arc::new(ModuleBundle::from_sources(
        "main.mjs",
        [(
            "main.mjs",
            "export function trivial() { return { ok: true }; }",
        )],
    ));
    let env = BTreeMap::new();
    let t = Instant::now();
    let mut e = runx_worker::serve::engine_by_name(&name).unwrap();
    e.call(&EngineCall {
        bundle: &b,
        export: Some("trivial"),
        input: b"{}",
        page: None,
        environment: &env,
        limits: Limits::default(),
    })
    .unwrap();
    println!("{name} first call {:?}", t.elapsed());
    status();
    let mut times = Vec::new();
    for i in 0..5000 {
        let t = Instant::now();
        e.call(&EngineCall {
            bundle: &b,
            export: Some("trivial"),
            input: b"{}",
            page: None,
            environment: &env,
            limits: Limits::default(),
        })
        .unwrap();
        if i >= 200 {
            times.push(t.elapsed());
        }
    }
    times.sort();
    println!(
        "{name} p50 {:?} p10 {:?}",
        times[times.len() / 2],
        times[times.len() / 10]
    );
}
#[allow(dead_code)]
fn status() {
    for l in std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
    {
        if l.starts_with("VmData") || l.starts_with("VmSize") || l.starts_with("VmRSS") {
            println!("{l}");
        }
    }
}
