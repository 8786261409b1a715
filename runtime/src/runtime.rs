//! The runtime: one warm worker pool, and [`Runtime::run`], which runs one runner of a skill
//! package as a step: profile → runner → inputs → environment → runner → output contract →
//! receipt.

use crate::environment::{self, EnvSource};
use crate::failure::{FailureKind, RunError};
use crate::packages::Packages;
use crate::pools::{DEFAULT_ENGINE, Workers, discover_worker};
use crate::progress::ProgressSink;
use crate::receipt::{run_id, runx_receipt_of};
use crate::record::{Identity, engine_record, evidence_of};
use crate::runner::dispatch;
use crate::runner::step::{Produced, Ran, RunContext, Step};
use crate::subprocess::Capture;
use runx_profile::{Profile, Runner, check_outputs, resolve_inputs};
use runx_receipts::runx;
use runx_receipts::{
    EngineRecord, RECEIPT_DIR_ENV, RunEvidence, RunStatus, Signer, VerifyKey, now_ms,
};
use runx_worker::{CancelToken, ConsoleLog, WorkerCommand};
use serde_json::{Map, Value};
use std::path::PathBuf;
use std::time::Instant;

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
    pub progress: Option<ProgressSink>,
    /// Cancels this run alone: its worker or process group is killed and it ends
    /// `interrupted` (with a receipt). [`Runtime::interrupt`] cancels it too.
    pub cancel: CancelToken,
    /// The fixture case this run is, when a harness runs it. As in runx, the receipt's harness
    /// id is then `hrn_<case>_<runner>`, and inputs the runner refuses close the run
    /// `failed`/`input_contract_invalid` (a direct run is refused `blocked`/`preflight_refused`).
    pub case: Option<String>,
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
            cancel: CancelToken::new(),
            case: None,
        }
    }

    /// Where this run's receipt goes.
    pub fn receipt_dir(&self) -> PathBuf {
        self.receipt_dir
            .clone()
            .unwrap_or_else(|| self.workspace.join(".runx").join("receipts"))
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
    /// The output when sealed, the failure otherwise.
    pub result: Result<Value, RunError>,
    /// What this runtime recorded of the run (carried inside the receipt).
    pub evidence: RunEvidence,
    /// The sealed `runx.receipt.v1` as written (or as it would have been, when it was not).
    pub receipt: Value,
    /// Where the receipt was written. `None` when the package did not load (there is no skill
    /// to name, so no receipt is written) or when the receipt could not be written.
    pub receipt_path: Option<PathBuf>,
    /// The output of a run that met its contract but could not be sealed because its receipt
    /// could not be written (the result is then a `receipt` failure): handed back so nothing
    /// is lost.
    pub unsealed_output: Option<Value>,
    /// Console output of javascript runners.
    pub log: ConsoleLog,
    /// What a cli-tool runner wrote to stderr: the first
    /// [`CAPTURE_BYTES`](runx_profile::CAPTURE_BYTES) and the count of every byte.
    pub stderr: Option<Capture>,
}

impl RunOutcome {
    /// `sealed` or `failure`.
    pub fn status(&self) -> RunStatus {
        match self.result {
            Ok(_) => RunStatus::Sealed,
            Err(_) => RunStatus::Failure,
        }
    }

    /// The output: when sealed, or when only its receipt could not be written.
    pub fn output(&self) -> Option<&Value> {
        self.result.as_ref().ok().or(self.unsealed_output.as_ref())
    }

    /// The failure, when not sealed.
    pub fn error(&self) -> Option<&RunError> {
        self.result.as_ref().err()
    }

    /// The process exit code: 0 sealed, 64 usage/input, 130 interrupted, 1 other failures.
    pub fn exit_code(&self) -> i32 {
        self.error().map_or(0, RunError::exit_code)
    }
}

/// Runs skills. Holds one worker pool, started on first use and reused by every run.
pub struct Runtime {
    workers: Workers,
    /// Profiles and module closures kept between runs, while their files hold the same bytes.
    packages: Packages,
    instance: String,
    /// Every run's token is linked under this one.
    cancel: CancelToken,
    engine: String,
    signer: Option<Signer>,
    verify_key: Option<VerifyKey>,
}

