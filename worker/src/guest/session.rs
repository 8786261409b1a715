//! A worker's session: the loop that reads the host's frames and answers each one, and the
//! state every call of it shares ([`Session`]: the engine, the bundles cached by digest, the
//! page state kept for the next call, the descriptor channel).

use super::ahead::{self, KeptState};
use super::error::WorkerError;
use super::output::accept;
use super::request::{Invoke, invalid};
use super::tail::{PageMemory, TailParts, split_tail};
use crate::engine::bundle::ModuleBundle;
use crate::engine::{ConsoleLog, Engine, EngineCall, PageInput};
use crate::wire::failure::{Failure, FailureCode};
use crate::wire::frame::{FrameError, read_frame, split_payload, write_frame};
use crate::wire::message::{Header, Message, PROTOCOL_VERSION};
use runx_rules::Limits;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::Arc;

/// Bundles a worker keeps, by digest, before it forgets the oldest.
const BUNDLE_CACHE_ENTRIES: usize = 16;

/// Serves frames from `input` until `shutdown` or a clean end of input, with no descriptor
/// channel (page records then travel in frames only).
pub fn run_session(
    engine: &mut dyn Engine,
    input: impl Read,
    output: impl Write,
) -> Result<(), WorkerError> {
    run_session_with(engine, input, output, None)
}

/// Serves frames from `input` until `shutdown` or a clean end of input; page records may
/// arrive as byte ranges of a file whose descriptor comes on `descriptors`
/// (`host/descriptor.rs`).
pub fn run_session_with(
    engine: &mut dyn Engine,
    input: impl Read,
    output: impl Write,
    descriptors: Option<&UnixStream>,
) -> Result<(), WorkerError> {
    Session {
        engine,
        bundles: HashMap::new(),
        descriptors,
        pages: PageMemory::default(),
        kept: None,
        last_run: None,
    }
    .run(input, output)
}

/// What the loop does after one request.
enum Next {
    /// Answer the call with a message and the bytes that follow it.
    Answer(u64, Message, Vec<u8>),
    /// Answer, then stop serving with an error.
    Refuse(u64, Message, WorkerError),
    /// Stop serving.
    Stop,
}

impl Next {
    fn answer(id: u64, message: Message) -> Next {
        Next::Answer(id, message, Vec::new())
    }

    fn reject(id: u64, failure: Failure) -> Next {
        Next::answer(id, reject(failure))
    }
}

/// What a worker keeps between requests: every call of the loop shares it.
struct Session<'s> {
    /// The engine every call runs on.
    engine: &'s mut dyn Engine,
    /// Bundles by digest.
    bundles: HashMap<String, Arc<ModuleBundle>>,
    /// The channel page descriptors arrive on, if the host set one up.
    descriptors: Option<&'s UnixStream>,
    /// Where a page sent by descriptor lives during its call.
    pages: PageMemory,
    /// The state the last page's result carries forward, when that page asked to keep it.
    kept: Option<KeptState>,
    /// The paged run and bundle digest of the last call, when it was a page that succeeded:
    /// the next page of that run may continue on what the engine kept of it.
    last_run: Option<(u64, String)>,
}

