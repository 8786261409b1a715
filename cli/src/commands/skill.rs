//! `runx skill DIR [RUNNER]`: one run of one runner, its output on stdout and a summary on
//! stderr (or one JSON object with `--json`).

use crate::exit::usage;
use crate::inputs::read_inputs;
use crate::keys::{SignArgs, keys};
use crate::output::print_json;
use crate::{launch, progress, signals};
use runx_runtime::{RunOutcome, RunRequest};
use serde_json::Map;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct SkillArgs {
    #[command(subcommand)]
    pub command: Option<SkillCommand>,
    /// The skill package directory, or a bare skill name found as `skills/NAME` in the working
    /// directory.
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
    /// Print one JSON object with status, output, receipt and error on stdout.
    #[arg(long)]
    pub json: bool,
    /// Write the receipt under DIR instead of `.runx/receipts` of the working directory.
    #[arg(long, value_name = "DIR")]
    pub receipt_dir: Option<PathBuf>,
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
    /// The skill package directory, or a bare skill name found as `skills/NAME`.
    pub dir: PathBuf,
    /// Print one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Runs `runx skill DIR [RUNNER]`.
pub fn run(args: SkillArgs, engine: Option<&str>) -> ExitCode {
    let Some(dir) = &args.dir else {
        return usage("name the skill package directory: runx skill DIR");
    };
    let dir = match find_package(dir) {
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
    let inputs = read_inputs(args.inputs.as_deref(), &args.input, &args.input_json);
    // Signals are routed to the runtime only now: until the inputs are read (stdin may wait on
    // a terminal) there is nothing to clean up and the default action ends runx.
    let rt = launch::runtime(engine, keys);
    let mut req = RunRequest::new(dir, Map::new());
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

/// The package directory `dir` names, as [`package_dir`] finds it; when nothing is there, a
/// message saying where it looked and naming the nearest package it saw.
pub fn find_package(dir: &Path) -> Result<PathBuf, String> {
    let found = package_dir(dir);
    if std::fs::symlink_metadata(&found).is_ok() {
        return Ok(found);
    }
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // Packages beside the one asked for: in its parent directory, and for a bare name in
    // `skills/` too, named as the caller would name them.
    let mut candidates: Vec<String> = Vec::new();
    let mut look_in = |folder: &Path, shown: &dyn Fn(&str) -> String| {
        if let Ok(entries) = std::fs::read_dir(folder) {
            for entry in entries.flatten().take(10_000) {
                let entry_name = entry.file_name().to_string_lossy().into_owned();
                if entry.path().join(runx_profile::PROFILE_FILE).is_file() {
                    candidates.push(shown(&entry_name));
                }
            }
        }
    };
    let parent = dir.parent().filter(|p| !p.as_os_str().is_empty());
    look_in(parent.unwrap_or(Path::new(".")), &|n: &str| {
        parent.map_or(n.to_string(), |p| p.join(n).display().to_string())
    });
    let looked = if is_bare(dir) {
        look_in(Path::new("skills"), &|n: &str| n.to_string());
        format!("neither `{name}` nor `skills/{name}` exists here")
    } else {
        format!("`{}` does not exist", dir.display())
    };
    candidates.sort();
    candidates.dedup();
    let wanted = dir.display().to_string();
    Err(format!(
        "no skill package `{wanted}`: {looked}{}",
        runx_rules::did_you_mean(&wanted, candidates.iter().map(String::as_str))
    ))
}

/// Whether `dir` is one plain name (`hello`), not a path.
fn is_bare(dir: &Path) -> bool {
    let mut parts = dir.components();
    matches!(
        (parts.next(), parts.next()),
        (Some(std::path::Component::Normal(_)), None)
    )
}

/// The package directory `dir` names: `dir` itself, or, for a bare name that is not a
/// directory here, `skills/NAME` when that is one (the runx convention).
pub fn package_dir(dir: &Path) -> PathBuf {
    let bare = is_bare(dir);
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
                "runx: {} failed ({}/{}): {}",
                subject(&o.skill, &o.runner),
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
