//! The runtime: one warm worker pool, and [`Runtime::run`], which runs one runner of a skill
//! package as a step: profile → inputs → environment → runner → output contract → receipt.

use crate::digest::digest;
use crate::error::RunError;
use crate::inputs::{check_outputs, resolve_inputs};
use crate::profile::{self, JsRunner, Profile, ProfileError, Runner, RunnerKind};
use crate::receipt::Receipt;
use crate::subprocess::CancelToken;
use runx_worker::bundle::{self, ModuleBundle};
use runx_worker::engine::ConsoleLog;
use runx_worker::limits::Limits;
use runx_worker::pool::{Pool, PoolConfig};
use runx_worker::process::{Call, WorkerCommand};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

/// Environment variable naming a worker executable, overriding discovery.
pub const WORKER_ENV: &str = "RUNX_WORKER";

/// Where declared environment names are read from.
#[derive(Clone, Debug, Default)]
pub enum EnvSource {
    /// The calling process's environment (only declared names are read).
    #[default]
    Process,
    /// Exactly these values; nothing else is visible (harness cases, embedders).
    Map(BTreeMap<String, String>),
}

impl EnvSource {
    /// The value of `name`, if set.
    pub fn get(&self, name: &str) -> Option<String> {
        match self {
            EnvSource::Process => std::env::var(name).ok(),
            EnvSource::Map(m) => m.get(name).cloned(),
        }
    }
}

/// One run of one runner.
#[derive(Clone, Debug)]
pub struct RunRequest {
    /// The skill package directory.
    pub dir: PathBuf,
    /// The runner; the default runner when `None`.
    pub runner: Option<String>,
    /// The caller's inputs, before defaults are applied.
    pub inputs: Map<String, Value>,
    /// Where declared environment names come from.
    pub env: EnvSource,
    /// The workspace root (`RUNX_CWD`): page paths and receipts resolve against it.
    pub workspace: PathBuf,
    /// Where receipts go; `<workspace>/.runx/receipts` when `None`.
    pub receipt_dir: Option<PathBuf>,
    /// Called after each page of a paged run.
    pub progress: Option<crate::paged::ProgressSink>,
}

impl RunRequest {
    /// A request for the default runner of `dir` with `inputs`, the process environment and the
    /// current directory (or `RUNX_CWD`) as workspace.
    pub fn new(dir: impl Into<PathBuf>, inputs: Map<String, Value>) -> RunRequest {
        RunRequest {
            dir: dir.into(),
            runner: None,
            inputs,
            env: EnvSource::Process,
            workspace: default_workspace(),
            receipt_dir: None,
            progress: None,
        }
    }
}

/// The workspace root: `RUNX_CWD`, else `INIT_CWD`, else the current directory.
pub fn default_workspace() -> PathBuf {
    std::env::var_os("RUNX_CWD")
        .or_else(|| std::env::var_os("INIT_CWD"))
        .map(PathBuf::from)
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| PathBuf::from("."))
}

/// How a run ended.
#[derive(Clone, Debug)]
pub struct RunOutcome {
    /// The package's skill name (empty when the profile did not load).
    pub skill: String,
    /// The runner that ran (or was asked for).
    pub runner: String,
    /// The output, when sealed.
    pub output: Option<Value>,
    /// The failure, when not sealed.
    pub error: Option<RunError>,
    /// The receipt as written.
    pub receipt: Receipt,
    /// Where the receipt was written, when it could be.
    pub receipt_path: Option<PathBuf>,
    /// Console output of javascript runners.
    pub log: ConsoleLog,
}

impl RunOutcome {
    /// `sealed` or `failure`.
    pub fn status(&self) -> &'static str {
        if self.error.is_none() {
            "sealed"
        } else {
            "failure"
        }
    }

    /// The process exit code: 0 sealed, 64 usage/input, 130 interrupted, 1 other failures.
    pub fn exit_code(&self) -> i32 {
        self.error.as_ref().map_or(0, RunError::exit_code)
    }
}

/// What a runner produced before the contract checks.
pub(crate) struct Produced {
    pub output: Value,
    pub log: ConsoleLog,
}

/// A runner about to run: its package and declaration, and the inputs and environment values
/// it was given (defaults applied, declared names only).
pub(crate) struct Step<'a> {
    pub profile: &'a Profile,
    pub runner: &'a Runner,
    pub inputs: Map<String, Value>,
    pub environment: BTreeMap<String, String>,
    pub req: &'a RunRequest,
}

/// Runs skills. Holds one worker pool, started on first use and reused by every run.
pub struct Runtime {
    worker: WorkerCommand,
    pool_size: Option<usize>,
    pool: OnceLock<Result<Pool, String>>,
    instance: String,
    interrupted: Arc<AtomicBool>,
    cancel: CancelToken,
}

