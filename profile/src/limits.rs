//! Every limit the runtime enforces, defined once as data.
//!
//! A [`LimitDef`] holds a limit's stable name, unit, default, the range a profile may declare and
//! the profile field that declares it. The profile parser validates against it, runners enforce
//! it, failures name it (`resource_limit/<name>`), receipts record every limit that applied to a
//! run ([`AppliedLimits`]) and `runx skill inspect` shows the same list. The per-call limits of a
//! javascript call are the worker's ([`runx_rules::Limits`]); they are described here
//! from the worker's own values, not repeated.

use runx_receipts::{FileBound, ValueBound};
use runx_rules::{Limit, Limits, MAX_TIMEOUT_SECONDS, MIB, MIN_TIMEOUT_SECONDS};
use serde::Serialize;
use std::time::Duration;

/// The unit a limit's value is counted in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Bytes.
    Bytes,
    /// Milliseconds.
    Milliseconds,
    /// A count (pages, attempts).
    Count,
}

/// One limit: what it bounds and the values it may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct LimitDef {
    /// The stable snake_case name, used as the failure code and the receipt key.
    pub name: &'static str,
    /// The unit of every value below.
    pub unit: Unit,
    /// The value when the profile declares none.
    pub default: u64,
    /// The smallest value a profile may declare (equal to `max` when it cannot be declared).
    pub min: u64,
    /// The largest value a profile may declare, or the fixed value.
    pub max: u64,
    /// The profile field that declares it, in the field's own unit, if any.
    pub field: Option<&'static str>,
    /// What it bounds, for people.
    pub bounds: &'static str,
}

impl LimitDef {
    const fn fixed(name: &'static str, unit: Unit, value: u64, bounds: &'static str) -> LimitDef {
        LimitDef {
            name,
            unit,
            default: value,
            min: value,
            max: value,
            field: None,
            bounds,
        }
    }

    const fn file(bound: FileBound, bounds: &'static str) -> LimitDef {
        LimitDef::fixed(bound.name, Unit::Bytes, bound.max, bounds)
    }

    const fn values(bound: ValueBound, bounds: &'static str) -> LimitDef {
        LimitDef::fixed(bound.name, Unit::Count, bound.max, bounds)
    }

    const fn worker(limit: Limit, unit: Unit, bounds: &'static str) -> LimitDef {
        LimitDef::fixed(limit.name(), unit, Limits::CEILING.value(limit), bounds)
    }

    /// Whether a profile may set this limit.
    pub const fn is_declarable(&self) -> bool {
        self.field.is_some()
    }
}

const SECOND_MS: u64 = 1_000;

/// Bytes of input JSON (and page records) one javascript call receives.
pub const INPUT_BYTES: LimitDef = LimitDef::worker(
    Limit::InputBytes,
    Unit::Bytes,
    "the encoded input object, page records included, of one javascript call",
);
/// Bytes of output JSON one javascript call returns.
pub const OUTPUT_BYTES: LimitDef = LimitDef::worker(
    Limit::OutputBytes,
    Unit::Bytes,
    "the encoded output of one javascript call",
);
/// Bytes of module source in a javascript bundle.
pub const SOURCE_BYTES: LimitDef = LimitDef::worker(
    Limit::SourceBytes,
    Unit::Bytes,
    "the source of the module closure of a javascript runner",
);
/// Bytes of JavaScript heap.
pub const HEAP_BYTES: LimitDef = LimitDef::worker(
    Limit::HeapBytes,
    Unit::Bytes,
    "the JavaScript heap of one call",
);
/// Bytes of native stack for JavaScript recursion.
pub const STACK_BYTES: LimitDef = LimitDef::worker(
    Limit::StackBytes,
    Unit::Bytes,
    "the native stack JavaScript recursion may use",
);
/// Bytes of console output kept per run.
pub const LOG_BYTES: LimitDef = LimitDef::worker(
    Limit::LogBytes,
    Unit::Bytes,
    "console output kept per run, every page of a paged run together, line breaks included (the rest is counted as dropped)",
);
/// Levels of nested objects and arrays in an output.
pub const OUTPUT_DEPTH: LimitDef = LimitDef::worker(
    Limit::OutputDepth,
    Unit::Count,
    "levels of objects and arrays the output of one javascript call may nest",
);
/// Wall-clock time of one javascript call.
pub const JS_WALL: LimitDef = LimitDef {
    name: Limit::WallMilliseconds.name(),
    unit: Unit::Milliseconds,
    default: Limits::CEILING.wall_milliseconds,
    min: MIN_TIMEOUT_SECONDS * SECOND_MS,
    max: MAX_TIMEOUT_SECONDS * SECOND_MS,
    field: Some("timeout_seconds"),
    bounds: "wall-clock time of one javascript call (each page of a paged run)",
};

