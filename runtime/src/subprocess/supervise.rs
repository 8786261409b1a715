//! Running one process in its own process group and supervising it to the end.

use std::ffi::OsString;
use std::fs;
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid};
use nix::unistd::Pid;

use super::capture::{Capture, finish_capture, start_drain};
use super::descendants::Descendants;
use super::error::SubprocessError;
use runx_worker::CancelToken;

/// How long the output readers may take to reach end-of-file once the process
/// group has been killed and the leader reaped. Only a process that escaped the
/// group (e.g. via `setsid`) while holding a pipe open can exceed this.
pub(super) const DRAIN_DEADLINE: Duration = Duration::from_secs(2);

/// Longest sleep between two checks of the leader / deadline / cancel token.
const MAX_POLL: Duration = Duration::from_millis(20);

/// Everything needed to start and supervise one process.
#[derive(Debug, Clone)]
pub struct ProcessSpec {
    /// Resolved executable (see [`super::command::resolve_command`]).
    pub program: PathBuf,
    /// Arguments, already resolved; no shell interpretation happens.
    pub args: Vec<OsString>,
    /// Working directory; must exist and be a directory.
    pub cwd: PathBuf,
    /// The complete environment (see [`super::env::build_env`]); nothing is inherited.
    pub env: Vec<(OsString, OsString)>,
    /// Bytes written to stdin before it is closed; `None` closes stdin at once.
    pub stdin: Option<Vec<u8>>,
    /// Wall-clock limit before the process group is terminated.
    pub timeout: Duration,
    /// Time between SIGTERM and SIGKILL.
    pub grace: Duration,
    /// Bytes retained per output stream (normally [`runx_profile::CAPTURE_BYTES`]).
    pub capture_limit: usize,
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
    #[cfg(test)]
    pub fn is_success(&self) -> bool {
        matches!(self, Termination::Exited(0))
    }
}

/// Result of a supervised run.
#[derive(Debug, Clone)]
pub struct ProcessOutcome {
    /// How it ended.
    pub termination: Termination,
    /// What it wrote to stdout.
    pub stdout: Capture,
    /// What it wrote to stderr.
    pub stderr: Capture,
    /// Process id of the leader (also the process group id).
    #[cfg_attr(not(test), expect(dead_code, reason = "read by the tests only"))]
    pub pid: u32,
}

/// Starts `spec.program` in its own process group and supervises it to the end.
///
/// Returns `Err` only when the process could not be started or supervised; a
/// non-zero exit, a signal, a timeout or a cancellation is an `Ok` outcome.
/// The child is always reaped and its process group is always SIGKILLed once
/// the leader has exited, so no descendant that stayed in the group survives.
pub fn run(spec: &ProcessSpec, cancel: &CancelToken) -> Result<ProcessOutcome, SubprocessError> {
    check_cwd(&spec.cwd)?;

    // Only this run's processes carry its staging path: it tells its orphans from others'.
    let marker = spec
        .env
        .iter()
        .find(|(k, _)| k == "RUNX_INPUTS_PATH")
        .map(|(k, v)| {
            let mut m = k.as_bytes().to_vec();
            m.push(b'=');
            m.extend_from_slice(v.as_bytes());
            m
        });
    let mut descendants = Descendants::new(marker.clone());
    let start = Instant::now();
    let mut child = match start_child(spec, &descendants) {
        Err(_) if descendants.uses_cgroup() => {
            // Joining the cgroup failed in the child; run without it.
            descendants = Descendants::reaper(marker);
            start_child(spec, &descendants)
        }
        other => other,
    }
    .map_err(|e| spawn_error(spec, e))?;
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

    descendants.started(pgid);
    match supervise(spec, cancel, &mut child, pgid, start, &mut descendants) {
        Ok(outcome) => Ok(outcome),
        Err(err) => {
            // Never leave the group or a descendant running, or the leader unreaped.
            signal_group(pgid, Signal::SIGKILL);
            descendants.kill_all();
            let _ = child.wait();
            Err(err)
        }
    }
}

/// Checks that `cwd` exists and is a directory, as a process started there needs.
pub fn check_cwd(cwd: &Path) -> Result<(), SubprocessError> {
    match fs::metadata(cwd) {
        Err(e) => Err(SubprocessError::Cwd {
            path: cwd.to_path_buf(),
            reason: format!("cannot be used ({e})"),
        }),
        Ok(meta) if !meta.is_dir() => Err(SubprocessError::Cwd {
            path: cwd.to_path_buf(),
            reason: "is not a directory".to_string(),
        }),
        Ok(_) => Ok(()),
    }
}

/// Starts the process in its own group, tied to runx ([`runx_worker::spawn_child`]: parent-death
/// signal, no inherited descriptors), inside the run's cgroup when there is one.
fn start_child(spec: &ProcessSpec, descendants: &Descendants) -> io::Result<Child> {
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
    descendants.prepare(&mut command);
    runx_worker::spawn_child(command)
}

