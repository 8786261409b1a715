//! `runx`: run skill packages from a shell. Flag parsing and presentation only; the behaviour
//! lives in the library crates (`runx-runtime`, `runx-harness`, `runx-receipts`, ...).
//!
//! - this file: the top-level flags and the dispatch to a command;
//! - `commands/`: one file per command (`skill`, `inspect`, `harness`, `bench`, `receipt`,
//!   `serve`, `mcp`), each with its own flags; `hosted` answers runx's hosted-side commands;
//! - `history_filter`: the filters of `runx history`;
//! - `inputs`: `-i KEY=VALUE`, `--input-json` and `--inputs FILE|-` turned into an input object;
//! - `keys`, `launch`: receipt keys from flags and the environment; this process's runtime;
//! - `package`: the package directory a command names (a bare name as `skills/NAME`);
//! - `signals`, `output`, `progress`, `exit`: signals routed to the runtime, printing that ends
//!   quietly on a closed stdout, the progress bar, the usage exit.

#![forbid(unsafe_code)]

use clap::{Parser, Subcommand};
use commands::hosted::{Hosted, HostedArgs};
use commands::{
    bench, check, harness, history, hosted, inspect, mcp, receipt, serve, skill, verify,
};
use exit::{EXIT_USAGE, usage};
use runx_runtime::DEFAULT_ENGINE;
use std::process::ExitCode;

#[macro_use]
mod output;
mod argv;
mod commands;
mod exit;
mod history_filter;
mod inputs;
mod keys;
mod launch;
mod package;
mod progress;
mod signals;
mod store;

#[derive(Parser)]
#[command(
    name = "runx",
    version,
    about = "A deterministic, sandboxed JavaScript skill runtime"
)]
struct Cli {
    /// Log more (repeat for more detail); RUST_LOG also works.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    /// The JavaScript engine of every javascript runner: `quickjs` or `v8` (needs a build with
    /// the cargo feature `v8`). Overrides a runner's `engine:`; without either, QuickJS.
    #[arg(long, global = true, value_name = "quickjs|v8")]
    engine: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run one runner of a skill package, or `runx skill inspect DIR` to describe it.
    Skill(skill::SkillArgs),
    /// Run the fixture cases of skill packages.
    Harness(harness::HarnessArgs),
    /// Measure runx on this machine: `runx bench pages`.
    Bench(bench::BenchArgs),
    /// List the receipts of the receipt directory, newest first, each verified, unverified or
    /// invalid, filtered as runx filters them; or show one in full (`--detail RECEIPT_ID`).
    History(history::HistoryArgs),
    /// Verify receipts as runx does: one file (`--receipt FILE|-`) with runx's verdict, or the
    /// receipt directory. Exit 0 valid, 3 not valid.
    Verify(verify::VerifyArgs),
    /// Check receipts offline (`runx receipt verify FILE|DIR...`) or print one (`show FILE`).
    #[command(subcommand)]
    Receipt(receipt::ReceiptCommand),
    // About and help text are on `ServeArgs`, beside the flags they describe.
    Serve(serve::ServeArgs),
    /// Serve skill runners as Model Context Protocol tools: `runx mcp serve DIR...`.
    Mcp(mcp::McpArgs),
    /// runx's hosted registry: not in this runtime (says what to use instead; exit 1).
    Registry(HostedArgs),
    /// Resume a paused runx run: runs here never pause (says what to do instead; exit 1).
    Resume(HostedArgs),
    /// Sign in to runx's hosted service: not used by this runtime (exit 1).
    Login(HostedArgs),
    /// Publish a receipt to runx's hosted service: not in this runtime (exit 1).
    Publish(HostedArgs),
    /// The worker process (started by runx itself).
    #[command(name = "__worker", hide = true)]
    Worker {
        /// Serve without the seccomp filter where the kernel cannot install it.
        #[arg(long)]
        allow_no_seccomp: bool,
    },
}

/// A command line refused as `--json` reports a refusal: runx's failure object on stdout, with
/// the kind `usage`.
fn print_refused(message: &str) {
    let refused = runx_runtime::RunError::new(runx_runtime::FailureKind::Usage, "usage", message);
    output::print_json(&runx_runtime::refused_json(None, &refused));
}

fn main() -> ExitCode {
    let raw: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // `--json` promises one JSON object on stdout, for a command line refused before any
    // command reads its flags too.
    let wants_json = raw.iter().any(|a| a == "--json" || a == "-j");
    let args = match argv::direct_inputs::<Cli>(raw) {
        Ok(args) => args,
        Err(message) => {
            if wants_json {
                print_refused(&message);
            }
            return usage(&message);
        }
    };
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { EXIT_USAGE } else { 0 };
            if e.use_stderr() && wants_json {
                // clap's error without its usage and help lines, on one line.
                let text = e.to_string();
                let said: Vec<&str> = text
                    .lines()
                    .map(str::trim)
                    .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more"))
                    .filter(|l| !l.is_empty())
                    .collect();
                let said = said.join(" ");
                print_refused(said.strip_prefix("error: ").unwrap_or(&said));
            }
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    if let Command::Worker { allow_no_seccomp } = cli.command {
        let code = runx_runtime::worker_main(
            cli.engine.as_deref().unwrap_or(DEFAULT_ENGINE),
            allow_no_seccomp,
        );
        return ExitCode::from(u8::try_from(code).unwrap_or(2));
    }
    if let Some(engine) = &cli.engine
        && let Err(e) = runx_runtime::check_engine(engine)
    {
        return usage(&format!("--engine {engine}: {e}"));
    }
    init_tracing(cli.verbose);
    let engine = cli.engine.as_deref();
    match cli.command {
        Command::Skill(args) => match args.command {
            Some(skill::SkillCommand::Inspect(a)) => inspect::inspect(&a.dir, a.json, engine),
            Some(skill::SkillCommand::Check(a)) => check::run(a, engine),
            None => skill::run(args, engine),
        },
        Command::Harness(args) => harness::command(args, engine),
        // Bench runs write their receipts into their own scratch space; they are not signed.
        Command::Bench(args) => {
            let rt = launch::runtime(engine, keys::Keys::default());
            bench::run(&rt, engine.unwrap_or(DEFAULT_ENGINE), args)
        }
        Command::History(args) => history::run(&args),
        Command::Verify(args) => verify::run(&args),
        Command::Receipt(command) => receipt::run(command),
        Command::Serve(args) => serve::run(engine, args),
        Command::Mcp(args) => mcp::run(engine, args),
        Command::Registry(args) => hosted::run(Hosted::Registry, &args),
        Command::Resume(args) => hosted::run(Hosted::Resume, &args),
        Command::Login(args) => hosted::run(Hosted::Login, &args),
        Command::Publish(args) => hosted::run(Hosted::Publish, &args),
        Command::Worker { .. } => ExitCode::SUCCESS,
    }
}

fn init_tracing(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}
