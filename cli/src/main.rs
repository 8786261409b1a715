//! `runx`: run skill packages from a shell. Flag parsing and presentation only; the behaviour
//! lives in `runx-runtime` and `runx-worker`.

#![forbid(unsafe_code)]

use clap::{Parser, Subcommand};
use runx_runtime::{self as workers, DEFAULT_ENGINE};
use runx_runtime::{RunOutcome, RunRequest, Runtime};
use serde_json::{Map, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

#[macro_use]
mod output;
mod bench_cmd;
mod harness_cmd;
mod inputs;
mod inspect;
mod progress;
mod receipt_cmd;
mod serve_cmd;
mod signals;

/// Exit code for usage and input errors.
const EXIT_USAGE: u8 = 64;

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
    Skill(SkillArgs),
    /// Run the fixture cases of skill packages.
    Harness(HarnessArgs),
    /// Measure runx on this machine: `runx bench pages`.
    Bench(bench_cmd::BenchArgs),
    /// Check receipts offline (`runx receipt verify FILE|DIR...`) or print one (`show FILE`).
    #[command(subcommand)]
    Receipt(receipt_cmd::ReceiptCommand),
    // About and help text are on `ServeArgs`, beside the flags they describe.
    Serve(serve_cmd::ServeArgs),
    /// The worker process (started by runx itself).
    #[command(name = "__worker", hide = true)]
    Worker {
        /// Serve without the seccomp filter where the kernel cannot install it.
        #[arg(long)]
        allow_no_seccomp: bool,
    },
}

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
struct SkillArgs {
    #[command(subcommand)]
    command: Option<SkillCommand>,
    /// The skill package directory, or a bare skill name found as `skills/NAME` in the working
    /// directory.
    #[arg(required = true)]
    dir: Option<PathBuf>,
    /// The runner to run; the package's default runner when omitted.
    runner: Option<String>,
    /// Read the input object from a JSON file in the working directory, or `-` for stdin.
    #[arg(long, value_name = "FILE|-")]
    inputs: Option<String>,
    /// One input as KEY=VALUE (VALUE is parsed as JSON when it is valid JSON, else a string).
    #[arg(short = 'i', long = "input", value_name = "KEY=VALUE")]
    input: Vec<String>,
    /// One input as KEY=JSON; the value must be valid JSON.
    #[arg(long = "input-json", value_name = "KEY=JSON")]
    input_json: Vec<String>,
    /// Print one JSON object with status, output, receipt and error on stdout.
    #[arg(long)]
    json: bool,
    /// Write the receipt under DIR instead of `.runx/receipts` of the working directory.
    #[arg(long, value_name = "DIR")]
    receipt_dir: Option<PathBuf>,
    #[command(flatten)]
    sign: receipt_cmd::SignArgs,
}

#[derive(Subcommand)]
enum SkillCommand {
    /// Describe a package: runners, inputs, outputs, environment and the limits they run under.
    Inspect(InspectArgs),
}

