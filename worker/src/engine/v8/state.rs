//! What the callbacks of one call (console, module resolution, dynamic import) share with it,
//! and the scope every phase of the call works in.

use super::buffers::Buffers;
use crate::engine::ConsoleLog;
use crate::engine::EngineCall;
use crate::engine::bundle::ModuleBundle;
use runx_rules::Limits;
use rusty_v8 as v8;
use std::cell::RefCell;
use std::sync::Arc;

/// The scope every phase works in: the call's context, under a try-catch.
pub(super) type Scope<'a, 'b, 's, 'i> =
    v8::PinnedRef<'a, v8::TryCatch<'b, 's, v8::HandleScope<'i>>>;

/// What the callbacks of one call (console, module resolution, dynamic import) share with it.
/// It sits in an isolate slot while the call runs, and nowhere else.
pub(super) struct CallState {
    pub(super) bundle: Arc<ModuleBundle>,
    pub(super) limits: Limits,
    /// The isolate's ArrayBuffer budget: whether it refused during this call.
    pub(super) buffers: Buffers,
    /// What the call wrote through `console`.
    pub(super) log: RefCell<ConsoleLog>,
    pub(super) log_bound: usize,
    /// The modules compiled for this call, with their bundle paths.
    pub(super) modules: RefCell<Vec<(v8::Global<v8::Module>, String)>>,
    /// The first refused specifier, reported as `module_rejected` even if the module caught it.
    pub(super) rejected: RefCell<Option<String>>,
}

impl CallState {
    pub(super) fn new(call: &EngineCall<'_>, buffers: Buffers) -> CallState {
        CallState {
            bundle: call.bundle.clone(),
            limits: call.limits,
            buffers,
            log: RefCell::new(ConsoleLog::default()),
            log_bound: call.limits.log_bytes,
            modules: RefCell::new(Vec::new()),
            rejected: RefCell::new(None),
        }
    }

    /// Records a refused specifier (the first one wins) and returns the reason.
    pub(super) fn refuse(&self, reason: String) -> String {
        self.rejected
            .borrow_mut()
            .get_or_insert_with(|| reason.clone());
        reason
    }
}
