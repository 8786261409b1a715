//! One call on V8: a fresh context, the prelude, the arguments, the module graph, the export,
//! its settled value and the encoded output, in the same phases as the QuickJS engine; or, for
//! the next call of a run that keeps its module, the kept context and module with new
//! arguments.

use super::modules;
use super::state::{CallState, Scope};
use super::thrown::{Caught, caught, classify, read};
use crate::engine::bundle::ModuleBundle;
use crate::engine::globals::{ALLOWED_GLOBALS, INSTALLED_GLOBALS};
use crate::engine::{EngineCall, PageInput};
use crate::wire::failure::{Failure, FailureCode};
use rusty_v8 as v8;
use std::rc::Rc;
use std::sync::Arc;

/// A module instance kept for the calls of its run ([`EngineCall::keep_module`]): the context
/// its module was evaluated in, the prelude's helpers of that context, and the module.
pub(super) struct Kept {
    context: v8::Global<v8::Context>,
    helpers: v8::Global<v8::Object>,
    module: v8::Global<v8::Module>,
    bundle: Arc<ModuleBundle>,
}

impl Kept {
    /// Whether this instance is the module of `bundle`.
    pub(super) fn serves(&self, bundle: &Arc<ModuleBundle>) -> bool {
        Arc::ptr_eq(&self.bundle, bundle) || *self.bundle == **bundle
    }
}

/// Deletes the globals V8 adds back to every context it deserialises (the globals of shipped
/// features it installs after reading the snapshot, such as `Temporal` or `DisposableStack`),
/// with the prelude's own rule: string-named globals outside [`ALLOWED_GLOBALS`] go, the
/// prelude's own ([`INSTALLED_GLOBALS`]) stay.
fn scrub_globals(tc: &mut Scope<'_, '_, '_, '_>) -> Option<()> {
    let global = tc.get_current_context().global(tc);
    let args = v8::GetPropertyNamesArgs {
        mode: v8::KeyCollectionMode::OwnOnly,
        property_filter: v8::PropertyFilter::SKIP_SYMBOLS,
        index_filter: v8::IndexFilter::SkipIndices,
        key_conversion: v8::KeyConversionMode::ConvertToString,
    };
    let names = global.get_own_property_names(tc, args)?;
    for i in 0..names.length() {
        let key = names.get_index(tc, i)?;
        let name = key.to_rust_string_lossy(tc);
        if !ALLOWED_GLOBALS.contains(&name.as_str()) && !INSTALLED_GLOBALS.contains(&name.as_str())
        {
            global.delete(tc, key)?;
        }
    }
    Some(())
}

/// Values kept across the phases of a call.
struct Prepared<'s> {
    helpers: v8::Local<'s, v8::Object>,
    inputs: v8::Local<'s, v8::Value>,
    context: v8::Local<'s, v8::Value>,
    module: v8::Local<'s, v8::Module>,
    /// The module's evaluation; none for a kept module, evaluated by an earlier call.
    evaluated: Option<v8::Local<'s, v8::Value>>,
}

/// Runs one call in a new context of `isolate`, or in the context of `kept` (taken), and when
/// the call keeps its module and succeeds, puts its instance in `kept`. The caller owns the
/// wall, the heap flag and what the call leaves behind.
pub(super) fn run(
    isolate: &mut v8::OwnedIsolate,
    helpers: usize,
    call: &EngineCall<'_>,
    state: &CallState,
    kept: &mut Option<Kept>,
) -> Result<Vec<u8>, Failure> {
    let resumed = kept.take();
    let scope = std::pin::pin!(v8::HandleScope::new(isolate));
    let scope = &mut scope.init();
    let context = match &resumed {
        Some(k) => v8::Local::new(scope, &k.context),
        None => v8::Context::new(scope, Default::default()),
    };
    let scope = &mut v8::ContextScope::new(scope, context);
    let tc = std::pin::pin!(v8::TryCatch::new(scope));
    let tc = &mut tc.init();
    let phases = Phases { state };
    let prepared = match &resumed {
        Some(k) => phases.resume(tc, k, call)?,
        None => phases.prepare(tc, helpers, call)?,
    };
    drop(resumed);
    tc.perform_microtask_checkpoint();
    let returned = phases.invoke(tc, call, &prepared)?;
    tc.perform_microtask_checkpoint();
    let output = phases.finish(tc, &prepared, returned)?;
    let keep = call.keep_module && !call.probe;
    if keep {
        // Jobs the output's encoding queued (a `toJSON` that awaits) run now, under this
        // call's limits: a kept instance never carries a queued job into the next call.
        tc.perform_microtask_checkpoint();
    }
    if let Some(spec) = state.rejected.borrow().clone() {
        return Err(Failure::new(FailureCode::ModuleRejected, spec));
    }
    if keep {
        *kept = Some(Kept {
            context: v8::Global::new(tc, context),
            helpers: v8::Global::new(tc, prepared.helpers),
            module: v8::Global::new(tc, prepared.module),
            bundle: call.bundle.clone(),
        });
    }
    Ok(output)
}