impl Runtime {
    /// A runtime whose workers are started with `worker`.
    pub fn new(worker: WorkerCommand) -> Runtime {
        Runtime {
            workers: Workers::new(worker),
            packages: Packages::default(),
            instance: instance_id(),
            cancel: CancelToken::default(),
            engine: DEFAULT_ENGINE.to_string(),
            signer: None,
            verify_key: None,
        }
    }

    /// Checks the package in `dir` without running it: its profile, every runner's module
    /// closure and export (evaluated in a worker, not called), cli-tool commands, and what
    /// loading noticed. Every problem comes with its file, line and column.
    pub fn check(&self, dir: &std::path::Path) -> crate::check::Checked {
        crate::check::check(&self.workers, dir)
    }

    /// [`Runtime::check`] of a package whose profile the caller loaded already, from `text`
    /// (`runx_profile::load_with_text`), so it is not read twice.
    pub fn check_loaded(
        &self,
        dir: &std::path::Path,
        profile: &Profile,
        text: String,
    ) -> crate::check::Checked {
        crate::check::check_loaded(&self.workers, dir, profile, text)
    }

    /// A runtime using the worker found by [`crate::pools::discover_worker`].
    pub fn discover() -> Runtime {
        Runtime::new(discover_worker())
    }

    /// Sets the number of workers (default: CPUs, at most 16).
    pub fn with_pool_size(mut self, size: usize) -> Runtime {
        self.workers.set_size(size);
        self
    }

    /// Runs every javascript runner on `engine` (`quickjs` or `v8`), whatever its profile's
    /// `engine:` prefers; check it first with [`crate::pools::check_engine`]. Without it, a
    /// runner runs on its profile's `engine:`, else on QuickJS.
    pub fn with_engine(mut self, engine: &str) -> Runtime {
        self.workers.force_engine(engine);
        self.engine = engine.to_string();
        self
    }

    /// Signs every receipt with `signer` (see [`runx_receipts::Signer`]). Without one, receipts are
    /// sealed but unsigned.
    pub fn with_signer(mut self, signer: Signer) -> Runtime {
        self.signer = Some(signer);
        self
    }

    /// The receipt verification key cli-tool children receive
    /// (`RUNX_RECEIPT_VERIFY_KID`, `RUNX_RECEIPT_VERIFY_ED25519_PUBLIC_KEY_BASE64`); without
    /// one, the signer's public half is given, if there is a signer.
    pub fn with_verify_key(mut self, key: VerifyKey) -> Runtime {
        self.verify_key = Some(key);
        self
    }

    /// The key receipts are signed with, if any.
    pub fn signer(&self) -> Option<&Signer> {
        self.signer.as_ref()
    }

    /// The engine javascript runs on unless a runner's `engine:` picks another (and always,
    /// after [`Runtime::with_engine`]), as harness receipts record it. A run's own receipt
    /// records the engine that run used.
    pub fn engine(&self) -> EngineRecord {
        engine_record(&self.engine)
    }

    /// The opaque id of this runtime instance (part of every `artifact_ref`).
    pub fn instance(&self) -> &str {
        &self.instance
    }

