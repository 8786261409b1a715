//! `runx`: run skill packages from a shell. Flag parsing and presentation only; the behaviour
//! lives in `runx-runtime` and `runx-worker`.

#![forbid(unsafe_code)]

use clap::{Parser, Subcommand};
use runx_runtime::inputs::{parse_kv, parse_object};
use runx_runtime::workers::{self, DEFAULT_ENGINE};
use runx_runtime::{FailureKind, RunError, RunOutcome, RunRequest, Runtime};
use serde_json::{Map, Value, json};
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

mod bench_cmd;
mod harness_cmd;
mod inspect;
mod progress;

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
    /// The JavaScript engine of the workers: `quickjs` (default) or `v8` (needs a build with
    /// the cargo feature `v8`).
    #[arg(long, global = true, value_name = "quickjs|v8", default_value = DEFAULT_ENGINE)]
    engine: String,
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
    /// The skill package directory.
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
    /// Print one JSON object with status, output, receipt and error on stdout.
    #[arg(long)]
    json: bool,
    /// Write the receipt under DIR instead of `.runx/receipts` of the working directory.
    #[arg(long, value_name = "DIR")]
    receipt_dir: Option<PathBuf>,
}

#[derive(Subcommand)]
enum SkillCommand {
    /// Describe a package: runners, inputs, outputs, environment and the limits they run under.
    Inspect(InspectArgs),
}

#[derive(clap::Args)]
struct InspectArgs {
    /// The skill package directory.
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
        let code = workers::worker_main(&cli.engine, allow_no_seccomp);
        return ExitCode::from(u8::try_from(code).unwrap_or(2));
    }
    if let Err(e) = workers::check_engine(&cli.engine) {
        return usage(&format!("--engine {}: {e}", cli.engine));
    }
    init_tracing(cli.verbose);
    let engine = cli.engine.as_str();
    match cli.command {
        Command::Skill(args) => match args.command {
            Some(SkillCommand::Inspect(a)) => inspect::inspect(&a.dir, a.json),
            None => skill(args, engine),
        },
        Command::Harness(args) => harness_cmd::run(&runtime(engine), &args.paths, args.json),
        Command::Bench(args) => bench_cmd::run(&runtime(engine), args),
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

/// The runtime of this process on `engine`, its workers this very executable, with Ctrl-C
/// wired to kill its workers and subprocesses.
fn runtime(engine: &str) -> Arc<Runtime> {
    let rt = Arc::new(Runtime::new(workers::current_exe_worker()).with_engine(engine));
    let handler = rt.clone();
    if let Err(e) = ctrlc::set_handler(move || handler.interrupt()) {
        tracing::warn!("cannot install the Ctrl-C handler: {e}");
    }
    rt
}

fn usage(message: &str) -> ExitCode {
    eprintln!("runx: {message}");
    ExitCode::from(EXIT_USAGE)
}

fn skill(args: SkillArgs, engine: &str) -> ExitCode {
    let Some(dir) = &args.dir else {
        return usage("name the skill package directory: runx skill DIR");
    };
    let inputs = match read_inputs(&args) {
        Ok(i) => i,
        Err(e) => {
            if args.json {
                print_json(&json!({
                    "status": "failure", "skill": null, "runner": args.runner,
                    "output": null, "receipt": null, "error": e,
                }));
            }
            return usage(&e.message);
        }
    };
    let rt = runtime(engine);
    let mut req = RunRequest::new(dir, inputs);
    req.runner = args.runner.clone();
    req.receipt_dir = args.receipt_dir.clone();
    let bar = progress::sink().map(|(sink, bar)| {
        req.progress = Some(sink);
        bar
    });
    let outcome = rt.run(&req);
    if let Some(bar) = &bar {
        progress::finish(bar);
    }
    report(&outcome, args.json);
    ExitCode::from(outcome.exit_code() as u8)
}

fn report(o: &RunOutcome, as_json: bool) {
    let receipt_path = o.receipt_path.as_ref().map(|p| p.display().to_string());
    if as_json {
        print_json(&json!({
            "status": o.status(),
            "skill": o.skill,
            "runner": o.runner,
            "output": o.output(),
            "receipt": receipt_path,
            "error": o.error(),
            "console_dropped_bytes": o.log.dropped_bytes,
        }));
        return;
    }
    for line in &o.log.lines {
        eprintln!("[{}] {}", line.level, line.message);
    }
    if o.log.truncated() {
        eprintln!(
            "[runx: {} more bytes of console output were dropped; a run keeps at most {} bytes]",
            o.log.dropped_bytes,
            runx_runtime::limits::LOG_BYTES.default
        );
    }
    match &o.result {
        Ok(out) => {
            eprintln!(
                "runx: {} {} sealed in {} ms (receipt {})",
                o.skill,
                o.runner,
                o.receipt.duration_ms,
                receipt_path.as_deref().unwrap_or("not written")
            );
            println!("{}", serde_json::to_string_pretty(out).unwrap_or_default());
        }
        Err(e) => {
            eprintln!(
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
                eprintln!("runx: receipt {p}");
            }
        }
    }
}

fn print_json(v: &Value) {
    println!("{}", serde_json::to_string(v).unwrap_or_default());
}

/// Reads `--inputs FILE|-` or the `-i` pairs (never both).
fn read_inputs(args: &SkillArgs) -> Result<Map<String, Value>, RunError> {
    match (&args.inputs, args.input.is_empty()) {
        (Some(_), false) => Err(RunError::new(
            FailureKind::Usage,
            "mixed_inputs",
            "use either --inputs or -i KEY=VALUE, not both",
        )),
        (Some(src), true) if src == "-" => {
            let mut buf = Vec::new();
            std::io::stdin().read_to_end(&mut buf).map_err(|e| {
                RunError::new(
                    FailureKind::Input,
                    "stdin",
                    format!("cannot read stdin: {e}"),
                )
            })?;
            Ok(parse_object(&buf, "stdin")?)
        }
        (Some(file), true) => {
            let cwd = std::env::current_dir()
                .and_then(|d| d.canonicalize())
                .map_err(|e| RunError::new(FailureKind::Input, "cwd", e.to_string()))?;
            let path = cwd.join(file).canonicalize().map_err(|e| {
                RunError::new(
                    FailureKind::Input,
                    "inputs_file",
                    format!("cannot open inputs file `{file}`: {e}"),
                )
            })?;
            if !path.starts_with(&cwd) {
                return Err(RunError::new(
                    FailureKind::Input,
                    "inputs_file",
                    format!(
                        "inputs file `{file}` lies outside the working directory {}",
                        cwd.display()
                    ),
                ));
            }
            let bytes = std::fs::read(&path).map_err(|e| {
                RunError::new(
                    FailureKind::Input,
                    "inputs_file",
                    format!("cannot read `{file}`: {e}"),
                )
            })?;
            Ok(parse_object(&bytes, file)?)
        }
        (None, _) => Ok(parse_kv(&args.input)?),
    }
}
