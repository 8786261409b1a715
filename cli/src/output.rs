//! Writing to stdout and stderr without panicking when the reader has gone.
//!
//! `println!` panics when stdout is a pipe whose reader closed it (`runx skill inspect DIR |
//! head -1`). Everything runx prints goes through [`outln!`](crate::outln) and
//! [`errln!`](crate::errln) instead: a closed stdout ends runx at once, quietly, with
//! [`EXIT_CLOSED_STDOUT`] (any other write error with a message and exit code 1); a closed
//! stderr is ignored (there is no one left to tell).

use serde_json::Value;
use std::io::Write;

/// The exit code when stdout was closed by its reader: 141, what a shell reports for a
/// process ended by SIGPIPE (128 + 13).
pub const EXIT_CLOSED_STDOUT: i32 = 141;

/// Writes one line to stdout; ends the process with [`EXIT_CLOSED_STDOUT`] if stdout is closed.
pub fn out(args: std::fmt::Arguments<'_>) {
    let mut stdout = std::io::stdout().lock();
    let written = stdout
        .write_fmt(args)
        .and_then(|()| stdout.write_all(b"\n"))
        .and_then(|()| stdout.flush());
    match written {
        Ok(()) => {}
        // The reader stopped reading: a pipeline's business, not an error worth a message.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            std::process::exit(EXIT_CLOSED_STDOUT)
        }
        Err(e) => {
            err(format_args!("runx: cannot write to stdout: {e}"));
            std::process::exit(1);
        }
    }
}

/// Writes one line to stderr, ignoring a stderr that cannot be written.
pub fn err(args: std::fmt::Arguments<'_>) {
    let mut stderr = std::io::stderr().lock();
    let _ = stderr
        .write_fmt(args)
        .and_then(|()| stderr.write_all(b"\n"));
}

/// `println!` that ends runx quietly when stdout is closed.
#[macro_export]
macro_rules! outln {
    () => { $crate::output::out(format_args!("")) };
    ($($arg:tt)*) => { $crate::output::out(format_args!($($arg)*)) };
}

/// `eprintln!` that never panics.
#[macro_export]
macro_rules! errln {
    ($($arg:tt)*) => { $crate::output::err(format_args!($($arg)*)) };
}

/// Prints `v` as one line of JSON on stdout.
pub fn print_json(v: &Value) {
    outln!("{}", serde_json::to_string(v).unwrap_or_default());
}

/// `s` with control characters escaped: text from a file anyone may have written (a receipt,
/// a file name) must not rewrite the reader's terminal or forge a line.
pub fn terminal_safe(s: &str) -> String {
    s.chars()
        .flat_map(|c| {
            let escaped: Vec<char> = if c.is_control() {
                c.escape_default().collect()
            } else {
                vec![c]
            };
            escaped
        })
        .collect()
}
