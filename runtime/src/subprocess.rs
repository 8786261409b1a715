//! Supervision of one `cli-tool` skill process.
//!
//! This module implements the Unix side of the v1 subprocess ABI as plain-data
//! functions; manifest/profile parsing happens elsewhere.
//!
//! * [`normalize_input_name`] and [`stage_inputs`] deliver the input object as
//!   files in a private `0700` directory, plus optional inline mirrors.
//! * [`build_env`] reconstructs the deny-by-default child environment.
//! * [`resolve_command`] finds the executable without a shell.
//! * [`run`] starts the process in its own process group, feeds stdin, drains
//!   stdout/stderr concurrently (bounded prefix, full byte count and SHA-256),
//!   enforces the timeout / cancellation (SIGTERM to the group, SIGKILL after
//!   the grace period), kills descendants left behind after the leader exits
//!   and always reaps the child.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid};
use nix::unistd::Pid;
use sha2::{Digest, Sha256};

/// Bytes of each output stream retained in memory (the rest is counted and hashed).
pub const CAPTURE_LIMIT: usize = 8 * 1024 * 1024;

/// Time between SIGTERM and SIGKILL when a run times out or is cancelled.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(2);

/// Names copied from the caller's environment when present (process launch/user
/// paths, certificates, locale/terminal). No proxy variables: proxy URLs may
/// carry credentials, so a skill that needs one declares it explicitly.
pub const BASELINE_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "TMPDIR",
    "TMP",
    "TEMP",
    "USER",
    "LOGNAME",
    "CURL_CA_BUNDLE",
    "GIT_SSL_CAINFO",
    "NODE_EXTRA_CA_CERTS",
    "REQUESTS_CA_BUNDLE",
    "SSL_CERT_DIR",
    "SSL_CERT_FILE",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "TERM",
    "COLORTERM",
    "TZ",
];

/// `RUNX_INPUTS_JSON` is only set when the serialized object is at most this many bytes.
pub const INPUTS_JSON_INLINE_LIMIT: usize = 48 * 1024;

/// `RUNX_INPUT_<NAME>` is only set when the value text is at most this many bytes.
pub const INPUT_INLINE_LIMIT: usize = 8 * 1024;

/// How long the output readers may take to reach end-of-file once the process
/// group has been killed and the leader reaped. Only a process that escaped the
/// group (e.g. via `setsid`) while holding a pipe open can exceed this.
const DRAIN_DEADLINE: Duration = Duration::from_secs(2);

/// Longest sleep between two checks of the leader / deadline / cancel token.
const MAX_POLL: Duration = Duration::from_millis(20);

/// Name of the complete input object inside the staging directory.
const INPUTS_FILE: &str = "inputs.json";

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

/// Everything that can stop a subprocess run before or while it is supervised.
///
/// A process that starts and then fails (non-zero exit, signal, timeout,
/// cancellation) is not an error: it is reported through [`Termination`].
#[derive(Debug, thiserror::Error)]
pub enum SubprocessError {
    /// The command could not be located or is not executable.
    #[error(
        "command `{command}` cannot be started: {reason}; install it, fix the command path, or adjust PATH"
    )]
    NotFound { command: String, reason: String },

    /// A required declared environment variable is absent from the caller's environment.
    #[error(
        "required environment variable `{name}` is not set; export it in the calling environment (or remove it from environment.required)"
    )]
    MissingEnvironment { name: String },

    /// A declared environment variable name cannot be used as an environment key.
    #[error(
        "declared environment variable name `{name}` is invalid ({reason}); declare a plain variable name"
    )]
    InvalidEnvironmentName { name: String, reason: &'static str },

    /// Two input keys normalise to the same `RUNX_INPUT_<NAME>` variable.
    #[error(
        "input keys `{first}` and `{second}` both map to RUNX_INPUT_{name}; rename one of them so their normalised names differ"
    )]
    InputNameCollision {
        first: String,
        second: String,
        name: String,
    },

    /// An input key has no ASCII letters or digits, so it has no `RUNX_INPUT_<NAME>`.
    #[error(
        "input key `{key}` contains no ASCII letters or digits and cannot be delivered as RUNX_INPUT_<NAME>; rename it"
    )]
    InvalidInputName { key: String },

    /// The working directory is missing or not a directory.
    #[error("working directory `{}` {reason}; create it or correct the skill's cwd", path.display())]
    Cwd { path: PathBuf, reason: String },

    /// The operating system refused to start the process.
    #[error(
        "failed to start `{}`: {source}; check that it is an executable for this platform and its interpreter exists",
        program.display()
    )]
    Spawn {
        program: PathBuf,
        #[source]
        source: io::Error,
    },

    /// Staging inputs or supervising the process failed at the OS level.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: io::Error,
    },
}

impl SubprocessError {
    /// Stable snake_case classification for receipts and failure reporting.
    pub fn kind(&self) -> &'static str {
        match self {
            SubprocessError::NotFound { .. } => "not_found",
            SubprocessError::MissingEnvironment { .. }
            | SubprocessError::InvalidEnvironmentName { .. } => "environment",
            SubprocessError::InputNameCollision { .. }
            | SubprocessError::InvalidInputName { .. } => "input",
            SubprocessError::Cwd { .. } => "cwd",
            SubprocessError::Spawn { .. } => "spawn",
            SubprocessError::Io { .. } => "io",
        }
    }

    fn io(context: impl Into<String>, source: io::Error) -> Self {
        SubprocessError::Io {
            context: context.into(),
            source,
        }
    }
}

// ---------------------------------------------------------------------------
// Inputs
// ---------------------------------------------------------------------------

/// Normalises an input key for `RUNX_INPUT_<NAME>`: every run of characters
/// other than ASCII letters/digits becomes one `_`, separators at either end
/// are dropped, letters are uppercased. `None` when nothing remains.
pub fn normalize_input_name(name: &str) -> Option<String> {
    let mut out = String::with_capacity(name.len());
    let mut separator_pending = false;
    for ch in name.chars() {
        if ch.is_ascii_alphanumeric() {
            if separator_pending && !out.is_empty() {
                out.push('_');
            }
            separator_pending = false;
            out.push(ch.to_ascii_uppercase());
        } else {
            separator_pending = true;
        }
    }
    if out.is_empty() { None } else { Some(out) }
}

/// Private staging directory (mode `0700`) holding `inputs.json` and one file
/// per input value. Dropping it removes the directory and its contents.
#[derive(Debug)]
pub struct InputFiles {
    dir: tempfile::TempDir,
    inputs_path: PathBuf,
}

impl InputFiles {
    /// The staging directory.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Path of the complete JSON input object (`RUNX_INPUTS_PATH`).
    pub fn inputs_path(&self) -> &Path {
        &self.inputs_path
    }

    /// Removes the directory now, reporting failures (dropping ignores them).
    pub fn close(self) -> Result<(), SubprocessError> {
        let path = self.dir.path().to_path_buf();
        self.dir.close().map_err(|e| {
            SubprocessError::io(
                format!("cannot remove input directory `{}`", path.display()),
                e,
            )
        })
    }
}