struct Phases<'c> {
    state: &'c CallState,
}

impl Phases<'_> {
    /// Takes the prelude's helpers (the prelude ran in the snapshot this context was made
    /// from), builds the arguments, loads and evaluates the module graph.
    fn prepare<'s>(
        &self,
        tc: &mut Scope<'_, '_, 's, '_>,
        helpers: usize,
        call: &EngineCall<'_>,
    ) -> Result<Prepared<'s>, Failure> {
        let internal = FailureCode::Internal;
        scrub_globals(tc).ok_or_else(|| self.fail(tc, internal))?;
        let helpers = tc
            .get_context_data_from_snapshot_once::<v8::Object>(helpers)
            .map_err(|e| {
                Failure::new(internal, format!("the prelude's helpers are missing: {e}"))
            })?;
        let (inputs, context) = self.arguments(tc, helpers, call)?;
        let module = modules::load(tc, self.state)?;
        let evaluated = module
            .evaluate(tc)
            .ok_or_else(|| self.fail(tc, FailureCode::ExecutionFailed))?;
        Ok(Prepared {
            helpers,
            inputs,
            context,
            module,
            evaluated: Some(evaluated),
        })
    }

    /// Builds the arguments in the context of a kept module, which an earlier call of the run
    /// evaluated.
    fn resume<'s>(
        &self,
        tc: &mut Scope<'_, '_, 's, '_>,
        kept: &Kept,
        call: &EngineCall<'_>,
    ) -> Result<Prepared<'s>, Failure> {
        let helpers = v8::Local::new(tc, &kept.helpers);
        let module = v8::Local::new(tc, &kept.module);
        let (inputs, context) = self.arguments(tc, helpers, call)?;
        Ok(Prepared {
            helpers,
            inputs,
            context,
            module,
            evaluated: None,
        })
    }

    /// The export's arguments: the input object (with the page) and the frozen context object.
    fn arguments<'s>(
        &self,
        tc: &mut Scope<'_, '_, 's, '_>,
        helpers: v8::Local<'s, v8::Object>,
        call: &EngineCall<'_>,
    ) -> Result<(v8::Local<'s, v8::Value>, v8::Local<'s, v8::Value>), Failure> {
        let internal = FailureCode::Internal;
        let undefined: v8::Local<v8::Value> = v8::undefined(tc).into();
        let inputs = page_inputs(tc, call)?;
        let env = v8::Object::new(tc);
        for (k, v) in call.environment {
            let (Some(k), Some(v)) = (v8::String::new(tc, k), v8::String::new(tc, v)) else {
                return Err(Failure::new(internal, "an environment value is too large"));
            };
            env.set(tc, k.into(), v.into())
                .ok_or_else(|| self.fail(tc, internal))?;
        }
        let make_context = function(tc, helpers, "context")?;
        let context = make_context
            .call(tc, undefined, &[env.into()])
            .ok_or_else(|| self.fail(tc, internal))?;
        Ok((inputs, context))
    }

    /// Checks the module evaluated, then calls the export with `(inputs, context)` and `this`
    /// undefined.
    fn invoke<'s>(
        &self,
        tc: &mut Scope<'_, '_, 's, '_>,
        call: &EngineCall<'_>,
        p: &Prepared<'s>,
    ) -> Result<v8::Local<'s, v8::Value>, Failure> {
        if let Some(evaluated) = p.evaluated {
            self.settled(tc, evaluated, "the module's top-level code")?;
        }
        let namespace = v8::Local::<v8::Object>::try_from(p.module.get_module_namespace())
            .map_err(|_| Failure::new(FailureCode::Internal, "the module has no namespace"))?;
        let kind_of = function(tc, p.helpers, "kind")?;
        let undefined: v8::Local<v8::Value> = v8::undefined(tc).into();
        if call.probe {
            // Each export's name and what it is (the prelude's `kind`: `typeof`, or which
            // kind of function).
            let map = v8::Object::new(tc);
            if let Some(keys) = namespace.get_own_property_names(tc, Default::default()) {
                for i in 0..keys.length() {
                    let Some(key) = keys.get_index(tc, i) else {
                        continue;
                    };
                    let value = namespace
                        .get(tc, key)
                        .ok_or_else(|| self.fail(tc, FailureCode::ModuleRejected))?;
                    let kind = kind_of
                        .call(tc, undefined, &[value])
                        .ok_or_else(|| self.fail(tc, FailureCode::ModuleRejected))?;
                    map.set(tc, key, kind);
                }
            }
            return Ok(map.into());
        }
        let entry = &self.state.bundle.entry;
        let name = call.export.unwrap_or("default");
        let export = v8::String::new(tc, name)
            .and_then(|key| namespace.get(tc, key.into()))
            .ok_or_else(|| self.fail(tc, FailureCode::ModuleRejected))?;
        if export.is_undefined() {
            let mut names = Vec::new();
            if let Some(keys) = namespace.get_own_property_names(tc, Default::default()) {
                for i in 0..keys.length() {
                    if let Some(k) = keys.get_index(tc, i) {
                        names.push(k.to_rust_string_lossy(tc));
                    }
                }
            }
            return Err(Failure::missing_export(entry, call.export, &names));
        }
        let kind = kind_of
            .call(tc, undefined, &[export])
            .ok_or_else(|| self.fail(tc, FailureCode::ModuleRejected))?
            .to_rust_string_lossy(tc);
        let function = match v8::Local::<v8::Function>::try_from(export) {
            Ok(function) if Failure::runnable(&kind) => function,
            _ => return Err(Failure::not_a_function(entry, name, &kind)),
        };
        function
            .call(tc, undefined, &[p.inputs, p.context])
            .ok_or_else(|| self.fail(tc, FailureCode::ExecutionFailed))
    }

    /// Unwraps a settled promise and encodes the value with the prelude's `encode`, which
    /// gives `JSON.stringify`'s text or says why the value has none.
    fn finish<'s>(
        &self,
        tc: &mut Scope<'_, '_, 's, '_>,
        p: &Prepared<'s>,
        returned: v8::Local<'s, v8::Value>,
    ) -> Result<Vec<u8>, Failure> {
        let value = self.settled(tc, returned, "the promise returned by the export")?;
        let limits = &self.state.limits;
        let undefined: v8::Local<v8::Value> = v8::undefined(tc).into();
        let encode = function(tc, p.helpers, "encode")?;
        let depth = v8::Integer::new(tc, i32::try_from(limits.output_depth).unwrap_or(i32::MAX));
        let bytes = v8::Number::new(tc, limits.output_bytes as f64);
        let encoded = encode
            .call(tc, undefined, &[value, depth.into(), bytes.into()])
            .ok_or_else(|| self.fail(tc, FailureCode::OutputRejected))?;
        if let Ok(text) = v8::Local::<v8::String>::try_from(encoded) {
            Failure::check_output(text.utf8_length(tc), limits)?;
            return Ok(text.to_rust_string_lossy(tc).into_bytes());
        }
        let refused = v8::Local::<v8::Object>::try_from(encoded).map_err(|_| {
            Failure::new(
                FailureCode::Internal,
                "the prelude's encode returned no text",
            )
        })?;
        let field = |name: &str| -> String {
            v8::String::new(tc, name)
                .and_then(|k| refused.get(tc, k.into()))
                .map(|v| v.to_rust_string_lossy(tc))
                .unwrap_or_default()
        };
        let code = field("code");
        let message = field("message");
        Err(Failure::unencodable(&code, &message, limits))
    }

    /// The value of `value` once the microtask queue drained: itself, or a promise's result.
    /// Pending means it waits on something that cannot happen here.
    fn settled<'s>(
        &self,
        tc: &mut Scope<'_, '_, 's, '_>,
        value: v8::Local<'s, v8::Value>,
        what: &str,
    ) -> Result<v8::Local<'s, v8::Value>, Failure> {
        let Ok(promise) = v8::Local::<v8::Promise>::try_from(value) else {
            return Ok(value);
        };
        match promise.state() {
            v8::PromiseState::Fulfilled => Ok(promise.result(tc)),
            v8::PromiseState::Rejected => {
                let reason = promise.result(tc);
                let caught = read(tc, reason);
                Err(self.classify(FailureCode::ExecutionFailed, caught))
            }
            v8::PromiseState::Pending => Err(Failure::new(
                FailureCode::ExecutionFailed,
                format!(
                    "{what} never settled: nothing is left that could resolve it (the worker has no timers, network or host I/O)"
                ),
            )),
        }
    }

    /// The failure for the exception caught by `tc` (none when execution was terminated: the
    /// engine then reports the limit that terminated it).
    fn fail(&self, tc: &mut Scope<'_, '_, '_, '_>, code: FailureCode) -> Failure {
        let caught = caught(tc);
        self.classify(code, caught)
    }

    /// Maps an exception to a failure, as the QuickJS engine does: limits first (they explain
    /// everything after them), then refused imports, then the stage's own code.
    fn classify(&self, code: FailureCode, caught: Caught) -> Failure {
        classify(self.state, code, caught)
    }
}

