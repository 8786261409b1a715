//! `runx registry`, `runx resume`, `runx login`, `runx publish`: commands of runx's hosted
//! side, which this runtime does not have. Each is answered, not misparsed: one line on stderr
//! saying so and what to use instead, and with `--json` (or `-j`) runx's failure object on
//! stdout, `{"status": "failure", "error": {"code", "message"}}`. The exit code is 1, as runx
//! ends a hosted command it cannot carry out (no registry entry, no paused run, no service),
//! so runx's Python SDK (`search_skills`, `continue_run`) raises with this reason.

use crate::output::print_json;
use serde_json::json;
use std::ffi::OsString;
use std::process::ExitCode;

/// The exit code of a hosted-side command here: runx's for a command it could not carry out.
const EXIT_HOSTED: u8 = 1;

/// Whatever runx's command takes: read only for `--json`/`-j`.
#[derive(clap::Args)]
pub struct HostedArgs {
    /// runx's arguments of this command; none is used here.
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "ARGS"
    )]
    pub args: Vec<OsString>,
}

/// Which hosted command was asked for.
#[derive(Clone, Copy)]
pub enum Hosted {
    Registry,
    Resume,
    Login,
    Publish,
}

impl Hosted {
    /// runx's name of the command, and what this runtime says about it.
    fn answer(self) -> (&'static str, &'static str) {
        match self {
            Hosted::Registry => (
                "registry",
                "searches, reads and installs skills of runx's hosted registry, which this \
                 runtime does not include: find and install a skill with runx (`runx registry \
                 search QUERY`, `runx add REF`), then run its package directory here with \
                 `runx skill DIR`",
            ),
            Hosted::Resume => (
                "resume",
                "continues a runx run paused for an agent, an approval or answers; runs of this \
                 runtime never pause (each is sealed or fails): run the skill again with \
                 `runx skill DIR`, or resume runx's run with runx",
            ),
            Hosted::Login => (
                "login",
                "signs in to runx's hosted service, which this runtime does not use: nothing \
                 here needs a login; to sign receipts, set RUNX_RECEIPT_SIGN_* or pass \
                 --sign-key FILE",
            ),
            Hosted::Publish => (
                "publish",
                "uploads a receipt to runx's hosted service, which this runtime does not \
                 include: check a receipt offline with `runx verify --receipt FILE`, and \
                 publish it with runx",
            ),
        }
    }
}

/// Answers `runx NAME ...` for a hosted-side command.
pub fn run(which: Hosted, args: &HostedArgs) -> ExitCode {
    let (name, what) = which.answer();
    let message = format!("`runx {name}` {what}");
    let as_json = args.args.iter().any(|a| a == "--json" || a == "-j");
    if as_json {
        print_json(&json!({
            "status": "failure",
            "error": { "code": "hosted_command_unavailable", "message": message },
        }));
    }
    errln!("runx: {message}");
    ExitCode::from(EXIT_HOSTED)
}