/// Writes the input object to a fresh private directory and returns the
/// environment pairs that deliver it:
///
/// * `RUNX_INPUTS_PATH` – always; the whole object as JSON.
/// * `RUNX_INPUTS_JSON` – when that JSON is at most 48 KiB.
/// * `RUNX_INPUT_<NAME>_PATH` – always, one file per input; a string value is
///   written as its raw text, anything else as serialized JSON.
/// * `RUNX_INPUT_<NAME>` – when the value text is at most 8 KiB (and contains
///   no NUL, which an environment value cannot carry).
pub fn stage_inputs(
    inputs: &serde_json::Map<String, serde_json::Value>,
) -> Result<(InputFiles, Vec<(String, String)>), SubprocessError> {
    // Validate every name before touching the filesystem.
    let mut by_name: BTreeMap<String, &str> = BTreeMap::new();
    let mut entries: Vec<(String, &serde_json::Value)> = Vec::with_capacity(inputs.len());
    for (key, value) in inputs {
        let name = normalize_input_name(key)
            .ok_or_else(|| SubprocessError::InvalidInputName { key: key.clone() })?;
        if let Some(first) = by_name.get(&name) {
            return Err(SubprocessError::InputNameCollision {
                first: (*first).to_string(),
                second: key.clone(),
                name,
            });
        }
        by_name.insert(name.clone(), key.as_str());
        entries.push((name, value));
    }

    let dir = tempfile::Builder::new()
        .prefix("runx-inputs-")
        .tempdir()
        .map_err(|e| SubprocessError::io("cannot create a temporary input directory", e))?;
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o700)).map_err(|e| {
        SubprocessError::io(
            format!(
                "cannot restrict input directory `{}` to mode 0700",
                dir.path().display()
            ),
            e,
        )
    })?;
    let dir_str = dir
        .path()
        .to_str()
        .ok_or_else(|| {
            SubprocessError::io(
                format!(
                    "temporary directory `{}` is not valid UTF-8; set TMPDIR to a UTF-8 path",
                    dir.path().display()
                ),
                io::Error::from(io::ErrorKind::InvalidData),
            )
        })?
        .to_string();

    let mut env = Vec::with_capacity(2 + 2 * entries.len());

    let whole = serde_json::to_string(inputs).map_err(|e| {
        SubprocessError::io("cannot serialize the input object", io::Error::other(e))
    })?;
    let inputs_path = dir.path().join(INPUTS_FILE);
    write_private_file(&inputs_path, whole.as_bytes())?;
    env.push((
        "RUNX_INPUTS_PATH".to_string(),
        format!("{dir_str}/{INPUTS_FILE}"),
    ));
    if whole.len() <= INPUTS_JSON_INLINE_LIMIT {
        env.push(("RUNX_INPUTS_JSON".to_string(), whole));
    }

    for (name, value) in entries {
        let text = match value {
            serde_json::Value::String(s) => s.clone(),
            other => serde_json::to_string(other).map_err(|e| {
                SubprocessError::io(
                    format!("cannot serialize input `{name}`"),
                    io::Error::other(e),
                )
            })?,
        };
        let file_name = format!("input_{name}");
        write_private_file(&dir.path().join(&file_name), text.as_bytes())?;
        env.push((
            format!("RUNX_INPUT_{name}_PATH"),
            format!("{dir_str}/{file_name}"),
        ));
        if text.len() <= INPUT_INLINE_LIMIT && !text.contains('\0') {
            env.push((format!("RUNX_INPUT_{name}"), text));
        }
    }

    Ok((InputFiles { dir, inputs_path }, env))
}

fn write_private_file(path: &Path, bytes: &[u8]) -> Result<(), SubprocessError> {
    let context = || format!("cannot write input file `{}`", path.display());
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| SubprocessError::io(context(), e))?;
    file.write_all(bytes)
        .and_then(|()| file.flush())
        .map_err(|e| SubprocessError::io(context(), e))
}

// ---------------------------------------------------------------------------
// Environment and command resolution
// ---------------------------------------------------------------------------

/// Builds the complete child environment: baseline names present in the
/// caller's environment, declared required names (missing -> error) and
/// declared optional names (absent -> omitted), then `RUNX_CWD` and the staged
/// input pairs. Nothing else is inherited. Later sources override earlier ones
/// for the same name, so runtime variables cannot be shadowed by declarations.
pub fn build_env(
    caller: &dyn Fn(&str) -> Option<OsString>,
    runx_cwd: &Path,
    declared_required: &[String],
    declared_optional: &[String],
    staged: &[(String, String)],
) -> Result<Vec<(OsString, OsString)>, SubprocessError> {
    let mut env: Vec<(OsString, OsString)> = Vec::new();
    let mut set = |name: &str, value: OsString| {
        if let Some(slot) = env
            .iter_mut()
            .find(|(k, _)| k.as_os_str() == OsStr::new(name))
        {
            slot.1 = value;
        } else {
            env.push((OsString::from(name), value));
        }
    };

    for name in BASELINE_ENV {
        if let Some(value) = caller(name) {
            set(name, value);
        }
    }
    for name in declared_required {
        validate_env_name(name)?;
        match caller(name) {
            Some(value) => set(name, value),
            None => {
                return Err(SubprocessError::MissingEnvironment { name: name.clone() });
            }
        }
    }
    for name in declared_optional {
        validate_env_name(name)?;
        if let Some(value) = caller(name) {
            set(name, value);
        }
    }
    set("RUNX_CWD", runx_cwd.as_os_str().to_os_string());
    for (name, value) in staged {
        set(name, OsString::from(value));
    }
    Ok(env)
}

fn validate_env_name(name: &str) -> Result<(), SubprocessError> {
    let reason = if name.is_empty() {
        "it is empty"
    } else if name.contains('=') {
        "it contains `=`"
    } else if name.contains('\0') {
        "it contains a NUL byte"
    } else {
        return Ok(());
    };
    Err(SubprocessError::InvalidEnvironmentName {
        name: name.to_string(),
        reason,
    })
}

/// Resolves a declared command to an executable path without a shell.
///
/// A command containing `/` is a path: absolute as given, otherwise relative
/// to `base_dir` (the skill directory). Any other command is looked up in the
/// absolute directories of `path_var` (empty and relative entries are ignored
/// so the process cwd never takes part in the lookup).
pub fn resolve_command(
    command: &str,
    path_var: Option<&OsStr>,
    base_dir: &Path,
) -> Result<PathBuf, SubprocessError> {
    let not_found = |reason: String| SubprocessError::NotFound {
        command: command.to_string(),
        reason,
    };
    if command.is_empty() {
        return Err(not_found("the command is empty".to_string()));
    }
    if command.contains('\0') {
        return Err(not_found("the command contains a NUL byte".to_string()));
    }

    if command.contains('/') {
        let given = Path::new(command);
        let candidate = if given.is_absolute() {
            given.to_path_buf()
        } else {
            base_dir.join(given)
        };
        return match executable_problem(&candidate) {
            None => Ok(candidate),
            Some(problem) => Err(not_found(format!("`{}` {problem}", candidate.display()))),
        };
    }

    let Some(path_var) = path_var else {
        return Err(not_found(
            "PATH is not set in the skill environment, so the command cannot be looked up"
                .to_string(),
        ));
    };
    for dir in std::env::split_paths(path_var) {
        if !dir.is_absolute() {
            continue;
        }
        let candidate = dir.join(command);
        if executable_problem(&candidate).is_none() {
            return Ok(candidate);
        }
    }
    Err(not_found(format!(
        "no executable file with that name in PATH ({})",
        path_var.to_string_lossy()
    )))
}

