//! The step server: a reader that admits requests, a fixed set of step threads that run them,
//! and one writer that every answer and notification goes through, a whole line at a time.

use crate::answer::{busy_error, info_json, receipt_body};
use crate::config::ServeConfig;
use crate::line::{Line, read_line};
use crate::params::{Env, Inputs, InspectParams, RunParams};
use crate::protocol::{
    self, ErrorCode, Method, Request, RequestId, RpcError, error_line, notification_line,
    result_line,
};
use runx_runtime::{
    CancelToken, EnvSource, PageProgress, ProgressSink, RunRequest, Runtime, describe_json,
    run_json,
};
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io::{BufRead, Write};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How reading ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// A `shutdown` request.
    Shutdown,
    /// The end of the input.
    EndOfInput,
}

/// A step server over one runtime. Answers go to the writer given to [`Server::new`].
pub struct Server {
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

struct Shared {
    runtime: Arc<Runtime>,
    config: ServeConfig,
    out: Mutex<Box<dyn Write + Send>>,
    jobs: Mutex<Jobs>,
    changed: Condvar,
}

/// Requests accepted and not yet answered.
#[derive(Default)]
struct Jobs {
    queue: VecDeque<Job>,
    running: usize,
    /// Every accepted request by its id's JSON text, with the token of a `run`.
    in_flight: HashMap<String, Option<CancelToken>>,
    /// No more requests will come; step threads exit once the queue is empty.
    closing: bool,
}

struct Job {
    id: RequestId,
    key: String,
    work: Work,
}

enum Work {
    Run(Box<QueuedRun>),
    Inspect(PathBuf),
}

/// A `run` as it waits for a step thread: the request with no inputs and an empty environment
/// yet, and those two as the line wrote them. They are parsed when a step thread takes the
/// request, so a queued request holds the bytes of its line, not the trees of its values.
struct QueuedRun {
    request: RunRequest,
    inputs: Inputs,
    env: Env,
    /// Whether the answer carries the receipt document.
    receipt_body: bool,
}

impl Server {
    /// A server running at most `config.pool_size` requests at once on `runtime`, answering on
    /// `out`. Its step threads start now.
    pub fn new(
        runtime: Arc<Runtime>,
        config: ServeConfig,
        out: Box<dyn Write + Send>,
    ) -> std::io::Result<Server> {
        let shared = Arc::new(Shared {
            runtime,
            config,
            out: Mutex::new(out),
            jobs: Mutex::new(Jobs::default()),
            changed: Condvar::new(),
        });
        let mut threads = Vec::new();
        for n in 0..shared.config.pool_size.max(1) {
            let s = shared.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("runx-step-{n}"))
                .spawn(move || s.step_loop());
            match spawned {
                Ok(t) => threads.push(t),
                Err(e) => {
                    shared.close();
                    return Err(e);
                }
            }
        }
        Ok(Server {
            shared,
            threads: Mutex::new(threads),
        })
    }

    /// Reads requests from `input` until `shutdown` or its end, then waits until every
    /// accepted request has been answered (the answer to `shutdown` comes last).
    pub fn serve(&self, input: &mut impl BufRead) -> Ending {
        let mut buf = Vec::new();
        let max = self.shared.config.max_request_bytes;
        let ending = loop {
            let line = match read_line(input, max, &mut buf) {
                Ok(l) => l,
                Err(e) => {
                    tracing::warn!("cannot read requests: {e}; shutting down");
                    break (Ending::EndOfInput, None);
                }
            };
            match line {
                Line::End => break (Ending::EndOfInput, None),
                Line::TooLong(n) => self.shared.answer_error(
                    &RequestId::null(),
                    &RpcError::new(
                        ErrorCode::InvalidRequest,
                        format!(
                            "invalid request: the line is {n} bytes; a request may be at most {max} bytes"
                        ),
                    ),
                ),
                Line::Text if buf.iter().all(u8::is_ascii_whitespace) => {}
                Line::Text => {
                    if let Next::Shutdown(answer) = self.handle(&buf) {
                        break (Ending::Shutdown, answer);
                    }
                }
            }
        };
        self.finish();
        if let (_, Some(id)) = &ending {
            self.shared.write(&result_line(id, "null"));
        }
        ending.0
    }

    /// Cancels every accepted request; each answers `interrupted` (with its receipt).
    pub fn cancel_all(&self) {
        let jobs = self.shared.lock();
        for token in jobs.in_flight.values().flatten() {
            token.cancel();
        }
    }

