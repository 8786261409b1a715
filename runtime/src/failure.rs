//! The one failure vocabulary of a run: a [`FailureKind`], a code within the kind, a message.
//!
//! Every runner reports failures with these words, and every error type of the crate is turned
//! into a [`RunError`] here and nowhere else, so the same event reads the same in `--json`
//! output, in receipts and in harness reports whichever runner it happened in. The table of
//! kinds and codes is in the book (`docs/src/failures.md`).

use crate::artifact::AdmissionError;
use crate::framing::FramingError;
use crate::subprocess::SubprocessError;
use runx_profile::{InputError, LimitDef, OutputError, ProfileError};
use runx_receipts::FailureRecord;
use runx_worker::{BundleError, Failure, FailureCode, bound_message};
use serde::{Deserialize, Serialize};

/// What kind of thing went wrong. Serialized as its snake_case [`name`](FailureKind::name).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FailureKind {
    /// The command line was malformed (`runx` only).
    Usage,
    /// The caller's inputs were refused before anything started.
    Input,
    /// The package or the selected runner cannot run as declared.
    Profile,
    /// A required environment name is not set, or a declared name is unusable.
    Environment,
    /// A javascript module could not be loaded (specifier, syntax, missing export).
    ModuleRejected,
    /// The export threw, its promise rejected, or it never settled.
    ExecutionFailed,
    /// The result broke the runner's output contract.
    OutputRejected,
    /// A limit was hit; the code names the limit.
    ResourceLimit,
    /// The artifact of a paged run could not be admitted or framed.
    Page,
    /// A cli-tool command does not exist or is not executable.
    NotFound,
    /// A cli-tool process could not be started (unusable cwd, the OS refused).
    Spawn,
    /// A cli-tool process was killed by a signal it was not sent by runx.
    Crash,
    /// A cli-tool process exited with a non-zero code.
    Exit,
    /// A worker process died or broke the protocol while it held the call.
    WorkerCrashed,
    /// The host sent the worker a request it refused (a runtime bug).
    InvalidRequest,
    /// The run produced its output but its receipt could not be written, so it is not sealed.
    Receipt,
    /// The run was interrupted (Ctrl-C, SIGTERM, SIGHUP, `Runtime::interrupt`, its request's
    /// cancel token).
    Interrupted,
    /// A bug or an unexpected state in runx itself.
    Internal,
}

impl FailureKind {
    /// Every kind, in the order of the table in `docs/src/failures.md`.
    pub const ALL: [FailureKind; 18] = [
        FailureKind::Usage,
        FailureKind::Input,
        FailureKind::Profile,
        FailureKind::Environment,
        FailureKind::ModuleRejected,
        FailureKind::ExecutionFailed,
        FailureKind::OutputRejected,
        FailureKind::ResourceLimit,
        FailureKind::Page,
        FailureKind::NotFound,
        FailureKind::Spawn,
        FailureKind::Crash,
        FailureKind::Exit,
        FailureKind::WorkerCrashed,
        FailureKind::InvalidRequest,
        FailureKind::Receipt,
        FailureKind::Interrupted,
        FailureKind::Internal,
    ];

    /// The stable snake_case name, as printed and recorded.
    pub const fn name(self) -> &'static str {
        match self {
            FailureKind::Usage => "usage",
            FailureKind::Input => "input",
            FailureKind::Profile => "profile",
            FailureKind::Environment => "environment",
            FailureKind::ModuleRejected => "module_rejected",
            FailureKind::ExecutionFailed => "execution_failed",
            FailureKind::OutputRejected => "output_rejected",
            FailureKind::ResourceLimit => "resource_limit",
            FailureKind::Page => "page",
            FailureKind::NotFound => "not_found",
            FailureKind::Spawn => "spawn",
            FailureKind::Crash => "crash",
            FailureKind::Exit => "exit",
            FailureKind::WorkerCrashed => "worker_crashed",
            FailureKind::InvalidRequest => "invalid_request",
            FailureKind::Receipt => "receipt",
            FailureKind::Interrupted => "interrupted",
            FailureKind::Internal => "internal",
        }
    }

    /// The kind named `name`, if there is one.
    pub fn from_name(name: &str) -> Option<FailureKind> {
        FailureKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Whether the caller's request was at fault (command line, inputs, profile).
    pub const fn is_usage(self) -> bool {
        matches!(
            self,
            FailureKind::Usage | FailureKind::Input | FailureKind::Profile
        )
    }

    /// The process exit code of `runx` for a run that failed this way: 64 for usage, input
    /// and profile errors, 130 when interrupted, 1 otherwise.
    pub const fn exit_code(self) -> i32 {
        if self.is_usage() {
            64
        } else if matches!(self, FailureKind::Interrupted) {
            130
        } else {
            1
        }
    }
}