/// `None` when `path` is an executable regular file, otherwise why not.
fn executable_problem(path: &Path) -> Option<&'static str> {
    match fs::metadata(path) {
        Err(_) => Some("does not exist"),
        Ok(meta) if !meta.is_file() => Some("is not a regular file"),
        Ok(meta) if meta.permissions().mode() & 0o111 == 0 => Some("is not executable"),
        Ok(_) => None,
    }
}

// ---------------------------------------------------------------------------
// Process supervision
// ---------------------------------------------------------------------------

/// Everything needed to start and supervise one process.
#[derive(Debug, Clone)]
pub struct ProcessSpec {
    /// Resolved executable (see [`resolve_command`]).
    pub program: PathBuf,
    /// Arguments, already resolved; no shell interpretation happens.
    pub args: Vec<OsString>,
    /// Working directory; must exist and be a directory.
    pub cwd: PathBuf,
    /// The complete environment (see [`build_env`]); nothing is inherited.
    pub env: Vec<(OsString, OsString)>,
    /// Bytes written to stdin before it is closed; `None` closes stdin at once.
    pub stdin: Option<Vec<u8>>,
    /// Wall-clock limit before the process group is terminated.
    pub timeout: Duration,
    /// Time between SIGTERM and SIGKILL.
    pub grace: Duration,
    /// Bytes retained per output stream (normally [`CAPTURE_LIMIT`]).
    pub capture_limit: usize,
}

/// One captured output stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capture {
    /// Retained prefix: at most `capture_limit` bytes, shortened so that it does
    /// not end inside a UTF-8 character the limit cut through.
    pub kept: Vec<u8>,
    /// Every byte the stream produced.
    pub total_bytes: u64,
    /// `"sha256:<hex>"` of the whole stream (not only the kept prefix).
    pub sha256: String,
    /// `kept` is not the whole stream. Also set, together with `total_bytes`
    /// and `sha256` covering only what was read, in the rare case where a
    /// process that left the group kept the pipe open past the drain deadline.
    pub truncated: bool,
}

/// How the process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Termination {
    /// Exited on its own with this code.
    Exited(i32),
    /// Killed by a signal that the supervisor did not send.
    Signaled(i32),
    /// The timeout elapsed and the supervisor terminated the process group.
    TimedOut,
    /// The [`CancelToken`] fired and the supervisor terminated the process group.
    Cancelled,
}

impl Termination {
    /// Exit code zero without timeout or cancellation.
    pub fn is_success(&self) -> bool {
        matches!(self, Termination::Exited(0))
    }

    /// Failure classification: `None` on success, otherwise `"crash"` (signal
    /// or non-zero exit), `"timeout"` or `"cancelled"`.
    pub fn failure_kind(&self) -> Option<&'static str> {
        match self {
            Termination::Exited(0) => None,
            Termination::Exited(_) | Termination::Signaled(_) => Some("crash"),
            Termination::TimedOut => Some("timeout"),
            Termination::Cancelled => Some("cancelled"),
        }
    }
}

/// Result of a supervised run.
#[derive(Debug, Clone)]
pub struct ProcessOutcome {
    pub termination: Termination,
    pub stdout: Capture,
    pub stderr: Capture,
    /// From spawn until the leader was reaped.
    pub duration: Duration,
    /// Process id of the leader (also the process group id).
    pub pid: u32,
}

/// Cooperative cancellation, e.g. from a Ctrl-C handler on another thread.
/// A cancelled run ends like a timeout and reports [`Termination::Cancelled`].
#[derive(Debug, Clone, Default)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    pub fn new() -> Self {
        Self::default()
    }

    /// Requests cancellation of every run observing this token.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// Starts `spec.program` in its own process group and supervises it to the end.
///
/// Returns `Err` only when the process could not be started or supervised; a
/// non-zero exit, a signal, a timeout or a cancellation is an `Ok` outcome.
/// The child is always reaped and its process group is always SIGKILLed once
/// the leader has exited, so no descendant that stayed in the group survives.
pub fn run(spec: &ProcessSpec, cancel: &CancelToken) -> Result<ProcessOutcome, SubprocessError> {
    match fs::metadata(&spec.cwd) {
        Err(e) => {
            return Err(SubprocessError::Cwd {
                path: spec.cwd.clone(),
                reason: format!("cannot be used ({e})"),
            });
        }
        Ok(meta) if !meta.is_dir() => {
            return Err(SubprocessError::Cwd {
                path: spec.cwd.clone(),
                reason: "is not a directory".to_string(),
            });
        }
        Ok(_) => {}
    }

    let mut command = Command::new(&spec.program);
    command
        .args(&spec.args)
        .current_dir(&spec.cwd)
        .env_clear()
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .process_group(0)
        .stdin(if spec.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());

    let start = Instant::now();
    let mut child = command.spawn().map_err(|e| {
        if e.kind() == io::ErrorKind::NotFound {
            SubprocessError::NotFound {
                command: spec.program.display().to_string(),
                reason: "the file or its script interpreter does not exist".to_string(),
            }
        } else {
            SubprocessError::Spawn {
                program: spec.program.clone(),
                source: e,
            }
        }
    })?;
    let pid_u32 = child.id();
    let Ok(raw_pid) = i32::try_from(pid_u32) else {
        // Cannot happen on Linux (pid_max <= 2^22); never signal a bogus group.
        let _ = child.kill();
        let _ = child.wait();
        return Err(SubprocessError::io(
            "child process id out of range",
            io::Error::from(io::ErrorKind::InvalidData),
        ));
    };
    let pgid = Pid::from_raw(raw_pid);
    tracing::debug!(pid = pid_u32, program = %spec.program.display(), "subprocess started");

    match supervise(spec, cancel, &mut child, pgid, start) {
        Ok(outcome) => Ok(outcome),
        Err(err) => {
            // Never leave the group running or the leader unreaped.
            signal_group(pgid, Signal::SIGKILL);
            let _ = child.wait();
            Err(err)
        }
    }
}