/// The console sink handed to the prelude; the prelude formats, this only appends to the log
/// of the call running now (if any).
pub(super) fn console_sink(
    scope: &mut v8::PinScope<'_, '_>,
    args: v8::FunctionCallbackArguments<'_>,
    _rv: v8::ReturnValue<'_, v8::Value>,
) {
    let Some(state) = scope.get_slot::<Rc<CallState>>().cloned() else {
        return;
    };
    let level = args.get(0).to_rust_string_lossy(scope);
    // A line longer than what is left of the bound is only counted: its text never crosses
    // into Rust (a 256 MiB string would need 512 MiB here, past the worker's data cap).
    let text = args.get(1);
    // A line the prelude could not copy comes as null and its UTF-8 length.
    if text.is_null() {
        let bytes = args.get(2).number_value(scope).unwrap_or(0.0);
        state.log.borrow_mut().drop_line(bytes.max(0.0) as usize);
        return;
    }
    if let Ok(text) = v8::Local::<v8::String>::try_from(text) {
        let len = text.utf8_length(scope);
        let remaining = state.log.borrow().remaining(state.log_bound);
        if len >= remaining {
            state.log.borrow_mut().drop_line(len);
            return;
        }
    }
    let text = text.to_rust_string_lossy(scope);
    state.log.borrow_mut().push(&level, &text, state.log_bound);
}

