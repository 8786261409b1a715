//! The worker process: sandbox set-up and the request loop.
//!
//! Started by the pool as `runx __worker` (or the `runx-worker` binary). Stdout carries frames
//! and nothing else; console output travels inside results.

use crate::bundle::ModuleBundle;
use crate::engine::{ConsoleLog, Engine, EngineCall, PageInput};
use crate::failure::{Failure, FailureCode};
use crate::frame::{FrameError, read_frame, split_payload, write_frame};
use crate::limits::Limits;
use crate::protocol::{Header, Message, PROTOCOL_VERSION, PageLayout};
use crate::sandbox::SandboxOptions;
use std::collections::{BTreeMap, HashMap};
use std::io::{self, Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::Arc;

mod ahead;
mod output;
mod tail;

use ahead::KeptState;
pub use ahead::state_digest;
use output::accept;
use tail::{PageMemory, TailParts, split_tail};

/// Bundles a worker keeps, by digest, before it forgets the oldest.
const BUNDLE_CACHE_ENTRIES: usize = 16;

/// Stack of the thread the engine runs on. The worker sets it itself, so the caller's stack
/// limit (`ulimit -s`) never decides whether deep recursion is a `stack_bytes` failure or a
/// crash: the engine's own limit ([`Limits::stack_bytes`], at most 1 MiB) is checked well
/// inside it, with room left for the native frames of builtins and of the worker.
pub const ENGINE_STACK_BYTES: usize = 16 * 1024 * 1024;

/// Why the worker stopped serving.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The worker could not confine itself.
    #[error(transparent)]
    Sandbox(#[from] crate::sandbox::SandboxError),
    /// The frame stream broke.
    #[error(transparent)]
    Frame(#[from] FrameError),
    /// The host spoke another protocol version.
    #[error("the host speaks protocol version {0}; this worker speaks {PROTOCOL_VERSION}")]
    Version(u32),
    /// The engine asked for with `--engine` is unknown or not built into this executable.
    #[error("{0}")]
    Engine(String),
    /// The engine thread could not be started or ended by a panic.
    #[error("the engine thread failed: {0}")]
    Thread(String),
}

/// Entry point of a worker process: takes the engine from `--engine NAME` in the process's
/// arguments (QuickJS when absent; the environment stays empty), then runs
/// [`worker_main_with`]. Returns the process exit code.
pub fn worker_main() -> i32 {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let options = SandboxOptions::from_args(&args);
    let engine = args
        .iter()
        .position(|a| a == "--engine")
        .and_then(|i| args.get(i + 1).cloned())
        .or_else(|| {
            args.iter()
                .find_map(|a| a.strip_prefix("--engine=").map(str::to_string))
        });
    worker_main_with_options(engine.as_deref().unwrap_or(DEFAULT_ENGINE), options)
}

/// The engine a worker uses when none is named.
pub const DEFAULT_ENGINE: &str = "quickjs";

/// The names of the engines built into this executable.
pub fn engines_built() -> &'static [&'static str] {
    if cfg!(feature = "v8") {
        &["quickjs", "v8"]
    } else {
        &["quickjs"]
    }
}

/// The engine named `name`, if it is built into this executable.
pub fn engine_by_name(name: &str) -> Result<Box<dyn Engine>, ServeError> {
    match name {
        "quickjs" => Ok(Box::new(crate::quickjs::QuickJs::new())),
        #[cfg(feature = "v8")]
        "v8" => Ok(Box::new(crate::v8::V8::new())),
        #[cfg(not(feature = "v8"))]
        "v8" => Err(ServeError::Engine(
            "the v8 engine is not built into this executable; build with `--features v8`"
                .to_string(),
        )),
        other => Err(ServeError::Engine(format!(
            "unknown engine `{other}`; the engines are: {}",
            engines_built().join(", ")
        ))),
    }
}

/// The version of the engine `name` as built into this executable, for receipts: QuickJS
/// reports the QuickJS-ng release it embeds, V8 its own version. `None` for an engine that is
/// not built in.
pub fn engine_version(name: &str) -> Option<String> {
    match name {
        "quickjs" => Some(quickjs_version()),
        #[cfg(feature = "v8")]
        "v8" => Some(rusty_v8::VERSION_STRING.to_string()),
        _ => None,
    }
}

fn quickjs_version() -> String {
    // SAFETY: `JS_GetVersion` takes no arguments, touches no runtime state and returns a
    // pointer to the static NUL-terminated string literal `QJS_VERSION_STRING`.
    #[allow(unsafe_code)]
    let ptr = unsafe { rquickjs::qjs::JS_GetVersion() };
    if ptr.is_null() {
        return "unknown".to_string();
    }
    // SAFETY: `ptr` is non-null and points to a static NUL-terminated string (see above),
    // valid for the whole life of the program.
    #[allow(unsafe_code)]
    let text = unsafe { std::ffi::CStr::from_ptr(ptr) };
    text.to_string_lossy().into_owned()
}

/// Entry point of a worker process using the engine `engine` (`quickjs`, `v8`) and the
/// strictest sandbox; see [`worker_main_with_options`].
pub fn worker_main_with(engine: &str) -> i32 {
    worker_main_with_options(engine, SandboxOptions::default())
}

/// Entry point of a worker process: confines the process ([`crate::sandbox::enter`]), then
/// serves stdin/stdout on a thread of [`ENGINE_STACK_BYTES`] until shutdown or end of input.
/// Returns the process exit code.
pub fn worker_main_with_options(engine: &str, options: SandboxOptions) -> i32 {
    match confine_and_serve(engine, options) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("runx worker: {e}");
            2
        }
    }
}

