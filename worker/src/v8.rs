//! The second engine: V8 through `deno_core`, built only with the cargo feature `v8`.
//!
//! It keeps the sandbox of the QuickJS engine with V8's own mechanisms: a bare `JsRuntime`
//! whose only extension is the console op, the same prelude (which deletes `Deno` and every
//! other global outside [`ALLOWED_GLOBALS`]), a module loader that serves the in-memory bundle
//! through [`specifier::resolve`] and refuses dynamic `import()`, an empty `import.meta`, and a
//! watchdog thread that terminates the call at the wall deadline. A fresh `JsRuntime` (isolate
//! and context) is made for every call, so nothing a module does can survive into the next
//! call; it costs about 13 ms, most of it deno_core building its own JavaScript without a
//! startup snapshot.
//!
//! Memory is bounded by V8 itself, not by the address space (V8 reserves tens of GiB up front):
//! the isolate's heap limit is `heap_bytes`, and a near-heap-limit callback terminates the call
//! and grants a little room to unwind; ArrayBuffer contents draw on a budget of another
//! `heap_bytes` (module `buffers`); the worker process caps its private writable memory
//! ([`MemoryCap::Data`]). V8 cannot fail an allocation softly: when a builtin that never checks
//! for termination keeps allocating, V8 ends the process, and its out-of-memory handler first
//! answers the call as `heap_bytes` through [`crate::fatal`].

use crate::bundle::ModuleBundle;
use crate::engine::{ConsoleLog, Engine, EngineCall, EngineOutput, MemoryCap, PageInput};
use crate::failure::{Failure, FailureCode};
use crate::limits::{Limit, Limits};
use crate::quickjs::ALLOWED_GLOBALS;
use crate::specifier;
use deno_core::error::{CoreError, CoreErrorKind, JsError};
use deno_core::{
    JsRuntime, ModuleLoadOptions, ModuleLoadReferrer, ModuleLoadResponse, ModuleLoader,
    ModuleSource, ModuleSourceCode, ModuleSpecifier, ModuleType, OpState, PollEventLoopOptions,
    ResolutionKind, RuntimeOptions, v8,
};
use deno_error::JsErrorBox;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;

mod buffers;

const PRELUDE: &str = include_str!("prelude.js");

/// Runs before the prelude, while `Deno.core` still exists: unhandled rejections are ignored
/// (as QuickJS does; a rejection that matters reaches the call through the export's promise)
/// and the console op is handed over as the prelude's sink. The prelude then deletes `Deno`.
const SINK: &str =
    "Deno.core.setUnhandledPromiseRejectionHandler(() => true); Deno.core.ops.op_runx_console";

/// Bundle paths become URLs under this base so that V8 and deno_core have absolute names.
const URL_BASE: &str = "runx:///";

/// V8's message for module evaluation waiting on a top-level `await` that nothing can settle.
const TLA_STALLED: &str = "Top-level await promise never resolved";

/// The worker's cap on private writable memory. V8 reserves tens of GiB of address space it
/// never touches (the Oilpan cage alone is several GiB), so an address-space cap kills it at
/// start; reservations without access do not count against `RLIMIT_DATA`, committed pages do.
/// The isolate's heap limit and the ArrayBuffer budget (64 MiB each by default) are what a call
/// runs into; this bounds the rest (resizable ArrayBuffers, frames, thread stacks, code). A
/// worker holding a 60 MiB buffer and 40 MiB of objects measured 175 MiB here.
const DATA_BYTES: u64 = 512 * 1024 * 1024;

/// The V8 engine.
#[derive(Debug, Default)]
pub struct V8 {
    tokio: Option<tokio::runtime::Runtime>,
}

impl V8 {
    /// A new engine. It keeps only a single-threaded executor between calls; every call gets
    /// its own isolate.
    pub fn new() -> V8 {
        V8 { tokio: None }
    }
}

