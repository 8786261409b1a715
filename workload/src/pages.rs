//! The page-throughput workload shared by `cargo bench -p runx-benches` and `runx bench pages`:
//! a synthetic archive generator, the parse-and-aggregate module, a skill package around it and
//! one measured paged run.

use runx_receipts::PageTimings;
use runx_runtime::{ProgressSink, RunError, RunRequest, Runtime};
use serde_json::{Map, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The page sizes measured by default: 256 KiB, 1 MiB and 4 MiB.
pub const PAGE_SIZES: [usize; 3] = [256 * 1024, 1024 * 1024, 4 * 1024 * 1024];

/// The prefix of the generated archive, as in an exported `tweets.js`.
pub const ARCHIVE_PREFIX: &str = "window.YTD.tweets.part0 = [\n";

/// The parse-and-aggregate module used by every throughput workload: it parses every record
/// and keeps a bounded aggregate, returned whole on the last page so that runs (and Node.js)
/// can be checked against each other by their output. `trivial` is the latency probe.
pub const AGGREGATE_MODULE: &str = r#"
export function page(inputs) {
  const p = inputs.runx_page;
  const s = p.state ?? { records: 0, likes: 0, sensitive: 0, users: {} };
  for (const text of p.records) {
    const r = JSON.parse(text);
    s.records += 1; s.likes += r.likes; if (r.sensitive) s.sensitive += 1;
    const k = r.user.length % 16; s.users[k] = (s.users[k] ?? 0) + 1;
  }
  if (p.eof) return { runx_page: { state: s }, records: s.records, likes: s.likes, sensitive: s.sensitive, users: s.users };
  return { runx_page: { state: s } };
}
// The same aggregate as a map/fold runner (a runx extension): each page aggregated on its own,
// the aggregates merged in page order.
export function mapPage(inputs) {
  const s = { records: 0, likes: 0, sensitive: 0, users: {} };
  for (const text of inputs.runx_page.records) {
    const r = JSON.parse(text);
    s.records += 1; s.likes += r.likes; if (r.sensitive) s.sensitive += 1;
    const k = r.user.length % 16; s.users[k] = (s.users[k] ?? 0) + 1;
  }
  return s;
}
export function foldPages(inputs) {
  const p = inputs.runx_page;
  const s = p.state ?? { records: 0, likes: 0, sensitive: 0, users: {} };
  const r = p.result;
  s.records += r.records; s.likes += r.likes; s.sensitive += r.sensitive;
  for (const k in r.users) s.users[k] = (s.users[k] ?? 0) + r.users[k];
  if (p.eof) return { runx_page: { state: s }, records: s.records, likes: s.likes, sensitive: s.sensitive, users: s.users };
  return { runx_page: { state: s } };
}
export function trivial() { return { ok: true }; }
"#;

/// What [`write_archive`] wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArchiveInfo {
    /// Bytes written.
    pub bytes: u64,
    /// Records in the array.
    pub records: u64,
}

/// One record of about 250 bytes: ids, names, numbers, booleans, nested arrays and, for every
/// fourth record, non-ASCII text. Always one line.
fn record(n: u64, out: &mut Vec<u8>) {
    let text = if n.is_multiple_of(4) {
        "naïve café — ünïcode, ☕ and 日本語"
    } else {
        "plain ascii text here, nothing special"
    };
    let _ = write!(
        out,
        "{{\"id\":{n},\"id_str\":\"{n}\",\"user\":\"user_{}\",\"text\":\"{text} #{n}\",\"lang\":\"{}\",\"retweets\":{},\"likes\":{},\"sensitive\":{},\"tags\":[\"a\",\"bb\",\"t{}\"],\"coords\":[{},{}],\"entities\":{{\"mentions\":[{},{}],\"urls\":[]}}}}",
        n % 977,
        if n.is_multiple_of(3) { "fr" } else { "en" },
        n % 113,
        (n * 7) % 1009,
        n.is_multiple_of(9),
        n % 17,
        n as f64 / 3.0,
        -(n as f64) / 7.0,
        n % 1000,
        (n * 31) % 1000,
    );
}

/// Writes a synthetic archive of at most `bytes` bytes (and at least one record) behind the
/// `window.YTD…` prefix: a JSON array with one record per line.
pub fn write_archive(w: &mut impl Write, bytes: u64) -> std::io::Result<ArchiveInfo> {
    const SUFFIX: &[u8] = b"\n]\n";
    let mut w = std::io::BufWriter::with_capacity(1 << 20, w);
    w.write_all(ARCHIVE_PREFIX.as_bytes())?;
    let mut written = ARCHIVE_PREFIX.len() as u64;
    let mut n = 0u64;
    let mut rec = Vec::with_capacity(512);
    loop {
        rec.clear();
        if n > 0 {
            rec.extend_from_slice(b",\n");
        }
        record(n, &mut rec);
        if n > 0 && written + (rec.len() + SUFFIX.len()) as u64 > bytes {
            break;
        }
        w.write_all(&rec)?;
        written += rec.len() as u64;
        n += 1;
    }
    w.write_all(SUFFIX)?;
    w.flush()?;
    Ok(ArchiveInfo {
        bytes: written + SUFFIX.len() as u64,
        records: n,
    })
}