fn supervise(
    spec: &ProcessSpec,
    cancel: &CancelToken,
    child: &mut Child,
    pgid: Pid,
    start: Instant,
) -> Result<ProcessOutcome, SubprocessError> {
    if let (Some(bytes), Some(mut stdin)) = (spec.stdin.clone(), child.stdin.take()) {
        // Detached: if a process outside the group kept stdin open it must not
        // block the supervisor. EPIPE (child stopped reading) is expected.
        thread::Builder::new()
            .name("runx-stdin".to_string())
            .spawn(move || match stdin.write_all(&bytes) {
                Err(e) if e.kind() != io::ErrorKind::BrokenPipe => {
                    tracing::debug!(error = %e, "writing subprocess stdin failed");
                }
                _ => {}
            })
            .map_err(|e| SubprocessError::io("cannot start the stdin writer thread", e))?;
    }

    let (done_tx, done_rx) = mpsc::channel::<()>();
    let stdout_state = start_drain(child.stdout.take(), spec.capture_limit, "stdout", &done_tx)?;
    let stderr_state = start_drain(child.stderr.take(), spec.capture_limit, "stderr", &done_tx)?;
    drop(done_tx);

    let deadline = start.checked_add(spec.timeout);
    let mut stop: Option<(Termination, Instant)> = None;
    let mut sigkill_sent = false;
    let mut poll = Duration::from_millis(1);
    loop {
        if leader_exited(pgid)
            .map_err(|e| SubprocessError::io("cannot wait for the subprocess", e))?
        {
            break;
        }
        let now = Instant::now();
        match stop {
            None => {
                let reason = if cancel.is_cancelled() {
                    Some(Termination::Cancelled)
                } else if deadline.is_some_and(|d| now >= d) {
                    Some(Termination::TimedOut)
                } else {
                    None
                };
                if let Some(reason) = reason {
                    tracing::debug!(pid = pgid.as_raw(), ?reason, "terminating process group");
                    signal_group(pgid, Signal::SIGTERM);
                    // Let stopped members act on SIGTERM.
                    signal_group(pgid, Signal::SIGCONT);
                    stop = Some((reason, now));
                }
            }
            Some((_, since)) if !sigkill_sent && now.duration_since(since) >= spec.grace => {
                tracing::debug!(pid = pgid.as_raw(), "grace elapsed; killing process group");
                signal_group(pgid, Signal::SIGKILL);
                sigkill_sent = true;
            }
            Some(_) => {}
        }
        thread::sleep(poll);
        poll = (poll * 2).min(MAX_POLL);
    }

    // The leader is a zombie, so its pid (= the group id) cannot be reused yet:
    // kill whatever is left in the group, then reap.
    signal_group(pgid, Signal::SIGKILL);
    let status = child
        .wait()
        .map_err(|e| SubprocessError::io("cannot reap the subprocess", e))?;
    let duration = start.elapsed();

    let termination = match stop {
        Some((reason, _)) => reason,
        None => match status.code() {
            Some(code) => Termination::Exited(code),
            None => Termination::Signaled(status.signal().unwrap_or(0)),
        },
    };

    // Pipes close once every holder is gone; wait a bounded time for EOF.
    let drain_deadline = Instant::now() + DRAIN_DEADLINE;
    let mut finished = 0;
    while finished < 2 {
        let left = drain_deadline.saturating_duration_since(Instant::now());
        match done_rx.recv_timeout(left) {
            Ok(()) => finished += 1,
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                tracing::warn!(
                    pid = pgid.as_raw(),
                    "an output pipe is still held open by a process outside the group; \
                     returning the output read so far"
                );
                break;
            }
        }
    }

    Ok(ProcessOutcome {
        termination,
        stdout: finish_capture(&stdout_state, spec.capture_limit),
        stderr: finish_capture(&stderr_state, spec.capture_limit),
        duration,
        pid: child.id(),
    })
}

/// Whether the leader has exited, without reaping it (`WNOWAIT`).
fn leader_exited(pid: Pid) -> io::Result<bool> {
    loop {
        match waitid(
            Id::Pid(pid),
            WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT,
        ) {
            Ok(WaitStatus::StillAlive) => return Ok(false),
            Ok(_) => return Ok(true),
            Err(Errno::EINTR) => continue,
            // nix could not decode the status (e.g. a real-time signal): it exited.
            Err(Errno::EINVAL) => return Ok(true),
            Err(e) => return Err(io::Error::from(e)),
        }
    }
}

fn signal_group(pgid: Pid, signal: Signal) {
    match killpg(pgid, signal) {
        Ok(()) | Err(Errno::ESRCH) => {}
        Err(e) => {
            tracing::warn!(pgid = pgid.as_raw(), ?signal, error = %e, "signalling process group failed")
        }
    }
}

struct StreamState {
    /// Retained bytes: up to the limit plus up to 3 bytes of look-ahead used to
    /// decide whether the limit cuts through a UTF-8 character.
    kept: Vec<u8>,
    total: u64,
    hasher: Sha256,
    done: bool,
}

fn lock(state: &Mutex<StreamState>) -> std::sync::MutexGuard<'_, StreamState> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

fn start_drain<R: Read + Send + 'static>(
    pipe: Option<R>,
    limit: usize,
    name: &'static str,
    done: &mpsc::Sender<()>,
) -> Result<Arc<Mutex<StreamState>>, SubprocessError> {
    let state = Arc::new(Mutex::new(StreamState {
        kept: Vec::new(),
        total: 0,
        hasher: Sha256::new(),
        done: pipe.is_none(),
    }));
    let Some(mut pipe) = pipe else {
        let _ = done.send(());
        return Ok(state);
    };
    let keep_up_to = limit.saturating_add(3);
    let thread_state = Arc::clone(&state);
    let done = done.clone();
    thread::Builder::new()
        .name(format!("runx-{name}"))
        .spawn(move || {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                match pipe.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        let chunk = &buf[..n];
                        let mut s = lock(&thread_state);
                        s.hasher.update(chunk);
                        s.total += n as u64;
                        let room = keep_up_to.saturating_sub(s.kept.len());
                        if room > 0 {
                            let take = room.min(n);
                            s.kept.extend_from_slice(&chunk[..take]);
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        tracing::warn!(stream = name, error = %e, "reading subprocess output failed");
                        break;
                    }
                }
            }
            lock(&thread_state).done = true;
            let _ = done.send(());
        })
        .map_err(|e| SubprocessError::io(format!("cannot start the {name} reader thread"), e))?;
    Ok(state)
}

fn finish_capture(state: &Mutex<StreamState>, limit: usize) -> Capture {
    let s = lock(state);
    let cut = utf8_safe_cut(&s.kept, limit);
    let kept = s.kept[..cut].to_vec();
    let digest = s.hasher.clone().finalize();
    Capture {
        truncated: !s.done || s.total > kept.len() as u64,
        total_bytes: s.total,
        sha256: format!("sha256:{}", hex::encode(digest)),
        kept,
    }
}

/// Length of the prefix of `buf` to retain under `limit`.
///
/// `buf` may extend past `limit` (look-ahead). When the byte at `limit` is the
/// continuation of a well-formed multi-byte UTF-8 character that starts before
/// `limit`, the cut moves back to the start of that character; otherwise (short
/// input, cut on a boundary, or bytes that are not UTF-8 there) it is `limit`.
fn utf8_safe_cut(buf: &[u8], limit: usize) -> usize {
    if buf.len() <= limit {
        return buf.len();
    }
    if !is_continuation(buf[limit]) {
        return limit;
    }
    // A character is at most 4 bytes: its lead byte is within 3 bytes before `limit`.
    let lowest = limit.saturating_sub(3);
    let mut i = limit;
    while i > lowest {
        i -= 1;
        let b = buf[i];
        if is_continuation(b) {
            continue;
        }
        let width = match b {
            0xC2..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF4 => 4,
            _ => return limit,
        };
        let end = i + width;
        if end > limit && end <= buf.len() && std::str::from_utf8(&buf[i..end]).is_ok() {
            return i;
        }
        return limit;
    }
    limit
}