impl std::fmt::Display for FailureKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A failed run: the same three fields in `--json`, receipts and harness reports.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{kind}/{code}: {message}")]
pub struct RunError {
    /// The stable category.
    pub kind: FailureKind,
    /// The specific reason within the kind: a limit name, `missing_input`, `exit_3`, ...
    pub code: String,
    /// What happened, naming the key, file, page or limit concerned.
    pub message: String,
}

impl RunError {
    /// A failure of `kind` with `code` and `message`.
    /// The message is bounded to [`runx_worker::MESSAGE_BYTES`] (cut at a character boundary, marked with
    /// its full length), like every message that crosses the worker boundary: a failure that
    /// quotes what a module or process said never makes a huge receipt.
    pub fn new(kind: FailureKind, code: impl Into<String>, message: impl Into<String>) -> RunError {
        RunError {
            kind,
            code: code.into(),
            message: bound_message(message.into()),
        }
    }

    /// The `resource_limit` failure for `limit`.
    pub fn limit(limit: &LimitDef, message: impl Into<String>) -> RunError {
        RunError::new(FailureKind::ResourceLimit, limit.name, message)
    }

    /// The failure every run reports once it was interrupted.
    pub fn interrupted() -> RunError {
        RunError::new(
            FailureKind::Interrupted,
            "interrupted",
            "the run was interrupted; the worker or process group running it was killed",
        )
    }

    /// A failure inside runx itself (`internal/<code>`).
    pub fn internal(code: &str, message: impl Into<String>) -> RunError {
        RunError::new(FailureKind::Internal, code, message)
    }

    /// The same failure with `context` put in front of its message (a page, a case).
    pub fn context(self, context: impl std::fmt::Display) -> RunError {
        RunError {
            message: bound_message(format!("{context}: {}", self.message)),
            ..self
        }
    }

    /// The failure as a receipt records it.
    pub fn record(&self) -> FailureRecord {
        FailureRecord {
            kind: self.kind.name().to_string(),
            code: self.code.clone(),
            message: self.message.clone(),
        }
    }

    /// Whether the caller's request was at fault (bad command line, inputs or profile).
    pub fn is_usage(&self) -> bool {
        self.kind.is_usage()
    }

    /// The process exit code for this failure (see [`FailureKind::exit_code`]).
    pub fn exit_code(&self) -> i32 {
        self.kind.exit_code()
    }
}

impl From<Failure> for RunError {
    fn from(f: Failure) -> RunError {
        let kind = match f.code {
            FailureCode::InvalidRequest => FailureKind::InvalidRequest,
            FailureCode::ModuleRejected => FailureKind::ModuleRejected,
            FailureCode::ExecutionFailed => FailureKind::ExecutionFailed,
            FailureCode::OutputRejected => FailureKind::OutputRejected,
            FailureCode::ResourceLimit => FailureKind::ResourceLimit,
            FailureCode::WorkerCrashed => FailureKind::WorkerCrashed,
            FailureCode::Interrupted => FailureKind::Interrupted,
            FailureCode::Internal => FailureKind::Internal,
            // A code added to the worker after this mapping was written.
            _ => FailureKind::Internal,
        };
        let code = f.limit.map_or(f.code.name(), |l| l.name());
        RunError::new(kind, code, f.message)
    }
}

impl From<BundleError> for RunError {
    fn from(e: BundleError) -> RunError {
        let (kind, code) = match &e {
            BundleError::Rejected(_) => (FailureKind::ModuleRejected, "specifier"),
            BundleError::File { .. } => (FailureKind::ModuleRejected, "module_file"),
            BundleError::Syntax { .. } => (FailureKind::ModuleRejected, "syntax"),
            BundleError::TooLarge { .. } => (FailureKind::ResourceLimit, "source_bytes"),
            // A reason added to the worker after this mapping was written.
            _ => (FailureKind::ModuleRejected, "module"),
        };
        RunError::new(kind, code, e.to_string())
    }
}