/// [`write_archive`] into memory: the bytes and the record count.
pub fn archive(bytes: usize) -> (Vec<u8>, usize) {
    let mut out = Vec::with_capacity(bytes);
    let info = match write_archive(&mut out, bytes as u64) {
        Ok(i) => i,
        // Writing to a Vec cannot fail.
        Err(_) => ArchiveInfo {
            bytes: 0,
            records: 0,
        },
    };
    (out, info.records as usize)
}

/// The runner of the throughput package for `page_bytes`: sequential, a module per page.
pub fn runner_name(page_bytes: usize) -> String {
    format!("pages_{page_bytes}")
}

/// The map/fold runner of the throughput package for `page_bytes`: the same aggregate, its
/// pages mapped in `workers` partitions, a module per page.
pub fn map_fold_runner_name(page_bytes: usize, workers: usize) -> String {
    format!("map_fold_{page_bytes}_{workers}")
}

/// The same runner as `name` with its module kept per partition (`pages.module: partition`).
pub fn kept(name: &str) -> String {
    format!("{name}_kept")
}

/// Writes the throughput package into `dir`: `main.mjs` ([`AGGREGATE_MODULE`]) and `X.yaml`
/// with, per page size, a sequential runner ([`runner_name`]) and a map/fold runner for each
/// of `workers` ([`map_fold_runner_name`]), each also with its module kept per partition
/// ([`kept`]), and a `trivial` runner.
pub fn write_package(dir: &Path, page_sizes: &[usize], workers: &[usize]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("main.mjs"), AGGREGATE_MODULE)?;
    let mut yaml = String::from(
        "skill: runx-bench\nversion: '1'\nrunners:\n  trivial:\n    type: javascript\n    module: main.mjs\n    export: trivial\n",
    );
    let runner = |name: &str, export: &str, pages: &str| {
        format!(
            "  {name}:\n    type: javascript\n    module: main.mjs\n{export}    timeout_seconds: 30\n    inputs: {{ archive_file: {{ type: string }}, archive_base: {{ type: string, default: workspace }} }}\n    outputs: {{ records: integer }}\n    pages: {{ path_from: archive_file, path_scope_from: archive_base, {pages} }}\n"
        )
    };
    for &bytes in page_sizes {
        let mut shapes = vec![(
            runner_name(bytes),
            "    export: page\n",
            format!("page_bytes: {bytes}"),
        )];
        for &n in workers {
            shapes.push((
                map_fold_runner_name(bytes, n),
                "",
                format!("page_bytes: {bytes}, map: mapPage, fold: foldPages, workers: {n}"),
            ));
        }
        for (name, export, pages) in shapes {
            yaml.push_str(&runner(&name, export, &pages));
            yaml.push_str(&runner(
                &kept(&name),
                export,
                &format!("{pages}, module: partition"),
            ));
        }
    }
    std::fs::write(dir.join("X.yaml"), yaml)
}

/// `name`, or its variant with the module kept per partition.
fn variant(name: String, kept_module: bool) -> String {
    if kept_module { kept(&name) } else { name }
}

/// Where the wall time of a paged run went, in milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TimeSplit {
    /// Copying and hashing the artifact.
    pub admission_ms: f64,
    /// Framing pages (overlaps the calls: it runs one page ahead).
    pub framing_ms: f64,
    /// Round trips minus engine time: protocol, pipes, worker-side decoding.
    pub transport_ms: f64,
    /// JavaScript inside the worker.
    pub engine_ms: f64,
    /// Parsing page results and checking state.
    pub result_ms: f64,
    /// The whole paged run.
    pub wall_ms: f64,
}

impl TimeSplit {
    /// The split of a receipt's timings.
    pub fn from_timings(t: &PageTimings) -> TimeSplit {
        TimeSplit {
            admission_ms: t.admission_ms,
            framing_ms: t.framing_ms,
            transport_ms: (t.call_ms - t.engine_ms).max(0.0),
            engine_ms: t.engine_ms,
            result_ms: t.result_ms,
            wall_ms: t.wall_ms,
        }
    }

    /// `part` as a percentage of the wall.
    pub fn percent(&self, part: f64) -> f64 {
        if self.wall_ms > 0.0 {
            100.0 * part / self.wall_ms
        } else {
            0.0
        }
    }

