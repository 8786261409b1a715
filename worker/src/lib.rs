//! The no-host JavaScript worker of runx.
//!
//! This crate runs one exported function of an ES module in a fresh JavaScript context with no
//! host: no filesystem, network, environment, timers, clock or randomness. It is *not* a general
//! JavaScript runtime; skill packages, inputs and receipts live in `runx-runtime`.
//!
//! Its modules are private; everything other crates use is re-exported here, flat. The code
//! lives in four layers, one folder each (`src/README.md` says what each may depend on):
//!
//! - `engine/`: the engine seam ([`Engine`]), [`QuickJs`] its default implementation, and
//!   (feature `v8`) `V8`, V8 through the `v8` crate: one isolate per worker, a fresh context per
//!   call; the prelude both engines run first; the module bundle ([`ModuleBundle`]); the answer
//!   a worker still gives when its engine must end the process.
//! - `guest/`: the worker process (`runx __worker`, or the `runx-worker` binary): its start
//!   ([`worker_main`]), its confinement ([`SandboxOptions`]: descriptors, privileges, rlimits,
//!   the seccomp allow-list) and its session, the loop that answers the host's frames
//!   ([`run_session`]).
//!   `runx-js-worker` ([`runx_worker_main`]) is a second worker process, the one runx 0.8.2
//!   itself runs: runx's worker protocol (version 3) on this crate's engines and confinement.
//! - `host/`: supervised worker processes on the host side ([`Pool`], [`WorkerCommand`],
//!   [`Lease`]); stopping one call (its worker is killed) or everything at once
//!   ([`CancelToken`]); the channel page descriptors travel on; collecting a bundle from a skill
//!   directory ([`collect_bundle`]); child processes tied to this process ([`spawn_child`]),
//!   used by the runtime too.
//! - `wire/`: what host and worker say to each other: length-prefixed frames ([`read_frame`]),
//!   messages ([`Header`], [`Message`]) and typed failures ([`Failure`]).
//!
//! The rules both sides apply, which the profile applies too, are the `runx-rules` crate's and
//! re-exported here: contained opens ([`Scope`], the one way runx reads a file inside a
//! directory it was given), the import rule ([`check_module_entry`], [`resolve_import`]), the
//! limits of a call as data ([`Limits`]) and the engine names ([`ENGINES`]).
//!
//! Calling an export in-process (no pool, no sandbox process; tests and benchmarks do this):
//!
//! ```
//! use runx_worker::{Engine, EngineCall, Limits, ModuleBundle, QuickJs};
//! use std::{collections::BTreeMap, sync::Arc};
//!
//! let bundle = Arc::new(ModuleBundle::from_sources(
//!     "main.mjs",
//!     [("main.mjs", "export default (i) => ({ twice: i.n * 2 });")],
//! ));
//! let out = QuickJs::new()
//!     .call(&EngineCall {
//!         bundle: &bundle,
//!         export: None,
//!         input: br#"{"n": 21}"#,
//!         page: None,
//!         environment: &BTreeMap::new(),
//!         limits: Limits::default(),
//!         continues: false,
//!         probe: false,
//!         keep_module: false,
//!     })
//!     .map_err(|(failure, _log)| failure)?;
//! assert_eq!(out.output, br#"{"twice":42}"#);
//! # Ok::<(), runx_worker::Failure>(())
//! ```
#![deny(unsafe_code)]
#![warn(missing_docs)]

mod engine;
mod guest;
mod host;
mod wire;

pub use engine::bundle::ModuleBundle;
pub use engine::globals::{ALLOWED_GLOBALS, INSTALLED_GLOBALS};
pub use engine::quickjs::QuickJs;
#[cfg(feature = "v8")]
pub use engine::v8::V8;
pub use engine::{
    ConsoleLog, Engine, EngineCall, EngineOutput, LogLine, MemoryCap, PageInput, engines_built,
    spans_of_ends,
};

pub use guest::ahead::state_digest;
pub use guest::engines::{engine_by_name, engine_version};
pub use guest::error::WorkerError;
pub use guest::runx::wire::FrameError as RunxFrameError;
pub use guest::runx::{RUNX_WORKER_ENGINE, runx_worker_main, serve_runx};
pub use guest::sandbox::{ALLOW_NO_SECCOMP, SandboxError, SandboxOptions};
pub use guest::session::{run_session, run_session_with};
pub use guest::start::{
    ENGINE_STACK_BYTES, worker_main, worker_main_with, worker_main_with_options,
};

pub use host::cancel::CancelToken;
pub use host::child::spawn_child;
pub use host::collect::{BundleError, collect_bundle};
pub use host::pool::lease::{Lease, LeaseError};
pub use host::pool::{CallError, MAX_WORKERS, Pool, PoolConfig};
pub use host::process::WorkerCommand;
pub use host::process::call::{Call, PagePayload, PageRecords, Reply};

pub use wire::failure::{Failure, FailureCode, MESSAGE_BYTES, bound_message};
pub use wire::frame::{FrameError, MAX_FRAME_BYTES, read_frame, split_payload, write_frame};
pub use wire::message::{ByteRange, Header, Message, PROTOCOL_VERSION, PageLayout, encode_spans};

/// The rules a package runs under, shared with the profile (`runx-rules`): contained opens, the
/// import rule, the limits of a call, the engine names.
pub use runx_rules::{
    DEFAULT_ENGINE, ENGINES, EntryKind, ImportRejected, Limit, Limits, MAX_TIMEOUT_SECONDS, MIB,
    MIN_TIMEOUT_SECONDS, Scope, ScopeError, check_module_entry, read_capped, resolve_import,
};