/// Source bytes one page of a paged artifact may span.
pub const PAGE_BYTES: LimitDef = LimitDef {
    name: "page_bytes",
    unit: Unit::Bytes,
    default: MIB as u64,
    min: 1,
    max: 4 * MIB as u64,
    field: Some("pages.page_bytes"),
    bounds: "the source bytes one page spans",
};
/// Bytes of continuation state carried from page to page.
pub const STATE_BYTES: LimitDef = LimitDef::fixed(
    "state_bytes",
    Unit::Bytes,
    2 * MIB as u64,
    "the encoded continuation state a page hands to the next",
);
/// Partitions of a map/fold paged runner: page `i` is mapped in partition `i mod workers`, each
/// partition on a worker of its own, in page order.
pub const PAGE_WORKERS: LimitDef = LimitDef {
    name: "page_workers",
    unit: Unit::Count,
    // A constant, never the machine's cores: with `pages.module: partition` the output may
    // depend on the partition count, so the same package must get the same count everywhere.
    default: 4,
    min: 1,
    // As many as a pool may have (`runx_worker::MAX_WORKERS`).
    max: 16,
    field: Some("pages.workers"),
    bounds: "the partitions a map/fold runner maps its pages in, one worker each",
};
/// Pages one paged run may deliver.
pub const PAGE_COUNT: LimitDef = LimitDef::fixed(
    "page_count",
    Unit::Count,
    4096,
    "pages one paged run may deliver",
);
/// Size of an admitted artifact.
pub const ARTIFACT_BYTES: LimitDef = LimitDef::fixed(
    "artifact_bytes",
    Unit::Bytes,
    512 * MIB as u64,
    "the file a paged run admits",
);

/// Wall-clock time of a cli-tool process.
pub const CLI_WALL: LimitDef = LimitDef {
    name: Limit::WallMilliseconds.name(),
    unit: Unit::Milliseconds,
    default: 60 * SECOND_MS,
    min: SECOND_MS,
    max: 3600 * SECOND_MS,
    field: Some("timeout_seconds"),
    bounds: "wall-clock time of a cli-tool process (each attempt)",
};
/// Bytes of each output stream of a cli-tool kept in memory.
pub const CAPTURE_BYTES: LimitDef = LimitDef::fixed(
    "capture_bytes",
    Unit::Bytes,
    8 * MIB as u64,
    "the prefix of stdout and of stderr kept (the whole stream is counted and hashed)",
);
/// Time between SIGTERM and SIGKILL for a cli-tool process group.
pub const KILL_GRACE: LimitDef = LimitDef::fixed(
    "kill_grace_milliseconds",
    Unit::Milliseconds,
    2 * SECOND_MS,
    "time between SIGTERM and SIGKILL when a process group is stopped",
);
/// Largest input object mirrored inline as `RUNX_INPUTS_JSON`.
pub const INPUTS_JSON_INLINE: LimitDef = LimitDef::fixed(
    "inputs_json_inline_bytes",
    Unit::Bytes,
    48 * 1024,
    "the input object mirrored in RUNX_INPUTS_JSON (always delivered by path)",
);
/// Largest input value mirrored inline as `RUNX_INPUT_<NAME>`.
pub const INPUT_INLINE: LimitDef = LimitDef::fixed(
    "input_inline_bytes",
    Unit::Bytes,
    8 * 1024,
    "one input value mirrored in RUNX_INPUT_<NAME> (always delivered by path)",
);
/// Additional attempts a cli-tool retry may make.
pub const RETRY_ATTEMPTS: LimitDef = LimitDef {
    name: "retry_attempts",
    unit: Unit::Count,
    default: 0,
    min: 1,
    max: 3,
    field: Some("retry.attempts"),
    bounds: "additional runs of an idempotent cli-tool after a crash (`retry.max_attempts` counts the first run too)",
};
/// Pause before a cli-tool retry.
pub const RETRY_BACKOFF: LimitDef = LimitDef {
    name: "retry_backoff_milliseconds",
    unit: Unit::Milliseconds,
    default: 30 * SECOND_MS,
    min: 0,
    max: 300 * SECOND_MS,
    field: Some("retry.backoff_seconds"),
    bounds: "pause before each retry of a cli-tool",
};

/// Size of an execution profile.
pub const PROFILE_BYTES: LimitDef = LimitDef::fixed(
    "profile_bytes",
    Unit::Bytes,
    MIB as u64,
    "the X.yaml file of a package",
);

