//! Helpers shared by the benchmarks: statistics and synthetic archives.
#![forbid(unsafe_code)]

use std::time::Duration;

/// Median and spread of a sample.
pub struct Stats {
    /// 50th percentile.
    pub p50: Duration,
    /// 99th percentile.
    pub p99: Duration,
    /// Smallest.
    pub min: Duration,
    /// Largest.
    pub max: Duration,
}

/// Percentiles of `samples` (sorted in place).
pub fn stats(samples: &mut [Duration]) -> Stats {
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    Stats {
        p50: at(0.5),
        p99: at(0.99),
        min: samples[0],
        max: samples[samples.len() - 1],
    }
}

/// A synthetic archive of records of about 250 bytes (ids, names, numbers, booleans, nested
/// arrays, some non-ASCII text) behind a `window.YTD…` prefix, at least `bytes` long.
pub fn archive(bytes: usize) -> (Vec<u8>, usize) {
    let mut out = b"window.YTD.tweets.part0 = [\n".to_vec();
    let mut n = 0usize;
    while out.len() < bytes {
        if n > 0 {
            out.extend_from_slice(b",\n");
        }
        let text = if n.is_multiple_of(4) {
            "naïve café — ünïcode"
        } else {
            "plain ascii text here"
        };
        let rec = serde_json::json!({
            "id": n, "id_str": n.to_string(), "user": format!("user_{}", n % 977),
            "text": format!("{text} #{n}"), "retweets": n % 113, "likes": (n * 7) % 1009,
            "sensitive": n.is_multiple_of(9), "tags": ["a", "bb", format!("t{}", n % 17)],
            "coords": [n as f64 / 3.0, -(n as f64) / 7.0],
        });
        out.extend_from_slice(rec.to_string().as_bytes());
        n += 1;
    }
    out.extend_from_slice(b"\n]\n");
    (out, n)
}

/// The parse-and-aggregate module used by every throughput workload: it parses every record
/// and keeps a bounded aggregate.
pub const AGGREGATE_MODULE: &str = r#"
export function page(inputs) {
  const p = inputs.runx_page;
  const s = p.state ?? { records: 0, likes: 0, sensitive: 0, users: {} };
  for (const text of p.records) {
    const r = JSON.parse(text);
    s.records += 1; s.likes += r.likes; if (r.sensitive) s.sensitive += 1;
    const k = r.user.length % 16; s.users[k] = (s.users[k] ?? 0) + 1;
  }
  if (p.eof) return { runx_page: { state: s }, records: s.records, likes: s.likes };
  return { runx_page: { state: s } };
}
export function trivial() { return { ok: true }; }
"#;