impl Session<'_> {
    /// The loop: one frame in, one answer out, until `shutdown` or a clean end of input.
    fn run(mut self, mut input: impl Read, mut output: impl Write) -> Result<(), WorkerError> {
        // The first call's clean start (V8: the engine and an isolate) is made before the
        // handshake, while the host is still busy with what comes before its first call.
        self.engine.idle();
        loop {
            let payload = match read_frame(&mut input) {
                Ok(Some(p)) => p,
                Ok(None) => return Ok(()),
                Err(e) => {
                    // The stream cannot be resynchronised after a bad frame: answer, then stop.
                    let f = invalid(e.to_string()).discard_worker();
                    let _ = answer(&mut output, 0, reject(f), &[]);
                    return Err(e.into());
                }
            };
            match self.handle(&payload) {
                Next::Answer(id, message, tail) => {
                    answer(&mut output, id, message, &[&tail])?;
                    if self.last_run.is_none() {
                        // The answer is out: the next call's clean start is made while the
                        // host reads it.
                        self.engine.idle();
                    }
                }
                Next::Refuse(id, message, error) => {
                    answer(&mut output, id, message, &[])?;
                    return Err(error);
                }
                Next::Stop => return Ok(()),
            }
        }
    }

    /// One request, start to answer.
    fn handle(&mut self, payload: &[u8]) -> Next {
        let (header, tail) = match read_header(payload) {
            Ok(read) => read,
            Err(next) => return *next,
        };
        let id = header.call_id;
        match header.message {
            Message::Hello => Next::answer(
                id,
                Message::Ready {
                    engine: self.engine.name().to_string(),
                    pid: std::process::id(),
                    pages_by_descriptor: self.descriptors.is_some(),
                },
            ),
            Message::Health { nonce } => Next::answer(id, Message::Healthy { nonce }),
            Message::Shutdown => Next::Stop,
            Message::Invoke {
                bundle_digest,
                bundle,
                export,
                environment,
                limits,
                input_len,
                page,
                probe,
                run,
                keep_module,
            } => {
                let request = Invoke {
                    id,
                    export,
                    environment,
                    limits,
                    input_len,
                    page,
                    run,
                    continues: false,
                    probe,
                    keep_module,
                };
                self.invoke(request, &bundle_digest, bundle, tail)
            }
            other @ (Message::Ready { .. }
            | Message::Result { .. }
            | Message::Failure { .. }
            | Message::Healthy { .. }
            | Message::NeedBundle { .. }) => {
                let f = invalid(format!(
                    "a worker does not accept `{}` messages",
                    message_name(&other)
                ));
                Next::reject(id, f)
            }
        }
    }

    /// An invoke: its limits, its page's descriptor and its bundle resolved, then its call (and
    /// the state its result carries forward kept, when the page asked for that).
    fn invoke(
        &mut self,
        mut request: Invoke,
        bundle_digest: &str,
        sent: Option<ModuleBundle>,
        tail: &[u8],
    ) -> Next {
        let id = request.id;
        // A kept state is for the very next call, whatever that call is.
        let kept = self.kept.take();
        if let Err(why) = request.limits.check() {
            return Next::reject(id, invalid(why));
        }
        // A page's descriptor is taken first, so that it is closed however the call ends.
        let file = match self.page_file(&request) {
            Ok(file) => file,
            Err(failure) => return Next::reject(id, failure),
        };
        let bundle = match self.cached_bundle(bundle_digest, sent, &request.limits) {
            Ok(Some(bundle)) => bundle,
            Ok(None) => {
                let bundle_digest = bundle_digest.to_string();
                return Next::answer(id, Message::NeedBundle { bundle_digest });
            }
            Err(failure) => return Next::reject(id, failure),
        };
        let keep = request.page.is_some_and(|p| p.keep_state);
        // Only the next call of the run the last call belonged to (a page, or a map/fold
        // run's fold) continues on what the engine kept of it; every other call starts clean.
        let run = request
            .page
            .and_then(|p| p.run)
            .or(request.run)
            .map(|run| (run, bundle_digest.to_string()));
        let last_run = self.last_run.take();
        request.continues = run.is_some() && run == last_run;
        let next = self.call(&request, &bundle, tail, file, kept);
        if let Next::Answer(_, Message::Result { .. }, output) = &next {
            self.last_run = run;
            if keep {
                let state = ahead::carried_state(output);
                self.kept = state.map(|state| KeptState { call_id: id, state });
            }
        }
        next
    }

    /// The descriptor of the page's file, for a page whose records are a byte range of it.
    fn page_file(&self, request: &Invoke) -> Result<Option<std::fs::File>, Failure> {
        if request.page.and_then(|p| p.range).is_none() {
            return Ok(None);
        }
        let Some(channel) = self.descriptors else {
            return Err(invalid(
                "a page's records were sent by descriptor, but this worker has no descriptor channel",
            ));
        };
        crate::host::descriptor::receive(channel, request.id)
            .map(Some)
            .map_err(invalid)
    }

    /// Finds the bundle by digest, or admits the one sent along after checking its digest and
    /// size. `None`: neither cached nor sent, so the host must send it.
    fn cached_bundle(
        &mut self,
        digest: &str,
        sent: Option<ModuleBundle>,
        limits: &Limits,
    ) -> Result<Option<Arc<ModuleBundle>>, Failure> {
        let cache = &mut self.bundles;
        if let Some(b) = cache.get(digest) {
            return Ok(Some(b.clone()));
        }
        let Some(bundle) = sent else {
            return Ok(None);
        };
        if !bundle.modules.contains_key(&bundle.entry) {
            return Err(invalid("the bundle sent does not hold its entry module"));
        }
        if bundle.digest() != digest {
            return Err(invalid(format!(
                "the bundle sent does not match its digest {digest}"
            )));
        }
        if bundle.source_bytes() > limits.source_bytes {
            return Err(Failure::limit(
                runx_rules::Limit::SourceBytes,
                format!(
                    "the module bundle holds {} bytes of source and module paths; the limit is {} bytes",
                    bundle.source_bytes(),
                    limits.source_bytes
                ),
            ));
        }
        if cache.len() >= BUNDLE_CACHE_ENTRIES {
            cache.clear();
        }
        let bundle = Arc::new(bundle);
        cache.insert(digest.to_string(), bundle.clone());
        Ok(Some(bundle))
    }

    /// Runs one call of the engine with the input and page laid out in `tail` (and, for a page
    /// sent ahead, the state `kept` from the call before).
    fn call(
        &mut self,
        request: &Invoke,
        bundle: &Arc<ModuleBundle>,
        tail: &[u8],
        file: Option<std::fs::File>,
        kept: Option<KeptState>,
    ) -> Next {
        let id = request.id;
        let state = match request.page.and_then(|p| p.state_from) {
            None => None,
            Some(from) => match ahead::take_state(kept, id, from) {
                Ok(state) => Some(state),
                Err(why) => return Next::reject(id, invalid(why)),
            },
        };
        // Every answer to a call that took a kept state names that state, so that the host can
        // tell a failure of the page from a failure of the state it was given.
        let digest = state.as_deref().map(ahead::state_digest);
        let mut next = self.run_parts(request, bundle, tail, file, state, digest.clone());
        if let Next::Answer(
            _,
            Message::Result { state_digest, .. } | Message::Failure { state_digest, .. },
            _,
        ) = &mut next
        {
            *state_digest = digest;
        }
        next
    }

    /// Checks the size of a call, lays its tail out (the kept `state` joined to a page's
    /// metadata) and runs it.
    fn run_parts(
        &mut self,
        request: &Invoke,
        bundle: &Arc<ModuleBundle>,
        tail: &[u8],
        file: Option<std::fs::File>,
        state: Option<Vec<u8>>,
        digest: Option<String>,
    ) -> Next {
        let id = request.id;
        let logical = request.input_len as usize
            + request.page.map_or(0, |p| p.input_bytes())
            + state.as_ref().map_or(0, |s| s.len() + 1);
        if let Err(failure) = Failure::check_input(logical, &request.limits) {
            return Next::reject(id, failure);
        }
        let pages = &mut self.pages;
        let joined: Vec<u8>;
        let mut parts = match split_tail(request, tail, file.as_ref(), pages) {
            Ok(parts) => parts,
            Err(failure) => return Next::reject(id, failure),
        };
        if let (Some(state), Some((head, blob))) = (&state, parts.page) {
            joined = ahead::joined_meta(head, state);
            parts.page = Some((&joined, blob));
        }
        let next = call_with(&mut *self.engine, request, bundle, &parts, digest);
        // The page's map goes with its call: the worker holds no page between calls.
        pages.release();
        next
    }
}