    /// Stops accepting work and waits up to `timeout` for the requests in flight to be
    /// answered. Whether they all were.
    pub fn wait_idle(&self, timeout: Duration) -> bool {
        self.shared.close();
        let deadline = Instant::now() + timeout;
        let mut jobs = self.shared.lock();
        while !jobs.in_flight.is_empty() || jobs.running > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            jobs = self
                .shared
                .changed
                .wait_timeout(jobs, left.min(Duration::from_millis(50)))
                .map(|(g, _)| g)
                .unwrap_or_else(|p| p.into_inner().0);
        }
        true
    }

    /// Handles one line.
    fn handle(&self, line: &[u8]) -> Next {
        let Request { id, method } = match protocol::parse(line) {
            Ok(r) => r,
            Err((id, e)) => {
                self.shared.answer_error(&id, &e);
                return Next::Continue;
            }
        };
        match method {
            Method::Shutdown(p) => {
                tracing::info!(cancel = p.cancel, "shutdown requested");
                if p.cancel {
                    self.cancel_all();
                }
                return Next::Shutdown(id);
            }
            Method::Info(_) => {
                if let Some(id) = id {
                    let info = info_json(&self.shared.config);
                    self.shared.write(&result_line(&id, &info.to_string()));
                }
            }
            Method::Cancel(p) => {
                let found = self.shared.cancel(&p.id);
                if let Some(id) = id {
                    self.shared
                        .write(&result_line(&id, &json!({"cancelled": found}).to_string()));
                }
            }
            Method::Run(p) => match id {
                Some(id) => {
                    let work = self.shared.run_request(p);
                    self.shared.admit(id, work);
                }
                None => tracing::warn!(
                    "a `run` notification (no id) is ignored: nobody could read its result"
                ),
            },
            Method::Inspect(InspectParams { skill }) => match id {
                Some(id) => {
                    let dir = self.shared.resolve(&skill);
                    self.shared.admit(id, Ok(Work::Inspect(dir)));
                }
                None => tracing::warn!("an `inspect` notification (no id) is ignored"),
            },
        }
        Next::Continue
    }

    /// No more requests: step threads drain the queue, answer, and end; so do the answers of
    /// cancelled queued requests.
    fn finish(&self) {
        self.shared.close();
        let threads = std::mem::take(&mut *self.threads.lock().unwrap_or_else(|p| p.into_inner()));
        for t in threads {
            let _ = t.join();
        }
        while !self.wait_idle(Duration::from_secs(60)) {
            tracing::warn!("still waiting for requests in flight to be answered");
        }
    }
}