impl Engine for V8 {
    fn name(&self) -> &'static str {
        "v8"
    }

    fn memory_cap(&self) -> MemoryCap {
        MemoryCap::Data(DATA_BYTES)
    }

    fn call(&mut self, call: &EngineCall<'_>) -> Result<EngineOutput, (Failure, ConsoleLog)> {
        if self.tokio.is_none() {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| {
                    (
                        Failure::new(FailureCode::Internal, format!("cannot start executor: {e}")),
                        ConsoleLog::default(),
                    )
                })?;
            self.tokio = Some(rt);
        }
        let Some(tokio) = self.tokio.as_ref() else {
            unreachable!("the executor was just created")
        };
        let log = Rc::new(RefCell::new(ConsoleLog::default()));
        let flags = Arc::new(Flags::default());
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            tokio.block_on(run_call(call, log.clone(), flags.clone()))
        }));
        let log = log.take();
        match run {
            Ok(Ok(output)) => Ok(EngineOutput { output, log }),
            Ok(Err(f)) => Err((f, log)),
            Err(_) => {
                // A panic inside deno_core leaves its state unknown: give the worker up.
                let classifier = Classifier {
                    limits: call.limits,
                    flags,
                    shared: None,
                };
                let f = classifier.classify(FailureCode::Internal, "the V8 engine panicked");
                Err((f.discard_worker(), log))
            }
        }
    }
}

/// Why execution was terminated from outside JavaScript.
#[derive(Debug, Default)]
struct Flags {
    wall: AtomicBool,
    heap: AtomicBool,
}

/// What the console op writes into.
struct Sink {
    log: Rc<RefCell<ConsoleLog>>,
    bound: usize,
}

/// The console sink handed to the prelude; the prelude formats, this only appends.
#[deno_core::op2(fast)]
fn op_runx_console(state: &mut OpState, #[string] level: &str, #[string] text: &str) {
    let sink = state.borrow::<Sink>();
    sink.log.borrow_mut().push(level, text, sink.bound);
}

deno_core::extension!(runx_console, ops = [op_runx_console]);

/// What the module loader shares with the call.
struct Shared {
    bundle: Arc<ModuleBundle>,
    /// URL → bundle path of every module handed to V8.
    paths: RefCell<HashMap<String, String>>,
    /// The first refused specifier, reported as `module_rejected` even if the module caught it.
    rejected: RefCell<Option<String>>,
}

struct BundleLoader(Rc<Shared>);

impl BundleLoader {
    fn refuse(&self, reason: String) -> Result<ModuleSpecifier, JsErrorBox> {
        self.0
            .rejected
            .borrow_mut()
            .get_or_insert_with(|| reason.clone());
        Err(JsErrorBox::type_error(reason))
    }
}

fn module_url(path: &str) -> Result<ModuleSpecifier, String> {
    ModuleSpecifier::parse(&format!("{URL_BASE}{path}"))
        .map_err(|e| format!("`{path}` cannot be named as a module: {e}"))
}

impl ModuleLoader for BundleLoader {
    fn resolve(
        &self,
        specifier: &str,
        referrer: &str,
        kind: ResolutionKind,
    ) -> Result<ModuleSpecifier, JsErrorBox> {
        if matches!(kind, ResolutionKind::MainModule) {
            if self.0.paths.borrow().contains_key(specifier) {
                return ModuleSpecifier::parse(specifier).map_err(JsErrorBox::from_err);
            }
            return self.refuse(format!("`{specifier}` is not the bundle's entry module"));
        }
        let base = self.0.paths.borrow().get(referrer).cloned();
        let base = base.unwrap_or_else(|| referrer.to_string());
        if matches!(kind, ResolutionKind::DynamicImport) {
            return self.refuse(format!(
                "dynamic import(\"{specifier}\") from `{base}` rejected: modules are loaded statically; use a static import"
            ));
        }
        match specifier::resolve(&base, specifier) {
            Ok(path) if self.0.bundle.modules.contains_key(&path) => {
                let url = match module_url(&path) {
                    Ok(u) => u,
                    Err(e) => return self.refuse(e),
                };
                self.0
                    .paths
                    .borrow_mut()
                    .insert(url.as_str().to_string(), path);
                Ok(url)
            }
            Ok(path) => self.refuse(format!(
                "import of `{specifier}` from `{base}` rejected: `{path}` is not in the module bundle"
            )),
            Err(e) => self.refuse(e.to_string()),
        }
    }

