use runx_benches::workload::{AGGREGATE_MODULE, archive};
use runx_runtime::framing::{Framer, PageBudget};
use runx_worker::bundle::ModuleBundle;
use runx_worker::engine::{EngineCall, PageInput};
use runx_worker::limits::Limits;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn main() {
    let engine_name = std::env::args().nth(1).unwrap_or("v8".into());
    let page_bytes: usize = std::env::args()
        .nth(2)
        .map(|s| s.parse().unwrap())
        .unwrap_or(262144);
    let (data, records) = archive(32 << 20);
    let budget = PageBudget {
        page_bytes,
        payload_bytes: 2_000_000,
        per_record_overhead: 4,
    };
    let mut framer = Framer::new(&data).unwrap();
    let mut pages = Vec::new();
    while let Some(p) = framer.next_page(&budget).unwrap() {
        let mut blob = Vec::new();
        let mut ends = Vec::new();
        for r in &p.records {
            blob.extend_from_slice(&data[r.clone()]);
            ends.push(blob.len() as u32);
        }
        pages.push((blob, ends, p.eof));
    }
    let b = Arc::new(ModuleBundle::from_sources(
        "main.mjs",
        [("main.mjs", AGGREGATE_MODULE)],
    ));
    let env = BTreeMap::new();
    let mut e = runx_worker::serve::engine_by_name(&engine_name).unwrap();
    let limits = Limits::default().with_wall(Duration::from_secs(30));
    for run in 0..3 {
        let t = Instant::now();
        let mut state = "null".to_string();
        let mut n = 0;
        for (i, (blob, ends, eof)) in pages.iter().enumerate() {
            let meta = format!("{{\"page_index\":{i},\"eof\":{eof},\"state\":{state}}}");
            let out = e
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
                .unwrap();
            let v: serde_json::Value = serde_json::from_slice(&out.output).unwrap();
            state = v["runx_page"]["state"].to_string();
            n = v["records"].as_u64().unwrap_or(n);
        }
        assert_eq!(n as usize, records);
        println!(
            "{engine_name} run {run}: {:.1} MB/s ({} pages)",
            data.len() as f64 / 1e6 / t.elapsed().as_secs_f64(),
            pages.len()
        );
    }
}
