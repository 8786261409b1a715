//! The usage exit: a message on stderr and the exit code of usage and input errors.

use std::process::ExitCode;

/// Exit code for usage and input errors.
pub const EXIT_USAGE: u8 = 64;

/// Prints `runx: message` on stderr and ends with [`EXIT_USAGE`].
pub fn usage(message: &str) -> ExitCode {
    errln!("runx: {message}");
    ExitCode::from(EXIT_USAGE)
}
