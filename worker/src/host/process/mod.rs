//! One worker process seen from the host: invoke under a deadline, kill; its start and
//! handshake are in `start.rs`.

use crate::engine::ConsoleLog;
use crate::host::descriptor;
use crate::wire::failure::Failure;
use crate::wire::frame::{FrameError, split_payload, write_frame};
use crate::wire::message::{Header, Message, PageLayout, encode_ends, encode_spans};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use runx_rules::Limit;
use std::collections::HashSet;
use std::ffi::OsString;
use std::io::BufWriter;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{Child, ChildStdin};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub(crate) mod call;
mod replies;
mod start;

use call::{Call, PagePayload, PageRecords, Reply};
use replies::{NoReply, Replies};

/// How to start a worker: a program and its arguments (e.g. `runx __worker`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkerCommand {
    /// The executable.
    pub program: PathBuf,
    /// Arguments before any the pool adds (none today).
    pub args: Vec<OsString>,
}

impl WorkerCommand {
    /// A command with no arguments.
    pub fn new(program: impl Into<PathBuf>) -> WorkerCommand {
        WorkerCommand {
            program: program.into(),
            args: Vec::new(),
        }
    }

    /// Adds an argument.
    pub fn arg(mut self, arg: impl Into<OsString>) -> WorkerCommand {
        self.args.push(arg.into());
        self
    }

    /// Asks the worker for the engine `name` (`--engine NAME`); the default engine adds nothing,
    /// so workers that predate the flag keep working.
    pub fn engine(self, name: &str) -> WorkerCommand {
        if name == runx_rules::DEFAULT_ENGINE {
            return self;
        }
        self.arg("--engine").arg(name)
    }
}

/// How an invoke ended when it did not produce a reply.
#[derive(Debug)]
pub(crate) enum InvokeError {
    /// The worker answered with a typed failure.
    Failed(Failure, ConsoleLog),
    /// The request never reached the worker: the call did not start.
    NotSent(String),
    /// The worker died or broke protocol after it may have started the call.
    Lost(String),
    /// No answer by the deadline; the worker was killed.
    TimedOut,
    /// The worker does not hold the bundle; the call did not start.
    NeedBundle,
    /// A request to send while a reply is owed is too large to wait in the pipe; nothing was
    /// sent and the worker is as it was.
    TooLargeAhead(String),
    /// The reply to a page that took a kept state does not name the state the host expected:
    /// the page ran (or was refused) with another state.
    StateMismatch(String),
}

/// A page laid out for the frame.
struct PageParts<'p> {
    layout: PageLayout,
    table: Vec<u8>,
    blob: Vec<u8>,
    file: Option<&'p std::fs::File>,
}

/// A live worker process.
pub(crate) struct WorkerProcess {
    child: Child,
    stdin: BufWriter<ChildStdin>,
    /// The host end of the descriptor channel (the worker's fd 3).
    descriptors: UnixStream,
    /// Whether the worker said it reads page records from descriptors.
    pages_by_descriptor: bool,
    /// What the pipe to the worker holds (0 if unknown).
    stdin_pipe_bytes: usize,
    replies: Replies,
    stderr_tail: Arc<Mutex<Vec<u8>>>,
    bundles: HashSet<String>,
    next_call: u64,
    pub(crate) pid: u32,
}

impl WorkerProcess {
    /// Sends one call and waits for its reply until the wall plus `grace`. The bundle goes
    /// along the first time this worker needs it, and again if the worker asks for it.
    pub(crate) fn invoke(&mut self, call: &Call, grace: Duration) -> Result<Reply, InvokeError> {
        match self.invoke_once(call, grace) {
            Err(InvokeError::NeedBundle) => {
                self.bundles.remove(&call.bundle_digest);
                match self.invoke_once(call, grace) {
                    Err(InvokeError::NeedBundle) => Err(InvokeError::Lost(
                        "the worker asked again for the bundle it was just sent".to_string(),
                    )),
                    other => other,
                }
            }
            other => other,
        }
    }

    fn invoke_once(&mut self, call: &Call, grace: Duration) -> Result<Reply, InvokeError> {
        let call_id = self.send_call(call, false)?;
        self.receive_call(call_id, Instant::now() + call.limits.wall() + grace, None)
    }

    /// Whether the worker reads page records from descriptors, so that a page's frame holds
    /// only its metadata and span table.
    pub(crate) fn pages_by_descriptor(&self) -> bool {
        self.pages_by_descriptor
    }

    /// The largest request that may be sent while a reply is owed. The worker reads a request
    /// whole before it runs it, so while it writes a reply the pipe holds at most the request
    /// sent after it: one that fits in the pipe never leaves the host waiting on a worker that
    /// waits on the host. Half the pipe leaves room to spare.
    pub(crate) fn ahead_bytes(&self) -> usize {
        self.stdin_pipe_bytes / 2
    }

