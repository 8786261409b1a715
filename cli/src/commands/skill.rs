//! `runx skill DIR [RUNNER]`: one run of one runner, its output on stdout and a summary on
//! stderr (or one JSON object with `--json`); with `--dry-run`, what the run would do, and
//! nothing run (the plan's text is `dry_run`'s).

use super::dry_run;
use crate::exit::usage;
use crate::inputs::read_inputs;
use crate::keys::{Keys, SignArgs, keys};
use crate::output::print_json;
use crate::{launch, progress, signals};
use runx_receipts::RECEIPT_DIR_ENV;
use runx_runtime::{RunError, RunOutcome, RunRequest};
use serde_json::{Map, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct SkillArgs {
    #[command(subcommand)]
    pub command: Option<SkillCommand>,
    /// The skill package directory, its `SKILL.md` or `X.yaml` (standing for the directory),
    /// or a bare skill name found as `skills/NAME` in the working directory.
    #[arg(required = true)]
    pub dir: Option<PathBuf>,
    /// The runner to run; the package's default runner when omitted.
    pub runner: Option<String>,
    /// Read the input object from a JSON file in the working directory, or `-` for stdin.
    #[arg(long, value_name = "FILE|-")]
    pub inputs: Option<String>,
    /// One input as KEY=VALUE (VALUE is parsed as JSON when it is valid JSON, else a string).
    #[arg(short = 'i', long = "input", value_name = "KEY=VALUE")]
    pub input: Vec<String>,
    /// One input as KEY=JSON; the value must be valid JSON.
    #[arg(long = "input-json", value_name = "KEY=JSON")]
    pub input_json: Vec<String>,
    /// An input given as `--KEY VALUE` or `--KEY=VALUE` (rewritten to this by `argv`).
    #[arg(long = "direct-input", value_name = "KEY=VALUE", hide = true)]
    pub direct_input: Vec<String>,
    /// Accepted as runx accepts it: runx never prompts, with or without it.
    #[arg(long)]
    pub non_interactive: bool,
    /// Print one JSON object with status, output, receipt and error on stdout.
    #[arg(short = 'j', long)]
    pub json: bool,
    /// With `--json`, add the run's evidence as its receipt records it (`execution`: engine,
    /// limits, bundle, input and output digests, duration, failure) and leave out `next`, as
    /// runx's `--diagnostics` inlines its trace. Without `--json`, nothing changes.
    #[arg(long)]
    pub diagnostics: bool,
    /// Write the receipt under DIR (`-R DIR` and `--receipts DIR` are runx's names for it);
    /// without it, under `RUNX_RECEIPT_DIR` when that is set (as runx reads it), else under
    /// `.runx/receipts` of the working directory.
    #[arg(short = 'R', long, visible_alias = "receipts", value_name = "DIR")]
    pub receipt_dir: Option<PathBuf>,
    /// runx's stored credential profile for a runner that declares a `credential`. This
    /// runtime keeps no credential store, so the run is refused (exit 1) with what to do.
    #[arg(
        short = 'p',
        long,
        visible_alias = "credential-profile",
        value_name = "NAME"
    )]
    pub profile: Option<String>,
    /// Show what the run would do (argv, cwd, environment names, staged files, module closure,
    /// artifact and pages, limits) without starting anything or writing a receipt.
    #[arg(long)]
    pub dry_run: bool,
    /// Workers the run's pool may have (1–16; default: one per CPU). A map/fold runner maps
    /// its pages on at most this many at once.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=16))]
    pub pool_size: Option<u16>,
    #[command(flatten)]
    pub sign: SignArgs,
}

#[derive(clap::Subcommand)]
pub enum SkillCommand {
    /// Describe a package: runners, inputs, outputs, environment and the limits they run under.
    Inspect(InspectArgs),
    /// Check packages before any run: module closures, exports (loaded in a worker, not
    /// called), commands, templates and declarations; each problem with file:line:column.
    Check(super::check::CheckArgs),
}

