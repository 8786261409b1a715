//! Node.js on the same module and pages: `node_pages.mjs`, run as a child process per
//! measurement, timed inside the script (process start excluded).

use crate::common::{RUNS, payload_bytes};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// The Node.js version, when `node` runs.
pub fn node_version() -> Option<String> {
    let out = Command::new("node").arg("--version").output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// What a Node.js user would write, with the standard library only. The main thread reads the
/// whole file (into a `SharedArrayBuffer` when there are workers), cuts it into runx's pages
/// (the generator writes one record per line, so a record ends at its line's end, less the
/// comma; a page spans at most `page_bytes` from its first record's start to its last record's
/// end and carries at most runx's payload of records, counting 4 bytes a record), and each
/// record becomes a string that the module `JSON.parse`s. Modes:
///
/// - `page`: the `page` export per page in one thread, the state carried as JSON;
/// - `map_fold 0`: `mapPage` then `foldPages` per page in one thread;
/// - `map_fold N`: `mapPage` on N `worker_threads` (each imports the module; a page travels as
///   its records' spans into the shared file, two in flight per worker) and `foldPages` on the
///   main thread strictly in page order, the state carried as JSON.
///
/// Timed from reading the file to the last fold; starting the workers (until each is online)
/// is timed apart (`start_ms`). Prints the time, where it went (`split`: reading the file,
/// framing, making the record strings, the exports' JavaScript, the fold; summed over the
/// threads), the pages and the output with its keys sorted (runx's form), so that the bench
/// compares answers byte for byte.
const NODE_SCRIPT: &str = r#"
import { Worker, isMainThread, parentPort } from 'node:worker_threads';
import { openSync, readSync, fstatSync, closeSync } from 'node:fs';
import { page, mapPage, foldPages } from './pkg/main.mjs';

const now = () => performance.now();
// The records of a page: one string per span [start, end) of `buf`.
const texts = (buf, spans) => {
  const records = new Array(spans.length >>> 1);
  for (let i = 0; i < records.length; i++) records[i] = buf.toString('utf8', spans[2 * i], spans[2 * i + 1]);
  return records;
};
// mapPage over a page's records; the time to make the strings and to map, in ms.
const mapOne = (buf, p) => {
  const t0 = now();
  const records = texts(buf, p.spans);
  const t1 = now();
  const result = mapPage({ runx_page: { page_index: p.index, eof: p.eof, records } });
  return { result, decode: t1 - t0, map: now() - t1 };
};

if (!isMainThread) {
  let buf = null;
  parentPort.on('message', (m) => {
    if (m.file) { buf = Buffer.from(m.file); return; }
    const { result, decode, map } = mapOne(buf, m);
    parentPort.postMessage({ index: m.index, eof: m.eof, result, decode, map });
  });
} else {
  const [file, pageBytesArg, payloadArg, mode, workersArg] = process.argv.slice(2);
  const pageBytes = Number(pageBytesArg), payloadBytes = Number(payloadArg);
  const n = Number(workersArg ?? 0);
  const ts = now();
  const workers = [];
  for (let i = 0; i < (mode === 'map_fold' ? n : 0); i++) {
    const w = new Worker(new URL(import.meta.url));
    await new Promise((ok, fail) => { w.once('online', ok); w.once('error', fail); });
    workers.push(w);
  }
  // Where the time went, in ms: decode and javascript are summed over the threads.
  const split = { read: 0, framing: 0, decode: 0, javascript: 0, fold: 0 };
  const t0 = now();
  // The whole file, in memory the workers share when there are any.
  const fd = openSync(file, 'r');
  const size = fstatSync(fd).size;
  const buf = workers.length ? Buffer.from(new SharedArrayBuffer(size)) : Buffer.allocUnsafe(size);
  for (let at = 0; at < size;) {
    const got = readSync(fd, buf, at, size - at, at);
    if (got === 0) throw new Error('short read');
    at += got;
  }
  closeSync(fd);
  split.read = now() - t0;
  // Framing: the generator writes one record per line (`,` at its end but the last), behind
  // a prefix line, and `]` alone on the last line. A page holds whole records, spans at most
  // pageBytes from its first record's start to its last record's end, and at most
  // payloadBytes of records counting 4 bytes a record: runx's rules.
  let pos = buf.indexOf(10) + 1, pending = null, index = 0;
  const frame = () => {
    if (pending === null && (pos >= size || buf[pos] === 93)) return null;
    const spans = [];
    let first = -1, payload = 0;
    for (;;) {
      let rec = pending;
      pending = null;
      if (rec === null) {
        if (pos >= size || buf[pos] === 93) break;
        let nl = buf.indexOf(10, pos);
        if (nl < 0) nl = size;
        rec = [pos, buf[nl - 1] === 44 ? nl - 1 : nl];
        pos = nl + 1;
      }
      const cost = payload + (rec[1] - rec[0]) + 4;
      if (first >= 0 && (rec[1] - first > pageBytes || cost > payloadBytes)) { pending = rec; break; }
      if (first < 0) first = rec[0];
      payload = cost;
      spans.push(rec[0], rec[1]);
    }
    const eof = pending === null && (pos >= size || buf[pos] === 93);
    return { index: index++, eof, spans: Uint32Array.from(spans) };
  };
  const nextPage = () => {
    const t = now();
    const p = frame();
    split.framing += now() - t;
    return p;
  };
  // The state travels between calls as JSON, as it does between runx's calls.
  const carry = (s) => (s === null || s === undefined ? null : JSON.parse(JSON.stringify(s)));
  // runx prints an output with its keys sorted; so does this.
  const canonical = (v) => {
    if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
    if (v !== null && typeof v === 'object') {
      return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`).join(',')}}`;
    }
    return JSON.stringify(v);
  };
  let state = null, pages = 0, last = null;
  const fold = (p, result) => {
    const t = now();
    last = foldPages({ runx_page: { page_index: p.index, eof: p.eof, state: carry(state), result } });
    state = last.runx_page.state;
    pages += 1;
    split.fold += now() - t;
  };
  const mapped = (m) => {
    split.decode += m.decode;
    split.javascript += m.map;
    return m.result;
  };
  if (mode === 'page') {
    for (let p; (p = nextPage()) !== null;) {
      const t = now();
      const records = texts(buf, p.spans);
      const t1 = now();
      last = page({ runx_page: { page_index: p.index, eof: p.eof, state: carry(state), records } });
      state = last.runx_page ? last.runx_page.state : null;
      pages += 1;
      split.decode += t1 - t;
      split.javascript += now() - t1;
    }
  } else if (workers.length === 0) {
    for (let p; (p = nextPage()) !== null;) fold(p, mapped(mapOne(buf, p)));
  } else {
    // Two pages in flight on each worker, so none waits for the main thread between pages;
    // results folded strictly in page order as they arrive.
    await new Promise((resolve, reject) => {
      const ready = new Map();
      let folded = 0, total = -1;
      const send = (w) => {
        const p = nextPage();
        if (p === null) return;
        if (p.eof) total = p.index + 1;
        w.postMessage(p, [p.spans.buffer]);
      };
      for (const w of workers) {
        w.postMessage({ file: buf.buffer });
        w.on('error', reject);
        w.on('message', (m) => {
          ready.set(m.index, m);
          for (let r; (r = ready.get(folded)) !== undefined; folded++) {
            ready.delete(folded);
            fold(r, mapped(r));
          }
          if (folded === total) resolve();
          else send(w);
        });
      }
      for (let k = 0; k < 2; k++) for (const w of workers) send(w);
    });
  }
  const ms = now() - t0;
  const { runx_page: _, ...output } = last;
  console.log(JSON.stringify({ ms, start_ms: t0 - ts, pages, split, output: canonical(output) }));
  for (const w of workers) w.terminate();
}
"#;

/// Writes the script beside the package `pkg/` in `ws`.
pub fn write_node_script(ws: &Path) -> std::io::Result<()> {
    std::fs::write(ws.join("node_pages.mjs"), NODE_SCRIPT)
}

/// What Node.js runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeMode {
    /// The `page` export, page after page, in one thread.
    Page,
    /// `mapPage` and `foldPages`; 0 workers maps in the main thread.
    MapFold { workers: usize },
}