fn is_continuation(b: u8) -> bool {
    b & 0xC0 == 0x80
}

// ---------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Map, Value, json};
    use std::os::unix::ffi::OsStrExt;

    fn sh_script(dir: &Path, name: &str, body: &str) -> PathBuf {
        let path = dir.join(name);
        fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    /// Runs `body` through `/bin/sh <script>` (not exec'ing the script itself
    /// avoids ETXTBSY races with scripts written by parallel tests).
    fn sh_spec(dir: &Path, body: &str) -> ProcessSpec {
        let script = sh_script(dir, "script.sh", body);
        ProcessSpec {
            program: PathBuf::from("/bin/sh"),
            args: vec![script.into_os_string()],
            cwd: dir.to_path_buf(),
            env: vec![(
                OsString::from("PATH"),
                OsString::from("/usr/local/bin:/usr/bin:/bin"),
            )],
            stdin: None,
            timeout: Duration::from_secs(10),
            grace: Duration::from_millis(500),
            capture_limit: CAPTURE_LIMIT,
        }
    }

    fn sha(bytes: &[u8]) -> String {
        format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
    }

    fn obj(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => panic!("not an object"),
        }
    }

    fn env_get<'a>(env: &'a [(String, String)], name: &str) -> Option<&'a str> {
        env.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    fn os_env_get<'a>(env: &'a [(OsString, OsString)], name: &str) -> Option<&'a OsStr> {
        env.iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_os_str())
    }

    /// Gone = no /proc entry, or a zombie waiting for its new parent to reap it.
    fn process_gone(pid: i32) -> bool {
        match fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            Ok(stat) => stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .is_some_and(|state| state == "Z" || state == "X"),
        }
    }

    fn wait_gone(pid: i32) -> bool {
        let until = Instant::now() + Duration::from_secs(2);
        while Instant::now() < until {
            if process_gone(pid) {
                return true;
            }
            thread::sleep(Duration::from_millis(20));
        }
        process_gone(pid)
    }

    fn read_pid(path: &Path) -> i32 {
        let until = Instant::now() + Duration::from_secs(2);
        loop {
            let parsed = fs::read_to_string(path).map(|text| text.trim().parse::<i32>());
            if let Ok(Ok(pid)) = parsed {
                return pid;
            }
            assert!(Instant::now() < until, "pid file never written");
            thread::sleep(Duration::from_millis(10));
        }
    }

    // --- names and inputs -------------------------------------------------

    #[test]
    fn normalizes_input_names() {
        let cases = [
            ("thread.title", Some("THREAD_TITLE")),
            ("  repeated---separator  ", Some("REPEATED_SEPARATOR")),
            ("simple", Some("SIMPLE")),
            ("already_UPPER", Some("ALREADY_UPPER")),
            ("__lead.trail__", Some("LEAD_TRAIL")),
            ("a1-b2", Some("A1_B2")),
            ("caf\u{e9} au lait", Some("CAF_AU_LAIT")),
            ("---", None),
            ("", None),
        ];
        for (input, expected) in cases {
            assert_eq!(
                normalize_input_name(input).as_deref(),
                expected,
                "input {input:?}"
            );
        }
    }

    #[test]
    fn colliding_input_names_are_rejected_naming_both_keys() {
        let inputs = obj(json!({"thread.title": "a", "thread_title": "b"}));
        let err = stage_inputs(&inputs).unwrap_err();
        assert_eq!(err.kind(), "input");
        let msg = err.to_string();
        assert!(msg.contains("`thread.title`"), "{msg}");
        assert!(msg.contains("`thread_title`"), "{msg}");
        assert!(msg.contains("RUNX_INPUT_THREAD_TITLE"), "{msg}");
    }

    #[test]
    fn input_key_without_alphanumerics_is_rejected() {
        let err = stage_inputs(&obj(json!({"--": 1}))).unwrap_err();
        assert!(matches!(err, SubprocessError::InvalidInputName { .. }));
        assert_eq!(err.kind(), "input");
    }

    #[test]
    fn small_inputs_get_paths_and_inline_mirrors() {
        let inputs =
            obj(json!({"thread.title": "Hello \u{1F600}", "count": 3, "tags": ["a", "b"]}));
        let (files, env) = stage_inputs(&inputs).unwrap();

        let whole = serde_json::to_string(&inputs).unwrap();
        assert_eq!(env_get(&env, "RUNX_INPUTS_JSON"), Some(whole.as_str()));
        let inputs_path = env_get(&env, "RUNX_INPUTS_PATH").unwrap();
        assert_eq!(Path::new(inputs_path), files.inputs_path());
        let parsed: Value = serde_json::from_slice(&fs::read(inputs_path).unwrap()).unwrap();
        assert_eq!(parsed, Value::Object(inputs.clone()));

        // Strings are raw text, other values serialized JSON.
        assert_eq!(
            env_get(&env, "RUNX_INPUT_THREAD_TITLE"),
            Some("Hello \u{1F600}")
        );
        let title_path = env_get(&env, "RUNX_INPUT_THREAD_TITLE_PATH").unwrap();
        assert_eq!(fs::read_to_string(title_path).unwrap(), "Hello \u{1F600}");
        assert_eq!(env_get(&env, "RUNX_INPUT_COUNT"), Some("3"));
        assert_eq!(env_get(&env, "RUNX_INPUT_TAGS"), Some(r#"["a","b"]"#));
        let tags_path = env_get(&env, "RUNX_INPUT_TAGS_PATH").unwrap();
        assert_eq!(fs::read_to_string(tags_path).unwrap(), r#"["a","b"]"#);

        let mode = fs::metadata(files.dir()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
    }

    #[test]
    fn large_input_is_delivered_by_path_only() {
        let big = "x".repeat(80 * 1024);
        let inputs = obj(json!({"body": big, "small": "ok"}));
        let (_files, env) = stage_inputs(&inputs).unwrap();

        assert_eq!(env_get(&env, "RUNX_INPUT_BODY"), None);
        let body_path = env_get(&env, "RUNX_INPUT_BODY_PATH").unwrap();
        assert_eq!(fs::read_to_string(body_path).unwrap(), big);
        // Whole object exceeds 48 KiB: no inline JSON, but the path is still there.
        assert_eq!(env_get(&env, "RUNX_INPUTS_JSON"), None);
        let inputs_path = env_get(&env, "RUNX_INPUTS_PATH").unwrap();
        let parsed: Value = serde_json::from_slice(&fs::read(inputs_path).unwrap()).unwrap();
        assert_eq!(parsed["body"].as_str(), Some(big.as_str()));
        // Other small values keep their inline mirror.
        assert_eq!(env_get(&env, "RUNX_INPUT_SMALL"), Some("ok"));
    }

    #[test]
    fn inline_limits_are_inclusive() {
        let exactly = "y".repeat(INPUT_INLINE_LIMIT);
        let over = "y".repeat(INPUT_INLINE_LIMIT + 1);
        let (_f, env) = stage_inputs(&obj(json!({"a": exactly, "b": over}))).unwrap();
        assert!(env_get(&env, "RUNX_INPUT_A").is_some());
        assert!(env_get(&env, "RUNX_INPUT_B").is_none());
        assert!(env_get(&env, "RUNX_INPUT_B_PATH").is_some());
    }

    #[test]
    fn input_directory_is_removed_on_drop() {
        let (files, env) = stage_inputs(&obj(json!({"a": 1}))).unwrap();
        let dir = files.dir().to_path_buf();
        let path = PathBuf::from(env_get(&env, "RUNX_INPUT_A_PATH").unwrap());
        assert!(dir.is_dir() && path.is_file());
        drop(files);
        assert!(!dir.exists());
        assert!(!path.exists());

        let (files, _) = stage_inputs(&obj(json!({"a": 1}))).unwrap();
        let dir = files.dir().to_path_buf();
        files.close().unwrap();
        assert!(!dir.exists());
    }

    // --- environment --------------------------------------------------------

    fn fake_caller(name: &str) -> Option<OsString> {
        let vars = [
            ("PATH", "/usr/bin:/bin"),
            ("HOME", "/home/u"),
            ("LANG", "C.UTF-8"),
            ("AWS_SECRET_ACCESS_KEY", "hunter2"),
            ("GITHUB_TOKEN", "ghp_secret"),
            ("http_proxy", "http://user:pw@proxy:3128"),
            ("HTTPS_PROXY", "http://user:pw@proxy:3128"),
            ("ALL_PROXY", "socks5://proxy"),
            ("NEEDED", "yes"),
            ("RUNX_CWD", "/caller/value"),
        ];
        vars.iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| OsString::from(v))
    }

    #[test]
    fn env_is_baseline_plus_declared_plus_runtime_only() {
        let staged = vec![("RUNX_INPUTS_PATH".to_string(), "/x/inputs.json".to_string())];
        let env = build_env(
            &fake_caller,
            Path::new("/work/space"),
            &["NEEDED".to_string()],
            &["OPTIONAL_ABSENT".to_string()],
            &staged,
        )
        .unwrap();

        let names: Vec<_> = env
            .iter()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            [
                "PATH",
                "HOME",
                "LANG",
                "NEEDED",
                "RUNX_CWD",
                "RUNX_INPUTS_PATH"
            ]
        );
        assert_eq!(
            os_env_get(&env, "RUNX_CWD"),
            Some(OsStr::new("/work/space"))
        );
        assert_eq!(os_env_get(&env, "NEEDED"), Some(OsStr::new("yes")));
        for secret in [
            "AWS_SECRET_ACCESS_KEY",
            "GITHUB_TOKEN",
            "http_proxy",
            "HTTPS_PROXY",
            "ALL_PROXY",
            "OPTIONAL_ABSENT",
        ] {
            assert!(os_env_get(&env, secret).is_none(), "{secret} leaked");
        }
    }

    #[test]
    fn declared_proxy_is_admitted_explicitly() {
        let env = build_env(
            &fake_caller,
            Path::new("/w"),
            &[],
            &["HTTPS_PROXY".to_string()],
            &[],
        )
        .unwrap();
        assert!(os_env_get(&env, "HTTPS_PROXY").is_some());
        assert!(os_env_get(&env, "http_proxy").is_none());
    }

    #[test]
    fn missing_required_env_fails_before_spawn() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("spawned");
        let err = build_env(
            &fake_caller,
            dir.path(),
            &["NEEDED".to_string(), "API_BASE_URL".to_string()],
            &[],
            &[],
        )
        .map(|env| {
            // Only reached if build_env wrongly succeeded.
            let mut spec = sh_spec(dir.path(), &format!("touch {}", marker.display()));
            spec.env = env;
            run(&spec, &CancelToken::new())
        })
        .unwrap_err();
        assert_eq!(err.kind(), "environment");
        assert!(err.to_string().contains("`API_BASE_URL`"), "{err}");
        assert!(!marker.exists());
    }

    #[test]
    fn invalid_declared_env_name_is_rejected() {
        let err = build_env(
            &fake_caller,
            Path::new("/w"),
            &[],
            &["A=B".to_string()],
            &[],
        )
        .unwrap_err();
        assert_eq!(err.kind(), "environment");
    }

    #[test]
    fn child_sees_exactly_the_spec_env() {
        let dir = tempfile::tempdir().unwrap();
        let env = vec![
            (OsString::from("ONLY_ME"), OsString::from("1")),
            (OsString::from("AND_ME"), OsString::from("two words")),
        ];
        let spec = ProcessSpec {
            program: resolve_command("env", Some(OsStr::new("/usr/bin:/bin")), dir.path()).unwrap(),
            args: vec![],
            cwd: dir.path().to_path_buf(),
            env,
            stdin: None,
            timeout: Duration::from_secs(5),
            grace: DEFAULT_GRACE,
            capture_limit: CAPTURE_LIMIT,
        };
        let out = run(&spec, &CancelToken::new()).unwrap();
        assert_eq!(out.termination, Termination::Exited(0));
        let mut lines: Vec<_> = String::from_utf8(out.stdout.kept)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect();
        lines.sort();
        assert_eq!(lines, ["AND_ME=two words", "ONLY_ME=1"]);
    }

    #[test]
    fn staged_inputs_reach_the_process() {
        let dir = tempfile::tempdir().unwrap();
        let (files, staged) = stage_inputs(&obj(json!({"thread.title": "hi there"}))).unwrap();
        let env = build_env(&fake_caller, dir.path(), &[], &[], &staged).unwrap();
        let mut spec = sh_spec(
            dir.path(),
            r#"printf '%s|' "$RUNX_INPUT_THREAD_TITLE"; cat "$RUNX_INPUT_THREAD_TITLE_PATH"; printf '|%s' "$RUNX_CWD""#,
        );
        spec.env = env;
        let out = run(&spec, &CancelToken::new()).unwrap();
        assert_eq!(out.termination, Termination::Exited(0));
        assert_eq!(
            String::from_utf8(out.stdout.kept).unwrap(),
            format!("hi there|hi there|{}", dir.path().display())
        );
        drop(files);
    }

    // --- command resolution -------------------------------------------------

    #[test]
    fn resolves_commands() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        fs::create_dir(&bin).unwrap();
        let tool = sh_script(&bin, "tool", "exit 0");
        fs::write(bin.join("plain"), "data").unwrap();

        let path_var = OsString::from(format!("relative:{}:/usr/bin:/bin", bin.display()));
        assert_eq!(
            resolve_command("tool", Some(&path_var), Path::new("/")).unwrap(),
            tool
        );
        assert_eq!(
            resolve_command("./bin/tool", None, dir.path()).unwrap(),
            dir.path().join("./bin/tool")
        );
        assert_eq!(
            resolve_command(tool.to_str().unwrap(), None, Path::new("/nowhere")).unwrap(),
            tool
        );

        for (command, path) in [
            ("definitely-not-a-command-runx", Some(path_var.as_os_str())),
            ("tool", None),
            ("plain", Some(path_var.as_os_str())),
            ("./bin/plain", None),
            ("./bin/missing", None),
            ("./bin", None),
            ("", Some(path_var.as_os_str())),
        ] {
            let err = resolve_command(command, path, dir.path()).unwrap_err();
            assert_eq!(err.kind(), "not_found", "{command}: {err}");
            assert!(err.to_string().contains(command), "{err}");
        }
    }

    #[test]
    fn spawning_a_missing_program_is_not_found() {
        let dir = tempfile::tempdir().unwrap();
        let mut spec = sh_spec(dir.path(), "exit 0");
        spec.program = dir.path().join("no-such-program");
        let err = run(&spec, &CancelToken::new()).unwrap_err();
        assert_eq!(err.kind(), "not_found");
        assert!(err.to_string().contains("no-such-program"), "{err}");
    }

    #[test]
    fn bad_cwd_is_rejected() {
        let dir = tempfile::tempdir().unwrap();
        let mut spec = sh_spec(dir.path(), "exit 0");
        spec.cwd = dir.path().join("missing");
        let err = run(&spec, &CancelToken::new()).unwrap_err();
        assert_eq!(err.kind(), "cwd");
        assert!(err.to_string().contains("missing"), "{err}");

        spec.cwd = dir.path().join("script.sh");
        let err = run(&spec, &CancelToken::new()).unwrap_err();
        assert!(err.to_string().contains("is not a directory"), "{err}");
    }

    // --- running ------------------------------------------------------------

    #[test]
    fn runs_in_cwd_and_reports_exit_code() {
        let dir = tempfile::tempdir().unwrap();
        let spec = sh_spec(dir.path(), "pwd; echo oops >&2; exit 7");
        let out = run(&spec, &CancelToken::new()).unwrap();
        assert_eq!(out.termination, Termination::Exited(7));
        assert_eq!(out.termination.failure_kind(), Some("crash"));
        let cwd = fs::canonicalize(dir.path()).unwrap();
        assert_eq!(out.stdout.kept, format!("{}\n", cwd.display()).into_bytes());
        assert_eq!(out.stderr.kept, b"oops\n");
        assert_eq!(out.stderr.total_bytes, 5);
        assert_eq!(out.stderr.sha256, sha(b"oops\n"));
        assert!(!out.stdout.truncated);
        assert!(out.pid > 0);
    }

    #[test]
    fn success_is_exit_zero() {
        let dir = tempfile::tempdir().unwrap();
        let out = run(&sh_spec(dir.path(), "true"), &CancelToken::new()).unwrap();
        assert!(out.termination.is_success());
        assert_eq!(out.termination.failure_kind(), None);
        assert_eq!(out.stdout.total_bytes, 0);
        assert_eq!(out.stdout.sha256, sha(b""));
    }

    #[test]
    fn delivers_stdin_then_closes_it() {
        let dir = tempfile::tempdir().unwrap();
        let payload: Vec<u8> = (0..3 * 1024 * 1024u32).map(|i| (i % 251) as u8).collect();
        let mut spec = sh_spec(dir.path(), "cat");
        spec.stdin = Some(payload.clone());
        let out = run(&spec, &CancelToken::new()).unwrap();
        assert_eq!(out.termination, Termination::Exited(0));
        assert_eq!(out.stdout.total_bytes, payload.len() as u64);
        assert_eq!(out.stdout.sha256, sha(&payload));
        assert_eq!(out.stdout.kept, payload);
    }

    #[test]
    fn stdin_is_closed_when_absent() {
        let dir = tempfile::tempdir().unwrap();
        let mut spec = sh_spec(dir.path(), "cat; echo done");
        spec.timeout = Duration::from_secs(5);
        let out = run(&spec, &CancelToken::new()).unwrap();
        assert_eq!(out.termination, Termination::Exited(0));
        assert_eq!(out.stdout.kept, b"done\n");
    }

    #[test]
    fn reports_signal_deaths() {
        let dir = tempfile::tempdir().unwrap();
        let out = run(&sh_spec(dir.path(), "kill -KILL $$"), &CancelToken::new()).unwrap();
        assert_eq!(out.termination, Termination::Signaled(9));
        assert_eq!(out.termination.failure_kind(), Some("crash"));
    }

    #[test]
    fn timeout_kills_the_whole_group() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("grandchild.pid");
        let mut spec = sh_spec(
            dir.path(),
            &format!("sleep 30 &\necho $! > {}\nsleep 30", pid_file.display()),
        );
        spec.timeout = Duration::from_millis(400);
        spec.grace = Duration::from_millis(500);
        let started = Instant::now();
        let out = run(&spec, &CancelToken::new()).unwrap();
        let elapsed = started.elapsed();
        assert_eq!(out.termination, Termination::TimedOut);
        assert_eq!(out.termination.failure_kind(), Some("timeout"));
        assert!(
            elapsed < spec.timeout + spec.grace + Duration::from_secs(1),
            "{elapsed:?}"
        );
        assert!(elapsed >= spec.timeout, "{elapsed:?}");
        let grandchild = read_pid(&pid_file);
        assert!(wait_gone(grandchild), "grandchild {grandchild} survived");
        assert!(process_gone(i32::try_from(out.pid).unwrap()));
    }

    #[test]
    fn timeout_escalates_to_sigkill_when_sigterm_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("grandchild.pid");
        let mut spec = sh_spec(
            dir.path(),
            &format!(
                "trap '' TERM\nsleep 30 &\necho $! > {}\nwhile :; do sleep 1; done",
                pid_file.display()
            ),
        );
        spec.timeout = Duration::from_millis(300);
        spec.grace = Duration::from_millis(400);
        let started = Instant::now();
        let out = run(&spec, &CancelToken::new()).unwrap();
        let elapsed = started.elapsed();
        assert_eq!(out.termination, Termination::TimedOut);
        assert!(elapsed >= spec.timeout + spec.grace, "{elapsed:?}");
        assert!(
            elapsed < spec.timeout + spec.grace + Duration::from_secs(1),
            "{elapsed:?}"
        );
        let grandchild = read_pid(&pid_file);
        assert!(wait_gone(grandchild), "grandchild {grandchild} survived");
    }

    #[test]
    fn descendants_left_behind_after_exit_are_killed() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("grandchild.pid");
        let spec = sh_spec(
            dir.path(),
            &format!("sleep 30 &\necho $! > {}\necho bye", pid_file.display()),
        );
        let started = Instant::now();
        let out = run(&spec, &CancelToken::new()).unwrap();
        assert_eq!(out.termination, Termination::Exited(0));
        assert_eq!(out.stdout.kept, b"bye\n");
        assert!(started.elapsed() < Duration::from_secs(3));
        let grandchild = read_pid(&pid_file);
        assert!(wait_gone(grandchild), "grandchild {grandchild} survived");
    }

    #[test]
    fn escaped_descendant_holding_stdout_does_not_hang_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("escaped.pid");
        let spec = sh_spec(
            dir.path(),
            &format!(
                "echo before\nsetsid sleep 20 &\necho $! > {}\nsleep 0.3\nexit 3",
                pid_file.display()
            ),
        );
        let started = Instant::now();
        let out = run(&spec, &CancelToken::new()).unwrap();
        let elapsed = started.elapsed();
        // Clean up the process that left the group before asserting.
        let escaped = read_pid(&pid_file);
        let _ = nix::sys::signal::kill(Pid::from_raw(escaped), Signal::SIGKILL);
        assert_eq!(out.termination, Termination::Exited(3));
        assert_eq!(out.stdout.kept, b"before\n");
        assert!(out.stdout.truncated, "stream end was never observed");
        assert!(
            elapsed < DRAIN_DEADLINE + Duration::from_secs(2),
            "{elapsed:?}"
        );
    }

    #[test]
    fn cancel_token_ends_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let mut spec = sh_spec(dir.path(), "echo started; sleep 30");
        spec.grace = Duration::from_millis(300);
        let token = CancelToken::new();
        let remote = token.clone();
        let canceller = thread::spawn(move || {
            thread::sleep(Duration::from_millis(200));
            remote.cancel();
        });
        let started = Instant::now();
        let out = run(&spec, &token).unwrap();
        canceller.join().unwrap();
        assert!(token.is_cancelled());
        assert_eq!(out.termination, Termination::Cancelled);
        assert_eq!(out.termination.failure_kind(), Some("cancelled"));
        assert_eq!(out.stdout.kept, b"started\n");
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );
    }

    #[test]
    fn large_stdout_is_truncated_on_a_char_boundary_but_fully_hashed() {
        let dir = tempfile::tempdir().unwrap();
        // One ASCII byte then 2-byte characters: the 8 MiB limit falls inside one.
        let mut data = Vec::with_capacity(9 * 1024 * 1024);
        data.push(b'a');
        while data.len() + 2 <= 9 * 1024 * 1024 {
            data.extend_from_slice("\u{e9}".as_bytes());
        }
        let file = dir.path().join("big.txt");
        fs::write(&file, &data).unwrap();
        let spec = sh_spec(dir.path(), &format!("cat {}", file.display()));
        let out = run(&spec, &CancelToken::new()).unwrap();
        assert_eq!(out.termination, Termination::Exited(0));
        assert!(out.stdout.truncated);
        assert_eq!(out.stdout.total_bytes, data.len() as u64);
        assert_eq!(out.stdout.sha256, sha(&data));
        assert_eq!(out.stdout.kept.len(), CAPTURE_LIMIT - 1);
        assert!(std::str::from_utf8(&out.stdout.kept).is_ok());
        assert_eq!(out.stdout.kept[..], data[..CAPTURE_LIMIT - 1]);
    }

    #[test]
    fn hundred_mib_of_stderr_does_not_deadlock() {
        let dir = tempfile::tempdir().unwrap();
        let mut spec = sh_spec(dir.path(), "head -c 104857600 /dev/zero >&2; echo finished");
        spec.timeout = Duration::from_secs(20);
        let out = run(&spec, &CancelToken::new()).unwrap();
        assert_eq!(out.termination, Termination::Exited(0));
        assert_eq!(out.stdout.kept, b"finished\n");
        assert_eq!(out.stderr.total_bytes, 104_857_600);
        assert!(out.stderr.truncated);
        assert_eq!(out.stderr.kept.len(), CAPTURE_LIMIT);
        assert!(out.stderr.kept.iter().all(|&b| b == 0));
    }

    #[test]
    fn non_utf8_output_is_kept_as_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let spec = sh_spec(dir.path(), r"printf '\377\376\000abc\303'");
        let out = run(&spec, &CancelToken::new()).unwrap();
        assert_eq!(out.termination, Termination::Exited(0));
        assert_eq!(out.stdout.kept, b"\xff\xfe\x00abc\xc3");
        assert!(!out.stdout.truncated);
    }

    #[test]
    fn small_capture_limit_cuts_binary_at_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let mut spec = sh_spec(dir.path(), r"printf 'ab\377\200\200\200cd'");
        spec.capture_limit = 3;
        let out = run(&spec, &CancelToken::new()).unwrap();
        assert_eq!(out.stdout.kept, b"ab\xff");
        assert_eq!(out.stdout.total_bytes, 8);
        assert!(out.stdout.truncated);
        assert_eq!(out.stdout.sha256, sha(b"ab\xff\x80\x80\x80cd"));
    }

    #[test]
    fn utf8_cut_helper() {
        let s = "a\u{e9}\u{20ac}\u{1F600}z".as_bytes(); // 1 + 2 + 3 + 4 + 1 bytes
        assert_eq!(s.len(), 11);
        // Short input: everything.
        assert_eq!(utf8_safe_cut(s, 11), 11);
        assert_eq!(utf8_safe_cut(s, 100), 11);
        // On boundaries: the limit itself.
        for limit in [0, 1, 3, 6, 10] {
            assert_eq!(utf8_safe_cut(s, limit), limit, "limit {limit}");
        }
        // Inside 2-, 3- and 4-byte characters: back to their start.
        assert_eq!(utf8_safe_cut(s, 2), 1);
        assert_eq!(utf8_safe_cut(s, 4), 3);
        assert_eq!(utf8_safe_cut(s, 5), 3);
        assert_eq!(utf8_safe_cut(s, 7), 6);
        assert_eq!(utf8_safe_cut(s, 8), 6);
        assert_eq!(utf8_safe_cut(s, 9), 6);
        // Not UTF-8 at the cut: the limit.
        let binary = [0x80u8, 0x80, 0x80, 0x80, 0x80];
        assert_eq!(utf8_safe_cut(&binary, 2), 2);
        let bad_lead = [b'x', 0xFF, 0x80, 0x80];
        assert_eq!(utf8_safe_cut(&bad_lead, 2), 2);
        // Lead byte promising more than the continuation bytes deliver.
        let broken = [b'x', 0xE2, 0x82, b'y'];
        assert_eq!(utf8_safe_cut(&broken, 2), 2);
        // Overlong / surrogate encodings are not characters either.
        let surrogate = [0xED, 0xA0, 0x80];
        assert_eq!(utf8_safe_cut(&surrogate, 1), 1);
        // Cut inside the char but look-ahead missing the tail: keep the limit.
        let partial = [b'x', 0xF0, 0x9F, 0x98];
        assert_eq!(utf8_safe_cut(&partial, 2), 2);
        // Zero limit keeps nothing.
        assert_eq!(utf8_safe_cut(s, 0), 0);
    }

    #[test]
    fn raw_bytes_in_args_and_env_pass_through() {
        let dir = tempfile::tempdir().unwrap();
        let mut spec = sh_spec(dir.path(), r#"printf '%s|%s' "$1" "$RAW""#);
        spec.args
            .push(OsStr::from_bytes(b"a b;$(echo no)").to_os_string());
        spec.env.push((
            OsString::from("RAW"),
            OsStr::from_bytes(b"\xffv").to_os_string(),
        ));
        let out = run(&spec, &CancelToken::new()).unwrap();
        assert_eq!(out.stdout.kept, b"a b;$(echo no)|\xffv");
    }
}
