//! The worker process: sandbox set-up and the request loop.
//!
//! Started by the pool as `runx __worker` (or the `runx-worker` binary). Stdout carries frames
//! and nothing else; console output travels inside results.

use crate::bundle::ModuleBundle;
use crate::engine::{ConsoleLog, Engine, EngineCall, PageInput};
use crate::failure::{Failure, FailureCode};
use crate::frame::{FrameError, read_frame, split_payload, write_frame};
use crate::limits::{Limit, Limits};
use crate::protocol::{Header, Message, PROTOCOL_VERSION, PageLayout, decode_ends};
use crate::sandbox::SandboxOptions;
use std::collections::{BTreeMap, HashMap};
use std::io::{self, Read, Write};
use std::sync::Arc;

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

fn confine_and_serve(name: &str, options: SandboxOptions) -> Result<(), ServeError> {
    // The engine is chosen before the sandbox so that a refusal can still be reported; making
    // an engine starts no thread and touches no environment.
    let memory = engine_by_name(name)?.memory_cap();
    crate::sandbox::enter(memory, name, options)?;
    crate::fatal::answer_on_stdout();
    let name = name.to_string();
    std::thread::Builder::new()
        .name("runx-engine".to_string())
        .stack_size(ENGINE_STACK_BYTES)
        .spawn(move || {
            let mut engine = engine_by_name(&name)?;
            serve(engine.as_mut(), io::stdin().lock(), io::stdout().lock())
        })
        .map_err(|e| ServeError::Thread(e.to_string()))?
        .join()
        .map_err(|_| ServeError::Thread("it panicked".to_string()))?
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
        Message::Failure { failure, log } => Message::Failure {
            failure: failure.bounded(),
            log,
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

/// Any JSON value whose every string and key decodes (so a lone surrogate escape is refused),
/// kept as nothing. `IgnoredAny` would skip strings without decoding them.
struct Readable;

impl<'de> serde::Deserialize<'de> for Readable {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Readable, D::Error> {
        d.deserialize_any(Readable)
    }
}

impl<'de> serde::de::Visitor<'de> for Readable {
    type Value = Readable;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Readable, E> {
        Ok(Readable)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Readable, E> {
        Ok(Readable)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Readable, E> {
        Ok(Readable)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Readable, E> {
        Ok(Readable)
    }

    fn visit_str<E>(self, _: &str) -> Result<Readable, E> {
        Ok(Readable)
    }

    fn visit_unit<E>(self) -> Result<Readable, E> {
        Ok(Readable)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Readable, A::Error> {
        while seq.next_element::<Readable>()?.is_some() {}
        Ok(Readable)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Readable, A::Error> {
        while map.next_entry::<Readable, Readable>()?.is_some() {}
        Ok(Readable)
    }
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
    // If the engine must end the process (a heap exhausted inside a builtin), the answer to
    // this call is still written: see `fatal`.
    let _running = crate::fatal::running(id, request.limits);
    match call_engine(engine, &call) {
        Ok((bytes, log, engine_us)) => Next::Answer(id, Message::Result { log, engine_us }, bytes),
        Err((failure, log)) => Next::answer(id, Message::Failure { failure, log }),
    }
}

/// What every engine's successful call must still pass before it is a result: it came back
/// within its wall (a call that spent its time in native code the engine's interrupt never
/// reached returns late, and late is a wall failure, not a result), and its output is JSON the
/// host can read (the prelude refuses lone surrogates and deep nesting with a path; this is
/// the backstop for any route around it, e.g. a boxed string whose `toString` lies).
fn accept(bytes: &[u8], limits: &Limits, elapsed: std::time::Duration) -> Result<(), Failure> {
    if elapsed > limits.wall() {
        return Err(Failure::exceeded(Limit::WallMilliseconds, limits));
    }
    if let Err(e) = serde_json::from_slice::<Readable>(bytes) {
        return Err(Failure::new(
            FailureCode::OutputRejected,
            format!("the export's return value cannot be encoded as JSON: {e}"),
        ));
    }
    Ok(())
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
