//! Skill package profiles: a package's `X.yaml`, read into a validated model.
//!
//! The profile is the only place a package tells runx what to run, so everything a run later
//! relies on (module paths, limits, declared inputs, outputs and environment names, page
//! framing) is checked here, once, with an error that names the file, the line, the runner and
//! the key. This crate starts no process and no worker: it is what an editor plugin, a linter or
//! `runx skill inspect` needs. Running a runner is `runx-runtime`'s job.
//!
//! ```
//! use runx_profile::{RunnerType, ValueType, parse};
//! use std::path::Path;
//!
//! let text = "skill: greet\nversion: \"1.0.0\"\nrunners:\n  main:\n    type: javascript\n    \
//!             module: src/greet.mjs\n    export: greet\n    inputs:\n      name: string\n";
//! let profile = parse(text, Path::new("/pkg"), Path::new("/pkg/X.yaml"))?;
//! let runner = profile.runner(None)?;
//! assert_eq!(runner.kind.runner_type(), RunnerType::Javascript);
//! assert_eq!(runner.inputs["name"].ty, ValueType::String);
//! # Ok::<(), runx_profile::ProfileError>(())
//! ```
//!
//! | module | what it holds |
//! |---|---|
//! | `model` | the model ([`Profile`], [`Runner`], ...) and runner selection |
//! | `parse` | reading the YAML in two passes ([`load`], [`parse()`]) |
//! | `runner_map`, `validate` | one runner's closed set of keys; the rules for each runner's keys |
//! | `decl`, `packet`, `template` | declared inputs and outputs; packet schemas; cli-tool argument templates |
//! | `schema` | a declared JSON Schema compiled once, and the bound on the work of validating a value |
//! | `contract`, `numbers` | a call's inputs resolved against the declarations, and its outputs checked; integers a JSON number carries exactly |
//! | `limits`, `applied` | every limit once, as data; the limits that apply to one runner |
//! | `yaml` | the nesting guard every YAML document passes before it is parsed |
//! | `locate` | the line and column of a key path in a profile's text, for messages after load |
//!
//! No key is ever silently ignored. Keys runx packages use that this runtime does not act on
//! (top level: `runx`, `policy`, `emits`, `catalog`, `credentials`; in runners: `artifacts`,
//! `scopes`, `examples`, `graph`, `agent`, ...) are read, checked where their shape is known,
//! kept in the model and shown by `runx skill inspect`. Any other key is an error naming the key
//! and its line, so a misspelt setting is never replaced by its default.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod aliases;
mod applied;
mod contract;
mod decl;
mod limits;
mod locate;
mod model;
mod numbers;
mod other_runner;
mod packet;
mod paged;
mod pages;
mod parse;
mod runner_map;
mod schema;
mod template;
mod validate;
mod yaml;

#[cfg(test)]
mod compat_tests;
#[cfg(test)]
mod prop_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod validate_tests;

pub use applied::{AppliedLimits, limits_for, worker_limits};
pub use contract::{
    InputError, OutputError, PageSource, Resolved, check_example, check_outputs, resolve_inputs,
};
pub use decl::{InputDecl, OutputDecl, ValueType, with_article};
pub use limits::{
    ARTIFACT_BYTES, CAPTURE_BYTES, CATALOGUE, CLI_WALL, FIXTURE_BYTES, HARNESS_SEARCH_DEPTH,
    HARNESS_SEARCH_DIRS, HEAP_BYTES, INPUT_BYTES, INPUT_INLINE, INPUTS_BYTES, INPUTS_JSON_INLINE,
    JS_WALL, KEY_FILE_BYTES, KILL_GRACE, LOG_BYTES, LimitDef, MCP_HTTP_BODY_WAIT,
    MCP_HTTP_CONNECTIONS, MCP_HTTP_SESSIONS, OUTPUT_BYTES, OUTPUT_DEPTH, PACKET_DIR_ENTRIES,
    PACKET_SCHEMA_BYTES, PACKET_SEARCH_DEPTH, PAGE_BYTES, PAGE_COUNT, PAGE_WORKERS,
    PRINTED_TEXT_BYTES, PROFILE_BYTES, RECEIPT_BYTES, RECEIPT_VALUES, REQUEST_VALUES,
    RETRY_ATTEMPTS, RETRY_BACKOFF, SOURCE_BYTES, STACK_BYTES, STATE_BYTES, Unit, VALIDATION_STEPS,
    YAML_DEPTH, human, millis,
};
pub use locate::{Step, locate, path as key_path};
pub use model::{
    ArtifactsDecl, CliToolRunner, DEFAULT_RUN_NAME, Diagnostic, EnvDecl, Framing, InputMode,
    JsRunner, ModuleLifetime, OtherRunner, PROFILE_FILE, PagesDecl, ParallelDecl, PathScope,
    Profile, ProfileError, RESERVED_PAGE_INPUT, RetryDecl, RetryOn, Runner, RunnerKind, RunnerType,
};
pub use numbers::{MAX_SAFE_INTEGER, long_integer_in, long_integer_in_map, unsafe_integer};
pub use packet::{PACKET_ID_KEY, PacketRef};
pub use parse::{load, load_with_text, parse, plain_types, read_text};
/// The near-miss rule of every "did you mean" (from `runx-rules`).
pub use runx_rules::{did_you_mean, nearest};
pub use schema::Schema;
pub use template::{Piece, pieces};
pub use yaml::{TooDeep, check_depth};

/// Property-test settings: `default` cases, or as many as `PROPTEST_CASES` says (the long runs
/// recorded in the docs set it to 1,000,000).
#[cfg(test)]
pub(crate) fn proptest_config(default: u32) -> proptest::test_runner::Config {
    let mut config = proptest::test_runner::Config::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = default;
    }
    config
}