    fn load(
        &self,
        url: &ModuleSpecifier,
        _referrer: Option<&ModuleLoadReferrer>,
        _options: ModuleLoadOptions,
    ) -> ModuleLoadResponse {
        let path = self.0.paths.borrow().get(url.as_str()).cloned();
        let source = path.and_then(|p| self.0.bundle.modules.get(&p).cloned());
        ModuleLoadResponse::Sync(match source {
            Some(source) => Ok(ModuleSource::new(
                ModuleType::JavaScript,
                ModuleSourceCode::String(source.into()),
                url,
                None,
            )),
            None => Err(JsErrorBox::generic(format!(
                "`{url}` is not in the module bundle"
            ))),
        })
    }
}

/// Maps what went wrong to a typed failure, the same way the QuickJS engine does.
struct Classifier {
    limits: Limits,
    flags: Arc<Flags>,
    shared: Option<Rc<Shared>>,
}

impl Classifier {
    fn heap(&self) -> Failure {
        Failure::exceeded(Limit::HeapBytes, &self.limits)
    }

    /// Limits first (they explain everything after them), then refused imports, then the
    /// stage's own code.
    fn classify(&self, code: FailureCode, text: &str) -> Failure {
        if self.flags.heap.load(Ordering::SeqCst) {
            return self.heap();
        }
        if self.flags.wall.load(Ordering::SeqCst) {
            return Failure::exceeded(Limit::WallMilliseconds, &self.limits);
        }
        let lower = text.to_ascii_lowercase();
        if lower.contains("out of memory")
            || lower.contains("invalid string length")
            || lower.contains("invalid array length")
            || lower.contains("invalid typed array length")
            || lower.contains("array buffer allocation failed")
        {
            return self.heap();
        }
        if text.contains("Maximum call stack size exceeded") {
            return Failure::exceeded(Limit::StackBytes, &self.limits);
        }
        if let Some(spec) = self
            .shared
            .as_ref()
            .and_then(|s| s.rejected.borrow().clone())
        {
            return Failure::new(FailureCode::ModuleRejected, spec);
        }
        Failure::thrown(code, text)
    }

    /// The failure for an error from deno_core; `what` names a promise that may never settle.
    fn core(&self, code: FailureCode, e: &CoreError, what: &str) -> Failure {
        let never_settled = || {
            self.classify(
                FailureCode::ExecutionFailed,
                &format!(
                    "{what} never settled: nothing is left that could resolve it (the worker has no timers, network or host I/O)"
                ),
            )
        };
        match &*e.0 {
            CoreErrorKind::PendingPromiseResolution => never_settled(),
            // V8's own report of a stalled top-level `await`.
            CoreErrorKind::Js(js) if js.exception_message.contains(TLA_STALLED) => never_settled(),
            CoreErrorKind::Js(js) => self.classify(code, &js_text(js)),
            _ => self.classify(code, &e.to_string()),
        }
    }
}

/// `Name: message` plus the stack, like the QuickJS engine's exception text.
/// Stack frames name bundle paths (`main.mjs:1:7`), not the URLs V8 knows them by.
fn js_text(e: &JsError) -> String {
    if let Some(stack) = e.stack.as_deref().filter(|s| !s.trim().is_empty()) {
        return stack.trim_end().replace(URL_BASE, "");
    }
    let m = e.exception_message.as_str();
    let m = m.strip_prefix("Uncaught ").unwrap_or(m);
    let m = m.strip_prefix("(in promise) ").unwrap_or(m);
    m.replace(URL_BASE, "")
}

/// The text of the exception caught by `tc`, or empty when execution was terminated.
fn caught(tc: &mut v8::PinnedRef<'_, v8::TryCatch<'_, '_, v8::HandleScope<'_>>>) -> String {
    if tc.has_terminated() {
        return String::new();
    }
    match tc.exception() {
        Some(exception) => js_text(&JsError::from_v8_exception(tc, exception)),
        None => String::new(),
    }
}

/// Opens a handle scope, the main context and a try-catch on `$js`, bound to `$scope`.
macro_rules! js_scope {
    ($js:expr, $scope:ident) => {
        let context = $js.main_context();
        let handle_scope = std::pin::pin!(v8::HandleScope::new(&mut **$js.v8_isolate()));
        let mut handle_scope = handle_scope.init();
        let context = v8::Local::new(&mut handle_scope, context);
        let context_scope = &mut v8::ContextScope::new(&mut handle_scope, context);
        let try_catch = std::pin::pin!(v8::TryCatch::new(context_scope));
        let mut try_catch = try_catch.init();
        let $scope = &mut try_catch;
    };
}

