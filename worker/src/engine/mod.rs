//! The engine seam: what the worker needs from a JavaScript engine, and nothing more.
//!
//! An engine loads a [`ModuleBundle`], calls one export with `(inputs, frozen {environment})`
//! in a fresh context (or, for the next call of a run that keeps its module, in the context
//! its module was evaluated in: [`EngineCall::keep_module`]), and returns JSON or a typed
//! [`Failure`] under the given [`Limits`]. The
//! QuickJS engine ([`crate::engine::quickjs::QuickJs`]) is the default; a second engine is an addition
//! behind this trait, and the conformance tests run against each engine that is built.

use crate::engine::bundle::ModuleBundle;
use crate::wire::failure::Failure;
use runx_rules::Limits;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

pub(crate) mod bundle;
pub(crate) mod fatal;
pub(crate) mod globals;
pub(crate) mod math;
pub(crate) mod quickjs;
pub(crate) mod stack;
pub(crate) mod thrown;
pub(crate) mod url;
#[cfg(feature = "v8")]
pub(crate) mod v8;

/// Records of one page, as raw JSON texts plus the page's metadata.
#[derive(Clone, Copy, Debug)]
pub struct PageInput<'a> {
    /// JSON object text of `runx_page` without `records`.
    pub meta: &'a [u8],
    /// Bytes holding the records: back to back, or a byte range of the artifact read as it is,
    /// separators and whitespace included (the spans leave those out).
    pub blob: &'a [u8],
    /// Each record's start and end in `blob`, in order.
    pub spans: &'a [(u32, u32)],
}

impl<'a> PageInput<'a> {
    /// The records' texts in order; `None` for a span outside `blob`.
    pub fn records(&self) -> impl Iterator<Item = Option<&'a [u8]>> + 'a {
        let blob = self.blob;
        self.spans
            .iter()
            .map(move |&(start, end)| blob.get(start as usize..end as usize))
    }
}

/// The spans of records laid back to back, from each record's end offset.
pub fn spans_of_ends(ends: &[u32]) -> Vec<(u32, u32)> {
    let mut start = 0;
    ends.iter()
        .map(|&end| {
            let span = (start, end);
            start = end;
            span
        })
        .collect()
}

/// One call of an export.
#[derive(Clone, Copy, Debug)]
pub struct EngineCall<'a> {
    /// The modules; the export is looked up on the entry module.
    pub bundle: &'a Arc<ModuleBundle>,
    /// The export's name; `None` selects the default export.
    pub export: Option<&'a str>,
    /// The input object as JSON text.
    pub input: &'a [u8],
    /// For paged runners, the page delivered as `inputs.runx_page`.
    pub page: Option<PageInput<'a>>,
    /// Declared environment values, frozen into the second argument.
    pub environment: &'a BTreeMap<String, String>,
    /// The limits of this call.
    pub limits: Limits,
    /// Whether this call is the next page of the paged run the engine's previous call belonged
    /// to. Only then may an engine hand the call what an earlier call built (V8 keeps its
    /// isolate); any other call starts from nothing a call before it touched.
    pub continues: bool,
    /// Evaluate the module but call nothing: the output is an object of each export's name and
    /// what `typeof` says of it. `runx skill check` learns so, with one call per module
    /// closure, that a package's exports exist before any run.
    pub probe: bool,
    /// The module instance this call evaluates (or finds) lives for the calls of its run on
    /// this engine, not for this call alone: a later call that [`EngineCall::continues`] the
    /// run and also keeps the module calls the same instance, its module state as this call
    /// left it. A paged runner declares it (`pages.module: partition`).
    pub keep_module: bool,
}

/// One line written through `console.*`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogLine {
    /// `log`, `info`, `warn`, `error` or `debug`.
    pub level: String,
    /// The arguments, formatted and joined by spaces.
    pub message: String,
}

/// The console output of a call or a run, bounded by [`Limits::log_bytes`].
///
/// Every line counts its text and one line break against the bound, so empty lines are not
/// free. Lines are kept in order until one does not fit; from then on every line is dropped
/// and only counted, so what is kept is always a prefix of what was written. Appending is
/// constant time.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ConsoleLog {
    /// The lines kept.
    pub lines: Vec<LogLine>,
    /// Bytes written after the bound was reached (dropped), line breaks included.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dropped_bytes: u64,
    /// Bytes the kept lines count against the bound.
    #[serde(skip)]
    kept_bytes: usize,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Two logs are equal when they hold the same lines and dropped the same bytes.
impl PartialEq for ConsoleLog {
    fn eq(&self, other: &ConsoleLog) -> bool {
        self.lines == other.lines && self.dropped_bytes == other.dropped_bytes
    }
}

impl Eq for ConsoleLog {}

impl ConsoleLog {
    /// Appends a line if it fits within `bound` bytes, else counts it as dropped.
    pub fn push(&mut self, level: &str, message: &str, bound: usize) {
        if self.fits(message, bound) {
            self.keep(level.to_string(), message.to_string());
        }
    }

    /// Counts a line of `len` bytes that does not fit as dropped, without its text (an engine
    /// that knows a line's length before converting it).
    pub fn drop_line(&mut self, len: usize) {
        self.dropped_bytes += len as u64 + 1;
    }

