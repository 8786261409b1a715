//! One call on QuickJS: the call's limits given to its runtime, the prelude's helpers, the
//! arguments, the module graph (or the kept module), the export, its settled value and the
//! encoded output, in the same phases as the V8 engine.

use super::caught::{Caught, Sign};
use super::fresh::Fresh;
use crate::engine::{EngineCall, PageInput};
use crate::wire::failure::{Failure, FailureCode};
use rquickjs::function::This;
use rquickjs::promise::PromiseState;
use rquickjs::{Array, Ctx, Function, Module, Object, Persistent, Promise, Value};
use runx_rules::{Limit, Limits};
use std::time::Instant;

/// One call on a runtime.
pub(super) struct Session {
    /// The namespace of the module a kept runtime evaluated (dropped before the runtime).
    pub(super) namespace: Option<Persistent<Object<'static>>>,
    pub(super) fresh: Fresh,
    limits: Limits,
    /// Whether the module instance outlives the call (it then ends with an empty job queue).
    keep: bool,
}

/// Values kept alive across the phases of a call (job queues run between them).
struct Prepared {
    helpers: Persistent<Object<'static>>,
    inputs: Persistent<Value<'static>>,
    context: Persistent<Value<'static>>,
    namespace: Persistent<Object<'static>>,
    /// The module's evaluation; none for a kept module, evaluated by an earlier call.
    evaluated: Option<Persistent<Promise<'static>>>,
}

impl Session {
    /// Gives a runtime (fresh, or kept with its module's `namespace`) the call's limits, wall
    /// and modules. A kept runtime's heap still holds what its module keeps: the budget goes on
    /// counting it.
    pub(super) fn start(
        call: &EngineCall<'_>,
        fresh: Fresh,
        namespace: Option<Persistent<Object<'static>>>,
    ) -> Session {
        let limits = call.limits;
        fresh.budget.start_call(limits.heap_bytes);
        fresh.interrupted.set(false);
        stack_from_here(&fresh, limits.stack_bytes);
        fresh.log_bound.set(limits.log_bytes);
        fresh.deadline.set(Some(Instant::now() + limits.wall()));
        *fresh.shared.bundle.borrow_mut() = Some(call.bundle.clone());
        Session {
            namespace,
            fresh,
            limits,
            keep: call.keep_module && !call.probe,
        }
    }

    /// The call's output, and the namespace of the module it called.
    pub(super) fn run(
        &self,
        call: &EngineCall<'_>,
    ) -> Result<(Vec<u8>, Persistent<Object<'static>>), Failure> {
        let prepared = self.fresh.ctx.with(|ctx| self.prepare(&ctx, call))?;
        self.drain_jobs()?;
        let returned = self
            .fresh
            .ctx
            .with(|ctx| self.invoke(&ctx, call, &prepared))?;
        self.drain_jobs()?;
        let output = self
            .fresh
            .ctx
            .with(|ctx| self.finish(&ctx, &prepared, returned))?;
        if self.keep {
            // Jobs the output's encoding queued (a `toJSON` that awaits) run now, under this
            // call's limits: a kept instance never carries a queued job into the next call.
            self.drain_jobs()?;
        }
        if let Some(spec) = self.fresh.shared.rejected.borrow().clone() {
            return Err(Failure::new(FailureCode::ModuleRejected, spec));
        }
        Ok((output, prepared.namespace.clone()))
    }

    /// Installs the prelude, builds the arguments, loads and evaluates the module graph (or
    /// takes the kept module, evaluated by an earlier call).
    fn prepare<'js>(&self, ctx: &Ctx<'js>, call: &EngineCall<'_>) -> Result<Prepared, Failure> {
        let fail = |code| move |_: rquickjs::Error| self.failure(ctx, code);
        let helpers = self
            .fresh
            .helpers
            .clone()
            .restore(ctx)
            .map_err(fail(FailureCode::Internal))?;

        let inputs = self.inputs(ctx, call)?;
        let env = Object::new(ctx.clone()).map_err(fail(FailureCode::Internal))?;
        for (k, v) in call.environment {
            env.set(k.as_str(), v.as_str())
                .map_err(fail(FailureCode::Internal))?;
        }
        let make_context: Function = helpers
            .get("context")
            .map_err(fail(FailureCode::Internal))?;
        let context: Value = make_context
            .call((env,))
            .map_err(fail(FailureCode::Internal))?;

