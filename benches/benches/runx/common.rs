//! What every part of the bench shares: run counts, the binaries beside it, units, the module
//! and the engines.

use runx_profile::STATE_BYTES;
use runx_worker::{Engine, Limits, ModuleBundle, engine_by_name};
use runx_workload::TimeSplit;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Runs of each throughput measurement (median and spread are over these).
pub const RUNS: usize = 3;
/// Rounds of a paged run through runx and a run of the engine alone, back to back (in turn
/// which goes first); also the rounds of the map/fold comparison.
pub const ROUNDS: usize = 5;

/// A binary built next to the bench (`target/release/NAME`).
pub fn target_bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_default();
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .unwrap_or(Path::new("."));
    dir.join(name)
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

pub fn page_label(bytes: usize) -> String {
    if bytes >= 1 << 20 {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{} KiB", bytes >> 10)
    }
}

/// The bytes of records a page may carry in a call with empty other inputs: the worker's
/// input bound less the page metadata and the state reserve (runx's framing budget).
pub fn payload_bytes() -> usize {
    Limits::default()
        .input_bytes
        .saturating_sub(2 + 16 * 1024 + STATE_BYTES.max as usize)
}

pub fn bundle(source: &str) -> Arc<ModuleBundle> {
    Arc::new(ModuleBundle::from_sources(
        "main.mjs",
        [("main.mjs", source)],
    ))
}

/// An engine of this process by name (only names from `engines_built` are asked for).
pub fn engine(name: &str) -> Box<dyn Engine> {
    match engine_by_name(name) {
        Ok(e) => e,
        Err(e) => panic!("engine {name} is built but cannot be made: {e}"),
    }
}

/// A page's answer as JSON.
pub fn answer(output: &[u8]) -> Result<serde_json::Value, String> {
    serde_json::from_slice(output).map_err(|e| e.to_string())
}

pub fn num_ratio(v: Option<f64>) -> String {
    v.map_or("–".to_string(), |v| format!("{v:.2}"))
}

/// A paged run's split as `admission 12 ms (1.0%), …`, in % of its wall.
pub fn split_line(s: &TimeSplit) -> String {
    let parts: Vec<String> = s
        .parts()
        .iter()
        .map(|(name, v)| format!("{name} {:.0} ms ({:.1}%)", v, s.percent(*v)))
        .collect();
    format!("{} of {:.0} ms wall", parts.join(", "), s.wall_ms)
}