    /// Appends the lines of `other` (another call of the same run) under one `bound` for both,
    /// and adds up what each dropped.
    pub fn absorb(&mut self, other: ConsoleLog, bound: usize) {
        for line in other.lines {
            if self.fits(&line.message, bound) {
                self.keep(line.level, line.message);
            }
        }
        self.dropped_bytes += other.dropped_bytes;
    }

    /// What is left of `bound` for further lines: 0 once anything was dropped.
    pub fn remaining(&self, bound: usize) -> usize {
        if self.truncated() {
            return 0;
        }
        bound.saturating_sub(self.kept_bytes())
    }

    /// Bytes the kept lines count against the bound (each line's text plus a line break).
    pub fn kept_bytes(&self) -> usize {
        // A log received from a worker arrives without its count.
        if self.kept_bytes == 0 && !self.lines.is_empty() {
            return self.lines.iter().map(|l| l.message.len() + 1).sum();
        }
        self.kept_bytes
    }

    /// Whether the bound was reached.
    pub fn truncated(&self) -> bool {
        self.dropped_bytes > 0
    }

    fn fits(&mut self, message: &str, bound: usize) -> bool {
        let cost = message.len() + 1;
        if self.kept_bytes == 0 && !self.lines.is_empty() {
            self.kept_bytes = self.kept_bytes();
        }
        if !self.truncated() && self.kept_bytes + cost <= bound {
            return true;
        }
        self.dropped_bytes += cost as u64;
        false
    }

    fn keep(&mut self, level: String, message: String) {
        self.kept_bytes += message.len() + 1;
        self.lines.push(LogLine { level, message });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_byte_counts_and_what_is_kept_is_a_prefix() {
        let mut log = ConsoleLog::default();
        for _ in 0..10 {
            log.push("log", "", 4);
        }
        assert_eq!(log.lines.len(), 4, "an empty line costs its line break");
        assert_eq!(log.dropped_bytes, 6);
        assert_eq!(log.remaining(4), 0);
        let mut log = ConsoleLog::default();
        log.push("log", "abc", 10);
        log.push("log", "0123456789", 10);
        log.push("log", "x", 10);
        assert_eq!(
            log.lines.len(),
            1,
            "nothing after the first line that did not fit"
        );
        assert_eq!(log.dropped_bytes, 11 + 2);
    }

    #[test]
    fn absorbed_logs_share_one_bound() {
        let mut run = ConsoleLog::default();
        for _ in 0..3 {
            let mut call = ConsoleLog::default();
            call.push("log", "12345", run.remaining(14));
            call.push("log", "", run.remaining(14));
            let wire: ConsoleLog =
                serde_json::from_slice(&serde_json::to_vec(&call).unwrap()).unwrap();
            run.absorb(wire, 14);
        }
        assert_eq!(run.kept_bytes(), 14);
        assert_eq!(run.lines.len(), 4);
        assert_eq!(run.dropped_bytes, 7);
        assert!(run.truncated());
        assert_eq!(run.remaining(14), 0);
    }

    #[test]
    fn a_million_empty_lines_are_counted() {
        // With the old quadratic append this took minutes; it must take milliseconds.
        let mut log = ConsoleLog::default();
        for _ in 0..1_000_000 {
            log.push("log", "", 64 * 1024);
        }
        assert_eq!(log.lines.len(), 64 * 1024);
        assert_eq!(log.dropped_bytes, 1_000_000 - 64 * 1024);
    }
}

/// What a successful call returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineOutput {
    /// The export's return value as JSON text (already checked to be JSON-compatible).
    pub output: Vec<u8>,
    /// What the call wrote through `console`.
    pub log: ConsoleLog,
}

/// The operating-system memory limit a worker process sets for its engine: a backstop behind
/// the engine's own heap limit, which is what a call normally runs into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemoryCap {
    /// `RLIMIT_AS`, bytes of mapped address space: fits an engine that maps only what it uses.
    AddressSpace(u64),
    /// `RLIMIT_DATA`, bytes of private writable memory (the malloc heap and anonymous
    /// mappings). Address ranges reserved without access do not count, so it fits an engine
    /// that reserves large ranges up front and commits them piecemeal.
    Data(u64),
}

/// The names of the engines built into this executable.
pub fn engines_built() -> &'static [&'static str] {
    if cfg!(feature = "v8") {
        &["quickjs", "v8"]
    } else {
        &["quickjs"]
    }
}

/// A JavaScript engine that can run an export of a bundle in a fresh context.
pub trait Engine {
    /// The engine's short name (`quickjs`, `v8`).
    fn name(&self) -> &'static str;

    /// The OS memory limit a worker process running this engine puts on itself.
    fn memory_cap(&self) -> MemoryCap;

    /// Runs one call in a fresh context. Failures carry whether the engine stays usable.
    fn call(&mut self, call: &EngineCall<'_>) -> Result<EngineOutput, (Failure, ConsoleLog)>;

    /// The worker is idle and the next call will not continue the last one: an engine may
    /// prepare that call's clean start now, off the path of its answer.
    fn idle(&mut self) {}
}