/// Nesting of a YAML document runx reads (`X.yaml`, fixture files), checked on the text before
/// it is parsed: YAML parsers slow down with the square of the nesting depth, so a deep
/// document under the size cap could otherwise stall a run for minutes.
pub const YAML_DEPTH: LimitDef = LimitDef::fixed(
    "yaml_depth",
    Unit::Count,
    64,
    "nesting of X.yaml and fixture files: open brackets plus indentation levels",
);
/// Size of a fixture file (`fixtures/*.yaml`).
pub const FIXTURE_BYTES: LimitDef = LimitDef::fixed(
    "fixture_bytes",
    Unit::Bytes,
    4 * MIB as u64,
    "a fixture file of a package (fixtures/*.yaml)",
);
/// Size of the input object read by `runx skill --inputs FILE|-`.
pub const INPUTS_BYTES: LimitDef = LimitDef::fixed(
    "inputs_bytes",
    Unit::Bytes,
    64 * MIB as u64,
    "the input object read from --inputs FILE or stdin (as runx reads an inputs document)",
);

/// Size of a receipt file `runx receipt verify` and `show` read.
pub const RECEIPT_BYTES: LimitDef = LimitDef::file(
    runx_receipts::RECEIPT_BYTES,
    "a receipt file read by `runx receipt verify` or `show`",
);
/// Values in a receipt file, counted before it is parsed.
pub const RECEIPT_VALUES: LimitDef = LimitDef::values(
    runx_receipts::RECEIPT_VALUES,
    "JSON values (object keys included) in a receipt file, counted before it is parsed",
);
/// Size of a receipt key file.
pub const KEY_FILE_BYTES: LimitDef = LimitDef::file(
    runx_receipts::KEY_FILE_BYTES,
    "a receipt signing or verification key file",
);

/// Values in one `runx serve` request line, counted before it is parsed: the densest input
/// object a javascript call accepts (`input_bytes` of `0,`, two bytes a value) and 64 Ki more
/// for the request around it. A parsed value costs 32 bytes and more where a byte of text
/// costs one, so without it a line of tiny values would cost many times its size; with it, a
/// running request's inputs parse into a bounded tree whatever `--max-request-bytes` is.
pub const REQUEST_VALUES: LimitDef = LimitDef::fixed(
    "request_values",
    Unit::Count,
    Limits::CEILING.input_bytes as u64 / 2 + 64 * 1024,
    "JSON values (object keys included) in one `runx serve` request line, counted before it is parsed",
);

/// Directories searched for packet schemas: the profile's directory and its ancestors.
pub const PACKET_SEARCH_DEPTH: LimitDef = LimitDef::fixed(
    "packet_search_depth",
    Unit::Count,
    8,
    "directories searched upward from a profile for packets/ and dist/packets/",
);
/// Size of one packet schema file.
pub const PACKET_SCHEMA_BYTES: LimitDef = LimitDef::fixed(
    "packet_schema_bytes",
    Unit::Bytes,
    MIB as u64,
    "one packet schema file (larger files are not read)",
);
/// Entries examined in one packets directory.
pub const PACKET_DIR_ENTRIES: LimitDef = LimitDef::fixed(
    "packet_dir_entries",
    Unit::Count,
    4096,
    "entries examined in one packets directory",
);
/// Directory levels `runx harness` descends below a path to find packages.
pub const HARNESS_SEARCH_DEPTH: LimitDef = LimitDef::fixed(
    "harness_search_depth",
    Unit::Count,
    16,
    "directory levels `runx harness` descends below a path looking for packages",
);
/// Directories `runx harness` examines below one path.
pub const HARNESS_SEARCH_DIRS: LimitDef = LimitDef::fixed(
    "harness_search_dirs",
    Unit::Count,
    10_000,
    "directories `runx harness` examines below one path looking for packages",
);
/// Text of a cli-tool's stderr and of a module's console printed by `runx skill --json`.
pub const PRINTED_TEXT_BYTES: LimitDef = LimitDef::fixed(
    "printed_text_bytes",
    Unit::Bytes,
    64 * 1024,
    "the stderr (and console) text `runx skill --json` prints; the full byte count is printed beside it",
);

/// Evaluations of (subschema, value node) pairs validating one value against its declared JSON
/// Schema may take, bounded before validation starts: a recursive `anyOf` whose branches all
/// descend doubles the work with each level of the value, and `jsonschema` cannot be stopped
/// once it runs.
pub const VALIDATION_STEPS: LimitDef = LimitDef::fixed(
    "validation_steps",
    Unit::Count,
    1_000_000,
    "(subschema, value node) evaluations validating one input or output against its schema may take, counted before validating",
);

