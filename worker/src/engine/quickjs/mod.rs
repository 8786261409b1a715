//! The default engine: QuickJS-ng through `rquickjs`, a fresh runtime and context per call.
//!
//! A fresh QuickJS runtime per call is what makes "nothing survives between calls" cheap to
//! prove: globals, prototypes, atoms, compiled modules and the heap accounting all go away with
//! it. It costs a few tens of microseconds next to the context itself.
//!
//! # A module kept for a run
//!
//! A call that keeps its module ([`EngineCall::keep_module`]: the pages of a paged run whose
//! runner declares `pages.module: partition`) leaves its runtime, with the module evaluated in
//! it, to the next call of its run that keeps the module too ([`EngineCall::continues`]). That
//! call evaluates nothing: it looks its export up on the kept module's namespace (another
//! export than the last call's, if it names one) and calls it with its own arguments.
//!
//! - **Module state, globals, prototypes**: the run's, as they are one call's otherwise. None
//!   of it reaches another run: a call that does not continue the run, does not keep the
//!   module, probes, or names another bundle drops the kept runtime before it starts; a call
//!   that fails drops it too (the run ends with it), and so does a worker that goes idle.
//! - **Heap**: the budget goes on counting what the kept runtime holds, so `heap_bytes` bounds
//!   the module's state and the call together, and a state that grows page after page fails
//!   at the same page on every run. Each call starts with no refusal and no reserve.
//! - **Wall, console, stack**: each call's own: its wall from its start, its log and bound, its
//!   stack top set where every call sets it ([`call::stack_from_here`]).
//! - **Jobs**: a kept call ends with an empty job queue. Jobs its output's encoding queued (a
//!   `toJSON` that awaits) run before its answer, in its log and under its limits, so none is
//!   left for the next call. A call that does not keep its module leaves them, never run, with
//!   its runtime.

use crate::engine::bundle::ModuleBundle;
use crate::engine::{ConsoleLog, Engine, EngineCall, EngineOutput, MemoryCap};
use crate::wire::failure::{Failure, FailureCode};
use call::Session;
use fresh::{Fresh, Intrinsics};
use rquickjs::{Context, Module, Object, Persistent, Runtime, WriteOptions};
use std::rc::Rc;
use std::sync::Arc;

mod budget;
mod call;
mod caught;
mod fresh;
mod loader;

const PRELUDE: &str = include_str!("../prelude.js");

/// The worker's address-space cap: the 64 MiB heap, 16 MiB frames and their copies fit easily.
/// QuickJS maps only what it allocates, so the whole address space can be capped.
const ADDRESS_SPACE_BYTES: u64 = 2 * 1024 * 1024 * 1024;

/// The name the prelude module is registered under; `:` makes it unimportable by user code.
const PRELUDE_MODULE: &str = "runx:prelude";

/// The QuickJS engine. Between calls it keeps the prelude's compiled bytecode (parsing the
/// prelude was the largest part of a trivial call) and, once an answer is out, the next call's
/// runtime, made and given the prelude while the host reads the answer (installing the prelude
/// and freeing a runtime were most of what was left). Every call still gets a runtime no call
/// ran in.
pub struct QuickJs {
    prelude: Option<Rc<[u8]>>,
    /// A runtime made and given the prelude while the worker waited, for the next call only.
    ready: Option<Fresh>,
    /// The last call's runtime, freed once its answer is out.
    spent: Option<Fresh>,
    /// The module instance the last call kept for the next call of its run.
    kept: Option<Kept>,
}

/// A module instance kept for the calls of its run ([`EngineCall::keep_module`]): the runtime
/// its module was evaluated in, and the module's namespace.
struct Kept {
    /// Dropped before the runtime it lives in (fields drop in order).
    namespace: Persistent<Object<'static>>,
    fresh: Fresh,
    bundle: Arc<ModuleBundle>,
}

impl Kept {
    /// Whether this instance is the module of `bundle`.
    fn serves(&self, bundle: &Arc<ModuleBundle>) -> bool {
        Arc::ptr_eq(&self.bundle, bundle) || *self.bundle == **bundle
    }
}