/// Stops the wall watchdog when the call ends, however it ends.
struct Watchdog {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Values kept alive across the phases of a call.
struct Prepared {
    helpers: v8::Global<v8::Object>,
    inputs: v8::Global<v8::Value>,
    context: v8::Global<v8::Value>,
}

struct Session {
    // Field order: the watchdog stops before the isolate goes away.
    _watchdog: Watchdog,
    js: JsRuntime,
    shared: Rc<Shared>,
    classifier: Classifier,
    limits: Limits,
}

async fn run_call(
    call: &EngineCall<'_>,
    log: Rc<RefCell<ConsoleLog>>,
    flags: Arc<Flags>,
) -> Result<Vec<u8>, Failure> {
    let mut session = Session::start(call, log, flags)?;
    let prepared = session.prepare(call)?;
    let namespace = session.evaluate().await?;
    let returned = session.invoke(call, &prepared, namespace)?;
    let value = session.settle(returned).await?;
    let output = session.finish(&prepared, value)?;
    if let Some(spec) = session.shared.rejected.borrow().clone() {
        return Err(Failure::new(FailureCode::ModuleRejected, spec));
    }
    Ok(output)
}

impl Session {
    fn start(
        call: &EngineCall<'_>,
        log: Rc<RefCell<ConsoleLog>>,
        flags: Arc<Flags>,
    ) -> Result<Session, Failure> {
        let limits = call.limits;
        let shared = Rc::new(Shared {
            bundle: call.bundle.clone(),
            paths: RefCell::new(HashMap::new()),
            rejected: RefCell::new(None),
        });
        let mut js = JsRuntime::try_new(RuntimeOptions {
            module_loader: Some(Rc::new(BundleLoader(shared.clone()))),
            extensions: vec![runx_console::init()],
            create_params: Some(
                v8::CreateParams::default()
                    .heap_limits(0, limits.heap_bytes)
                    .array_buffer_allocator(buffers::allocator(limits.heap_bytes)),
            ),
            ..Default::default()
        })
        .map_err(|e| Failure::new(FailureCode::Internal, format!("cannot start V8: {e}")))?;
        js.op_state().borrow_mut().put(Sink {
            log,
            bound: limits.log_bytes,
        });

        let handle = js.v8_isolate().thread_safe_handle();
        let heap_flags = flags.clone();
        let heap_handle = handle.clone();
        let headroom = limits.heap_bytes / 8;
        js.add_near_heap_limit_callback(move |current, _initial| {
            if heap_flags.heap.swap(true, Ordering::SeqCst) {
                // Terminated at the first approach and still growing: the call is inside a
                // builtin that never checks for termination. V8 cannot fail an allocation
                // softly, so it ends the process; `out_of_memory` answers the call first.
                return current;
            }
            heap_handle.terminate_execution();
            // Room to unwind the terminated call, which takes little; kept small so that a
            // builtin ignoring the termination reaches the second approach soon.
            current.saturating_add(headroom)
        });
        js.v8_isolate().set_oom_error_handler(out_of_memory);
        js.v8_isolate()
            .set_host_initialize_import_meta_object_callback(empty_import_meta);

        let (stop, stopped) = mpsc::channel::<()>();
        let wall = limits.wall();
        let wall_flags = flags.clone();
        let thread = std::thread::Builder::new()
            .name("runx-v8-watchdog".to_string())
            .spawn(move || {
                if let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(wall) {
                    wall_flags.wall.store(true, Ordering::SeqCst);
                    handle.terminate_execution();
                }
            })
            .map_err(|e| {
                Failure::new(
                    FailureCode::Internal,
                    format!("cannot start the watchdog: {e}"),
                )
            })?;
        Ok(Session {
            _watchdog: Watchdog {
                stop: Some(stop),
                thread: Some(thread),
            },
            js,
            classifier: Classifier {
                limits,
                flags,
                shared: Some(shared.clone()),
            },
            shared,
            limits,
        })
    }

