//! The engine alone: the same module over the same pages, framed as runx frames them, called
//! in this process without admission, pool or protocol; and page by page against a worker.

use crate::common::{answer, bundle, engine, payload_bytes};
use runx_runtime::{Framer, PageBudget};
use runx_worker::{
    Call, Engine, EngineCall, Limits, ModuleBundle, PageInput, PagePayload, PageRecords, Pool,
    spans_of_ends,
};
use runx_workload::AGGREGATE_MODULE;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One framed page: its records back to back, their spans, and whether it is the last.
type FramedPage = (Vec<u8>, Vec<(u32, u32)>, bool);

/// The pages of `data` as the runtime frames them.
fn frame_pages(data: &[u8], page_bytes: usize) -> Result<Vec<FramedPage>, String> {
    let budget = PageBudget {
        page_bytes,
        payload_bytes: payload_bytes(),
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

/// runx's framer alone over `data` in memory (scan and validate every record, cut pages of
/// `page_bytes`; no copy, no digest, no page handed on), and SHA-256 over the same bytes: what
/// the framing thread of a paged run does beside copying the file into its snapshot.
pub fn framer_alone(data: &[u8], page_bytes: usize) -> Result<(Duration, Duration), String> {
    let budget = PageBudget {
        page_bytes,
        payload_bytes: payload_bytes(),
        per_record_overhead: 4,
    };
    let t = Instant::now();
    let mut framer = Framer::new(data).map_err(|e| e.to_string())?;
    while framer
        .next_page(&budget)
        .map_err(|e| e.to_string())?
        .is_some()
    {}
    let framing = t.elapsed();
    let t = Instant::now();
    let digest = runx_receipts::sha256_hex(data);
    let hashing = t.elapsed();
    if digest.is_empty() {
        return Err("no digest".to_string());
    }
    Ok((framing, hashing))
}

/// The same module over the same pages run directly in the engine `name`: fresh context per
/// page, no framing, pool or protocol in the timing.
pub struct Alone {
    pages: Vec<FramedPage>,
    bundle: Arc<ModuleBundle>,
    engine: Box<dyn Engine>,
}

impl Alone {
    /// Frames `data` once, as the runtime would, for runs of the engine `name`.
    pub fn new(data: &[u8], page_bytes: usize, name: &str) -> Result<Alone, String> {
        Ok(Alone {
            pages: frame_pages(data, page_bytes)?,
            bundle: bundle(AGGREGATE_MODULE),
            engine: engine(name),
        })
    }

    /// One pass over every page; fails unless the module counted `records` records.
    pub fn run(&mut self, records: usize) -> Result<Duration, String> {
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
                keep_module: false,
            })
            .map_err(|e| format!("page {i}: {e:?}"))?;
        Ok(out.output)
    }

    /// The worker's JavaScript time over this process's, page by page: the median over at
    /// least `pairs` pairs (passes over the pages repeat until there are enough) of one page
    /// run here and in a worker of `pool` (pages inline, same state), one right after the
    /// other and each first in turn, so both sides of a pair see the machine at the same
    /// moment. The two must answer alike.
    pub fn parity(&mut self, pool: &Pool, pairs: usize) -> Result<f64, String> {
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