#[derive(clap::Args)]
pub struct InspectArgs {
    /// The skill package directory, its `SKILL.md` or `X.yaml`, or a bare skill name found
    /// as `skills/NAME`.
    pub dir: PathBuf,
    /// Print one JSON object on stdout.
    #[arg(short = 'j', long)]
    pub json: bool,
}

/// Runs `runx skill DIR [RUNNER]`.
pub fn run(args: SkillArgs, engine: Option<&str>) -> ExitCode {
    let Some(dir) = &args.dir else {
        return usage("name the skill package directory: runx skill DIR");
    };
    let dir = match crate::package::find_package(dir) {
        Ok(dir) => dir,
        Err(message) => {
            if args.json {
                let e = runx_runtime::RunError::new(
                    runx_runtime::FailureKind::Profile,
                    "not_a_package",
                    message.clone(),
                );
                print_json(&runx_runtime::refused_json(args.runner.as_deref(), &e));
            }
            return usage(&message);
        }
    };
    if let Some(profile) = &args.profile {
        return refuse_profile(profile, args.runner.as_deref(), args.json);
    }
    // A bad key refuses the run before anything is read or receipted: there is no one to sign
    // the refusal with.
    let keys = match keys(&args.sign) {
        Ok(k) => k,
        Err(e) => {
            if args.json {
                print_json(&runx_runtime::refused_json(args.runner.as_deref(), &e));
            }
            return usage(&e.message);
        }
    };
    let inputs = read_inputs(
        args.inputs.as_deref(),
        &[args.input.as_slice(), args.direct_input.as_slice()].concat(),
        &args.input_json,
    );
    if args.dry_run {
        return dry_run(&args, &dir, engine, keys, inputs);
    }
    // Signals are routed to the runtime only now: until the inputs are read (stdin may wait on
    // a terminal) there is nothing to clean up and the default action ends runx.
    let mut configured = launch::configured_runtime(engine, keys);
    if let Some(n) = args.pool_size {
        configured = configured.with_pool_size(usize::from(n));
    }
    let rt = launch::install(configured);
    let mut req = request(&args, &dir);
    let outcome = match inputs {
        Ok(inputs) => {
            req.inputs = inputs;
            // With `--engine`, the worker starts while the profile and module are read.
            rt.prestart();
            let bar = progress::sink().map(|(sink, bar)| {
                req.progress = Some(sink);
                bar
            });
            let outcome = rt.run(req);
            if let Some(bar) = &bar {
                progress::finish(bar);
            }
            outcome
        }
        // Refused before anything runs, but receipted like any run of a known package.
        Err(e) => rt.refuse(req, e),
    };
    report(&outcome, args.json, args.diagnostics);
    if let Some(code) = signals::exit_code() {
        return ExitCode::from(code);
    }
    ExitCode::from(outcome.exit_code() as u8)
}

/// `--dry-run`: plans the run `args` ask for and prints the plan, or the failure the run would
/// be refused with (without its receipt), and exits as the refused run would.
fn dry_run(
    args: &SkillArgs,
    dir: &Path,
    engine: Option<&str>,
    keys: Keys,
    inputs: Result<Map<String, Value>, RunError>,
) -> ExitCode {
    // Nothing is started, so there is nothing for a signal to clean up: its default action
    // ends runx at once.
    let rt = launch::configured_runtime(engine, keys);
    let mut req = request(args, dir);
    let outcome = match inputs {
        Ok(inputs) => {
            req.inputs = inputs;
            rt.plan(&req)
        }
        Err(e) => rt.refuse_plan(&req, e),
    };
    if args.json {
        print_json(&runx_runtime::plan_json(&outcome));
    } else {
        match &outcome.result {
            Ok(plan) => dry_run::print_plan(plan),
            Err(e) => {
                errln!(
                    "runx: {} failed ({}/{}): {}",
                    subject(&outcome.skill, &outcome.runner),
                    e.kind,
                    e.code,
                    one_line(&e.message)
                );
                errln!("runx: dry run: nothing was started and no receipt was written");
            }
        }
    }
    ExitCode::from(u8::try_from(outcome.exit_code()).unwrap_or(1))
}

