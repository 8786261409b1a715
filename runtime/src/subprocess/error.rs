//! What can stop a subprocess run before or while it is supervised.

use std::io;
use std::path::PathBuf;

/// Everything that can stop a subprocess run before or while it is supervised.
///
/// A process that starts and then fails (non-zero exit, signal, timeout,
/// cancellation) is not an error: it is reported through its `Termination`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SubprocessError {
    /// The command could not be located or is not executable.
    #[error(
        "command `{command}` cannot be started: {reason}; {}",
        if command.contains('/') { "fix the path in `command:` (a relative path is read from the package directory)" } else { "install it, or give its path in `command:`" }
    )]
    NotFound {
        /// The command as declared.
        command: String,
        /// Why it cannot be started.
        reason: String,
    },

    /// Two input keys normalise to the same `RUNX_INPUT_<NAME>` variable.
    #[error(
        "input keys `{first}` and `{second}` both map to RUNX_INPUT_{name}; rename one of them so their normalised names differ"
    )]
    InputNameCollision {
        /// The first input key.
        first: String,
        /// The second input key.
        second: String,
        /// The normalised name both map to.
        name: String,
    },

    /// An input key has no ASCII letters or digits, so it has no `RUNX_INPUT_<NAME>`.
    #[error(
        "input key `{key}` contains no ASCII letters or digits and cannot be delivered as RUNX_INPUT_<NAME>; rename it"
    )]
    InvalidInputName {
        /// The input key.
        key: String,
    },

    /// An argument or environment value holds a NUL byte, which no process can be given.
    #[error("{what} holds a NUL byte (at byte {offset}); a process cannot be given one")]
    NulByte {
        /// Which argument or variable.
        what: String,
        /// Where the first NUL is.
        offset: usize,
    },

    /// An argument, an environment string, or all of them together are too long for the
    /// kernel (`E2BIG`).
    #[error(
        "{what} take{s} {bytes} bytes; the kernel accepts at most {limit} bytes there; pass large values by file (RUNX_INPUT_<NAME>_PATH) instead",
        s = if what.starts_with("the ") { "" } else { "s" }
    )]
    TooLong {
        /// Which argument or variable, or `the arguments and environment together`.
        what: String,
        /// How many bytes it takes.
        bytes: usize,
        /// The kernel's limit.
        limit: usize,
    },

    /// The working directory is missing or not a directory.
    #[error("working directory `{}` {reason}; create it or correct the skill's cwd", path.display())]
    Cwd {
        /// The directory.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },

    /// The operating system refused to start the process.
    #[error(
        "failed to start `{}`: {source}; check that it is an executable for this platform and its interpreter exists",
        program.display()
    )]
    Spawn {
        /// The program.
        program: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },

    /// Staging inputs or supervising the process failed at the OS level.
    #[error("{context}: {source}")]
    Io {
        /// What runx was doing.
        context: String,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
}

impl SubprocessError {
    pub(crate) fn io(context: impl Into<String>, source: io::Error) -> Self {
        SubprocessError::Io {
            context: context.into(),
            source,
        }
    }
}
