//! The rules a skill package runs under, shared by every side that must apply them alike: the
//! profile when it checks a package, the host when it collects and limits a call, and the
//! worker when it resolves imports and enforces the limits.
//!
//! - `scope`: contained opens, the one way runx reads a file inside a directory it was given
//!   (no symbolic link at any component, no `..` out, regular files only, read to a cap);
//! - `specifier`: the one rule for what an import may name, for the host collecting a bundle
//!   and for the engines resolving it;
//! - `call_limits`: the limits of one javascript call, as data, with the ceiling a profile may
//!   not exceed;
//! - `engines`: the JavaScript engines runx knows by name;
//! - `names`: near-miss names, for the "did you mean" of every refusal of a name.
//!
//! It starts no process and runs no JavaScript, so a linter or an editor plugin that reads
//! profiles depends on it without building an engine.
//!
//! ```
//! use runx_rules::{Limits, check_module_entry, resolve_import};
//!
//! assert_eq!(check_module_entry("src/main.mjs").as_deref(), Ok("src/main.mjs"));
//! assert!(check_module_entry("../outside.mjs").is_err());
//! assert_eq!(resolve_import("src/main.mjs", "./lib.js").as_deref(), Ok("src/lib.js"));
//! assert!(Limits::default().input_bytes <= Limits::CEILING.input_bytes);
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod call_limits;
mod engines;
mod names;
mod scope;
mod specifier;

pub use call_limits::{Limit, Limits, MAX_TIMEOUT_SECONDS, MIB, MIN_TIMEOUT_SECONDS};
pub use engines::{DEFAULT_ENGINE, ENGINES};
pub use names::{did_you_mean, nearest};
pub use scope::{EntryKind, Scope, ScopeError, read_capped};
pub use specifier::{ImportRejected, check_module_entry, resolve_import};