    /// Sends one call without waiting for its reply; its id. With `ahead` (a reply is still
    /// owed), a request above [`WorkerProcess::ahead_bytes`] is not sent (`TooLargeAhead`).
    pub(crate) fn send_call(&mut self, call: &Call, ahead: bool) -> Result<u64, InvokeError> {
        let call_id = self.next_call;
        self.next_call += 1;
        let send_bundle = !self.bundles.contains(&call.bundle_digest);
        let page = match call.page.as_ref().map(|p| self.page_parts(p)).transpose() {
            Ok(parts) => parts,
            Err(e) => {
                return Err(InvokeError::Failed(
                    Failure::new(
                        crate::wire::failure::FailureCode::Internal,
                        format!("cannot read the page's records: {e}"),
                    ),
                    ConsoleLog::default(),
                ));
            }
        };
        let header = Header::new(
            call_id,
            Message::Invoke {
                bundle_digest: call.bundle_digest.clone(),
                bundle: send_bundle.then(|| (*call.bundle).clone()),
                export: call.export.clone(),
                environment: call.environment.clone(),
                limits: call.limits,
                input_len: call.input.len() as u32,
                page: page.as_ref().map(|p| p.layout),
                probe: call.probe,
                keep_module: call.keep_module,
                run: call.run,
            },
        )
        .to_bytes();
        let mut tail: Vec<&[u8]> = vec![&call.input];
        if let (Some(p), Some(parts)) = (&call.page, &page) {
            tail.extend([&p.meta[..], &parts.table[..], &parts.blob[..]]);
        }
        let bytes = 8 + header.len() + tail.iter().map(|t| t.len()).sum::<usize>();
        if ahead && bytes > self.ahead_bytes() {
            return Err(InvokeError::TooLargeAhead(format!(
                "its request of {bytes} bytes is above the {} bytes that may wait in the pipe",
                self.ahead_bytes()
            )));
        }
        if let Some(file) = page.as_ref().and_then(|parts| parts.file)
            && let Err(e) = descriptor::send(&self.descriptors, call_id, file)
        {
            return Err(InvokeError::NotSent(self.explain(&format!(
                "the worker did not take the page's descriptor: {e}"
            ))));
        }
        if let Err(e) = write_frame(&mut self.stdin, &header, &tail) {
            return match e {
                FrameError::TooLarge(n) => Err(InvokeError::Failed(
                    Failure::limit(
                        Limit::InputBytes,
                        format!(
                            "the request is {n} bytes, above the {}-byte frame maximum",
                            crate::wire::frame::MAX_FRAME_BYTES
                        ),
                    ),
                    ConsoleLog::default(),
                )),
                other => Err(InvokeError::NotSent(
                    self.explain(&format!("the worker did not take the request: {other}")),
                )),
            };
        }
        if send_bundle {
            self.bundles.insert(call.bundle_digest.clone());
        }
        Ok(call_id)
    }

    /// Waits until `deadline` for the reply to `call_id`, the next call owed a reply.
    pub(crate) fn receive_call(
        &mut self,
        call_id: u64,
        deadline: Instant,
        state: Option<&str>,
    ) -> Result<Reply, InvokeError> {
        let (header, tail) = match self.next_reply(deadline) {
            Ok(r) => r,
            Err(Wait::TimedOut) => return Err(InvokeError::TimedOut),
            Err(Wait::Broken(why)) => return Err(InvokeError::Lost(self.explain(&why))),
        };
        if header.call_id != call_id {
            return Err(InvokeError::Lost(format!(
                "the worker answered call {} while call {call_id} was pending",
                header.call_id
            )));
        }
        if let Some(expected) = state {
            let named = match &header.message {
                Message::Result { state_digest, .. } | Message::Failure { state_digest, .. } => {
                    state_digest.as_deref()
                }
                _ => None,
            };
            if named != Some(expected) {
                return Err(InvokeError::StateMismatch(format!(
                    "the worker answered call {call_id} for a state other than the host's ({})",
                    named.unwrap_or("none named")
                )));
            }
        }
        match header.message {
            Message::Result {
                log,
                engine_us,
                state_digest,
            } => Ok(Reply {
                output: tail,
                log,
                worker_pid: self.pid,
                engine_time: Duration::from_micros(engine_us),
                state_digest,
            }),
            // A worker is not trusted to have bounded what it sends.
            Message::Failure { failure, log, .. } => {
                Err(InvokeError::Failed(failure.bounded(), log))
            }
            Message::NeedBundle { .. } => Err(InvokeError::NeedBundle),
            other => Err(InvokeError::Lost(format!(
                "the worker answered an invoke with {other:?}"
            ))),
        }
    }