/// Splits a request into its header and tail, and checks its protocol version; a request that
/// cannot be read gets its answer here (boxed: it is the rare way out).
fn read_header(payload: &[u8]) -> Result<(Header, &[u8]), Box<Next>> {
    let (head, tail) =
        split_payload(payload).map_err(|e| Box::new(Next::reject(0, invalid(e.to_string()))))?;
    let header: Header = match serde_json::from_slice(head) {
        Ok(h) => h,
        Err(e) => {
            // Answer under the call id the host used, if it can be read at all.
            let value: serde_json::Value = serde_json::from_slice(head).unwrap_or_default();
            let call_id = value.get("call_id").and_then(|c| c.as_u64()).unwrap_or(0);
            let kind = value.get("type").and_then(|t| t.as_str()).unwrap_or("?");
            let f = invalid(format!("unknown or malformed message `{kind}`: {e}"));
            return Err(Box::new(Next::reject(call_id, f)));
        }
    };
    let id = header.call_id;
    if header.v != PROTOCOL_VERSION {
        let f = invalid(format!(
            "protocol version {} is not supported; this worker speaks {PROTOCOL_VERSION}",
            header.v
        ));
        return Err(Box::new(match header.message {
            Message::Hello => Next::Refuse(id, reject(f), WorkerError::Version(header.v)),
            _ => Next::reject(id, f),
        }));
    }
    Ok((header, tail))
}

