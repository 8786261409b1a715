//! What a run said besides its output, as `runx skill --json` prints it: a module's console
//! lines and a cli-tool's stderr, cut to [`PRINTED_TEXT_BYTES`] with the full byte counts beside
//! them.

use runx_runtime::ConsoleLog;
use runx_runtime::limits::PRINTED_TEXT_BYTES;
use runx_runtime::subprocess::Capture;
use serde_json::{Value, json};

/// Printed bytes of each stream.
fn budget() -> usize {
    usize::try_from(PRINTED_TEXT_BYTES.max).unwrap_or(usize::MAX)
}

/// `{lines: [{level, message}], line_count, bytes, printed_bytes, dropped_bytes}`: the console
/// lines the worker kept (at most its 64 KiB log bound), printed until [`PRINTED_TEXT_BYTES`] of
/// messages; `bytes` counts every kept message byte, `dropped_bytes` what the worker dropped.
pub fn console_json(log: &ConsoleLog) -> Value {
    let mut printed = Vec::new();
    let mut printed_bytes = 0usize;
    let bytes: usize = log.lines.iter().map(|l| l.message.len()).sum();
    for line in &log.lines {
        if printed_bytes + line.message.len() > budget() {
            break;
        }
        printed_bytes += line.message.len();
        printed.push(json!({"level": line.level, "message": line.message}));
    }
    json!({
        "lines": printed,
        "line_count": log.lines.len(),
        "bytes": bytes,
        "printed_bytes": printed_bytes,
        "dropped_bytes": log.dropped_bytes,
    })
}

/// `{text, total_bytes, printed_bytes, truncated, sha256}`: the first [`PRINTED_TEXT_BYTES`] of
/// what a cli-tool wrote to stderr (cut at a character boundary, invalid UTF-8 replaced), with
/// the count and digest of the whole stream.
pub fn stderr_json(c: &Capture) -> Value {
    let mut end = c.kept.len().min(budget());
    // Cut at a character boundary: back off over UTF-8 continuation bytes.
    while end > 0 && end < c.kept.len() && (c.kept[end] & 0xC0) == 0x80 {
        end -= 1;
    }
    let text = String::from_utf8_lossy(&c.kept[..end]);
    json!({
        "text": text,
        "total_bytes": c.total_bytes,
        "printed_bytes": end,
        "truncated": (end as u64) < c.total_bytes,
        "sha256": c.sha256,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use runx_runtime::LogLine;

    #[test]
    fn stderr_is_cut_at_a_character_boundary_with_its_full_count() {
        let mut kept = vec![b'a'; budget() - 1];
        kept.extend_from_slice("é".as_bytes());
        kept.extend_from_slice(b"tail");
        let c = Capture {
            total_bytes: 10 * kept.len() as u64,
            kept,
            sha256: "sha256:x".into(),
            truncated: true,
        };
        let v = stderr_json(&c);
        assert_eq!(v["printed_bytes"], budget() - 1);
        assert_eq!(v["text"].as_str().map(str::len), Some(budget() - 1));
        assert_eq!(v["truncated"], true);
        assert_eq!(v["total_bytes"], c.total_bytes);
        let small = Capture {
            kept: b"warn\n".to_vec(),
            total_bytes: 5,
            sha256: "sha256:y".into(),
            truncated: false,
        };
        assert_eq!(
            stderr_json(&small),
            json!({"text": "warn\n", "total_bytes": 5, "printed_bytes": 5, "truncated": false, "sha256": "sha256:y"})
        );
    }

    #[test]
    fn console_lines_are_printed_within_the_budget() {
        let line = |m: String| LogLine {
            level: "log".into(),
            message: m,
        };
        let log = ConsoleLog {
            lines: vec![
                line("x".repeat(budget() - 10)),
                line("y".repeat(20)),
                line("z".into()),
            ],
            dropped_bytes: 7,
        };
        let v = console_json(&log);
        assert_eq!(v["line_count"], 3);
        assert_eq!(v["lines"].as_array().map(Vec::len), Some(1));
        assert_eq!(v["bytes"], budget() + 11);
        assert_eq!(v["dropped_bytes"], 7);
    }
}