/// What the reader does after a request.
enum Next {
    Continue,
    /// Stop reading; answer this id (none for a notification) once everything is answered.
    Shutdown(Option<RequestId>),
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Jobs> {
        self.jobs.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn close(&self) {
        self.lock().closing = true;
        self.changed.notify_all();
    }

    /// Writes one whole line and flushes it; a reader that went away is logged, not fatal.
    fn write(&self, line: &[u8]) {
        let mut out = self.out.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(e) = out.write_all(line).and_then(|()| out.flush()) {
            tracing::warn!("cannot write an answer: {e}");
        }
    }

    fn answer_error(&self, id: &RequestId, e: &RpcError) {
        tracing::debug!(%id, error = %e, "request refused");
        self.write(&error_line(id, e));
    }

    /// A path from a request, relative to the server's working directory.
    fn resolve(&self, p: &Path) -> PathBuf {
        self.config.cwd.join(p)
    }

    /// The run a `run` request asks for, or why it cannot be one.
    fn run_request(&self, p: RunParams) -> Result<Work, RpcError> {
        let workspace = p
            .cwd
            .as_deref()
            .map_or_else(|| self.config.cwd.clone(), |c| self.resolve(c));
        if !workspace.is_dir() {
            return Err(RpcError::new(
                ErrorCode::InvalidParams,
                format!(
                    "invalid params for `run`: cwd {} is not a directory",
                    workspace.display()
                ),
            ));
        }
        // A bare name is found as `skills/NAME`, as `runx skill` finds it.
        let mut req = RunRequest::new(
            runx_runtime::package_dir(&self.config.cwd, &p.skill),
            Map::new(),
        );
        req.runner = p.runner;
        // Never the server's own environment for declared names, even before the step's is
        // parsed; a cli-tool's baseline comes from the server's, as for `runx skill`.
        req.env = EnvSource::Served(BTreeMap::new());
        req.workspace = workspace;
        req.receipt_dir = p.receipt_dir.as_deref().map(|d| self.resolve(d));
        // The progress sink is attached once the id is known to be admitted.
        req.progress = p.progress.then(|| ProgressSink::new(|_| {}));
        Ok(Work::Run(Box::new(QueuedRun {
            request: req,
            inputs: p.inputs,
            env: p.env,
            receipt_body: p.receipt_body,
        })))
    }

    /// Queues a request, or answers why not (invalid, duplicate id, busy).
    fn admit(self: &Arc<Self>, id: RequestId, work: Result<Work, RpcError>) {
        let mut work = match work {
            Ok(w) => w,
            Err(e) => return self.answer_error(&id, &e),
        };
        // Keyed by value, as `cancel` names it; answered with the id as written.
        let key = id.value().to_string();
        let refused = {
            let mut jobs = self.lock();
            let capacity = self.config.pool_size + self.config.queue;
            if jobs.closing {
                Some(RpcError::new(
                    ErrorCode::InvalidRequest,
                    "invalid request: the server is shutting down",
                ))
            } else if jobs.in_flight.contains_key(&key) {
                Some(RpcError::new(
                    ErrorCode::InvalidRequest,
                    format!("invalid request: id {key} is already in use by a request in flight"),
                ))
            } else if jobs.in_flight.len() >= capacity {
                // Counted as a client counts: a request leaves `in_flight` before its answer
                // is written (it stays `running` until after), so a client that sends one
                // request per answer read is never refused.
                Some(busy_error(jobs.running, jobs.queue.len(), &self.config))
            } else {
                let token = match &mut work {
                    Work::Run(run) => {
                        let req = &mut run.request;
                        if req.progress.is_some() {
                            req.progress = Some(self.progress_sink(&id));
                        }
                        Some(req.cancel.clone())
                    }
                    Work::Inspect(_) => None,
                };
                jobs.in_flight.insert(key.clone(), token);
                jobs.queue.push_back(Job {
                    id: id.clone(),
                    key,
                    work,
                });
                None
            }
        };
        match refused {
            Some(e) => self.answer_error(&id, &e),
            None => self.changed.notify_all(),
        }
    }

    /// Sends `progress` notifications for the request `id`.
    fn progress_sink(self: &Arc<Self>, id: &RequestId) -> ProgressSink {
        let shared = Arc::downgrade(self);
        let id = id.clone();
        ProgressSink::new(move |p: &PageProgress| {
            if let Some(s) = shared.upgrade() {
                s.write(&notification_line(
                    "progress",
                    &id,
                    json!({
                        "page_index": p.pages.saturating_sub(1),
                        "bytes": p.bytes,
                        "total_bytes": p.total_bytes,
                    }),
                ));
            }
        })
    }

    /// Cancels the request `id`, queued or running; whether there was one to cancel. A queued
    /// request is answered at once (`interrupted`, with its receipt), not when a slot frees.
    fn cancel(self: &Arc<Self>, id: &Value) -> bool {
        let key = id.to_string();
        let mut jobs = self.lock();
        let Some(Some(token)) = jobs.in_flight.get(&key) else {
            return false;
        };
        // A step already cancelling is not cancelled again: only the first cancel did it.
        if token.is_cancelled() {
            return false;
        }
        token.cancel();
        let queued = jobs.queue.iter().position(|j| j.key == key);
        if let Some(job) = queued.and_then(|i| jobs.queue.remove(i)) {
            jobs.running += 1;
            drop(jobs);
            let s = self.clone();
            // The job goes to a thread of its own; it stays here if none can start.
            let cell = Arc::new(Mutex::new(Some(job)));
            let theirs = cell.clone();
            let spawned = std::thread::Builder::new()
                .name("runx-step-cancelled".to_string())
                .spawn(move || {
                    if let Some(job) = take(&theirs) {
                        s.complete(job);
                    }
                });
            if spawned.is_err()
                && let Some(job) = take(&cell)
            {
                // A cancelled run ends before it starts anything: answering inline is quick.
                self.complete(job);
            }
        }
        true
    }

    /// A step thread: takes queued requests until the server closes and the queue is empty.
    fn step_loop(&self) {
        loop {
            let job = {
                let mut jobs = self.lock();
                loop {
                    if let Some(job) = jobs.queue.pop_front() {
                        jobs.running += 1;
                        break job;
                    }
                    if jobs.closing {
                        return;
                    }
                    jobs = self.changed.wait(jobs).unwrap_or_else(|p| p.into_inner());
                }
            };
            self.complete(job);
        }
    }

    /// Runs a request taken off the queue, answers it and forgets it. Its id is free (and
    /// no longer cancellable) before the answer is written, so a client that has read the
    /// answer never finds it still in flight; it stays `running` until the answer is out.
    fn complete(&self, job: Job) {
        let Job { id, key, work } = job;
        let line = self.answer(&id, work);
        self.lock().in_flight.remove(&key);
        self.write(&line);
        self.lock().running -= 1;
        self.changed.notify_all();
    }

    /// Runs one request; a panic becomes an internal error answer, never the end of the
    /// server.
    fn answer(&self, id: &RequestId, work: Work) -> Vec<u8> {
        let answered = catch_unwind(AssertUnwindSafe(|| match work {
            Work::Run(run) => {
                let with_body = run.receipt_body;
                let req = run.parsed()?;
                let outcome = self.runtime.run(req);
                tracing::info!(
                    id = %id,
                    skill = %outcome.skill,
                    runner = %outcome.runner,
                    status = %outcome.status(),
                    "step answered"
                );
                let mut result = run_json(&outcome);
                if with_body {
                    result["receipt_body"] = receipt_body(&outcome);
                }
                Ok(result.to_string())
            }
            Work::Inspect(dir) => match runx_profile::load(&dir) {
                Ok(p) => Ok(describe_json(&p).to_string()),
                Err(e) => {
                    let failure = runx_runtime::RunError::from(e);
                    Err(
                        RpcError::new(ErrorCode::PackageFailure, failure.message.clone())
                            .with_data(json!(failure)),
                    )
                }
            },
        }));
        match answered {
            Ok(Ok(text)) => result_line(id, &text),
            Ok(Err(e)) => error_line(id, &e),
            Err(panic) => {
                let why = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".to_string());
                tracing::error!(id = %id, "a step panicked: {why}");
                error_line(
                    id,
                    &RpcError::new(ErrorCode::Internal, format!("internal error: {why}"))
                        .with_data(json!({"kind": "internal", "code": "panic", "message": why})),
                )
            }
        }
    }
}

impl QueuedRun {
    /// The request with its inputs and environment parsed; their text is dropped. A cancelled
    /// run ends before either is read, so they are not parsed then: a cancelled queued request
    /// is answered on a thread of its own, beside the pool, and must not add trees beside the
    /// running ones.
    fn parsed(self) -> Result<RunRequest, RpcError> {
        let QueuedRun {
            mut request,
            inputs,
            env,
            ..
        } = self;
        if !request.cancel.is_cancelled() {
            // Both were checked when the request was read, so neither fails here.
            let bad = |e: serde_json::Error| {
                RpcError::new(
                    ErrorCode::InvalidParams,
                    format!("invalid params for `run`: {e}"),
                )
            };
            request.inputs = inputs.parse().map_err(bad)?;
            request.env = EnvSource::Served(env.parse().map_err(bad)?);
            refuse_long_integers(&inputs, &request.inputs)?;
        }
        Ok(request)
    }
}

/// An integer literal of the inputs beyond 64 bits, which JSON reads as a double, refused as
/// `runx skill` refuses it (integers of 64 bits are refused by the run itself, by input).
fn refuse_long_integers(inputs: &Inputs, parsed: &Map<String, Value>) -> Result<(), RpcError> {
    let Some(text) = inputs.text() else {
        return Ok(());
    };
    if parsed
        .values()
        .any(|v| runx_profile::unsafe_integer(v).is_some())
    {
        return Ok(());
    }
    match runx_profile::long_integer_in_map(text.as_bytes(), parsed) {
        None => Ok(()),
        Some((at, literal)) => Err(RpcError::new(
            ErrorCode::InvalidParams,
            format!(
                "invalid params for `run`: the inputs hold the integer {literal} at {at}, beyond ±{} (2^53 - 1), which a JSON number does not carry exactly; pass it as a string",
                runx_profile::MAX_SAFE_INTEGER
            ),
        )
        .with_data(json!({"kind": "input", "code": "unsafe_integer", "at": at}))),
    }
}

/// The job in `cell`, taken once.
fn take(cell: &Mutex<Option<Job>>) -> Option<Job> {
    cell.lock().unwrap_or_else(|p| p.into_inner()).take()
}