impl Runtime {
    /// A runtime whose workers are started with `worker`.
    pub fn new(worker: WorkerCommand) -> Runtime {
        Runtime {
            worker,
            pool_size: None,
            pool: OnceLock::new(),
            instance: instance_id(),
            interrupted: Arc::new(AtomicBool::new(false)),
            cancel: CancelToken::default(),
        }
    }

    /// A runtime using the worker named by `RUNX_WORKER`, else `runx-worker` next to the
    /// current executable, else the current executable's `__worker` subcommand.
    pub fn discover() -> Runtime {
        Runtime::new(discover_worker())
    }

    /// Sets the number of workers (default: CPUs, at most 16).
    pub fn with_pool_size(mut self, size: usize) -> Runtime {
        self.pool_size = Some(size);
        self
    }

    /// The opaque id of this runtime instance (part of every `artifact_ref`).
    pub fn instance(&self) -> &str {
        &self.instance
    }

    /// Stops everything in flight: kills every worker and subprocess; runs end `interrupted`.
    pub fn interrupt(&self) {
        self.interrupted.store(true, Ordering::SeqCst);
        self.cancel.cancel();
        if let Some(Ok(pool)) = self.pool.get() {
            pool.kill_all();
        }
    }

    /// Process ids of live workers (for tests and diagnostics).
    pub fn worker_pids(&self) -> Vec<u32> {
        match self.pool.get() {
            Some(Ok(p)) => p.worker_pids(),
            _ => Vec::new(),
        }
    }

    pub(crate) fn pool(&self) -> Result<&Pool, RunError> {
        self.pool
            .get_or_init(|| {
                let mut cfg = PoolConfig::new(self.worker.clone());
                if let Some(n) = self.pool_size {
                    cfg = cfg.size(n);
                }
                Pool::new(cfg).map_err(|e| format!("cannot create the worker pool: {e}"))
            })
            .as_ref()
            .map_err(|e| RunError::new("internal", "pool", e.clone()))
    }

    pub(crate) fn cancel_token(&self) -> &CancelToken {
        &self.cancel
    }

    /// Runs one runner and writes its receipt. Never panics on bad input: every problem comes
    /// back as the outcome's `error`.
    pub fn run(&self, req: &RunRequest) -> RunOutcome {
        let started = Instant::now();
        let mut receipt = Receipt::start("", "", req.runner.as_deref().unwrap_or(""), "");
        let mut log = ConsoleLog::default();
        let result = self.run_inner(req, &mut receipt, &mut log);
        let (output, mut error) = match result {
            Ok(v) => (Some(v), None),
            Err(e) => (None, Some(e)),
        };
        if self.interrupted.load(Ordering::SeqCst) && error.is_some() {
            error = Some(RunError::new(
                "interrupted",
                "interrupted",
                "the run was interrupted; its workers and processes were killed",
            ));
        }
        receipt.status = if error.is_none() { "sealed" } else { "failure" }.to_string();
        receipt.failure = error.clone();
        receipt.output_digest = output.as_ref().map(digest);
        receipt.duration_ms = started.elapsed().as_millis() as u64;
        if log.truncated() {
            receipt.console_dropped_bytes = Some(log.dropped_bytes);
        }
        let dir = req
            .receipt_dir
            .clone()
            .unwrap_or_else(|| req.workspace.join(".runx").join("receipts"));
        let receipt_path = match receipt.write(&dir) {
            Ok(p) => Some(p),
            Err(e) => {
                tracing::warn!("cannot write the receipt under {}: {e}", dir.display());
                None
            }
        };
        RunOutcome {
            skill: receipt.skill.clone(),
            runner: receipt.runner.clone(),
            output,
            error,
            receipt,
            receipt_path,
            log,
        }
    }

    fn run_inner(
        &self,
        req: &RunRequest,
        receipt: &mut Receipt,
        log: &mut ConsoleLog,
    ) -> Result<Value, RunError> {
        let profile = profile::load(&req.dir)?;
        receipt.skill = profile.skill.clone();
        receipt.version = profile.version.clone();
        let runner = profile.runner(req.runner.as_deref())?;
        receipt.runner = runner.name.clone();
        receipt.runner_type = runner.kind.type_name().to_string();
        let step = Step {
            profile: &profile,
            runner,
            inputs: resolve_inputs(runner, req.inputs.clone())?,
            environment: declared_environment(runner, &req.env)?,
            req,
        };
        let produced = match &runner.kind {
            RunnerKind::Javascript(js) => self.run_javascript(step, js, receipt)?,
            RunnerKind::CliTool(tool) => crate::cli_tool::run(self, step, tool, receipt)?,
            RunnerKind::Unsupported(ty) => {
                return Err(ProfileError::UnsupportedRunner {
                    runner: runner.name.clone(),
                    ty: ty.clone(),
                }
                .into());
            }
        };
        *log = produced.log;
        check_outputs(runner, &produced.output)?;
        Ok(produced.output)
    }

