//! The JavaScript engines runx knows by name.

/// Every engine runx knows by name, whether or not this executable was built with it: a
/// profile may name any of them (`engine:` on a javascript runner); which ones a binary has is
/// `engines_built` of `runx-worker`.
pub const ENGINES: &[&str] = &["quickjs", "v8"];

/// The engine a worker uses when none is named.
pub const DEFAULT_ENGINE: &str = "quickjs";