    /// Whether [`Runtime::interrupt`] was called.
    pub fn is_interrupted(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Stops everything in flight: kills every worker and subprocess; runs end `interrupted`,
    /// and so does every later run. To stop one run, cancel its [`RunRequest::cancel`].
    pub fn interrupt(&self) {
        self.cancel.cancel();
        self.workers.kill_all();
    }

    /// Starts a worker of the engine set by [`Runtime::with_engine`] in the background, when
    /// its pool has none yet, so that the first javascript run finds it ready: its start
    /// overlaps the run's reading of the profile and the module closure. Without a set engine
    /// it does nothing, since which engine a run needs is only known from its profile. A cold
    /// `runx skill --engine NAME` calls it; a cli-tool run leaves the worker unused.
    pub fn prestart(&self) {
        self.workers.prestart();
    }

    /// Process ids of live workers (for tests and diagnostics).
    pub fn worker_pids(&self) -> Vec<u32> {
        self.workers.pids()
    }

    /// Runs one runner and writes its receipt. Never panics on bad input: every problem comes
    /// back as the outcome's `result`.
    ///
    /// Every run whose package loads leaves a receipt naming the skill, whatever fails after
    /// that; a run whose package cannot be loaded (no `X.yaml`, an invalid profile) leaves
    /// none. A run whose receipt cannot be written is not sealed: it fails with kind `receipt`,
    /// and its output is kept in [`RunOutcome::unsealed_output`].
    ///
    /// The request is taken by value: its inputs are resolved in place and sent to the runner,
    /// so a step holds them once, however large they are.
    pub fn run(&self, req: RunRequest) -> RunOutcome {
        self.run_or_refuse(req, None)
    }

    /// Records a run refused before its runner could start, for a reason found outside the
    /// runtime (the caller could not read its inputs file, say): nothing runs, but the refusal
    /// is reported and receipted by the same rule as [`Runtime::run`].
    pub fn refuse(&self, req: RunRequest, error: RunError) -> RunOutcome {
        self.run_or_refuse(req, Some(error))
    }

    fn run_or_refuse(&self, mut req: RunRequest, refused: Option<RunError>) -> RunOutcome {
        let started = Instant::now();
        let started_at_ms = now_ms();
        self.cancel.link(&req.cancel);
        // The run's id names the caller's inputs by their digest, taken before the inputs move
        // into the step.
        let inputs = std::mem::take(&mut req.inputs);
        let inputs_digest = runx_receipts::runx::c14n_object_digest(&inputs);
        let req = &req;
        let (mut identity, ran) = self.execute(req, inputs, refused);
        let runx_run_id = identity.runx_run_id.take();
        let Ran {
            result,
            mut provenance,
        } = ran;
        let mut result = result.map(|p| p.output);
        // Whatever a killed worker or process looked like, a cancelled run was interrupted.
        if req.cancel.is_cancelled() && result.is_err() {
            result = Err(RunError::interrupted());
        }
        if req.cancel.is_cancelled() {
            // A worker started ahead and killed with the rest is reaped before the run ends,
            // so none outlives a caller that exits next.
            self.workers.settle();
        }
        let duration_ms = runx_profile::millis(started.elapsed());
        let mut evidence = evidence_of(
            identity,
            req.case.as_deref(),
            &mut provenance,
            &result,
            started_at_ms,
            duration_ms,
        );
        // runx's own id where runx would give the run one; else this runtime's rule.
        evidence.run_id = runx_run_id.unwrap_or_else(|| run_id(&evidence, &inputs_digest));
        let mut receipt = runx_receipt_of(&evidence);
        runx::seal(&mut receipt, self.signer.as_ref());
        let dir = req.receipt_dir();
        let mut unsealed_output = None;
        // A skill name is known exactly when the package loaded.
        let receipt_path = if evidence.skill.is_empty() {
            None
        } else {
            match runx::write(&dir, &receipt) {
                Ok(p) => Some(p),
                Err(e) => {
                    let failure = RunError::new(
                        FailureKind::Receipt,
                        "receipt_write",
                        format!(
                            "the receipt could not be written under {}: {e}; the run is not sealed",
                            dir.display()
                        ),
                    );
                    // The failure itself reaches the caller; the log is for servers' operators.
                    tracing::info!("{}", failure.message);
                    if let Ok(output) = result {
                        unsealed_output = Some(output);
                        evidence.status = RunStatus::Failure;
                        evidence.failure = Some(failure.record());
                        result = Err(failure);
                    }
                    None
                }
            }
        };
        RunOutcome {
            skill: evidence.skill.clone(),
            runner: evidence.runner.clone(),
            result,
            evidence,
            receipt,
            receipt_path,
            unsealed_output,
            log: provenance.log,
            stderr: provenance.stderr,
        }
    }

    /// Loads the package, selects the runner, resolves its inputs and environment, runs it
    /// and checks its output contract; a `refused` run stops once the package and runner are
    /// known.
    fn execute(
        &self,
        req: &RunRequest,
        inputs: Map<String, Value>,
        refused: Option<RunError>,
    ) -> (Identity, Ran) {
        let (identity, ran) = self.with_step(req, inputs, refused, |step| {
            let runner = step.runner;
            checked(self.dispatch(step, &req.cancel), runner)
        });
        (identity, ran.unwrap_or_else(Ran::failed))
    }

    /// Loads the package, selects the runner, resolves its inputs and environment and hands
    /// the step to `f`. A `refused` request stops once the package and runner are known. The
    /// identity holds as much of the package and runner as was known when it stopped. A run
    /// and a dry run ([`Runtime::plan`]) both start here, so they refuse alike.
    pub(crate) fn with_step<T>(
        &self,
        req: &RunRequest,
        inputs: Map<String, Value>,
        refused: Option<RunError>,
        f: impl FnOnce(Step<'_>) -> T,
    ) -> (Identity, Result<T, RunError>) {
        let mut identity = Identity {
            skill: String::new(),
            version: String::new(),
            runner: req.runner.clone().unwrap_or_default(),
            runner_type: None,
            profile_digest: None,
            runx_run_id: None,
        };
        let profile = match self.packages.profile(&req.dir) {
            Ok(p) => p,
            Err(e) => return (identity, Err(refused.unwrap_or_else(|| e.into()))),
        };
        identity.skill = profile.skill.clone();
        identity.version = profile.version.clone();
        identity.profile_digest = Some(profile.digest.clone());
        let runner = match profile.runner(req.runner.as_deref()) {
            Ok(r) => r,
            Err(e) => return (identity, Err(refused.unwrap_or_else(|| e.into()))),
        };
        identity.runner = runner.name.clone();
        identity.runner_type = Some(runner.kind.runner_type());
        identity.runx_run_id = crate::run_identity::runx_run_id(&profile, runner, &inputs);
        if let Some(error) = refused {
            return (identity, Err(error));
        }
        if req.cancel.is_cancelled() {
            return (identity, Err(RunError::interrupted()));
        }
        let result = self.step(&profile, runner, req, inputs).map(f);
        (identity, result)
    }

    /// The step for `runner`: its inputs resolved and its environment read.
    fn step<'a>(
        &self,
        profile: &'a Profile,
        runner: &'a Runner,
        req: &'a RunRequest,
        inputs: Map<String, Value>,
    ) -> Result<Step<'a>, RunError> {
        let resolved = resolve_inputs(runner, inputs)?;
        Ok(Step {
            profile,
            runner,
            inputs: resolved.inputs,
            environment: environment::declared(runner, &req.env)?,
            env: &req.env,
            workspace: &req.workspace,
            progress: req.progress.as_ref(),
            page_source: resolved.page_source,
            transport: self.transport(req),
        })
    }

