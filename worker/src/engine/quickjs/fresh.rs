//! A QuickJS runtime made for exactly one call: the intrinsics a module may see, the prelude
//! evaluated and installed, and nothing else run in it. The engine makes the next one while the
//! worker waits for its next call.

use super::budget::Budget;
use super::loader::{BundleLoader, BundleResolver, Shared};
use crate::engine::ConsoleLog;
use crate::engine::globals::ALLOWED_GLOBALS;
use crate::wire::failure::{Failure, FailureCode};
use rquickjs::context::intrinsic;
use rquickjs::function::Opt;
use rquickjs::{Array, Context, Ctx, Function, Module, Object, Persistent, Runtime, Undefined};
use runx_rules::Limits;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Instant;

/// The intrinsics a context is built with: the ECMAScript ones. QuickJS's extras (`atob`,
/// `performance`, `WeakRef`, `DOMException`) are never created, which is cheaper than deleting
/// them; `Eval` is the compiler the module loader needs.
pub(super) type Intrinsics = (
    intrinsic::Date,
    intrinsic::Eval,
    intrinsic::RegExpCompiler,
    intrinsic::RegExp,
    intrinsic::Json,
    intrinsic::Proxy,
    intrinsic::MapSet,
    intrinsic::TypedArrays,
    intrinsic::Promise,
);

/// A QuickJS runtime and context that have run the prelude and nothing else.
///
/// Fields drop in order: the helpers before the context, the context before the runtime (a
/// value outliving its runtime trips QuickJS's leak assertion), the bytecode last.
pub(super) struct Fresh {
    /// The helpers the prelude returned (`context`, `encode`, ...).
    pub(super) helpers: Persistent<Object<'static>>,
    pub(super) ctx: Context,
    pub(super) rt: Runtime,
    /// What the runtime holds against the call's heap limit, and whether the limit refused.
    pub(super) budget: Rc<Budget>,
    pub(super) shared: Rc<Shared>,
    pub(super) interrupted: Rc<Cell<bool>>,
    /// The call's wall, set when the call starts; none while the prelude runs.
    pub(super) deadline: Rc<Cell<Option<Instant>>>,
    pub(super) log: Rc<RefCell<ConsoleLog>>,
    /// The call's console bound, set when the call starts.
    pub(super) log_bound: Rc<Cell<usize>>,
    /// Prelude bytecode; QuickJS reads it in place, so it is dropped after the runtime (fields
    /// drop in order).
    _prelude: Rc<[u8]>,
}

impl Fresh {
    /// A new runtime with the prelude evaluated and installed, under the default limits until
    /// a call sets its own.
    pub(super) fn new(prelude: Rc<[u8]>) -> Result<Fresh, Failure> {
        let internal = |e: rquickjs::Error| Failure::new(FailureCode::Internal, e.to_string());
        let defaults = Limits::default();
        // No QuickJS memory limit: the allocator keeps it, so that the engine can tell its
        // own refusal from a module's text (see `budget`).
        let (budget, allocator) = Budget::new(defaults.heap_bytes);
        let rt = Runtime::new_with_alloc(allocator).map_err(internal)?;
        rt.set_max_stack_size(defaults.stack_bytes);
        let interrupted = Rc::new(Cell::new(false));
        let deadline: Rc<Cell<Option<Instant>>> = Rc::new(Cell::new(None));
        let (flag, wall) = (interrupted.clone(), deadline.clone());
        rt.set_interrupt_handler(Some(Box::new(move || {
            if flag.get() || wall.get().is_some_and(|d| Instant::now() >= d) {
                flag.set(true);
                return true;
            }
            false
        })));
        let shared = Rc::new(Shared {
            bundle: RefCell::new(None),
            dynamic: Cell::new(false),
            rejected: RefCell::new(None),
        });
        rt.set_loader(BundleResolver(shared.clone()), BundleLoader(shared.clone()));
        let ctx = Context::custom::<Intrinsics>(&rt).map_err(internal)?;
        let log = Rc::new(RefCell::new(ConsoleLog::default()));
        let log_bound = Rc::new(Cell::new(defaults.log_bytes));
        let helpers = ctx.with(|ctx| install_prelude(&ctx, &prelude, &log, &log_bound))?;
        Ok(Fresh {
            helpers,
            ctx,
            rt,
            budget,
            shared,
            interrupted,
            deadline,
            log,
            log_bound,
            _prelude: prelude,
        })
    }
}

/// Evaluates the prelude and calls its `install` with the console sink and the globals a
/// module may see; returns the helpers it gives back.
fn install_prelude(
    ctx: &Ctx<'_>,
    prelude: &[u8],
    log: &Rc<RefCell<ConsoleLog>>,
    bound: &Rc<Cell<usize>>,
) -> Result<Persistent<Object<'static>>, Failure> {
    let internal = |e: rquickjs::Error| {
        Failure::new(
            FailureCode::Internal,
            format!("cannot install the prelude: {e}"),
        )
    };
    let (log, bound) = (log.clone(), bound.clone());
    // `text` is null for a line the prelude could not copy: then `bytes` is its UTF-8 length,
    // counted as dropped.
    let sink = Function::new(
        ctx.clone(),
        move |level: String, text: Option<String>, bytes: Opt<f64>| match text {
            Some(text) => log.borrow_mut().push(&level, &text, bound.get()),
            None => log
                .borrow_mut()
                .drop_line(bytes.0.map_or(0, |b| b.max(0.0) as usize)),
        },
    )
    .map_err(internal)?;
    let allowed = Array::new(ctx.clone()).map_err(internal)?;
    for (i, name) in ALLOWED_GLOBALS.iter().enumerate() {
        allowed.set(i, *name).map_err(internal)?;
    }
    // SAFETY: the bytes are module bytecode written by `Module::write` of this same QuickJS
    // build (`QuickJs::prelude`), never data from outside the process, and they outlive
    // this runtime (`Fresh` drops its copy after the runtime), as reading them in place
    // requires.
    #[allow(
        unsafe_code,
        reason = "loads the prelude from bytecode this crate compiled"
    )]
    let module = unsafe { Module::load(ctx.clone(), prelude) }.map_err(internal)?;
    let (module, _) = module.eval().map_err(internal)?;
    let install: Function = module.get("install").map_err(internal)?;
    // QuickJS keeps its own buffers within the allocator's budget and already calls the shared
    // `Math` functions: no `chargeBuffers`, no `math`.
    let helpers: Object = install
        .call((sink, allowed, Undefined, Undefined, url_native(ctx)?))
        .map_err(internal)?;
    Ok(Persistent::save(ctx, helpers))
}

/// The native behind `Runx.parseUrl` (`engine/url.rs`): one string, the four parts or the
/// message of the `TypeError` the prelude throws ([`crate::engine::url::answer`]).
fn url_native<'js>(ctx: &Ctx<'js>) -> Result<Function<'js>, Failure> {
    Function::new(ctx.clone(), |text: rquickjs::String<'js>| {
        text.to_string().map(|t| crate::engine::url::answer(&t))
    })
    .map_err(|e| {
        Failure::new(
            FailureCode::Internal,
            format!("cannot install the prelude: {e}"),
        )
    })
}