impl Default for QuickJs {
    fn default() -> QuickJs {
        QuickJs::new()
    }
}

impl std::fmt::Debug for QuickJs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuickJs")
            .field("prelude_bytes", &self.prelude.as_ref().map(|p| p.len()))
            .field("ready", &self.ready.is_some())
            .field("kept", &self.kept.is_some())
            .finish()
    }
}

impl QuickJs {
    /// A new engine.
    pub fn new() -> QuickJs {
        QuickJs {
            prelude: None,
            ready: None,
            spent: None,
            kept: None,
        }
    }

    /// A fresh runtime with the prelude installed: the one made ahead, or a new one.
    fn fresh(&mut self) -> Result<Fresh, Failure> {
        self.spent = None;
        match self.ready.take() {
            Some(fresh) => Ok(fresh),
            None => Fresh::new(self.prelude()?),
        }
    }

    /// The prelude as QuickJS module bytecode, compiled once per engine.
    fn prelude(&mut self) -> Result<Rc<[u8]>, Failure> {
        if self.prelude.is_none() {
            let internal = |e: rquickjs::Error| {
                Failure::new(
                    FailureCode::Internal,
                    format!("cannot compile the prelude: {e}"),
                )
            };
            let rt = Runtime::new().map_err(internal)?;
            let ctx = Context::custom::<Intrinsics>(&rt).map_err(internal)?;
            let bytes = ctx
                .with(|ctx| {
                    Module::declare(
                        ctx,
                        PRELUDE_MODULE,
                        format!("export const install = {PRELUDE};"),
                    )?
                    .write(WriteOptions::default())
                })
                .map_err(internal)?;
            self.prelude = Some(Rc::from(bytes));
        }
        Ok(self.prelude.clone().unwrap_or_else(|| Rc::from(Vec::new())))
    }
}

impl Engine for QuickJs {
    fn name(&self) -> &'static str {
        "quickjs"
    }

    fn memory_cap(&self) -> MemoryCap {
        MemoryCap::AddressSpace(ADDRESS_SPACE_BYTES)
    }

    fn call(&mut self, call: &EngineCall<'_>) -> Result<EngineOutput, (Failure, ConsoleLog)> {
        self.spent = None;
        let keep = call.keep_module && !call.probe;
        // Only the next call of the run, keeping the module too, finds the kept instance; any
        // other call drops it first.
        let kept = self
            .kept
            .take()
            .filter(|k| keep && call.continues && k.serves(call.bundle));
        let mut session = match kept {
            Some(Kept {
                namespace, fresh, ..
            }) => Session::start(call, fresh, Some(namespace)),
            None => {
                let fresh = self.fresh().map_err(|f| (f, ConsoleLog::default()))?;
                Session::start(call, fresh, None)
            }
        };
        let result = session.run(call);
        session.namespace = None;
        let log = session.fresh.log.take();
        match result {
            Ok((output, namespace)) if keep => {
                self.kept = Some(Kept {
                    namespace,
                    fresh: session.fresh,
                    bundle: call.bundle.clone(),
                });
                Ok(EngineOutput { output, log })
            }
            Ok((output, namespace)) => {
                drop(namespace);
                // Freed after the answer is written (`idle`), or before the next call.
                self.spent = Some(session.fresh);
                Ok(EngineOutput { output, log })
            }
            Err(f) => {
                self.spent = Some(session.fresh);
                Err((f, log))
            }
        }
    }

    /// Frees the last call's runtime (and any kept module: the next call does not continue
    /// its run) and makes the next call's, prelude installed, while the host reads the answer.
    /// The runtime made here has run nothing but the prelude; it serves exactly one call.
    fn idle(&mut self) {
        self.spent = None;
        self.kept = None;
        if self.ready.is_none()
            && let Ok(prelude) = self.prelude()
        {
            self.ready = Fresh::new(prelude).ok();
        }
    }
}