/// One run of the script.
#[derive(Clone, Debug)]
pub struct NodeRun {
    /// From reading the file to the last page's answer.
    pub took: Duration,
    /// Starting the worker threads, before `took` began.
    pub start: Duration,
    pub pages: u64,
    /// Where the time went, as one line.
    pub split: String,
    /// The output, keys sorted, as runx prints it.
    pub output: String,
}

/// Runs `node_pages.mjs` once in `ws` over `archive.js`.
pub fn node_run(ws: &Path, page_bytes: usize, mode: NodeMode) -> Result<NodeRun, String> {
    let (name, workers) = match mode {
        NodeMode::Page => ("page", 0),
        NodeMode::MapFold { workers } => ("map_fold", workers),
    };
    let out = Command::new("node")
        .arg("--max-old-space-size=8192")
        .arg("node_pages.mjs")
        .arg("archive.js")
        .arg(page_bytes.to_string())
        .arg(payload_bytes().to_string())
        .arg(name)
        .arg(workers.to_string())
        .current_dir(ws)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())?;
    let secs = |key: &str| Duration::from_secs_f64(v[key].as_f64().unwrap_or(0.0).max(0.0) / 1e3);
    Ok(NodeRun {
        took: secs("ms"),
        start: secs("start_ms"),
        pages: v["pages"].as_u64().unwrap_or(0),
        split: split_of(&v["split"], v["ms"].as_f64().unwrap_or(0.0)),
        output: v["output"].as_str().unwrap_or_default().to_string(),
    })
}

/// [`RUNS`] runs of the `page` export; fails unless every run counted `records` records.
pub fn node_pages(ws: &Path, page_bytes: usize, records: usize) -> Result<Vec<Duration>, String> {
    let mut times = Vec::new();
    for _ in 0..RUNS {
        let run = node_run(ws, page_bytes, NodeMode::Page)?;
        let output: serde_json::Value =
            serde_json::from_str(&run.output).map_err(|e| format!("{e}: {}", run.output))?;
        if output["records"].as_u64() != Some(records as u64) {
            return Err(format!("wrong result: {}", run.output));
        }
        times.push(run.took);
    }
    Ok(times)
}

/// The script's `split` as `read 120 ms (7.1%), …`, in % of `wall_ms`.
fn split_of(split: &serde_json::Value, wall_ms: f64) -> String {
    let parts: Vec<String> = ["read", "framing", "decode", "javascript", "fold"]
        .iter()
        .map(|k| {
            let v = split[*k].as_f64().unwrap_or(0.0);
            let pct = if wall_ms > 0.0 {
                100.0 * v / wall_ms
            } else {
                0.0
            };
            format!("{k} {v:.0} ms ({pct:.1}%)")
        })
        .collect();
    format!("{} of {wall_ms:.0} ms", parts.join(", "))
}