/// Ends the worker at once when the host goes away. The request loop only notices a closed
/// stdin between calls; a call may run for its whole wall (up to 30 s) first. A thread waits
/// instead for the pipe to the host to break: the write end of a pipe reports an error
/// (`POLLERR`) as soon as no reader is left, which happens the moment the host exits or dies.
fn watch_host() {
    let spawned = std::thread::Builder::new()
        .name("runx-host-watch".to_string())
        .spawn(|| {
            use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
            use std::os::fd::AsFd;
            let stdout = io::stdout();
            loop {
                let mut fds = [PollFd::new(stdout.as_fd(), PollFlags::empty())];
                let gone = match poll(&mut fds, PollTimeout::NONE) {
                    Ok(_) => fds[0].revents().is_some_and(|r| {
                        r.intersects(PollFlags::POLLERR | PollFlags::POLLHUP | PollFlags::POLLNVAL)
                    }),
                    Err(nix::errno::Errno::EINTR) => false,
                    Err(_) => return,
                };
                if gone {
                    exit_now();
                }
                // Not a pipe (a terminal, a file): nothing to watch, and no busy loop.
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
        });
    if let Err(e) = spawned {
        eprintln!("runx worker: cannot watch the host pipe: {e}");
    }
}

/// Ends the process without unwinding or flushing anything: the host that would read it is gone.
#[allow(unsafe_code)]
fn exit_now() -> ! {
    // SAFETY: `_exit` ends the process at once; it touches no memory of this program and runs
    // no handler, so it is safe to call while the main thread is inside the engine.
    unsafe { nix::libc::_exit(3) }
}

fn confine_and_serve(name: &str, options: SandboxOptions) -> Result<(), ServeError> {
    // The engine is chosen before the sandbox so that a refusal can still be reported; making
    // an engine starts no thread and touches no environment.
    let memory = engine_by_name(name)?.memory_cap();
    crate::sandbox::enter(memory, name, options)?;
    crate::fatal::answer_on_stdout();
    watch_host();
    let descriptors = crate::descriptor::inherited();
    let name = name.to_string();
    std::thread::Builder::new()
        .name("runx-engine".to_string())
        .stack_size(ENGINE_STACK_BYTES)
        .spawn(move || {
            let mut engine = engine_by_name(&name)?;
            serve_with(
                engine.as_mut(),
                io::stdin().lock(),
                io::stdout().lock(),
                descriptors.as_ref(),
            )
        })
        .map_err(|e| ServeError::Thread(e.to_string()))?
        .join()
        .map_err(|_| ServeError::Thread("it panicked".to_string()))?
}

/// Serves frames from `input` until `shutdown` or a clean end of input, with no descriptor
/// channel (page records then travel in frames only).
pub fn serve(
    engine: &mut dyn Engine,
    input: impl Read,
    output: impl Write,
) -> Result<(), ServeError> {
    serve_with(engine, input, output, None)
}

/// Serves frames from `input` until `shutdown` or a clean end of input; page records may
/// arrive as byte ranges of a file whose descriptor comes on `descriptors`
/// ([`crate::descriptor`]).
pub fn serve_with(
    engine: &mut dyn Engine,
    mut input: impl Read,
    mut output: impl Write,
    descriptors: Option<&UnixStream>,
) -> Result<(), ServeError> {
    let mut session = Session {
        bundles: HashMap::new(),
        descriptors,
        pages: PageMemory::default(),
        kept: None,
    };
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
        match handle(engine, &mut session, &payload) {
            Next::Answer(id, message, tail) => answer(&mut output, id, message, &[&tail])?,
            Next::Refuse(id, message, error) => {
                answer(&mut output, id, message, &[])?;
                return Err(error);
            }
            Next::Stop => return Ok(()),
        }
    }
}