    /// The parts as `(name, ms)`, in pipeline order.
    pub fn parts(&self) -> [(&'static str, f64); 5] {
        [
            ("admission", self.admission_ms),
            ("framing", self.framing_ms),
            ("transport", self.transport_ms),
            ("javascript", self.engine_ms),
            ("result", self.result_ms),
        ]
    }
}

/// One measured paged run.
#[derive(Clone, Debug)]
pub struct PagesRun {
    /// Wall time of [`Runtime::run`] (profile loading and receipt writing included).
    pub wall: Duration,
    /// Pages delivered.
    pub pages: u32,
    /// Records the module counted.
    pub records: u64,
    /// The run's output (the aggregate), to check that runs agree.
    pub output: Value,
    /// The receipt's split.
    pub split: TimeSplit,
    /// Peak memory of this process and its workers during the run.
    pub memory: crate::memory::Peaks,
    /// CPU time of this process and its workers during the run (`None` without `/proc`).
    pub cpu: Option<Duration>,
}

impl PagesRun {
    /// CPUs the run kept busy on average: its CPU time over its wall.
    pub fn cpus_used(&self) -> Option<f64> {
        Some(self.cpu?.as_secs_f64() / self.wall.as_secs_f64().max(1e-9))
    }
}

/// Where [`Bench::run_pages`] finds its package and archive.
#[derive(Clone, Debug)]
pub struct Bench {
    /// The workspace: the archive path is relative to it, receipts go under it.
    pub workspace: PathBuf,
    /// The package written by [`write_package`].
    pub package: PathBuf,
    /// The archive, relative to the workspace.
    pub archive: String,
}

impl Bench {
    /// Runs the paged runner for `page_bytes` once over the archive (its module kept per
    /// partition if `kept`).
    pub fn run_pages(
        &self,
        rt: &Runtime,
        page_bytes: usize,
        kept: bool,
        progress: Option<ProgressSink>,
    ) -> Result<PagesRun, RunError> {
        self.run_runner(rt, &variant(runner_name(page_bytes), kept), progress)
    }

    /// Runs the map/fold runner for `page_bytes` in `workers` partitions once over the
    /// archive (its module kept per partition if `kept`); the package must have been written
    /// with `workers` among its map/fold runners.
    pub fn run_map_fold(
        &self,
        rt: &Runtime,
        page_bytes: usize,
        workers: usize,
        kept: bool,
        progress: Option<ProgressSink>,
    ) -> Result<PagesRun, RunError> {
        let name = variant(map_fold_runner_name(page_bytes, workers), kept);
        self.run_runner(rt, &name, progress)
    }

    fn run_runner(
        &self,
        rt: &Runtime,
        runner: &str,
        progress: Option<ProgressSink>,
    ) -> Result<PagesRun, RunError> {
        let mut inputs = Map::new();
        inputs.insert("archive_file".into(), Value::String(self.archive.clone()));
        let mut req = RunRequest::new(&self.package, inputs);
        req.runner = Some(runner.to_string());
        req.workspace = self.workspace.clone();
        req.receipt_dir = Some(self.workspace.join("receipts"));
        req.progress = progress;
        let sampler = crate::memory::Sampler::start(std::process::id(), Duration::from_millis(10));
        let clock = crate::cpu::CpuClock::start(std::process::id());
        let started = Instant::now();
        let out = rt.run(req);
        let wall = started.elapsed();
        let cpu = clock.stop();
        let memory = sampler.finish();
        if let Some(p) = &out.receipt_path {
            let _ = std::fs::remove_file(p);
        }
        let output = out.result?;
        let artifact = out.evidence.artifact.unwrap_or_default();
        let records = output.get("records").and_then(Value::as_u64).unwrap_or(0);
        Ok(PagesRun {
            wall,
            pages: artifact.page_count,
            records,
            output,
            split: TimeSplit::from_timings(&artifact.timings),
            memory,
            cpu,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn archive_is_bounded_json_of_250_byte_records() {
        let (data, n) = archive(200_000);
        assert!(
            data.len() <= 200_000 && data.len() > 199_000,
            "{}",
            data.len()
        );
        let array = ARCHIVE_PREFIX.len() - 2;
        let body = &data[array..];
        let v: Vec<Value> = serde_json::from_slice(body).unwrap();
        assert_eq!(v.len(), n);
        let per = data.len() / n;
        assert!((220..=280).contains(&per), "{per} bytes a record");
        assert!(v.iter().any(|r| !r["text"].as_str().unwrap().is_ascii()));
        let (tiny, n) = archive(1);
        assert_eq!(n, 1);
        assert!(serde_json::from_slice::<Vec<Value>>(&tiny[array..]).is_ok());
    }

    #[test]
    fn split_subtracts_engine_from_calls() {
        let t = PageTimings {
            call_ms: 10.0,
            engine_ms: 7.0,
            wall_ms: 20.0,
            ..PageTimings::default()
        };
        let s = TimeSplit::from_timings(&t);
        assert_eq!(s.transport_ms, 3.0);
        assert_eq!(s.percent(s.engine_ms), 35.0);
    }
}