/// Writes one reply. Failure messages are bounded first; a reply that would still not fit in a
/// frame is answered with a failure saying so, so that the worker never has to stop serving
/// because of what a module made.
fn answer(
    w: &mut dyn Write,
    call_id: u64,
    message: Message,
    tail: &[&[u8]],
) -> Result<(), FrameError> {
    let message = match message {
        Message::Failure {
            failure,
            log,
            state_digest,
        } => Message::Failure {
            failure: failure.bounded(),
            log,
            state_digest,
        },
        other => other,
    };
    match write_frame(w, &Header::new(call_id, message).to_bytes(), tail) {
        Err(FrameError::TooLarge(bytes)) => {
            let f = Failure::new(
                FailureCode::Internal,
                format!("the worker's reply of {bytes} bytes does not fit in a frame"),
            );
            write_frame(w, &Header::new(call_id, reject(f)).to_bytes(), &[])
        }
        other => other,
    }
}

fn reject(failure: Failure) -> Message {
    Message::Failure {
        failure,
        log: ConsoleLog::default(),
        state_digest: None,
    }
}

/// Calls the engine with the parts of an invoke.
fn call_with(
    engine: &mut dyn Engine,
    request: &Invoke,
    bundle: &Arc<ModuleBundle>,
    parts: &TailParts<'_>,
    state_digest: Option<String>,
) -> Next {
    let id = request.id;
    let call = EngineCall {
        bundle,
        export: request.export.as_deref(),
        input: parts.input,
        page: parts.page.map(|(meta, blob)| PageInput {
            meta,
            blob,
            spans: &parts.spans,
        }),
        environment: &request.environment,
        limits: request.limits,
        continues: request.continues,
        probe: request.probe,
        keep_module: request.keep_module,
    };
    // If the engine must end the process (a heap exhausted inside a builtin), the answer to
    // this call is still written: see `fatal`.
    let _running = crate::engine::fatal::running(id, request.limits, state_digest);
    match call_engine(engine, &call) {
        Ok((bytes, log, engine_us)) => Next::Answer(
            id,
            Message::Result {
                log,
                engine_us,
                state_digest: None,
            },
            bytes,
        ),
        Err((failure, log)) => Next::answer(
            id,
            Message::Failure {
                failure,
                log,
                state_digest: None,
            },
        ),
    }
}

type Called = Result<(Vec<u8>, ConsoleLog, u64), (Failure, ConsoleLog)>;

fn call_engine(engine: &mut dyn Engine, call: &EngineCall<'_>) -> Called {
    let started = std::time::Instant::now();
    let out = engine.call(call)?;
    let elapsed = started.elapsed();
    match accept(&out.output, &call.limits, elapsed) {
        Ok(()) => Ok((out.output, out.log, elapsed.as_micros() as u64)),
        Err(f) => Err((f, out.log)),
    }
}

fn message_name(m: &Message) -> &'static str {
    match m {
        Message::Hello => "hello",
        Message::Ready { .. } => "ready",
        Message::Invoke { .. } => "invoke",
        Message::Result { .. } => "result",
        Message::Failure { .. } => "failure",
        Message::Health { .. } => "health",
        Message::Healthy { .. } => "healthy",
        Message::NeedBundle { .. } => "need_bundle",
        Message::Shutdown => "shutdown",
    }
}
