//! The worker pool of one runtime, started on first use, and how its worker executable is found.

use crate::failure::RunError;
use runx_worker::pool::{Pool, PoolConfig};
use runx_worker::process::WorkerCommand;
use std::path::PathBuf;
use std::sync::OnceLock;

/// Environment variable naming a worker executable, overriding discovery.
pub const WORKER_ENV: &str = "RUNX_WORKER";

/// The engine a worker uses when none is named.
pub use runx_worker::serve::DEFAULT_ENGINE;

/// The most workers a runtime's pool may have.
pub use runx_worker::pool::MAX_WORKERS;

/// A lazily started pool of worker processes.
pub(crate) struct Workers {
    command: WorkerCommand,
    size: Option<usize>,
    pool: OnceLock<Result<Pool, String>>,
}

impl Workers {
    pub(crate) fn new(command: WorkerCommand) -> Workers {
        Workers {
            command,
            size: None,
            pool: OnceLock::new(),
        }
    }

    pub(crate) fn set_size(&mut self, size: usize) {
        self.size = Some(size);
    }

    pub(crate) fn set_engine(&mut self, engine: &str) {
        self.command = self.command.clone().engine(engine);
    }

    /// The pool, started on first use.
    pub(crate) fn pool(&self) -> Result<&Pool, RunError> {
        self.pool
            .get_or_init(|| {
                let mut cfg = PoolConfig::new(self.command.clone());
                if let Some(n) = self.size {
                    cfg = cfg.size(n);
                }
                Pool::new(cfg).map_err(|e| format!("cannot create the worker pool: {e}"))
            })
            .as_ref()
            .map_err(|e| RunError::internal("pool", e.clone()))
    }

    /// Kills every worker, if the pool was started.
    pub(crate) fn kill_all(&self) {
        if let Some(Ok(pool)) = self.pool.get() {
            pool.kill_all();
        }
    }

    /// Process ids of live workers.
    pub(crate) fn pids(&self) -> Vec<u32> {
        match self.pool.get() {
            Some(Ok(p)) => p.worker_pids(),
            _ => Vec::new(),
        }
    }
}

/// Whether the engine `name` is built into this executable; the error says which are.
pub fn check_engine(name: &str) -> Result<(), String> {
    runx_worker::serve::engine_by_name(name)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Environment variable that lets workers serve where the kernel cannot install their seccomp
/// filter (`1`); without it such a worker refuses to start.
pub const ALLOW_NO_SECCOMP_ENV: &str = "RUNX_ALLOW_NO_SECCOMP";

/// Runs this process as a worker with the engine `engine` (the hidden `runx __worker`), and
/// returns its exit code.
pub fn worker_main(engine: &str, allow_no_seccomp: bool) -> i32 {
    let options = runx_worker::sandbox::SandboxOptions { allow_no_seccomp };
    runx_worker::serve::worker_main_with_options(engine, options)
}

/// `command` with the sandbox options the caller's environment asks for.
fn with_sandbox_options(command: WorkerCommand) -> WorkerCommand {
    match std::env::var(ALLOW_NO_SECCOMP_ENV) {
        Ok(v) if v == "1" => command.arg(runx_worker::sandbox::ALLOW_NO_SECCOMP),
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
