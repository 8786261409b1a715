//! The no-host JavaScript worker of runx.
//!
//! This crate runs one exported function of an ES module in a fresh JavaScript context with no
//! host: no filesystem, network, environment, timers, clock or randomness. It is *not* a general
//! JavaScript runtime; skill packages, inputs and receipts live in `runx-runtime`.
//!
//! - [`engine`]: the engine seam, [`quickjs`] its default implementation, and (feature `v8`)
//!   `v8`, V8 through the `v8` crate: one isolate per worker, a fresh context per call.
//! - [`bundle`] and [`specifier`]: the module closure and the one rule for what an import may name.
//! - [`frame`] and [`protocol`]: length-prefixed frames between host and worker.
//! - [`serve`]: the worker process loop (`runx __worker`, or the `runx-worker` binary);
//!   [`sandbox`]: how a worker process confines itself before it serves (descriptors,
//!   privileges, rlimits, the seccomp allow-list).
//! - [`pool`] and [`process`]: supervised worker processes on the host side; [`cancel`]: stopping
//!   one call (its worker is killed) or everything at once; [`descriptor`]: the channel page
//!   descriptors travel on.
//! - [`limits`] and [`failure`]: limits as data, typed failures; [`fatal`]: the answer a worker
//!   still gives when its engine must end the process.
//! - [`scope`]: contained opens, the one way runx reads a file inside a directory it was
//!   given; [`child`]: child processes tied to this process. Both are used by the runtime too.
//!
//! Calling an export in-process (no pool, no sandbox process; tests and benchmarks do this):
//!
//! ```
//! use runx_worker::{bundle::ModuleBundle, engine::{Engine, EngineCall}, limits::Limits};
//! use runx_worker::quickjs::QuickJs;
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
//!     })
//!     .map_err(|(failure, _log)| failure)?;
//! assert_eq!(out.output, br#"{"twice":42}"#);
//! # Ok::<(), runx_worker::failure::Failure>(())
//! ```
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod bundle;
pub mod cancel;
pub mod child;
pub mod descriptor;
pub mod engine;
pub mod failure;
pub mod fatal;
pub mod frame;
pub mod limits;
pub mod pool;
pub mod process;
pub mod protocol;
pub mod quickjs;
pub mod sandbox;
pub mod scope;
pub mod serve;
pub mod specifier;
#[cfg(feature = "v8")]
pub mod v8;
