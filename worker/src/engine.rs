//! The engine seam: what the worker needs from a JavaScript engine, and nothing more.
//!
//! An engine loads a [`ModuleBundle`], calls one export with `(inputs, frozen {environment})`
//! in a fresh context, and returns JSON or a typed [`Failure`] under the given [`Limits`]. The
//! QuickJS engine ([`crate::quickjs::QuickJs`]) is the default; a second engine is an addition
//! behind this trait, and the conformance tests run against each engine that is built.

use crate::bundle::ModuleBundle;
use crate::failure::Failure;
use crate::limits::Limits;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Records of one page, as raw JSON texts plus the page's metadata.
#[derive(Clone, Copy, Debug)]
pub struct PageInput<'a> {
    /// JSON object text of `runx_page` without `records`.
    pub meta: &'a [u8],
    /// The records' bytes, back to back.
    pub blob: &'a [u8],
    /// End offset of each record in `blob` (record `i` spans `ends[i-1]..ends[i]`).
    pub ends: &'a [u32],
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
}

/// One line written through `console.*`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogLine {
    /// `log`, `info`, `warn`, `error` or `debug`.
    pub level: String,
    /// The arguments, formatted and joined by spaces.
    pub message: String,
}

/// The console output of a call, bounded by [`Limits::log_bytes`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsoleLog {
    /// The lines kept.
    pub lines: Vec<LogLine>,
    /// Bytes written after the bound was reached (dropped).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dropped_bytes: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl ConsoleLog {
    /// Appends a line unless the bound is reached; past it, counts what was dropped and adds a
    /// single truncation marker.
    pub fn push(&mut self, level: &str, message: &str, bound: usize) {
        let used: usize = self.lines.iter().map(|l| l.message.len()).sum();
        if self.dropped_bytes == 0 && used + message.len() <= bound {
            self.lines.push(LogLine {
                level: level.to_string(),
                message: message.to_string(),
            });
            return;
        }
        if self.dropped_bytes == 0 {
            self.lines.push(LogLine {
                level: "warn".to_string(),
                message: format!("[runx: console log truncated at {bound} bytes]"),
            });
        }
        self.dropped_bytes += message.len() as u64;
    }

    /// Whether the bound was reached.
    pub fn truncated(&self) -> bool {
        self.dropped_bytes > 0
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

/// Every engine runx knows by name, whether or not this executable was built with it: a
/// profile may name any of them (`engine:` on a javascript runner); which ones a binary has is
/// [`crate::serve::engines_built`].
pub const ENGINES: &[&str] = &["quickjs", "v8"];

/// A JavaScript engine that can run an export of a bundle in a fresh context.
pub trait Engine {
    /// The engine's short name (`quickjs`, `v8`).
    fn name(&self) -> &'static str;

    /// The OS memory limit a worker process running this engine puts on itself.
    fn memory_cap(&self) -> MemoryCap;

    /// Runs one call in a fresh context. Failures carry whether the engine stays usable.
    fn call(&mut self, call: &EngineCall<'_>) -> Result<EngineOutput, (Failure, ConsoleLog)>;
}
