//! The worker process: sandbox set-up and the request loop.
//!
//! Started by the pool as `runx __worker` (or the `runx-worker` binary). Stdout carries frames
//! and nothing else; console output travels inside results.

use crate::bundle::ModuleBundle;
use crate::engine::{ConsoleLog, Engine, EngineCall, PageInput};
use crate::failure::{Failure, FailureCode};
use crate::frame::{FrameError, read_frame, split_payload, write_frame};
use crate::limits::Limits;
use crate::protocol::{Header, Message, PROTOCOL_VERSION, PageLayout, decode_ends};
use std::collections::{BTreeMap, HashMap};
use std::io::{self, Read, Write};
use std::sync::Arc;

/// Bundles a worker keeps, by digest, before it forgets the oldest.
const BUNDLE_CACHE_ENTRIES: usize = 16;
/// Open files the worker may hold: stdio and a little slack for the runtime.
const MAX_OPEN_FILES: u64 = 16;
/// Address space cap: the 64 MiB heap, 16 MiB frames and their copies fit easily.
const ADDRESS_SPACE_BYTES: u64 = 2 * 1024 * 1024 * 1024;

/// Why the worker stopped serving.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The environment was not empty, so the host did not isolate the worker.
    #[error(
        "refusing to run: the worker's environment must be empty (found {0}); it is started by the runx host, not by hand"
    )]
    Environment(String),
    /// An OS limit could not be set.
    #[error("cannot set resource limit {0}: {1}")]
    Rlimit(&'static str, nix::Error),
    /// The frame stream broke.
    #[error(transparent)]
    Frame(#[from] FrameError),
    /// The host spoke another protocol version.
    #[error("the host speaks protocol version {0}; this worker speaks {PROTOCOL_VERSION}")]
    Version(u32),
    /// The engine asked for with `--engine` is unknown or not built into this executable.
    #[error("{0}")]
    Engine(String),
}

/// Entry point of a worker process: takes the engine from `--engine NAME` in the process's
/// arguments (QuickJS when absent; the environment stays empty), then runs
/// [`worker_main_with`]. Returns the process exit code.
pub fn worker_main() -> i32 {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let engine = args
        .iter()
        .position(|a| a == "--engine")
        .and_then(|i| args.get(i + 1).cloned())
        .or_else(|| {
            args.iter()
                .find_map(|a| a.strip_prefix("--engine=").map(str::to_string))
        });
    worker_main_with(engine.as_deref().unwrap_or(DEFAULT_ENGINE))
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

/// Entry point of a worker process using the engine `engine` (`quickjs`, `v8`): checks the
/// environment, sets OS limits, serves stdin/stdout until shutdown or end of input. Returns the
/// process exit code.
pub fn worker_main_with(engine: &str) -> i32 {
    // The engine is chosen before the sandbox so that a refusal can still be reported; making
    // an engine starts no thread and touches no environment.
    match engine_by_name(engine).and_then(|mut engine| {
        sandbox()?;
        watch_host();
        serve(engine.as_mut(), io::stdin().lock(), io::stdout().lock())
    }) {
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

/// Refuses a non-empty environment, pins the time zone and applies rlimits.
#[allow(unsafe_code)]
fn sandbox() -> Result<(), ServeError> {
    if let Some((k, _)) = std::env::vars_os().next() {
        return Err(ServeError::Environment(k.to_string_lossy().into_owned()));
    }
    // SAFETY: called first thing in the worker process, before any other thread exists, so no
    // other code can be reading the environment concurrently. TZ=UTC makes local-time Date
    // methods identical on every host.
    unsafe { std::env::set_var("TZ", "UTC") };
    use nix::sys::resource::{Resource, setrlimit};
    let limits = [
        (Resource::RLIMIT_CORE, 0, "RLIMIT_CORE"),
        (Resource::RLIMIT_FSIZE, 0, "RLIMIT_FSIZE"),
        (Resource::RLIMIT_NOFILE, MAX_OPEN_FILES, "RLIMIT_NOFILE"),
        (Resource::RLIMIT_AS, ADDRESS_SPACE_BYTES, "RLIMIT_AS"),
    ];
    for (resource, value, name) in limits {
        setrlimit(resource, value, value).map_err(|e| ServeError::Rlimit(name, e))?;
    }
    Ok(())
}

/// Serves frames from `input` until `shutdown` or a clean end of input.
pub fn serve(
    engine: &mut dyn Engine,
    mut input: impl Read,
    mut output: impl Write,
) -> Result<(), ServeError> {
    let mut bundles: HashMap<String, Arc<ModuleBundle>> = HashMap::new();
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
        match handle(engine, &mut bundles, &payload) {
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

fn answer(
    w: &mut dyn Write,
    call_id: u64,
    message: Message,
    tail: &[&[u8]],
) -> Result<(), FrameError> {
    write_frame(w, &Header::new(call_id, message).to_bytes(), tail)
}

fn reject(failure: Failure) -> Message {
    Message::Failure {
        failure,
        log: ConsoleLog::default(),
    }
}

fn invalid(message: impl Into<String>) -> Failure {
    Failure::new(FailureCode::InvalidRequest, message)
}

/// One request, start to answer.
fn handle(
    engine: &mut dyn Engine,
    bundles: &mut HashMap<String, Arc<ModuleBundle>>,
    payload: &[u8],
) -> Next {
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
            let request = Invoke {
                export,
                environment,
                limits: limits.narrow(),
                input_len,
                page,
            };
            match cached_bundle(bundles, &bundle_digest, bundle, &request.limits) {
                Ok(Some(bundle)) => invoke(engine, id, &bundle, request, tail),
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

/// Runs one call of the engine with the input and page laid out in `tail`.
fn invoke(
    engine: &mut dyn Engine,
    id: u64,
    bundle: &Arc<ModuleBundle>,
    request: Invoke,
    tail: &[u8],
) -> Next {
    let parts = match split_tail(&request, tail) {
        Ok(parts) => parts,
        Err(failure) => return Next::answer(id, reject(failure)),
    };
    if let Err(failure) = Failure::check_input(tail.len(), &request.limits) {
        return Next::answer(id, reject(failure));
    }
    let call = EngineCall {
        bundle,
        export: request.export.as_deref(),
        input: parts.input,
        page: parts.page.map(|(meta, blob)| PageInput {
            meta,
            blob,
            ends: &parts.ends,
        }),
        environment: &request.environment,
        limits: request.limits,
    };
    match call_engine(engine, &call) {
        Ok((bytes, log, engine_us)) => Next::Answer(id, Message::Result { log, engine_us }, bytes),
        Err((failure, log)) => Next::answer(id, Message::Failure { failure, log }),
    }
}

/// The parts of an invoke tail: the input, and the page's metadata, record ends and records.
struct TailParts<'a> {
    input: &'a [u8],
    page: Option<(&'a [u8], &'a [u8])>,
    ends: Vec<u32>,
}

/// Splits `tail` by the layout the request declares; a tail that does not match it is an
/// `invalid_request`.
fn split_tail<'a>(request: &Invoke, tail: &'a [u8]) -> Result<TailParts<'a>, Failure> {
    let bad_tail = || invalid("the invoke tail is shorter than its declared layout");
    let (input, rest) = tail
        .split_at_checked(request.input_len as usize)
        .ok_or_else(bad_tail)?;
    let Some(layout) = &request.page else {
        return Ok(TailParts {
            input,
            page: None,
            ends: Vec::new(),
        });
    };
    let (meta, rest) = rest
        .split_at_checked(layout.meta_len as usize)
        .ok_or_else(bad_tail)?;
    let (table, blob) = rest
        .split_at_checked(layout.record_count as usize * 4)
        .ok_or_else(bad_tail)?;
    if blob.len() != layout.blob_len as usize {
        return Err(bad_tail());
    }
    let ends = decode_ends(table, blob.len())
        .ok_or_else(|| invalid("the page's record offset table is malformed"))?;
    Ok(TailParts {
        input,
        page: Some((meta, blob)),
        ends,
    })
}

type Called = Result<(Vec<u8>, ConsoleLog, u64), (Failure, ConsoleLog)>;

fn call_engine(engine: &mut dyn Engine, call: &EngineCall<'_>) -> Called {
    let started = std::time::Instant::now();
    engine
        .call(call)
        .map(|o| (o.output, o.log, started.elapsed().as_micros() as u64))
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
    if bundle.digest() != digest {
        return Err(invalid(format!(
            "the bundle sent does not match its digest {digest}"
        )));
    }
    if bundle.source_bytes() > limits.source_bytes {
        return Err(Failure::limit(
            crate::limits::Limit::SourceBytes,
            format!(
                "the module bundle holds {} bytes of source; the limit is {} bytes",
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