impl From<ProfileError> for RunError {
    fn from(e: ProfileError) -> RunError {
        RunError::new(FailureKind::Profile, e.code(), e.to_string())
    }
}

impl From<InputError> for RunError {
    fn from(e: InputError) -> RunError {
        RunError::new(FailureKind::Input, e.code(), e.to_string())
    }
}

impl From<OutputError> for RunError {
    fn from(e: OutputError) -> RunError {
        RunError::new(FailureKind::OutputRejected, e.code(), e.to_string())
    }
}

impl From<AdmissionError> for RunError {
    fn from(e: AdmissionError) -> RunError {
        match e.limit() {
            Some(limit) => RunError::limit(limit, e.to_string()),
            None => RunError::new(FailureKind::Page, e.code(), e.to_string()),
        }
    }
}

impl From<FramingError> for RunError {
    fn from(e: FramingError) -> RunError {
        RunError::new(FailureKind::Page, "framing", e.to_string())
    }
}

impl From<SubprocessError> for RunError {
    fn from(e: SubprocessError) -> RunError {
        let (kind, code) = match &e {
            SubprocessError::NotFound { .. } => (FailureKind::NotFound, "command_not_found"),
            SubprocessError::InputNameCollision { .. } => {
                (FailureKind::Input, "input_name_collision")
            }
            SubprocessError::InvalidInputName { .. } => (FailureKind::Input, "invalid_input_name"),
            SubprocessError::NulByte { .. } => (FailureKind::Input, "nul_byte"),
            SubprocessError::TooLong { .. } => (FailureKind::Input, "argument_list_too_long"),
            SubprocessError::Cwd { .. } => (FailureKind::Spawn, "cwd"),
            SubprocessError::Spawn { .. } => (FailureKind::Spawn, "spawn"),
            SubprocessError::Io { .. } => (FailureKind::Internal, "io"),
        };
        RunError::new(kind, code, e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use runx_worker::Limit;
    use runx_worker::MESSAGE_BYTES;

    #[test]
    fn names_round_trip_and_serialize_as_names() {
        for kind in FailureKind::ALL {
            assert_eq!(FailureKind::from_name(kind.name()), Some(kind));
            assert_eq!(
                serde_json::to_value(kind).expect("kind serializes"),
                serde_json::Value::from(kind.name())
            );
        }
        let e = RunError::new(FailureKind::Exit, "exit_3", "m");
        assert_eq!(
            serde_json::to_value(&e).expect("error serializes"),
            serde_json::json!({"kind": "exit", "code": "exit_3", "message": "m"})
        );
    }

    #[test]
    fn exit_codes() {
        assert_eq!(FailureKind::Input.exit_code(), 64);
        assert_eq!(FailureKind::Profile.exit_code(), 64);
        assert_eq!(FailureKind::Interrupted.exit_code(), 130);
        assert_eq!(FailureKind::ResourceLimit.exit_code(), 1);
    }

    #[test]
    fn messages_are_bounded() {
        let e = RunError::new(FailureKind::Exit, "exit_1", "x".repeat(10 << 20));
        assert!(e.message.len() <= MESSAGE_BYTES);
        assert!(
            e.message.contains("10485760 bytes in total"),
            "{}",
            &e.message[16000..]
        );
        let e = RunError::new(FailureKind::Exit, "exit_1", "x".repeat(MESSAGE_BYTES))
            .context("page 3 (byte offset 9)");
        assert!(e.message.len() <= MESSAGE_BYTES);
        assert!(e.message.starts_with("page 3"));
    }

    #[test]
    fn worker_limits_keep_their_names() {
        let e = RunError::from(Failure::limit(Limit::HeapBytes, "too much"));
        assert_eq!(
            (e.kind, e.code.as_str()),
            (FailureKind::ResourceLimit, "heap_bytes")
        );
        let e = RunError::from(Failure::new(FailureCode::ExecutionFailed, "boom"));
        assert_eq!(
            (e.kind, e.code.as_str()),
            (FailureKind::ExecutionFailed, "execution_failed")
        );
    }
}
