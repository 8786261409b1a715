//! The worker pools of one runtime (one per engine, each started on first use), the choice of
//! engine for a runner, and how the worker executable is found.

use crate::failure::RunError;
use runx_profile::{ProfileError, Runner};
pub use runx_worker::engines_built;
use runx_worker::{ENGINES, Pool, PoolConfig, WorkerCommand};
use std::path::PathBuf;
use std::sync::OnceLock;

/// Environment variable naming a worker executable, overriding discovery.
pub const WORKER_ENV: &str = "RUNX_WORKER";

/// The engine a worker uses when none is named.
pub use runx_worker::DEFAULT_ENGINE;

/// The most workers a runtime's pool may have.
pub use runx_worker::MAX_WORKERS;

/// The worker pools of a runtime: one per engine, each started on first use.
pub(crate) struct Workers {
    command: WorkerCommand,
    size: Option<usize>,
    /// The engine every javascript runner runs on, whatever its profile prefers.
    forced: Option<String>,
    /// One slot per known engine, in [`ENGINES`] order.
    pools: Vec<OnceLock<Result<Pool, String>>>,
}

impl Workers {
    pub(crate) fn new(command: WorkerCommand) -> Workers {
        Workers {
            command,
            size: None,
            forced: None,
            pools: ENGINES.iter().map(|_| OnceLock::new()).collect(),
        }
    }

    pub(crate) fn set_size(&mut self, size: usize) {
        self.size = Some(size);
    }

    pub(crate) fn force_engine(&mut self, engine: &str) {
        self.forced = Some(engine.to_string());
    }

    /// The engine a javascript runner runs on: the caller's choice, else the profile's
    /// `engine:`, else the default; refused when this executable does not have it.
    pub(crate) fn engine_for(
        &self,
        runner: &Runner,
        preferred: Option<&str>,
    ) -> Result<String, RunError> {
        let (engine, why) = match (&self.forced, preferred) {
            (Some(forced), _) => (forced.as_str(), "the caller asked for it"),
            (None, Some(p)) => (p, "its profile asks for it with `engine:`"),
            (None, None) => (DEFAULT_ENGINE, "the default"),
        };
        if engines_built().contains(&engine) {
            return Ok(engine.to_string());
        }
        Err(ProfileError::EngineUnavailable {
            runner: runner.name.clone(),
            engine: engine.to_string(),
            why,
            built: engines_built().join(", "),
        }
        .into())
    }

    /// The pool of `engine`, started on first use.
    pub(crate) fn pool(&self, engine: &str) -> Result<&Pool, RunError> {
        let slot = ENGINES
            .iter()
            .position(|e| *e == engine)
            .and_then(|i| self.pools.get(i))
            .ok_or_else(|| RunError::internal("pool", format!("no pool for engine `{engine}`")))?;
        slot.get_or_init(|| {
            let mut cfg = PoolConfig::new(self.command.clone().engine(engine));
            if let Some(n) = self.size {
                cfg = cfg.size(n);
            }
            Pool::new(cfg).map_err(|e| format!("cannot create the worker pool: {e}"))
        })
        .as_ref()
        .map_err(|e| RunError::internal("pool", e.clone()))
    }

    /// Starts a worker of the forced engine ahead of its first call ([`Pool::start_ahead`]);
    /// nothing when no engine is forced or it is not built.
    pub(crate) fn prestart(&self) {
        if let Some(engine) = self.forced.as_deref()
            && engines_built().contains(&engine)
            && let Ok(pool) = self.pool(engine)
        {
            pool.start_ahead();
        }
    }

    /// Waits until no worker of any pool is still being started ahead ([`Pool::settle`]).
    pub(crate) fn settle(&self) {
        for pool in self.started() {
            pool.settle();
        }
    }

    fn started(&self) -> impl Iterator<Item = &Pool> {
        self.pools.iter().filter_map(|p| p.get()?.as_ref().ok())
    }

    /// Kills every worker of every started pool.
    pub(crate) fn kill_all(&self) {
        for pool in self.started() {
            pool.kill_all();
        }
    }

    /// Process ids of live workers.
    pub(crate) fn pids(&self) -> Vec<u32> {
        self.started().flat_map(Pool::worker_pids).collect()
    }
}

/// Whether the engine `name` is built into this executable; the error says which are.
pub fn check_engine(name: &str) -> Result<(), String> {
    runx_worker::engine_by_name(name)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Environment variable that lets workers serve where the kernel cannot install their seccomp
/// filter (`1`); without it such a worker refuses to start.
pub const ALLOW_NO_SECCOMP_ENV: &str = "RUNX_ALLOW_NO_SECCOMP";

/// Runs this process as a worker with the engine `engine` (the hidden `runx __worker`), and
/// returns its exit code.
pub fn worker_main(engine: &str, allow_no_seccomp: bool) -> i32 {
    let options = runx_worker::SandboxOptions { allow_no_seccomp };
    runx_worker::worker_main_with_options(engine, options)
}

/// `command` with the sandbox options the caller's environment asks for.
fn with_sandbox_options(command: WorkerCommand) -> WorkerCommand {
    match std::env::var(ALLOW_NO_SECCOMP_ENV) {
        Ok(v) if v == "1" => command.arg(runx_worker::ALLOW_NO_SECCOMP),
        _ => command,
    }
}

/// The worker for a process that is itself a worker executable (`runx`): `RUNX_WORKER` when
/// set, else the current executable with its `__worker` subcommand; with
/// `--allow-no-seccomp` when `RUNX_ALLOW_NO_SECCOMP=1`.
pub fn current_exe_worker() -> WorkerCommand {
    if let Some(p) = std::env::var_os(WORKER_ENV) {
        return with_sandbox_options(WorkerCommand::new(p));
    }
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("runx"));
    with_sandbox_options(WorkerCommand::new(exe).arg("__worker"))
}

/// The worker for an embedding program: `RUNX_WORKER` when set, else `runx-worker` next to the
/// current executable, else (cargo's test binaries sit one directory below) `runx-worker` or
/// `runx __worker` one directory up, else the current executable's `__worker` subcommand.
pub fn discover_worker() -> WorkerCommand {
    with_sandbox_options(find_worker())
}

fn find_worker() -> WorkerCommand {
    if let Some(p) = std::env::var_os(WORKER_ENV) {
        return WorkerCommand::new(p);
    }
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("runx"));
    if let Some(dir) = exe.parent() {
        let sibling = dir.join("runx-worker");
        if sibling.is_file() {
            return WorkerCommand::new(sibling);
        }
        if let Some(up) = dir.parent() {
            let worker = up.join("runx-worker");
            if worker.is_file() {
                return WorkerCommand::new(worker);
            }
            let runx = up.join("runx");
            if runx.is_file() {
                return WorkerCommand::new(runx).arg("__worker");
            }
        }
    }
    WorkerCommand::new(exe).arg("__worker")
}
