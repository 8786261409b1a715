//! A worker's start seen from the host: the process forked with its pipes and descriptor
//! channel, `hello` sent, and its `ready` read, which a caller may do later (the worker makes
//! its engine ready meanwhile).

use super::replies::Replies;
use super::{Wait, WorkerCommand, WorkerProcess, kill_group};
use crate::wire::frame::write_frame;
use crate::wire::message::{Header, Message};
use std::collections::HashSet;
use std::io::{BufWriter, Read};
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{ChildStderr, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Why a worker could not be started.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SpawnError {
    /// The program could not be executed.
    #[error("cannot start the worker `{}`: {source}", program.display())]
    Start {
        program: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The pipes to the worker could not be set up.
    #[error("the worker's pipes could not be opened")]
    Pipes,
    /// A reader thread could not be started.
    #[error("cannot start a reader thread: {0}")]
    Thread(std::io::Error),
    /// The worker did not complete the `hello`/`ready` handshake.
    #[error("{0}")]
    Handshake(String),
}

/// Keeps the last bytes the worker writes to stderr, to explain a crash.
fn keep_stderr_tail(pid: u32, mut stderr: ChildStderr) -> Result<Arc<Mutex<Vec<u8>>>, SpawnError> {
    let stderr_tail = Arc::new(Mutex::new(Vec::new()));
    let tail = stderr_tail.clone();
    std::thread::Builder::new()
        .name(format!("runx-worker-{pid}-err"))
        .spawn(move || {
            let mut buf = [0u8; 1024];
            while let Ok(n) = stderr.read(&mut buf) {
                if n == 0 {
                    return;
                }
                if let Ok(mut t) = tail.lock() {
                    t.extend_from_slice(&buf[..n]);
                    let excess = t.len().saturating_sub(STDERR_TAIL_BYTES);
                    t.drain(..excess);
                }
            }
        })
        .map_err(SpawnError::Thread)?;
    Ok(stderr_tail)
}

/// Requested capacity of the pipes to and from a worker.
const PIPE_BYTES: i32 = 1024 * 1024;

/// Bytes of worker stderr kept to explain a crash.
const STDERR_TAIL_BYTES: usize = 4096;

impl WorkerProcess {
    /// Starts a worker with an empty environment in its own process group, tied to this
    /// process ([`crate::host::child`]), and sends `hello`; `forked` gets the worker's pid as
    /// soon as it exists, so that whoever may have to kill it meanwhile knows it. The worker
    /// makes its engine ready before it answers ([`WorkerProcess::await_ready`]).
    pub(crate) fn start(
        command: &WorkerCommand,
        cwd: &Path,
        forked: impl FnOnce(u32),
    ) -> Result<WorkerProcess, SpawnError> {
        let (descriptors, worker_end) = UnixStream::pair().map_err(SpawnError::Thread)?;
        let mut spawn = Command::new(&command.program);
        spawn
            .args(&command.args)
            .env_clear()
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        let mut child = crate::host::child::spawn_with_channel(spawn, worker_end.as_raw_fd())
            .map_err(|source| SpawnError::Start {
                program: command.program.clone(),
                source,
            })?;
        // The worker holds its own end now.
        drop(worker_end);
        let pid = child.id();
        forked(pid);
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(SpawnError::Pipes);
        };
        // Pages are up to 4 MiB; a 1 MiB pipe moves them in a few writes instead of sixty-four.
        // Best effort: the kernel may cap it (`/proc/sys/fs/pipe-max-size`).
        for fd in [stdin.as_fd(), stdout.as_fd()] {
            let _ = nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_SETPIPE_SZ(PIPE_BYTES));
        }
        let stdin_pipe_bytes = nix::fcntl::fcntl(stdin.as_fd(), nix::fcntl::FcntlArg::F_GETPIPE_SZ)
            .ok()
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(0);
        let readers = Replies::new(stdout)
            .map_err(|_| SpawnError::Pipes)
            .and_then(|replies| {
                keep_stderr_tail(pid, stderr).map(|stderr_tail| (replies, stderr_tail))
            });
        let (replies, stderr_tail) = match readers {
            Ok(r) => r,
            Err(e) => {
                kill_group(pid);
                let _ = child.wait();
                return Err(e);
            }
        };
        let mut worker = WorkerProcess {
            child,
            stdin: BufWriter::with_capacity(64 * 1024, stdin),
            descriptors,
            pages_by_descriptor: false,
            stdin_pipe_bytes,
            replies,
            stderr_tail,
            bundles: HashSet::new(),
            next_call: 1,
            pid,
        };
        let hello = Header::new(0, Message::Hello).to_bytes();
        if let Err(e) = write_frame(&mut worker.stdin, &hello, &[]) {
            let why = worker.explain(&format!("the worker did not accept `hello`: {e}"));
            worker.kill();
            return Err(SpawnError::Handshake(why));
        }
        Ok(worker)
    }

    /// Waits until `startup` for the worker's answer to `hello`; a worker that does not answer
    /// `ready` is killed.
    pub(crate) fn await_ready(&mut self, startup: Duration) -> Result<(), SpawnError> {
        match self.ready(startup) {
            Ok(()) => Ok(()),
            Err(why) => {
                self.kill();
                Err(SpawnError::Handshake(why))
            }
        }
    }

    /// Reads the answer to `hello` until `startup`.
    fn ready(&mut self, startup: Duration) -> Result<(), String> {
        match self.next_reply(Instant::now() + startup) {
            Ok((
                Header {
                    message:
                        Message::Ready {
                            pages_by_descriptor,
                            ..
                        },
                    ..
                },
                _,
            )) => {
                self.pages_by_descriptor = pages_by_descriptor;
                Ok(())
            }
            Ok((header, _)) => Err(format!(
                "the worker answered `hello` with {:?} instead of `ready`",
                header.message
            )),
            Err(Wait::TimedOut) => Err(format!(
                "the worker did not become ready within {} ms",
                startup.as_millis()
            )),
            Err(Wait::Broken(why)) => {
                Err(self.explain(&format!("the worker failed to start: {why}")))
            }
        }
    }
}
