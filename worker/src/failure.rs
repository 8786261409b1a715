//! Typed call failures: one stable code, an optional limit, a human message.

use crate::limits::{Limit, Limits};
use serde::{Deserialize, Serialize};

/// The stable machine-readable failure codes of a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
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
    /// The caller cancelled the call ([`crate::cancel::CancelToken`]); its worker was killed.
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
            message: message.into(),
            worker_reusable: true,
        }
    }

    /// A `resource_limit` failure naming `limit`.
    pub fn limit(limit: Limit, message: impl Into<String>) -> Failure {
        Failure {
            code: FailureCode::ResourceLimit,
            limit: Some(limit),
            message: message.into(),
            worker_reusable: true,
        }
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
        let what = match export {
            Some(n) => format!("an export named `{n}`"),
            None => "a default export".to_string(),
        };
        let have = if exports.is_empty() {
            "none".to_string()
        } else {
            exports.join(", ")
        };
        Failure::new(
            FailureCode::ModuleRejected,
            format!("module `{entry}` has no {what} (its exports: {have})"),
        )
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