    /// The frame parts of a page: its layout, record table and inline bytes, and the file the
    /// worker reads the records from when they travel by descriptor.
    fn page_parts<'p>(&self, page: &'p PagePayload) -> std::io::Result<PageParts<'p>> {
        let meta_len = u32::try_from(page.meta.len()).map_err(std::io::Error::other)?;
        let count = u32::try_from(page.records.count()).map_err(std::io::Error::other)?;
        let blob_len = u32::try_from(page.records.record_bytes()).map_err(std::io::Error::other)?;
        match &page.records {
            PageRecords::Range { file, range, spans } if self.pages_by_descriptor => {
                Ok(PageParts {
                    layout: PageLayout {
                        meta_len,
                        record_count: count,
                        blob_len,
                        range: Some(*range),
                        keep_state: page.keep_state,
                        state_from: page.state_from,
                        run: page.run,
                    },
                    table: encode_spans(spans),
                    blob: Vec::new(),
                    file: Some(file),
                })
            }
            records => {
                let (ends, blob) = records.to_inline()?;
                Ok(PageParts {
                    layout: PageLayout {
                        meta_len,
                        record_count: count,
                        blob_len,
                        range: None,
                        keep_state: page.keep_state,
                        state_from: page.state_from,
                        run: page.run,
                    },
                    table: encode_ends(&ends),
                    blob,
                    file: None,
                })
            }
        }
    }

    /// Whether the process has already exited (checked before handing it a call).
    pub(crate) fn has_exited(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }

    fn next_reply(&mut self, deadline: Instant) -> Result<(Header, Vec<u8>), Wait> {
        let frame = match self.replies.next(deadline) {
            Ok(frame) => frame,
            Err(NoReply::Broken(e)) => {
                return Err(Wait::Broken(format!("broken frame from the worker: {e}")));
            }
            Err(NoReply::TimedOut) => return Err(Wait::TimedOut),
            Err(NoReply::Closed) => return Err(Wait::Broken(self.exit_description())),
        };
        let (head, tail) =
            split_payload(&frame).map_err(|e| Wait::Broken(format!("malformed reply: {e}")))?;
        let header: Header = serde_json::from_slice(head)
            .map_err(|e| Wait::Broken(format!("unreadable reply header: {e}")))?;
        if header.v != crate::wire::message::PROTOCOL_VERSION {
            return Err(Wait::Broken(format!(
                "the worker speaks protocol version {}",
                header.v
            )));
        }
        Ok((header, tail.to_vec()))
    }

    fn exit_description(&mut self) -> String {
        // The pipe closed; give the process a moment to be reapable so the signal is known.
        for _ in 0..50 {
            match self.child.try_wait() {
                Ok(Some(status)) => {
                    use std::os::unix::process::ExitStatusExt;
                    return match status.signal() {
                        Some(sig) if sig == Signal::SIGSYS as i32 => format!(
                            "the worker process died from signal {sig} (SIGSYS): the engine made a system call outside the worker's seccomp allow-list (see \"The seccomp filter\" in docs/src/security.md)"
                        ),
                        Some(sig) => format!(
                            "the worker process died from signal {} ({})",
                            sig,
                            Signal::try_from(sig).map(|s| s.as_str()).unwrap_or("?")
                        ),
                        None => format!("the worker process exited with {status}"),
                    };
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(2)),
                Err(_) => break,
            }
        }
        "the worker closed its output".to_string()
    }

    /// Appends the tail of the worker's stderr, if any, to a message.
    fn explain(&self, why: &str) -> String {
        let tail = self
            .stderr_tail
            .lock()
            .map(|t| String::from_utf8_lossy(&t).trim().to_string())
            .unwrap_or_default();
        if tail.is_empty() {
            why.to_string()
        } else {
            format!("{why} (worker stderr: {tail})")
        }
    }

    /// Asks the worker to exit, then makes sure it did.
    pub(crate) fn shutdown(mut self) {
        let bye = Header::new(0, Message::Shutdown).to_bytes();
        let _ = write_frame(&mut self.stdin, &bye, &[]);
        let deadline = Instant::now() + Duration::from_millis(200);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                // The process group may still hold nothing; kill is harmless then.
                self.kill();
                return;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        self.kill();
    }

    /// Kills the worker's whole process group and reaps it.
    pub(crate) fn kill(&mut self) {
        kill_group(self.pid);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sends SIGKILL to the process group led by `pid`.
pub(crate) fn kill_group(pid: u32) {
    if let Ok(pid) = i32::try_from(pid) {
        let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
    }
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.kill();
        }
    }
}

enum Wait {
    TimedOut,
    Broken(String),
}