        let (namespace, evaluated) = match &self.namespace {
            Some(kept) => (kept.clone(), None),
            None => {
                let (namespace, evaluated) = self.evaluate(ctx, call)?;
                let evaluated = Persistent::save(ctx, evaluated);
                (Persistent::save(ctx, namespace), Some(evaluated))
            }
        };
        Ok(Prepared {
            helpers: Persistent::save(ctx, helpers),
            inputs: Persistent::save(ctx, inputs),
            context: Persistent::save(ctx, context),
            namespace,
            evaluated,
        })
    }

    /// Loads and evaluates the module graph: the entry module's namespace and the promise of
    /// its evaluation.
    fn evaluate<'js>(
        &self,
        ctx: &Ctx<'js>,
        call: &EngineCall<'_>,
    ) -> Result<(Object<'js>, Promise<'js>), Failure> {
        let fail = |code| move |_: rquickjs::Error| self.failure(ctx, code);
        let bundle = call.bundle;
        let entry = bundle.entry.as_str();
        let source = bundle.modules.get(entry).ok_or_else(|| {
            Failure::new(
                FailureCode::InvalidRequest,
                format!("the bundle has no entry module `{entry}`"),
            )
        })?;
        let module = Module::declare(ctx.clone(), entry, source.as_str())
            .map_err(fail(FailureCode::ModuleRejected))?;
        self.fresh.shared.dynamic.set(true);
        let (module, evaluated) = module.eval().map_err(fail(FailureCode::ExecutionFailed))?;
        let namespace = module
            .namespace()
            .map_err(fail(FailureCode::ModuleRejected))?;
        Ok((namespace, evaluated))
    }

    /// Parses the input JSON and attaches the page, if any, as `runx_page`.
    fn inputs<'js>(&self, ctx: &Ctx<'js>, call: &EngineCall<'_>) -> Result<Value<'js>, Failure> {
        let invalid = |what: &str| {
            Failure::new(
                FailureCode::InvalidRequest,
                format!("the {what} is not a JSON object"),
            )
        };
        // The host wrote the input, so it is JSON: a parse that fails ran out of a limit
        // (memory: 500,000 small objects in 4 MiB of input fill a 64 MiB heap), which is what
        // the call reports.
        let inputs = ctx.json_parse(call.input).map_err(|_| {
            let failure = self.failure(ctx, FailureCode::InvalidRequest);
            if failure.limit.is_some() {
                failure
            } else {
                invalid("input")
            }
        })?;
        let Some(obj) = inputs.as_object() else {
            return Err(invalid("input"));
        };
        if let Some(page) = call.page {
            let meta = page_object(ctx, page).map_err(|e| match e {
                rquickjs::Error::Exception => self.failure(ctx, FailureCode::InvalidRequest),
                other => Failure::new(FailureCode::InvalidRequest, other.to_string()),
            })?;
            obj.set("runx_page", meta)
                .map_err(|_| self.failure(ctx, FailureCode::Internal))?;
        }
        Ok(inputs)
    }

    /// Checks the module evaluated, then calls the export.
    fn invoke(
        &self,
        ctx: &Ctx<'_>,
        call: &EngineCall<'_>,
        p: &Prepared,
    ) -> Result<Persistent<Value<'static>>, Failure> {
        let restore_err = |_| self.failure(ctx, FailureCode::Internal);
        if let Some(evaluated) = &p.evaluated {
            let evaluated = evaluated.clone().restore(ctx).map_err(restore_err)?;
            self.settled(ctx, &evaluated, "the module's top-level code")?;
        }
        let namespace = p.namespace.clone().restore(ctx).map_err(restore_err)?;
        if call.probe {
            return self.exports_of(ctx, p, &namespace);
        }
        let name = call.export.unwrap_or("default");
        let export: Value = namespace
            .get(name)
            .map_err(|_| self.failure(ctx, FailureCode::ModuleRejected))?;
        let entry = &call.bundle.entry;
        if export.is_undefined() {
            let names: Vec<String> = namespace.keys::<String>().filter_map(Result::ok).collect();
            return Err(Failure::missing_export(entry, call.export, &names));
        }
        let kind = self.kind(ctx, p, &export)?;
        let function = match export.as_function() {
            Some(function) if Failure::runnable(&kind) => function,
            _ => return Err(Failure::not_a_function(entry, name, &kind)),
        };
        let inputs = p.inputs.clone().restore(ctx).map_err(restore_err)?;
        let context = p.context.clone().restore(ctx).map_err(restore_err)?;
        let returned: Value = function
            .call((This(Value::new_undefined(ctx.clone())), inputs, context))
            .map_err(|_| self.failure(ctx, FailureCode::ExecutionFailed))?;
        Ok(Persistent::save(ctx, returned))
    }

    /// What a probe answers: each export's name and what it is (the prelude's `kind`:
    /// `typeof`, or which kind of function).
    fn exports_of<'js>(
        &self,
        ctx: &Ctx<'js>,
        p: &Prepared,
        namespace: &Object<'js>,
    ) -> Result<Persistent<Value<'static>>, Failure> {
        let fail = |_: rquickjs::Error| self.failure(ctx, FailureCode::ModuleRejected);
        let map = Object::new(ctx.clone()).map_err(fail)?;
        for key in namespace.keys::<String>() {
            let key = key.map_err(fail)?;
            let value: Value = namespace.get(key.as_str()).map_err(fail)?;
            map.set(key.as_str(), self.kind(ctx, p, &value)?)
                .map_err(fail)?;
        }
        Ok(Persistent::save(ctx, map.into_value()))
    }

    /// What `value` is, by the prelude's `kind`.
    fn kind<'js>(
        &self,
        ctx: &Ctx<'js>,
        p: &Prepared,
        value: &Value<'js>,
    ) -> Result<String, Failure> {
        let fail = |_: rquickjs::Error| self.failure(ctx, FailureCode::ModuleRejected);
        let helpers = p.helpers.clone().restore(ctx).map_err(fail)?;
        let kind: Function = helpers.get("kind").map_err(fail)?;
        kind.call((value.clone(),)).map_err(fail)
    }

    /// Unwraps a settled promise and encodes the value with the prelude's `encode` (the rules
    /// of `JSON.stringify`, plus the refusals it documents).
    fn finish(
        &self,
        ctx: &Ctx<'_>,
        p: &Prepared,
        returned: Persistent<Value<'static>>,
    ) -> Result<Vec<u8>, Failure> {
        let restore_err = |_| self.failure(ctx, FailureCode::Internal);
        let mut value = returned.restore(ctx).map_err(restore_err)?;
        if let Some(promise) = value.as_promise() {
            value = self.settled(ctx, promise, "the promise returned by the export")?;
        }
        let helpers = p.helpers.clone().restore(ctx).map_err(restore_err)?;
        let encode: Function = helpers.get("encode").map_err(restore_err)?;
        let depth = i32::try_from(self.limits.output_depth).unwrap_or(i32::MAX);
        let bytes = self.limits.output_bytes as f64;
        let encoded: Value = encode
            .call((value, depth, bytes))
            .map_err(|_| self.failure(ctx, FailureCode::OutputRejected))?;
        if let Some(text) = encoded.as_string() {
            let text = text.to_string().map_err(restore_err)?;
            Failure::check_output(text.len(), &self.limits)?;
            return Ok(text.into_bytes());
        }
        let refused = encoded.as_object().ok_or_else(|| {
            Failure::new(
                FailureCode::Internal,
                "the prelude's encode returned no text",
            )
        })?;
        let code: String = refused.get("code").map_err(restore_err)?;
        let message: String = refused.get("message").map_err(restore_err)?;
        Err(Failure::unencodable(&code, &message, &self.limits))
    }

    /// The value of a promise after the job queue drained; pending means it waits on something
    /// that cannot happen here (a timer, host I/O).
    fn settled<'js>(
        &self,
        ctx: &Ctx<'js>,
        promise: &Promise<'js>,
        what: &str,
    ) -> Result<Value<'js>, Failure> {
        match promise.state() {
            PromiseState::Resolved => promise
                .result::<Value>()
                .unwrap_or_else(|| Ok(Value::new_undefined(ctx.clone())))
                .map_err(|_| self.failure(ctx, FailureCode::ExecutionFailed)),
            PromiseState::Rejected => {
                let reason = match promise.result::<Value>() {
                    Some(Ok(reason)) => Caught::of(&reason),
                    Some(Err(_)) => Caught::pending(ctx),
                    None => Caught::of(&Value::new_undefined(ctx.clone())),
                };
                Err(self.classify(FailureCode::ExecutionFailed, reason))
            }
            PromiseState::Pending => Err(Failure::new(
                FailureCode::ExecutionFailed,
                format!(
                    "{what} never settled: nothing is left that could resolve it (the worker has no timers, network or host I/O)"
                ),
            )),
        }
    }

    fn drain_jobs(&self) -> Result<(), Failure> {
        loop {
            match self.fresh.rt.execute_pending_job() {
                Ok(true) => {}
                Ok(false) => return Ok(()),
                Err(job) => {
                    let caught = job.0.with(|ctx| Caught::pending(&ctx));
                    return Err(self.classify(FailureCode::ExecutionFailed, caught));
                }
            }
        }
    }

    /// The failure for the exception pending on `ctx`.
    fn failure(&self, ctx: &Ctx<'_>, code: FailureCode) -> Failure {
        self.classify(code, Caught::pending(ctx))
    }

    /// Whether `caught` is QuickJS's own answer to the heap limit: the allocator refused memory
    /// in this call, and the value is what QuickJS throws then (its `InternalError: out of
    /// memory`; `null` only once even the reserve after the first refusal ran out). The same
    /// value thrown by the module without a refusal, or any other value the module throws after
    /// catching one, is the module's.
    fn out_of_memory(&self, caught: &Caught) -> bool {
        let budget = &self.fresh.budget;
        match caught.sign {
            Sign::OutOfMemory | Sign::Nothing => budget.refused(),
            Sign::Null => budget.spent(),
            Sign::Module => false,
        }
    }

    /// Maps an exception to a failure: limits first (they explain everything after them), then
    /// refused imports, then the stage's own code with what was thrown.
    fn classify(&self, code: FailureCode, caught: Caught) -> Failure {
        if self.fresh.interrupted.get() {
            return Failure::exceeded(Limit::WallMilliseconds, &self.limits);
        }
        if self.out_of_memory(&caught) {
            return Failure::exceeded(Limit::HeapBytes, &self.limits);
        }
        let text = caught.thrown.text();
        if text.contains("Maximum call stack size exceeded") || text.contains("stack overflow") {
            return Failure::exceeded(Limit::StackBytes, &self.limits);
        }
        if let Some(spec) = self.fresh.shared.rejected.borrow().clone() {
            return Failure::new(FailureCode::ModuleRejected, spec);
        }
        Failure::thrown(code, &text)
    }
}

