//! Typed call failures: one stable code, an optional limit, a human message.
//!
//! A message is bounded ([`MESSAGE_BYTES`]): a module that throws a 20 MB string gets a failure
//! whose message holds the first 16 KiB of it and says how long it was, never a 20 MB frame, a
//! 20 MB receipt or a worker that cannot answer.

use runx_rules::{Limit, Limits};
use serde::{Deserialize, Serialize};

/// The most bytes of a failure message that cross the worker boundary or land in a receipt,
/// truncation marker included.
pub const MESSAGE_BYTES: usize = 16 * 1024;

/// `message` cut to at most [`MESSAGE_BYTES`] at a character boundary; a cut message ends with
/// a marker giving the full length in bytes.
pub fn bound_message(mut message: String) -> String {
    if message.len() <= MESSAGE_BYTES {
        return message;
    }
    let total = message.len();
    let marker = format!(" [message truncated: {total} bytes in total]");
    let mut cut = MESSAGE_BYTES - marker.len();
    while !message.is_char_boundary(cut) {
        cut -= 1;
    }
    message.truncate(cut);
    message.push_str(&marker);
    message
}

/// The stable machine-readable failure codes of a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FailureCode {
    /// The request itself was malformed (bad frame, unknown message, unknown bundle).
    InvalidRequest,
    /// A module could not be loaded: a forbidden specifier, a syntax error, a missing export.
    ModuleRejected,
    /// The export threw, or its promise rejected or never settled.
    ExecutionFailed,
    /// The export returned something that is not JSON-compatible.
    OutputRejected,
    /// A limit was hit; the failure names which one.
    ResourceLimit,
    /// The worker process died or broke protocol while it held the call.
    WorkerCrashed,
    /// The caller cancelled the call ([`crate::host::cancel::CancelToken`]); its worker was killed.
    Interrupted,
    /// A bug or an unexpected state in the runtime itself.
    Internal,
}

impl FailureCode {
    /// The stable snake_case name.
    pub fn name(self) -> &'static str {
        match self {
            FailureCode::InvalidRequest => "invalid_request",
            FailureCode::ModuleRejected => "module_rejected",
            FailureCode::ExecutionFailed => "execution_failed",
            FailureCode::OutputRejected => "output_rejected",
            FailureCode::ResourceLimit => "resource_limit",
            FailureCode::WorkerCrashed => "worker_crashed",
            FailureCode::Interrupted => "interrupted",
            FailureCode::Internal => "internal",
        }
    }
}

impl std::fmt::Display for FailureCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A failed call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{code}{}: {message}", limit.map(|l| format!("/{l}")).unwrap_or_default())]
pub struct Failure {
    /// What went wrong, as a stable code.
    pub code: FailureCode,
    /// For `resource_limit`, which limit was hit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<Limit>,
    /// What a person needs to know, naming the specifier, path or limit concerned.
    pub message: String,
    /// Whether the worker that produced the failure can serve another call.
    #[serde(default)]
    pub worker_reusable: bool,
}

impl Failure {
    /// A failure with `code` and `message`; the worker stays in service.
    pub fn new(code: FailureCode, message: impl Into<String>) -> Failure {
        Failure {
            code,
            limit: None,
            message: bound_message(message.into()),
            worker_reusable: true,
        }
    }

    /// A `resource_limit` failure naming `limit`.
    pub fn limit(limit: Limit, message: impl Into<String>) -> Failure {
        Failure {
            code: FailureCode::ResourceLimit,
            limit: Some(limit),
            message: bound_message(message.into()),
            worker_reusable: true,
        }
    }

    /// The same failure with its message bounded; applied to every failure that crosses the
    /// worker boundary, in either direction, whoever built it.
    pub fn bounded(mut self) -> Failure {
        self.message = bound_message(self.message);
        self
    }

    /// The failure for a return value the prelude's `encode` refused: `code` is
    /// `output_depth` or `output_rejected`, and `message` names the offending path.
    pub fn unencodable(code: &str, message: &str, limits: &Limits) -> Failure {
        if code == Limit::OutputBytes.name() {
            return Failure::limit(
                Limit::OutputBytes,
                format!(
                    "{message}: the output_bytes limit is {} bytes",
                    limits.output_bytes
                ),
            );
        }
        if code == Limit::OutputDepth.name() {
            return Failure::limit(
                Limit::OutputDepth,
                format!(
                    "{message}: the output_depth limit is {} levels",
                    limits.output_depth
                ),
            );
        }
        Failure::new(
            FailureCode::OutputRejected,
            format!("the export's return value cannot be encoded as JSON: {message}"),
        )
    }

    /// `Ok` when an encoded output of `len` bytes fits `limits`, else the `output_bytes`
    /// failure.
    pub fn check_output(len: usize, limits: &Limits) -> Result<(), Failure> {
        if len <= limits.output_bytes {
            return Ok(());
        }
        Err(Failure::limit(
            Limit::OutputBytes,
            format!(
                "the output is {len} bytes of JSON; the limit is {} bytes",
                limits.output_bytes
            ),
        ))
    }