    /// The runtime variables a cli-tool child receives besides its inputs: `RUNX_RECEIPT_DIR`
    /// (absolute, since the child's cwd may differ) and the verification key when there is one.
    /// Never anything of the signing key.
    fn transport(&self, req: &RunRequest) -> Vec<(String, String)> {
        let dir = req.receipt_dir();
        let dir = std::path::absolute(&dir).unwrap_or(dir);
        let mut vars = vec![(RECEIPT_DIR_ENV.to_string(), dir.display().to_string())];
        let key = self
            .verify_key
            .clone()
            .or_else(|| self.signer.as_ref().map(Signer::verify_key));
        if let Some(key) = key {
            vars.extend(key.child_env());
        }
        vars
    }

    fn dispatch(&self, step: Step<'_>, cancel: &CancelToken) -> Ran {
        dispatch(&self.context(cancel), step)
    }

    /// What this runtime lends a runner of a run cancelled by `cancel`.
    pub(crate) fn context<'a>(&'a self, cancel: &'a CancelToken) -> RunContext<'a> {
        RunContext {
            workers: &self.workers,
            packages: &self.packages,
            cancel,
            instance: &self.instance,
        }
    }
}

/// A sealed result must meet the runner's output contract.
fn checked(ran: Ran, runner: &Runner) -> Ran {
    let Ran { result, provenance } = ran;
    let result = result.and_then(|Produced { output }| {
        check_outputs(runner, &output)?;
        Ok(Produced { output })
    });
    Ran { result, provenance }
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