/// What the loop does after one request.
enum Next {
    /// Answer the call with a message and the bytes that follow it.
    Answer(u64, Message, Vec<u8>),
    /// Answer, then stop serving with an error.
    Refuse(u64, Message, ServeError),
    /// Stop serving.
    Stop,
}

impl Next {
    fn answer(id: u64, message: Message) -> Next {
        Next::Answer(id, message, Vec::new())
    }
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

fn invalid(message: impl Into<String>) -> Failure {
    Failure::new(FailureCode::InvalidRequest, message)
}

/// What the worker keeps between requests.
struct Session<'d> {
    /// Bundles by digest.
    bundles: HashMap<String, Arc<ModuleBundle>>,
    /// The channel page descriptors arrive on, if the host set one up.
    descriptors: Option<&'d UnixStream>,
    /// Where a page sent by descriptor lives during its call.
    pages: PageMemory,
    /// The state the last page's result carries forward, when that page asked to keep it.
    kept: Option<KeptState>,
}

/// One request, start to answer.
fn handle(engine: &mut dyn Engine, session: &mut Session<'_>, payload: &[u8]) -> Next {
    let (head, tail) = match split_payload(payload) {
        Ok(x) => x,
        Err(e) => return Next::answer(0, reject(invalid(e.to_string()))),
    };
    let header: Header = match serde_json::from_slice(head) {
        Ok(h) => h,
        Err(e) => {
            // Answer under the call id the host used, if it can be read at all.
            let value: serde_json::Value = serde_json::from_slice(head).unwrap_or_default();
            let call_id = value.get("call_id").and_then(|c| c.as_u64()).unwrap_or(0);
            let kind = value.get("type").and_then(|t| t.as_str()).unwrap_or("?");
            let f = invalid(format!("unknown or malformed message `{kind}`: {e}"));
            return Next::answer(call_id, reject(f));
        }
    };
    let id = header.call_id;
    if header.v != PROTOCOL_VERSION {
        let f = invalid(format!(
            "protocol version {} is not supported; this worker speaks {PROTOCOL_VERSION}",
            header.v
        ));
        return match header.message {
            Message::Hello => Next::Refuse(id, reject(f), ServeError::Version(header.v)),
            _ => Next::answer(id, reject(f)),
        };
    }
    match header.message {
        Message::Hello => Next::answer(
            id,
            Message::Ready {
                engine: engine.name().to_string(),
                pid: std::process::id(),
                pages_by_descriptor: session.descriptors.is_some(),
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
        } => {
            // A kept state is for the very next call, whatever that call is.
            let kept = session.kept.take();
            if let Err(why) = limits.check() {
                return Next::answer(id, reject(invalid(why)));
            }
            let request = Invoke {
                export,
                environment,
                limits,
                input_len,
                page,
            };
            // A page's descriptor is taken first, so that it is closed however the call ends.
            let file = match page_file(session, id, request.page.as_ref()) {
                Ok(file) => file,
                Err(failure) => return Next::answer(id, reject(failure)),
            };
            match cached_bundle(
                &mut session.bundles,
                &bundle_digest,
                bundle,
                &request.limits,
            ) {
                Ok(Some(bundle)) => {
                    let keep = request.page.is_some_and(|p| p.keep_state);
                    let next = invoke(engine, id, &bundle, request, tail, file, kept, session);
                    if keep && let Next::Answer(_, Message::Result { .. }, output) = &next {
                        session.kept = ahead::carried_state(output)
                            .map(|state| KeptState { call_id: id, state });
                    }
                    next
                }
                Ok(None) => Next::answer(id, Message::NeedBundle { bundle_digest }),
                Err(failure) => Next::answer(id, reject(failure)),
            }
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
            Next::answer(id, reject(f))
        }
    }
}

/// An invoke request, its bundle resolved.
struct Invoke {
    export: Option<String>,
    environment: BTreeMap<String, String>,
    limits: Limits,
    input_len: u32,
    page: Option<PageLayout>,
}

/// The descriptor of the page's file, for a page whose records are a byte range of it.
fn page_file(
    session: &Session<'_>,
    id: u64,
    page: Option<&PageLayout>,
) -> Result<Option<std::fs::File>, Failure> {
    if page.and_then(|p| p.range).is_none() {
        return Ok(None);
    }
    let Some(channel) = session.descriptors else {
        return Err(invalid(
            "a page's records were sent by descriptor, but this worker has no descriptor channel",
        ));
    };
    crate::descriptor::receive(channel, id)
        .map(Some)
        .map_err(invalid)
}

/// Runs one call of the engine with the input and page laid out in `tail` (and, for a page
/// sent ahead, the state `kept` from the call before).
#[allow(clippy::too_many_arguments)]
fn invoke(
    engine: &mut dyn Engine,
    id: u64,
    bundle: &Arc<ModuleBundle>,
    request: Invoke,
    tail: &[u8],
    file: Option<std::fs::File>,
    kept: Option<KeptState>,
    session: &mut Session<'_>,
) -> Next {
    let state = match request.page.and_then(|p| p.state_from) {
        None => None,
        Some(from) => match ahead::take_state(kept, id, from) {
            Ok(state) => Some(state),
            Err(why) => return Next::answer(id, reject(invalid(why))),
        },
    };
    // Every answer to a call that took a kept state names that state, so that the host can
    // tell a failure of the page from a failure of the state it was given.
    let digest = state.as_deref().map(ahead::state_digest);
    let mut next = run_parts(
        engine,
        id,
        bundle,
        &request,
        tail,
        file,
        state,
        digest.clone(),
        session,
    );
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
#[allow(clippy::too_many_arguments)]
fn run_parts(
    engine: &mut dyn Engine,
    id: u64,
    bundle: &Arc<ModuleBundle>,
    request: &Invoke,
    tail: &[u8],
    file: Option<std::fs::File>,
    state: Option<Vec<u8>>,
    digest: Option<String>,
    session: &mut Session<'_>,
) -> Next {
    let logical = request.input_len as usize
        + request.page.map_or(0, |p| p.input_bytes())
        + state.as_ref().map_or(0, |s| s.len() + 1);
    if let Err(failure) = Failure::check_input(logical, &request.limits) {
        return Next::answer(id, reject(failure));
    }
    let pages = &mut session.pages;
    let joined: Vec<u8>;
    let mut parts = match split_tail(request, tail, file.as_ref(), pages) {
        Ok(parts) => parts,
        Err(failure) => return Next::answer(id, reject(failure)),
    };
    if let (Some(state), Some((head, blob))) = (&state, parts.page) {
        joined = ahead::joined_meta(head, state);
        parts.page = Some((&joined, blob));
    }
    let next = call_with(engine, id, bundle, request, &parts, digest);
    // The page's map goes with its call: the worker holds no page between calls.
    pages.release();
    next
}

/// Calls the engine with the parts of an invoke.
fn call_with(
    engine: &mut dyn Engine,
    id: u64,
    bundle: &Arc<ModuleBundle>,
    request: &Invoke,
    parts: &TailParts<'_>,
    state_digest: Option<String>,
) -> Next {
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
    };
    // If the engine must end the process (a heap exhausted inside a builtin), the answer to
    // this call is still written: see `fatal`.
    let _running = crate::fatal::running(id, request.limits, state_digest);
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

/// Finds the bundle by digest, or admits the one sent along after checking its digest and size.
/// `None`: neither cached nor sent, so the host must send it.
fn cached_bundle(
    cache: &mut HashMap<String, Arc<ModuleBundle>>,
    digest: &str,
    sent: Option<ModuleBundle>,
    limits: &Limits,
) -> Result<Option<Arc<ModuleBundle>>, Failure> {
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
            crate::limits::Limit::SourceBytes,
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
