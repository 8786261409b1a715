//! The one failure type a run reports: a stable `kind`, a specific `code`, a message.
//!
//! The same three fields appear in `--json` output, in receipts and in harness reports.

use crate::inputs::{InputError, OutputError};
use crate::profile::ProfileError;
use runx_worker::failure::Failure;
use serde::{Deserialize, Serialize};

/// A failed run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{kind}/{code}: {message}")]
pub struct RunError {
    /// The stable category: `input`, `profile`, `environment`, `module_rejected`,
    /// `execution_failed`, `output_rejected`, `resource_limit`, `worker_crashed`, `page`,
    /// `timeout`, `not_found`, `crash`, `exit`, `truncated`, `interrupted`, `internal`, …
    pub kind: String,
    /// The specific reason within the kind (a limit name, `missing_input`, `exit_3`, …).
    pub code: String,
    /// What happened, naming the key, file, page or limit concerned.
    pub message: String,
}

impl RunError {
    /// A failure of `kind` with `code` and `message`.
    pub fn new(kind: &str, code: &str, message: impl Into<String>) -> RunError {
        RunError {
            kind: kind.to_string(),
            code: code.to_string(),
            message: message.into(),
        }
    }

    /// Whether the caller's request was at fault (bad inputs or profile): exit code 64.
    pub fn is_usage(&self) -> bool {
        matches!(self.kind.as_str(), "input" | "profile" | "usage")
    }

    /// The process exit code for this failure: 64 for usage and input errors, 130 when
    /// interrupted, 1 otherwise.
    pub fn exit_code(&self) -> i32 {
        if self.is_usage() {
            64
        } else if self.kind == "interrupted" {
            130
        } else {
            1
        }
    }
}

impl From<Failure> for RunError {
    fn from(f: Failure) -> RunError {
        let code = f.limit.map_or(f.code.name(), |l| l.name());
        RunError::new(f.code.name(), code, f.message)
    }
}

impl From<ProfileError> for RunError {
    fn from(e: ProfileError) -> RunError {
        let code = match &e {
            ProfileError::Read { .. } | ProfileError::NotAPackage { .. } => "not_a_package",
            ProfileError::TooLarge { .. } | ProfileError::Invalid { .. } => "invalid_profile",
            ProfileError::UnsupportedRunner { .. } => "unsupported_runner",
            ProfileError::UnknownRunner { .. } => "unknown_runner",
            ProfileError::NoDefaultRunner { .. } => "no_default_runner",
        };
        RunError::new("profile", code, e.to_string())
    }
}

impl From<InputError> for RunError {
    fn from(e: InputError) -> RunError {
        let code = match &e {
            InputError::Missing { .. } => "missing_input",
            InputError::WrongType { .. } => "wrong_type",
            InputError::Schema { .. } | InputError::BadSchema { .. } => "schema",
            InputError::Reserved { .. } => "reserved_input",
            InputError::PageInput { .. } => "page_input",
            InputError::KvNoEquals { .. }
            | InputError::KvEmptyKey { .. }
            | InputError::KvDuplicate { .. } => "bad_pair",
            InputError::NotUtf8 { .. } => "not_utf8",
            InputError::InvalidJson { .. } => "invalid_json",
            InputError::NotObject { .. } => "not_object",
        };
        RunError::new("input", code, e.to_string())
    }
}

impl From<OutputError> for RunError {
    fn from(e: OutputError) -> RunError {
        let code = match &e {
            OutputError::NotObject { .. } => "not_object",
            OutputError::Missing { .. } => "missing_output",
            OutputError::WrongType { .. } => "wrong_type",
            OutputError::Schema { .. } | OutputError::BadSchema { .. } => "schema",
        };
        RunError::new("output_rejected", code, e.to_string())
    }
}