#[derive(clap::Args)]
struct InspectArgs {
    /// The skill package directory, or a bare skill name found as `skills/NAME`.
    dir: PathBuf,
    /// Print one JSON object on stdout.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
struct HarnessArgs {
    /// Package directories, fixture files, or directories of packages.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// Print a JSON report on stdout.
    #[arg(long)]
    json: bool,
    /// Write the harness receipt and every case's receipt under DIR instead of
    /// `.runx/harness-receipts` of the working directory.
    #[arg(long, value_name = "DIR")]
    receipt_dir: Option<PathBuf>,
    #[command(flatten)]
    sign: receipt_cmd::SignArgs,
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { EXIT_USAGE } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    if let Command::Worker { allow_no_seccomp } = cli.command {
        let code = workers::worker_main(
            cli.engine.as_deref().unwrap_or(DEFAULT_ENGINE),
            allow_no_seccomp,
        );
        return ExitCode::from(u8::try_from(code).unwrap_or(2));
    }
    if let Some(engine) = &cli.engine
        && let Err(e) = workers::check_engine(engine)
    {
        return usage(&format!("--engine {engine}: {e}"));
    }
    init_tracing(cli.verbose);
    let engine = cli.engine.as_deref();
    match cli.command {
        Command::Skill(args) => match args.command {
            Some(SkillCommand::Inspect(a)) => inspect::inspect(&package_dir(&a.dir), a.json),
            None => skill(args, engine),
        },
        Command::Harness(args) => {
            let keys = match receipt_cmd::keys(&args.sign) {
                Ok(k) => k,
                Err(e) => return usage(&e.message),
            };
            let receipt_dir = args.receipt_dir.clone().unwrap_or_else(|| {
                runx_runtime::default_workspace()
                    .join(".runx")
                    .join("harness-receipts")
            });
            let code =
                harness_cmd::run(&runtime(engine, keys), &args.paths, args.json, &receipt_dir);
            signals::exit_code().map_or(code, ExitCode::from)
        }
        // Bench runs write their receipts into their own scratch space; they are not signed.
        Command::Bench(args) => {
            let rt = runtime(engine, receipt_cmd::Keys::default());
            bench_cmd::run(&rt, engine.unwrap_or(DEFAULT_ENGINE), args)
        }
        Command::Receipt(command) => receipt_cmd::run(command),
        Command::Serve(args) => serve_cmd::run(engine, args),
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

/// The runtime of this process (every javascript runner on `engine` when given) signing with
/// `keys`, its workers this very executable, with Ctrl-C, SIGTERM and SIGHUP wired to kill its
/// workers and subprocesses ([`signals`]).
fn runtime(engine: Option<&str>, keys: receipt_cmd::Keys) -> Arc<Runtime> {
    let rt = Arc::new(configured_runtime(engine, keys));
    signals::install(rt.clone());
    rt
}

/// A runtime whose workers are this very executable, every javascript runner on `engine` when
/// given, signing and verifying receipts with `keys`; no signal handling.
fn configured_runtime(engine: Option<&str>, keys: receipt_cmd::Keys) -> Runtime {
    let mut rt = Runtime::new(workers::current_exe_worker());
    if let Some(engine) = engine {
        rt = rt.with_engine(engine);
    }
    if let Some(signer) = keys.signer {
        rt = rt.with_signer(signer);
    }
    if let Some(key) = keys.verify {
        rt = rt.with_verify_key(key);
    }
    rt
}

fn usage(message: &str) -> ExitCode {
    errln!("runx: {message}");
    ExitCode::from(EXIT_USAGE)
}

fn skill(args: SkillArgs, engine: Option<&str>) -> ExitCode {
    let Some(dir) = &args.dir else {
        return usage("name the skill package directory: runx skill DIR");
    };
    // A bad key refuses the run before anything is read or receipted: there is no one to sign
    // the refusal with.
    let keys = match receipt_cmd::keys(&args.sign) {
        Ok(k) => k,
        Err(e) => {
            if args.json {
                print_json(&runx_runtime::refused_json(args.runner.as_deref(), &e));
            }
            return usage(&e.message);
        }
    };
    let inputs = inputs::read_inputs(&args);
    // Signals are routed to the runtime only now: until the inputs are read (stdin may wait on
    // a terminal) there is nothing to clean up and the default action ends runx.
    let rt = runtime(engine, keys);
    let mut req = RunRequest::new(package_dir(dir), Map::new());
    req.runner = args.runner.clone();
    req.receipt_dir = args.receipt_dir.clone();
    let outcome = match inputs {
        Ok(inputs) => {
            req.inputs = inputs;
            let bar = progress::sink().map(|(sink, bar)| {
                req.progress = Some(sink);
                bar
            });
            let outcome = rt.run(&req);
            if let Some(bar) = &bar {
                progress::finish(bar);
            }
            outcome
        }
        // Refused before anything runs, but receipted like any run of a known package.
        Err(e) => rt.refuse(&req, e),
    };
    report(&outcome, args.json);
    if let Some(code) = signals::exit_code() {
        return ExitCode::from(code);
    }
    ExitCode::from(outcome.exit_code() as u8)
}

/// The package directory `dir` names: `dir` itself, or, for a bare name that is not a
/// directory here, `skills/NAME` when that is one (the runx convention).
fn package_dir(dir: &Path) -> PathBuf {
    let mut parts = dir.components();
    let bare = matches!(
        (parts.next(), parts.next()),
        (Some(std::path::Component::Normal(_)), None)
    );
    if bare && !dir.is_dir() {
        let conventional = Path::new("skills").join(dir);
        if conventional.is_dir() {
            return conventional;
        }
    }
    dir.to_path_buf()
}

fn report(o: &RunOutcome, as_json: bool) {
    if as_json {
        print_json(&runx_runtime::run_json(o));
        return;
    }
    let receipt_path = o.receipt_path.as_ref().map(|p| p.display().to_string());
    for line in &o.log.lines {
        errln!("[{}] {}", line.level, line.message);
    }
    if let Some(stderr) = o.stderr.as_ref().filter(|c| !c.kept.is_empty()) {
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(&stderr.kept);
        if !stderr.kept.ends_with(b"\n") {
            let _ = err.write_all(b"\n");
        }
        if stderr.truncated {
            let _ = writeln!(
                err,
                "runx: the tool wrote {} bytes to stderr; the first {} are shown",
                stderr.total_bytes,
                stderr.kept.len()
            );
        }
    }
    if o.log.truncated() {
        errln!(
            "[runx: {} more bytes of console output were dropped; a run keeps at most {} bytes]",
            o.log.dropped_bytes,
            runx_profile::LOG_BYTES.default
        );
    }
    match &o.result {
        Ok(out) => {
            errln!(
                "runx: {} {} sealed in {} ms (receipt {})",
                o.skill,
                o.runner,
                o.receipt.duration_ms,
                receipt_path.as_deref().unwrap_or("not written")
            );
            outln!("{}", serde_json::to_string_pretty(out).unwrap_or_default());
        }
        Err(e) => {
            errln!(
                "runx: {} {} failed ({}/{}): {}",
                if o.skill.is_empty() {
                    "skill"
                } else {
                    &o.skill
                },
                o.runner,
                e.kind,
                e.code,
                e.message
            );
            if let Some(p) = receipt_path {
                errln!("runx: receipt {p}");
            }
        }
    }
}

fn print_json(v: &Value) {
    outln!("{}", serde_json::to_string(v).unwrap_or_default());
}