    /// The `resource_limit` failure for a call that went past `limit`, with the one message
    /// every engine uses for it, naming the limit's value.
    pub fn exceeded(limit: Limit, limits: &Limits) -> Failure {
        let value = limits.value(limit);
        let message = match limit {
            Limit::WallMilliseconds => {
                format!("the call ran past its wall of {value} ms and was stopped")
            }
            Limit::HeapBytes => format!("the JavaScript heap exceeded its limit of {value} bytes"),
            Limit::StackBytes => format!(
                "the call exceeded the JavaScript stack limit of {value} bytes (runaway recursion?)"
            ),
            Limit::OutputDepth => {
                format!("the output nests deeper than its limit of {value} levels")
            }
            other => format!("the call exceeded its {other} limit of {value}"),
        };
        Failure::limit(limit, message)
    }

    /// `Ok` when a call's input of `len` bytes (the input object plus any page) fits
    /// `limits`, else the `input_bytes` failure. The pool applies it before a call is sent and
    /// the worker again when it receives one, with the same words.
    pub fn check_input(len: usize, limits: &Limits) -> Result<(), Failure> {
        if len <= limits.input_bytes {
            return Ok(());
        }
        Err(Failure::limit(
            Limit::InputBytes,
            format!(
                "the call's input is {len} bytes of JSON; the worker accepts at most {} bytes",
                limits.input_bytes
            ),
        ))
    }

    /// The failure of `code` for a thrown value described by `text`.
    pub fn thrown(code: FailureCode, text: &str) -> Failure {
        if text.is_empty() {
            Failure::new(code, "the export threw a value with no message")
        } else {
            Failure::new(code, text)
        }
    }

    /// The `module_rejected` failure for an entry module without the requested export
    /// (`None`: the default export), listing the exports it does have.
    pub fn missing_export(entry: &str, export: Option<&str>, exports: &[String]) -> Failure {
        let (what, hint) = match export {
            Some(n) => (
                format!("export named `{n}`"),
                runx_rules::did_you_mean(n, exports.iter().map(String::as_str)),
            ),
            None if !exports.is_empty() => (
                "default export".to_string(),
                "; name the one the runner calls with `export:`".to_string(),
            ),
            None => ("default export".to_string(), String::new()),
        };
        let have = if exports.is_empty() {
            "none".to_string()
        } else {
            exports.join(", ")
        };
        Failure::new(
            FailureCode::ModuleRejected,
            format!("module `{entry}` has no {what} (its exports: {have}){hint}"),
        )
    }

    /// The `module_rejected` failure for an export that is not a function; `kind` is what
    /// `typeof` says of it (`number`, `object`, ...), the same words on every engine.
    pub fn not_a_function(entry: &str, export: &str, kind: &str) -> Failure {
        let article = if kind.starts_with(['a', 'e', 'i', 'o', 'u']) {
            "an"
        } else {
            "a"
        };
        // A class or a generator is a function to `typeof`, but not one a runner can call for
        // its output: say why, and what to export instead.
        let (what, why) = match kind {
            "class" => (
                "a class, not a function a runner can call",
                ": a class can only be constructed with `new`; export a function that returns the output",
            ),
            "generator function" | "async generator function" => (
                kind,
                ": calling it returns an iterator, not the output; export a function that returns the output",
            ),
            _ => ("", ""),
        };
        let message = if what.is_empty() {
            format!("export `{export}` of module `{entry}` is {article} {kind}, not a function")
        } else if what == kind {
            format!(
                "export `{export}` of module `{entry}` is {article} {kind}, not a function a runner can call{why}"
            )
        } else {
            format!("export `{export}` of module `{entry}` is {what}{why}")
        };
        Failure::new(FailureCode::ModuleRejected, message)
    }

    /// Whether an export of this kind (the prelude's `kind`, which `runx skill check`'s probe
    /// reports) can be called as a runner: a function or an async function.
    pub fn runnable(kind: &str) -> bool {
        matches!(kind, "function" | "async function")
    }

    /// Marks the worker that produced this failure as not reusable.
    pub fn discard_worker(mut self) -> Failure {
        self.worker_reusable = false;
        self
    }

    /// `code` or `code/limit`, as printed and recorded.
    pub fn code_string(&self) -> String {
        match self.limit {
            Some(l) => format!("{}/{}", self.code, l),
            None => self.code.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_messages_are_cut_with_their_length() {
        let short = "x".repeat(MESSAGE_BYTES);
        assert_eq!(bound_message(short.clone()), short);
        // A multi-byte character straddles the cut: the cut moves back to its start.
        let long = "é".repeat(MESSAGE_BYTES);
        let cut = bound_message(long.clone());
        assert!(cut.len() <= MESSAGE_BYTES, "{}", cut.len());
        assert!(cut.starts_with("ééé"));
        assert!(
            cut.ends_with(&format!(
                "[message truncated: {} bytes in total]",
                long.len()
            )),
            "{}",
            &cut[cut.len() - 60..]
        );
        let f = Failure::new(FailureCode::ExecutionFailed, "y".repeat(20 << 20));
        assert!(f.message.len() <= MESSAGE_BYTES);
        let raw = Failure {
            message: "z".repeat(MESSAGE_BYTES + 1),
            ..f
        };
        assert!(raw.bounded().message.len() <= MESSAGE_BYTES);
    }
}