    /// Runs the prelude, builds the arguments.
    fn prepare(&mut self, call: &EngineCall<'_>) -> Result<Prepared, Failure> {
        let classifier = &self.classifier;
        let internal = |e: Box<JsError>| classifier.classify(FailureCode::Internal, &js_text(&e));
        let sink = self
            .js
            .execute_script("runx:sink.js", SINK)
            .map_err(internal)?;
        let prelude = self
            .js
            .execute_script("runx:prelude.js", PRELUDE)
            .map_err(internal)?;
        js_scope!(self.js, scope);
        let fail = |scope: &mut v8::PinnedRef<'_, v8::TryCatch<'_, '_, v8::HandleScope<'_>>>,
                    code| classifier.classify(code, &caught(scope));
        let undefined: v8::Local<v8::Value> = v8::undefined(scope).into();
        let prelude: v8::Local<v8::Function> = v8::Local::new(scope, prelude)
            .try_into()
            .map_err(|_| Failure::new(FailureCode::Internal, "the prelude is not a function"))?;
        let sink = v8::Local::new(scope, sink);
        let names: Vec<v8::Local<v8::Value>> = ALLOWED_GLOBALS
            .iter()
            .filter_map(|n| v8::String::new(scope, n).map(Into::into))
            .collect();
        let allowed = v8::Array::new_with_elements(scope, &names);
        let Some(helpers) = prelude.call(scope, undefined, &[sink, allowed.into()]) else {
            return Err(fail(scope, FailureCode::Internal));
        };
        let helpers: v8::Local<v8::Object> = helpers
            .try_into()
            .map_err(|_| Failure::new(FailureCode::Internal, "the prelude returned no helpers"))?;

        let inputs = page_inputs(scope, call)?;
        let env = v8::Object::new(scope);
        for (k, v) in call.environment {
            let (Some(k), Some(v)) = (v8::String::new(scope, k), v8::String::new(scope, v)) else {
                return Err(Failure::new(
                    FailureCode::Internal,
                    "an environment value is too large",
                ));
            };
            if env.set(scope, k.into(), v.into()).is_none() {
                return Err(fail(scope, FailureCode::Internal));
            }
        }
        let make_context = function(scope, helpers, "context")?;
        let Some(context) = make_context.call(scope, undefined, &[env.into()]) else {
            return Err(fail(scope, FailureCode::Internal));
        };
        Ok(Prepared {
            helpers: v8::Global::new(scope, helpers),
            inputs: v8::Global::new(scope, inputs),
            context: v8::Global::new(scope, context),
        })
    }

    /// Loads the module graph through the bundle loader, evaluates it and returns the entry
    /// module's namespace.
    async fn evaluate(&mut self) -> Result<v8::Global<v8::Object>, Failure> {
        let bundle = &self.shared.bundle;
        let entry = bundle.entry.clone();
        if !bundle.modules.contains_key(&entry) {
            return Err(Failure::new(
                FailureCode::InvalidRequest,
                format!("the bundle has no entry module `{entry}`"),
            ));
        }
        let url = module_url(&entry).map_err(|e| Failure::new(FailureCode::InvalidRequest, e))?;
        self.shared
            .paths
            .borrow_mut()
            .insert(url.as_str().to_string(), entry);
        let id = self.js.load_main_es_module(&url).await.map_err(|e| {
            self.classifier
                .core(FailureCode::ModuleRejected, &e, "loading")
        })?;
        let what = "the module's top-level code";
        let evaluated = self.js.mod_evaluate(id);
        self.js
            .with_event_loop_promise(Box::pin(evaluated), PollEventLoopOptions::default())
            .await
            .map_err(|e| self.classifier.core(FailureCode::ExecutionFailed, &e, what))?;
        // deno_core settles the evaluation as done even when the top-level code threw (it
        // reports the throw as an unhandled rejection, which the sink ignores); the namespace
        // of an errored module is that exception.
        self.js
            .get_module_namespace(id)
            .map_err(|e| self.classifier.core(FailureCode::ExecutionFailed, &e, what))
    }

