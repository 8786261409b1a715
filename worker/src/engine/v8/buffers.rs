//! ArrayBuffer contents counted against the call's heap limit.
//!
//! V8 keeps the contents of an ArrayBuffer outside its heap, so the isolate's heap limit does
//! not bound them: `new ArrayBuffer(512 * 2 ** 20)` would simply succeed. QuickJS counts them
//! in its one memory limit. This allocator gives V8 a bound of the same size: each call may hold
//! up to `heap_bytes` of contents (beside its `heap_bytes` of JavaScript heap). Past it, V8
//! collects all it can before it gives up, which so far has always reached the near-heap-limit
//! callback and ended the call at the heap limit; should V8 throw its `RangeError: Array buffer
//! allocation failed` instead, the allocator remembers that it refused, and that error is the
//! heap limit only then (a module can throw the same error itself). Resizable buffers
//! (`maxByteLength`) bypass allocators in V8: the prelude charges the most each one has held to
//! this budget, as fixed buffers kept beside it (see `prelude.js`).

use nix::libc;
use rusty_v8 as v8;
use std::ffi::c_void;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Bytes of contents held, against the limit. V8 frees from its own threads too.
struct Budget {
    used: AtomicUsize,
    limit: usize,
    /// Set when the budget refused an allocation since the current call started.
    refused: AtomicBool,
}

impl Budget {
    fn take(&self, len: usize) -> bool {
        let taken = self
            .used
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |used| {
                used.checked_add(len).filter(|total| *total <= self.limit)
            })
            .is_ok();
        if !taken {
            self.refused.store(true, Ordering::SeqCst);
        }
        taken
    }

    fn give_back(&self, len: usize) {
        self.used.fetch_sub(len, Ordering::SeqCst);
    }
}

/// What the engine reads of an isolate's budget: whether it refused during the current call.
#[derive(Clone)]
pub(super) struct Buffers(Arc<Budget>);

impl Buffers {
    /// Starts a call: no refusal yet.
    pub(super) fn start_call(&self) {
        self.0.refused.store(false, Ordering::SeqCst);
    }

    /// Whether the budget refused an allocation since the call started.
    pub(super) fn refused(&self) -> bool {
        self.0.refused.load(Ordering::SeqCst)
    }
}

/// An allocator for one isolate whose ArrayBuffer contents may total `limit` bytes, and the
/// engine's view of it.
#[allow(
    unsafe_code,
    reason = "the allocator vtable V8 calls; each call is covered by its SAFETY comment"
)]
pub(super) fn allocator(limit: usize) -> (v8::UniqueRef<v8::Allocator>, Buffers) {
    static VTABLE: v8::RustAllocatorVtable<Budget> = v8::RustAllocatorVtable {
        allocate,
        allocate_uninitialized,
        free,
        drop: release,
    };
    let budget = Arc::new(Budget {
        used: AtomicUsize::new(0),
        limit,
        refused: AtomicBool::new(false),
    });
    let view = Buffers(budget.clone());
    // SAFETY: the handle is one reference of the `Arc<Budget>`, leaked, valid until V8 hands it
    // to `release` when the allocator goes away; V8 passes it, as `&Budget`, to the other
    // functions of `VTABLE`, which expect exactly that.
    let allocator = unsafe { v8::new_rust_allocator(Arc::into_raw(budget), &VTABLE) };
    (allocator, view)
}

/// `len` zeroed bytes, or null (a failed allocation to V8) past the budget.
#[allow(
    unsafe_code,
    reason = "an allocator callback V8 calls through the vtable"
)]
unsafe extern "C" fn allocate(budget: &Budget, len: usize) -> *mut c_void {
    if !budget.take(len) {
        return std::ptr::null_mut();
    }
    // SAFETY: `calloc` accepts any size and reports failure as null, which V8 expects here.
    let data = unsafe { libc::calloc(len.max(1), 1) };
    if data.is_null() {
        budget.give_back(len);
    }
    data
}

/// `len` bytes V8 is about to overwrite, or null past the budget.
#[allow(
    unsafe_code,
    reason = "an allocator callback V8 calls through the vtable"
)]
unsafe extern "C" fn allocate_uninitialized(budget: &Budget, len: usize) -> *mut c_void {
    if !budget.take(len) {
        return std::ptr::null_mut();
    }
    // SAFETY: `malloc` accepts any size and reports failure as null, which V8 expects here.
    let data = unsafe { libc::malloc(len.max(1)) };
    if data.is_null() {
        budget.give_back(len);
    }
    data
}

#[allow(
    unsafe_code,
    reason = "an allocator callback V8 calls through the vtable"
)]
unsafe extern "C" fn free(budget: &Budget, data: *mut c_void, len: usize) {
    // SAFETY: V8 frees only what `allocate` or `allocate_uninitialized` returned, once, with the
    // length it asked for; both came from the C allocator.
    unsafe { libc::free(data) };
    budget.give_back(len);
}

#[allow(
    unsafe_code,
    reason = "an allocator callback V8 calls through the vtable"
)]
unsafe extern "C" fn release(budget: *const Budget) {
    // SAFETY: V8 calls this once, when the allocator is destroyed, with the pointer made by
    // `Arc::into_raw` in `allocator`; V8 uses it no more, and `Buffers` holds its own reference.
    drop(unsafe { Arc::from_raw(budget) });
}