/// What a failed spawn means for the user.
fn spawn_error(spec: &ProcessSpec, e: io::Error) -> SubprocessError {
    if e.kind() == io::ErrorKind::NotFound {
        return SubprocessError::NotFound {
            command: spec.program.display().to_string(),
            reason: "the file or its script interpreter does not exist".to_string(),
        };
    }
    if e.raw_os_error() == Some(nix::libc::E2BIG) {
        let bytes = spec.args.iter().map(|a| a.len() + 1).sum::<usize>()
            + spec
                .env
                .iter()
                .map(|(k, v)| k.len() + v.len() + 2)
                .sum::<usize>();
        return SubprocessError::TooLong {
            what: "the arguments and environment together".to_string(),
            bytes,
            limit: super::command::arg_max(),
        };
    }
    SubprocessError::Spawn {
        program: spec.program.clone(),
        source: e,
    }
}

fn supervise(
    spec: &ProcessSpec,
    cancel: &CancelToken,
    child: &mut Child,
    pgid: Pid,
    start: Instant,
    descendants: &mut Descendants,
) -> Result<ProcessOutcome, SubprocessError> {
    if let (Some(bytes), Some(stdin)) = (spec.stdin.clone(), child.stdin.take()) {
        feed_stdin(stdin, bytes)?;
    }
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let stdout = start_drain(child.stdout.take(), spec.capture_limit, "stdout", &done_tx)?;
    let stderr = start_drain(child.stderr.take(), spec.capture_limit, "stderr", &done_tx)?;
    drop(done_tx);

    let stop = wait_for_leader(spec, cancel, pgid, start, descendants)?;
    // The leader is a zombie, so its pid (= the group id) cannot be reused yet:
    // kill whatever is left in the group and every descendant that left it, then reap.
    signal_group(pgid, Signal::SIGKILL);
    descendants.kill_all();
    let status = child
        .wait()
        .map_err(|e| SubprocessError::io("cannot reap the subprocess", e))?;
    let termination = match stop {
        Some(reason) => reason,
        None => match status.code() {
            Some(code) => Termination::Exited(code),
            None => Termination::Signaled(status.signal().unwrap_or(0)),
        },
    };
    await_drains(&done_rx, pgid);
    Ok(ProcessOutcome {
        termination,
        stdout: finish_capture(&stdout, spec.capture_limit),
        stderr: finish_capture(&stderr, spec.capture_limit),
        pid: child.id(),
    })
}

/// Writes `bytes` to the child's stdin on a detached thread: if a process outside the group
/// kept stdin open it must not block the supervisor. EPIPE (the child stopped reading) is
/// expected.
fn feed_stdin(mut stdin: ChildStdin, bytes: Vec<u8>) -> Result<(), SubprocessError> {
    thread::Builder::new()
        .name("runx-stdin".to_string())
        .spawn(move || match stdin.write_all(&bytes) {
            Err(e) if e.kind() != io::ErrorKind::BrokenPipe => {
                tracing::debug!(error = %e, "writing subprocess stdin failed");
            }
            _ => {}
        })
        .map(|_| ())
        .map_err(|e| SubprocessError::io("cannot start the stdin writer thread", e))
}

/// Polls until the leader exits. At the deadline or on cancellation the group gets SIGTERM,
/// then SIGKILL once the grace period has passed. Returns why runx stopped it, if it did.
fn wait_for_leader(
    spec: &ProcessSpec,
    cancel: &CancelToken,
    pgid: Pid,
    start: Instant,
    descendants: &mut Descendants,
) -> Result<Option<Termination>, SubprocessError> {
    let deadline = start.checked_add(spec.timeout);
    let mut stop: Option<(Termination, Instant)> = None;
    let mut sigkill_sent = false;
    let mut poll = Duration::from_millis(1);
    while !leader_exited(pgid)
        .map_err(|e| SubprocessError::io("cannot wait for the subprocess", e))?
    {
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
                    descendants.signal(Signal::SIGTERM);
                    // Let stopped members act on SIGTERM.
                    signal_group(pgid, Signal::SIGCONT);
                    descendants.signal(Signal::SIGCONT);
                    stop = Some((reason, now));
                }
            }
            Some((_, since)) if !sigkill_sent && now.duration_since(since) >= spec.grace => {
                tracing::debug!(pid = pgid.as_raw(), "grace elapsed; killing process group");
                signal_group(pgid, Signal::SIGKILL);
                descendants.kill_all();
                sigkill_sent = true;
            }
            Some(_) => {}
        }
        descendants.observe();
        thread::sleep(poll);
        poll = (poll * 2).min(MAX_POLL);
    }
    Ok(stop.map(|(reason, _)| reason))
}

/// Pipes close once every holder is gone; waits a bounded time for both readers to reach
/// end-of-file.
fn await_drains(done: &mpsc::Receiver<()>, pgid: Pid) {
    let deadline = Instant::now() + DRAIN_DEADLINE;
    let mut finished = 0;
    while finished < 2 {
        let left = deadline.saturating_duration_since(Instant::now());
        match done.recv_timeout(left) {
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