/// The request for the run `args` ask for, its inputs not yet read.
fn request(args: &SkillArgs, dir: &Path) -> RunRequest {
    let mut req = RunRequest::new(dir, Map::new());
    req.runner = args.runner.clone();
    req.receipt_dir = crate::store::receipt_dir(
        args.receipt_dir.as_deref(),
        std::env::var_os(RECEIPT_DIR_ENV),
    );
    req
}

/// `-p NAME`: refused as runx refuses a profile it cannot use, exit 1 before anything is read
/// or receipted. runx reads NAME from its own credential store (`runx credential`); this
/// runtime has none and hands a runner no credential.
fn refuse_profile(profile: &str, runner: Option<&str>, as_json: bool) -> ExitCode {
    let e = RunError::new(
        runx_runtime::FailureKind::Environment,
        "credential_error",
        format!(
            "--profile {profile}: this runtime keeps no credential profiles and delivers no \
             credentials (runx reads them from its own store, `runx credential`); run without \
             --profile and give the runner what it needs through the environment names it \
             declares, or run the package with runx"
        ),
    );
    if as_json {
        print_json(&runx_runtime::refused_json(runner, &e));
    }
    errln!("runx: {}", e.message);
    ExitCode::from(1)
}

fn report(o: &RunOutcome, as_json: bool, diagnostics: bool) {
    if as_json {
        let mut v = runx_runtime::run_json(o);
        if diagnostics && let Some(object) = v.as_object_mut() {
            // runx inlines its trace and leaves out the next command; the trace here is the
            // evidence the receipt carries.
            object.remove("next");
            object.insert(
                "execution".to_string(),
                serde_json::to_value(&o.evidence).unwrap_or(Value::Null),
            );
        }
        print_json(&v);
        // stdout is the result; a caller that keeps only stderr (runx's Python SDK on a
        // failed run) still learns why.
        if let Err(e) = &o.result {
            failure_line(o, e);
        }
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
                o.evidence.duration_ms,
                receipt_path.as_deref().unwrap_or("not written")
            );
            outln!("{}", serde_json::to_string_pretty(out).unwrap_or_default());
        }
        Err(e) => {
            failure_line(o, e);
            if let Some(p) = receipt_path {
                errln!("runx: receipt {p}");
            }
            // Produced, but its receipt could not be written: the output is not lost.
            if let Some(out) = &o.unsealed_output {
                outln!("{}", serde_json::to_string_pretty(out).unwrap_or_default());
            }
        }
    }
}

/// `runx: SKILL RUNNER failed (kind/code): message` on stderr, on one line.
fn failure_line(o: &RunOutcome, e: &RunError) {
    errln!(
        "runx: {} failed ({}/{}): {}",
        subject(&o.skill, &o.runner),
        e.kind,
        e.code,
        one_line(&e.message)
    );
}

/// `message` on one line: its lines (a thrown error's stack frames, say) joined by ` | `. A
/// caller that keeps the last line of stderr, or reads it line by line, gets the whole summary
/// in one line; the message as it was is in the receipt and in `--json`.
fn one_line(message: &str) -> String {
    message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" | ")
}

/// What failed, as the message names it: `hello greet`, or `the skill` before a package was
/// read (never an empty name and a double space).
fn subject(skill: &str, runner: &str) -> String {
    match (skill.is_empty(), runner.is_empty()) {
        (true, true) => "the skill".to_string(),
        (true, false) => format!("runner `{runner}`"),
        (false, true) => skill.to_string(),
        (false, false) => format!("{skill} {runner}"),
    }
}

#[cfg(test)]
mod subject_tests {
    use super::subject;

    #[test]
    fn a_failure_names_what_it_knows() {
        assert_eq!(subject("", ""), "the skill");
        assert_eq!(subject("hello", ""), "hello");
        assert_eq!(subject("", "greet"), "runner `greet`");
        assert_eq!(subject("hello", "greet"), "hello greet");
    }
}