/// Connections `runx mcp serve --listen` serves at once (`--max-connections`); one past it is
/// answered 503 and closed. Without it, slow bodies held by 300 connections locked out a
/// legitimate `initialize`.
pub const MCP_HTTP_CONNECTIONS: LimitDef = LimitDef {
    name: "mcp_http_connections",
    unit: Unit::Count,
    default: 64,
    min: 1,
    max: 4096,
    field: None,
    bounds: "connections `runx mcp serve --listen` holds at once (--max-connections)",
};
/// MCP sessions `runx mcp serve --listen` holds at once (`--max-sessions`); an `initialize`
/// past it is answered 503. Without it, 20,000 `initialize` calls held 1 GB.
pub const MCP_HTTP_SESSIONS: LimitDef = LimitDef {
    name: "mcp_http_sessions",
    unit: Unit::Count,
    default: 256,
    min: 1,
    max: 65_536,
    field: None,
    bounds: "MCP sessions `runx mcp serve --listen` holds at once (--max-sessions)",
};
/// How long `runx mcp serve --listen` waits for a request's body once its headers came
/// (`--body-timeout SECONDS`); past it the request is answered 408.
pub const MCP_HTTP_BODY_WAIT: LimitDef = LimitDef {
    name: "mcp_http_body_milliseconds",
    unit: Unit::Milliseconds,
    default: 30 * SECOND_MS,
    min: SECOND_MS,
    max: 600 * SECOND_MS,
    field: None,
    bounds: "the wait for an HTTP request's body in `runx mcp serve --listen` (--body-timeout)",
};

/// Every limit, for documentation and `runx skill inspect`.
pub const CATALOGUE: [&LimitDef; 38] = [
    &INPUT_BYTES,
    &OUTPUT_BYTES,
    &OUTPUT_DEPTH,
    &SOURCE_BYTES,
    &HEAP_BYTES,
    &STACK_BYTES,
    &LOG_BYTES,
    &JS_WALL,
    &PAGE_BYTES,
    &STATE_BYTES,
    &PAGE_COUNT,
    &PAGE_WORKERS,
    &ARTIFACT_BYTES,
    &CLI_WALL,
    &CAPTURE_BYTES,
    &KILL_GRACE,
    &INPUTS_JSON_INLINE,
    &INPUT_INLINE,
    &RETRY_ATTEMPTS,
    &RETRY_BACKOFF,
    &PROFILE_BYTES,
    &RECEIPT_BYTES,
    &RECEIPT_VALUES,
    &KEY_FILE_BYTES,
    &REQUEST_VALUES,
    &PACKET_SEARCH_DEPTH,
    &PACKET_SCHEMA_BYTES,
    &PACKET_DIR_ENTRIES,
    &HARNESS_SEARCH_DEPTH,
    &HARNESS_SEARCH_DIRS,
    &PRINTED_TEXT_BYTES,
    &YAML_DEPTH,
    &FIXTURE_BYTES,
    &INPUTS_BYTES,
    &VALIDATION_STEPS,
    &MCP_HTTP_CONNECTIONS,
    &MCP_HTTP_SESSIONS,
    &MCP_HTTP_BODY_WAIT,
];

/// A duration in whole milliseconds.
pub fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// A value of `def` as a person reads it: `4 MiB`, `2 s`, `4096`.
pub fn human(def: &LimitDef, value: u64) -> String {
    match def.unit {
        Unit::Bytes if value >= 1024 && value.is_multiple_of(1024 * 1024) => {
            format!("{} MiB", value / (1024 * 1024))
        }
        Unit::Bytes if value >= 1024 && value.is_multiple_of(1024) => {
            format!("{} KiB", value / 1024)
        }
        Unit::Bytes => format!("{value} bytes"),
        Unit::Milliseconds if value >= SECOND_MS && value.is_multiple_of(SECOND_MS) => {
            format!("{} s", value / SECOND_MS)
        }
        Unit::Milliseconds => format!("{value} ms"),
        Unit::Count => value.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_per_runner_type() {
        let mut seen = std::collections::BTreeSet::new();
        for def in CATALOGUE {
            // The two walls share the name `wall_milliseconds` and never apply together.
            if !std::ptr::eq(def, &CLI_WALL) {
                assert!(seen.insert(def.name), "{} twice", def.name);
            }
            assert!(def.min <= def.max, "{}", def.name);
        }
    }

    #[test]
    fn worker_limits_are_read_from_the_worker() {
        assert_eq!(INPUT_BYTES.default, Limits::CEILING.input_bytes as u64);
        assert_eq!(HEAP_BYTES.name, "heap_bytes");
        assert_eq!(JS_WALL.max, 30_000);
    }

    #[test]
    fn human_values() {
        assert_eq!(human(&INPUT_BYTES, 4 * 1024 * 1024), "4 MiB");
        assert_eq!(human(&INPUTS_JSON_INLINE, 48 * 1024), "48 KiB");
        assert_eq!(human(&JS_WALL, 2000), "2 s");
        assert_eq!(human(&JS_WALL, 1500), "1500 ms");
        assert_eq!(human(&PAGE_COUNT, 4096), "4096");
    }
}