    /// Looks the export up and calls it with `(inputs, context)` and `this` undefined.
    fn invoke(
        &mut self,
        call: &EngineCall<'_>,
        p: &Prepared,
        namespace: v8::Global<v8::Object>,
    ) -> Result<v8::Global<v8::Value>, Failure> {
        let classifier = &self.classifier;
        let entry = self.shared.bundle.entry.clone();
        js_scope!(self.js, scope);
        let namespace = v8::Local::new(scope, namespace);
        let name = call.export.unwrap_or("default");
        let export = v8::String::new(scope, name)
            .and_then(|key| namespace.get(scope, key.into()))
            .ok_or_else(|| classifier.classify(FailureCode::ModuleRejected, &caught(scope)))?;
        if export.is_undefined() {
            let mut names = Vec::new();
            if let Some(keys) = namespace.get_own_property_names(scope, Default::default()) {
                for i in 0..keys.length() {
                    if let Some(k) = keys.get_index(scope, i) {
                        names.push(k.to_rust_string_lossy(scope));
                    }
                }
            }
            return Err(Failure::missing_export(&entry, call.export, &names));
        }
        let Ok(function) = v8::Local::<v8::Function>::try_from(export) else {
            let kind = export.type_of(scope).to_rust_string_lossy(scope);
            return Err(Failure::new(
                FailureCode::ModuleRejected,
                format!("export `{name}` of module `{entry}` is a {kind}, not a function"),
            ));
        };
        let undefined = v8::undefined(scope).into();
        let inputs = v8::Local::new(scope, &p.inputs);
        let context = v8::Local::new(scope, &p.context);
        let returned = function
            .call(scope, undefined, &[inputs, context])
            .ok_or_else(|| classifier.classify(FailureCode::ExecutionFailed, &caught(scope)))?;
        Ok(v8::Global::new(scope, returned))
    }

    /// Unwraps a returned promise once the event loop drained; pending means it waits on
    /// something that cannot happen here.
    async fn settle(
        &mut self,
        returned: v8::Global<v8::Value>,
    ) -> Result<v8::Global<v8::Value>, Failure> {
        let options = PollEventLoopOptions::default();
        let what = "the promise returned by the export";
        let is_promise = {
            js_scope!(self.js, scope);
            v8::Local::new(scope, &returned).is_promise()
        };
        if !is_promise {
            self.js
                .run_event_loop(options)
                .await
                .map_err(|e| self.classifier.core(FailureCode::ExecutionFailed, &e, what))?;
            return Ok(returned);
        }
        let resolved = self.js.resolve(returned);
        self.js
            .with_event_loop_promise(Box::pin(resolved), options)
            .await
            .map_err(|e| self.classifier.core(FailureCode::ExecutionFailed, &e, what))
    }

    /// Checks the value is JSON-compatible and encodes it, with the prelude's own helpers.
    fn finish(&mut self, p: &Prepared, value: v8::Global<v8::Value>) -> Result<Vec<u8>, Failure> {
        let classifier = &self.classifier;
        let output_limit = self.limits.output_bytes;
        js_scope!(self.js, scope);
        let value = v8::Local::new(scope, value);
        let helpers = v8::Local::new(scope, &p.helpers);
        let undefined: v8::Local<v8::Value> = v8::undefined(scope).into();
        let check = function(scope, helpers, "checkOutput")?;
        let problem = check
            .call(scope, undefined, &[value])
            .ok_or_else(|| classifier.classify(FailureCode::OutputRejected, &caught(scope)))?;
        if problem.is_string() {
            return Err(Failure::new(
                FailureCode::OutputRejected,
                format!(
                    "the export's return value is not JSON-compatible: {}",
                    problem.to_rust_string_lossy(scope)
                ),
            ));
        }
        let stringify = function(scope, helpers, "stringify")?;
        let text = stringify
            .call(scope, undefined, &[value])
            .ok_or_else(|| classifier.classify(FailureCode::OutputRejected, &caught(scope)))?;
        if !text.is_string() {
            return Err(Failure::new(
                FailureCode::OutputRejected,
                "the export returned nothing JSON can encode",
            ));
        }
        let text = text.to_rust_string_lossy(scope);
        if text.len() > output_limit {
            return Err(Failure::limit(
                Limit::OutputBytes,
                format!(
                    "the output is {} bytes of JSON; the limit is {output_limit} bytes",
                    text.len()
                ),
            ));
        }
        Ok(text.into_bytes())
    }
}

/// What V8 calls when it cannot allocate (its heap exhausted inside a builtin that ignores
/// termination, or the worker's data cap reached); V8 ends the process when this returns.
extern "C" fn out_of_memory(_location: *const std::ffi::c_char, details: &v8::OomDetails) {
    let what = if details.is_heap_oom {
        "JavaScript heap"
    } else {
        "process memory"
    };
    eprintln!("runx worker: V8 is out of {what}; the process ends");
    if crate::fatal::answer(Limit::HeapBytes) {
        // The host has its answer; V8's own crash report would only add noise.
        std::process::abort();
    }
}

/// Leaves `import.meta` an empty object, as QuickJS does. deno_core's would give modules their
/// `runx:///` URL, a `main` flag and a `resolve` function that reaches the module loader.
extern "C" fn empty_import_meta(
    _context: v8::Local<v8::Context>,
    _module: v8::Local<v8::Module>,
    _meta: v8::Local<v8::Object>,
) {
}

/// A function-valued property of a helper object.
fn function<'s>(
    scope: &mut v8::PinnedRef<'s, v8::TryCatch<'_, '_, v8::HandleScope<'_>>>,
    object: v8::Local<'s, v8::Object>,
    name: &str,
) -> Result<v8::Local<'s, v8::Function>, Failure> {
    let missing = || {
        Failure::new(
            FailureCode::Internal,
            format!("the prelude has no `{name}`"),
        )
    };
    let key = v8::String::new(scope, name).ok_or_else(missing)?;
    let value = object.get(scope, key.into()).ok_or_else(missing)?;
    v8::Local::<v8::Function>::try_from(value).map_err(|_| missing())
}