/// A function-valued property of a helper object.
fn function<'s>(
    tc: &mut Scope<'_, '_, 's, '_>,
    object: v8::Local<'s, v8::Object>,
    name: &str,
) -> Result<v8::Local<'s, v8::Function>, Failure> {
    let missing = || {
        Failure::new(
            FailureCode::Internal,
            format!("the prelude has no `{name}`"),
        )
    };
    let key = v8::String::new(tc, name).ok_or_else(missing)?;
    let value = object.get(tc, key.into()).ok_or_else(missing)?;
    v8::Local::<v8::Function>::try_from(value).map_err(|_| missing())
}

/// Parses the input JSON and attaches the page, if any, as `runx_page`: the metadata object
/// plus `records`, an array of JSON texts made straight from the raw record bytes.
fn page_inputs<'s>(
    tc: &mut Scope<'_, '_, 's, '_>,
    call: &EngineCall<'_>,
) -> Result<v8::Local<'s, v8::Value>, Failure> {
    let invalid = |what: &str| {
        Failure::new(
            FailureCode::InvalidRequest,
            format!("the {what} is not a JSON object"),
        )
    };
    let inputs = parse_object(tc, call.input).ok_or_else(|| invalid("input"))?;
    let Some(page) = call.page else {
        return Ok(inputs.into());
    };
    let meta = parse_object(tc, page.meta).ok_or_else(|| invalid("page metadata"))?;
    let records = records(tc, page)?;
    let keys = (
        v8::String::new(tc, "records"),
        v8::String::new(tc, "runx_page"),
    );
    let (Some(records_key), Some(page_key)) = keys else {
        return Err(Failure::new(FailureCode::Internal, "cannot name the page"));
    };
    if meta.set(tc, records_key.into(), records.into()).is_none()
        || inputs.set(tc, page_key.into(), meta.into()).is_none()
    {
        return Err(Failure::new(
            FailureCode::InvalidRequest,
            format!("the page cannot be attached: {}", caught(tc).thrown.text()),
        ));
    }
    Ok(inputs.into())
}

/// `JSON.parse` of `bytes` when it yields an object; the exception, if any, is cleared.
fn parse_object<'s>(
    tc: &mut Scope<'_, '_, 's, '_>,
    bytes: &[u8],
) -> Option<v8::Local<'s, v8::Object>> {
    let text = v8::String::new_from_utf8(tc, bytes, v8::NewStringType::Normal)?;
    let parsed = v8::json::parse(tc, text);
    if parsed.is_none() {
        tc.reset();
    }
    v8::Local::<v8::Object>::try_from(parsed?).ok()
}

/// The page's records as an array of strings.
fn records<'s>(
    tc: &mut Scope<'_, '_, 's, '_>,
    page: PageInput<'_>,
) -> Result<v8::Local<'s, v8::Array>, Failure> {
    let bad = |what: &str| Failure::new(FailureCode::InvalidRequest, what.to_string());
    let mut items: Vec<v8::Local<v8::Value>> = Vec::with_capacity(page.spans.len());
    for bytes in page.records() {
        let bytes =
            bytes.ok_or_else(|| bad("the page offset table names a record outside the page"))?;
        if std::str::from_utf8(bytes).is_err() {
            return Err(bad("a page record is not UTF-8 text"));
        }
        let s = v8::String::new_from_utf8(tc, bytes, v8::NewStringType::Normal)
            .ok_or_else(|| bad("a page record is too large"))?;
        items.push(s.into());
    }
    Ok(v8::Array::new_with_elements(tc, &items))
}