/// Lets the call's JavaScript use `stack_bytes` of stack (narrowed to what the thread has) below
/// this frame. QuickJS measures its limit from a stack top it records only when a runtime is
/// made; the worker makes runtimes at other depths (ahead of a call while it waits, or in the
/// call), so without this a call reached a depth that depended on where its runtime was made.
/// Every call sets the top here, at the same frame of `QuickJs::call`, so a recursion reaches
/// the same depth in every call, on a fresh runtime or a kept one.
#[inline(never)]
pub(super) fn stack_from_here(fresh: &Fresh, stack_bytes: usize) {
    fresh.ctx.with(|ctx| {
        // SAFETY: the pointer is the live runtime of this context, used on this thread only;
        // `JS_UpdateStackTop` only records the current stack position in it.
        #[allow(unsafe_code, reason = "records the stack top in the QuickJS runtime")]
        unsafe {
            rquickjs::qjs::JS_UpdateStackTop(rquickjs::qjs::JS_GetRuntime(ctx.as_raw().as_ptr()));
        }
    });
    fresh
        .rt
        .set_max_stack_size(crate::engine::stack::usable(stack_bytes));
}

/// Builds `runx_page`: the metadata object plus `records`, an array of JSON texts made
/// straight from the raw record bytes.
fn page_object<'js>(ctx: &Ctx<'js>, page: PageInput<'_>) -> rquickjs::Result<Value<'js>> {
    let meta = ctx.json_parse(page.meta)?;
    let Some(obj) = meta.as_object() else {
        return Err(rquickjs::Error::new_from_js("page metadata", "object"));
    };
    let records = Array::new(ctx.clone())?;
    for (i, bytes) in page.records().enumerate() {
        let bytes = bytes
            .ok_or_else(|| rquickjs::Error::new_from_js("page offset table", "record range"))?;
        let text = std::str::from_utf8(bytes)
            .map_err(|_| rquickjs::Error::new_from_js("page record bytes", "UTF-8 text"))?;
        records.set(i, text)?;
    }
    obj.set("records", records)?;
    Ok(meta)
}