/// Parses the input JSON and attaches the page, if any, as `runx_page`: the metadata object
/// plus `records`, an array of JSON texts made straight from the raw record bytes.
fn page_inputs<'s>(
    scope: &mut v8::PinnedRef<'s, v8::TryCatch<'_, '_, v8::HandleScope<'_>>>,
    call: &EngineCall<'_>,
) -> Result<v8::Local<'s, v8::Value>, Failure> {
    let invalid = |what: &str| {
        Failure::new(
            FailureCode::InvalidRequest,
            format!("the {what} is not a JSON object"),
        )
    };
    let inputs = parse_object(scope, call.input).ok_or_else(|| invalid("input"))?;
    let Some(page) = call.page else {
        return Ok(inputs.into());
    };
    let meta = parse_object(scope, page.meta).ok_or_else(|| invalid("page metadata"))?;
    let records = records(scope, page)?;
    let keys = (
        v8::String::new(scope, "records"),
        v8::String::new(scope, "runx_page"),
    );
    let (Some(records_key), Some(page_key)) = keys else {
        return Err(Failure::new(FailureCode::Internal, "cannot name the page"));
    };
    if meta
        .set(scope, records_key.into(), records.into())
        .is_none()
        || inputs.set(scope, page_key.into(), meta.into()).is_none()
    {
        return Err(Failure::new(
            FailureCode::InvalidRequest,
            format!("the page cannot be attached: {}", caught(scope)),
        ));
    }
    Ok(inputs.into())
}

/// `JSON.parse` of `bytes` when it yields an object; the exception, if any, is cleared.
fn parse_object<'s>(
    scope: &mut v8::PinnedRef<'s, v8::TryCatch<'_, '_, v8::HandleScope<'_>>>,
    bytes: &[u8],
) -> Option<v8::Local<'s, v8::Object>> {
    let text = v8::String::new_from_utf8(scope, bytes, v8::NewStringType::Normal)?;
    let parsed = v8::json::parse(scope, text);
    if parsed.is_none() {
        scope.reset();
    }
    let parsed = parsed?;
    if !parsed.is_object() {
        return None;
    }
    parsed.try_into().ok()
}

fn records<'s>(
    scope: &mut v8::PinnedRef<'s, v8::TryCatch<'_, '_, v8::HandleScope<'_>>>,
    page: PageInput<'_>,
) -> Result<v8::Local<'s, v8::Array>, Failure> {
    let bad = |what: &str| Failure::new(FailureCode::InvalidRequest, what.to_string());
    let mut items: Vec<v8::Local<v8::Value>> = Vec::with_capacity(page.ends.len());
    let mut start = 0usize;
    for end in page.ends {
        let end = *end as usize;
        let bytes = page
            .blob
            .get(start..end)
            .ok_or_else(|| bad("the page offset table names a record outside the page"))?;
        let text =
            std::str::from_utf8(bytes).map_err(|_| bad("a page record is not UTF-8 text"))?;
        let s = v8::String::new(scope, text).ok_or_else(|| bad("a page record is too large"))?;
        items.push(s.into());
        start = end;
    }
    Ok(v8::Array::new_with_elements(scope, &items))
}