    fn run_javascript(
        &self,
        step: Step<'_>,
        js: &JsRunner,
        receipt: &mut Receipt,
    ) -> Result<Produced, RunError> {
        let limits = Limits::default().with_wall(step.runner.timeout);
        receipt.limits = limits
            .entries()
            .into_iter()
            .map(|(l, v)| (l.name().to_string(), v))
            .collect();
        let bundle = collect_bundle(&step.profile.dir, &js.module, &limits)?;
        let bundle_digest = bundle.digest();
        receipt.bundle_digest = Some(bundle_digest.clone());
        let bundle = Arc::new(bundle);
        if let Some(pages) = &js.pages {
            return crate::paged::run(
                self,
                crate::paged::PagedRun {
                    step,
                    js,
                    pages,
                    bundle,
                    bundle_digest,
                    limits,
                },
                receipt,
            );
        }
        let input_value = Value::Object(step.inputs);
        receipt.input_digest = Some(digest(&input_value));
        let input = serde_json::to_vec(&input_value)
            .map_err(|e| RunError::new("internal", "encode", e.to_string()))?;
        if input.len() > limits.input_bytes {
            return Err(RunError::new(
                "resource_limit",
                "input_bytes",
                format!(
                    "the inputs are {} bytes of JSON; the worker accepts at most {} bytes",
                    input.len(),
                    limits.input_bytes
                ),
            ));
        }
        let call = Call {
            bundle,
            bundle_digest,
            export: js.export.clone(),
            input,
            page: None,
            environment: step.environment,
            limits,
            idempotent: true,
        };
        let reply = self
            .pool()?
            .call(&call)
            .map_err(|e| RunError::from(e.failure))?;
        let output = serde_json::from_slice(&reply.output).map_err(|e| {
            RunError::new(
                "output_rejected",
                "invalid_json",
                format!("the worker returned invalid JSON: {e}"),
            )
        })?;
        Ok(Produced {
            output,
            log: reply.log,
        })
    }
}

/// Collects the module closure of a javascript runner, as a typed run failure.
pub(crate) fn collect_bundle(
    dir: &Path,
    module: &str,
    limits: &Limits,
) -> Result<ModuleBundle, RunError> {
    bundle::collect(dir, module, limits.source_bytes).map_err(|e| {
        let code = match &e {
            bundle::BundleError::Rejected(_) => "specifier",
            bundle::BundleError::File { .. } => "module_file",
            bundle::BundleError::TooLarge { .. } => "source_bytes",
            bundle::BundleError::Syntax { .. } => "syntax",
        };
        let kind = if code == "source_bytes" {
            "resource_limit"
        } else {
            "module_rejected"
        };
        RunError::new(kind, code, e.to_string())
    })
}

/// Reads the runner's declared environment names; a missing required name is a failure before
/// anything starts.
pub(crate) fn declared_environment(
    runner: &Runner,
    env: &EnvSource,
) -> Result<BTreeMap<String, String>, RunError> {
    let mut out = BTreeMap::new();
    for name in &runner.environment.required {
        match env.get(name) {
            Some(v) => {
                out.insert(name.clone(), v);
            }
            None => {
                return Err(RunError::new(
                    "environment",
                    "missing_environment",
                    format!(
                        "runner `{}` requires the environment variable `{name}`, which is not set; set it and run again",
                        runner.name
                    ),
                ));
            }
        }
    }
    for name in &runner.environment.optional {
        if let Some(v) = env.get(name) {
            out.insert(name.clone(), v);
        }
    }
    Ok(out)
}

fn discover_worker() -> WorkerCommand {
    if let Some(p) = std::env::var_os(WORKER_ENV) {
        return WorkerCommand::new(p);
    }
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("runx"));
    if let Some(dir) = exe.parent() {
        let sibling = dir.join("runx-worker");
        if sibling.is_file() {
            return WorkerCommand::new(sibling);
        }
        // Test binaries live one level below the executables in cargo's target directory.
        if let Some(up) = dir.parent() {
            for name in ["runx-worker", "runx"] {
                let p = up.join(name);
                if p.is_file() {
                    let cmd = WorkerCommand::new(&p);
                    return if name == "runx" {
                        cmd.arg("__worker")
                    } else {
                        cmd
                    };
                }
            }
        }
    }
    WorkerCommand::new(exe).arg("__worker")
}

/// A per-instance id: random bytes from the kernel, or time and pid where those are unavailable.
fn instance_id() -> String {
    use std::io::Read;
    let mut bytes = [0u8; 8];
    let random = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes));
    if random.is_err() {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        bytes = ((now as u64) ^ (u64::from(std::process::id()) << 32)).to_le_bytes();
    }
    hex::encode(bytes)
}
