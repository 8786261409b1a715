//! The QuickJS heap limit, kept by the allocator QuickJS runs on.
//!
//! QuickJS's own memory limit refuses an allocation before any allocator sees it, and all that
//! is left of the refusal is `InternalError: out of memory` (or `null`, when even that error
//! cannot be made): values a module can throw itself. So a runtime gets no QuickJS limit;
//! `heap_bytes` is kept here instead. The allocator counts what QuickJS holds, refuses past the
//! limit, and remembers that it did: the engine reads the heap limit from that memory, never
//! from a message.

use nix::libc;
use rquickjs::allocator::Allocator;
use std::cell::Cell;
use std::rc::Rc;

/// Room granted once per call after the first refusal: enough for QuickJS to make its
/// `InternalError: out of memory` and unwind. Without it, a heap full to the last bytes makes
/// QuickJS throw `null`, which is also what `throw null` throws.
const RESERVE_BYTES: usize = 256 * 1024;

/// What a QuickJS runtime holds against its limit, and whether the limit refused anything in
/// the current call. QuickJS runs on one thread: cells are enough.
#[derive(Debug)]
pub(super) struct Budget {
    used: Cell<usize>,
    limit: Cell<usize>,
    /// Room added to the limit after the first refusal of a call ([`RESERVE_BYTES`]).
    reserve: Cell<usize>,
    /// The limit refused an allocation during the current call.
    refused: Cell<bool>,
    /// The limit refused an allocation after the reserve was granted: the heap is full to the
    /// last bytes, and QuickJS may have thrown `null` for want of room for an error.
    spent: Cell<bool>,
}

impl Budget {
    /// A budget of `limit` bytes, and the allocator that keeps it.
    pub(super) fn new(limit: usize) -> (Rc<Budget>, Metered) {
        let budget = Rc::new(Budget {
            used: Cell::new(0),
            limit: Cell::new(limit),
            reserve: Cell::new(0),
            refused: Cell::new(false),
            spent: Cell::new(false),
        });
        (budget.clone(), Metered(budget))
    }

    /// Starts a call under `limit`: no refusal yet, no reserve.
    pub(super) fn start_call(&self, limit: usize) {
        self.limit.set(limit);
        self.reserve.set(0);
        self.refused.set(false);
        self.spent.set(false);
    }

    /// Whether the limit refused an allocation during this call.
    pub(super) fn refused(&self) -> bool {
        self.refused.get()
    }

    /// Whether the limit refused an allocation even with the reserve granted.
    pub(super) fn spent(&self) -> bool {
        self.spent.get()
    }

    /// Whether replacing `old` bytes held by `new` bytes stays within the limit; records a
    /// refusal when it does not.
    fn admit(&self, old: usize, new: usize) -> bool {
        let held = self.used.get().saturating_sub(old);
        let room = self.limit.get().saturating_add(self.reserve.get());
        if held.saturating_add(new) <= room {
            return true;
        }
        self.refuse();
        false
    }

    /// Records a refusal: the first of a call grants the reserve, a later one spends it.
    fn refuse(&self) {
        if self.refused.replace(true) {
            self.spent.set(true);
        } else {
            self.reserve.set(RESERVE_BYTES);
        }
    }

    fn took(&self, bytes: usize) {
        self.used.set(self.used.get().saturating_add(bytes));
    }

    fn gave_back(&self, bytes: usize) {
        self.used.set(self.used.get().saturating_sub(bytes));
    }
}

/// The allocator of a QuickJS runtime: the C allocator, within a [`Budget`].
pub(super) struct Metered(Rc<Budget>);

#[allow(
    unsafe_code,
    reason = "asks the C allocator the size of a block it returned"
)]
impl Metered {
    /// Counts a block the C allocator returned, or records its failure as a refusal (the
    /// worker's address-space cap was reached: the heap is exhausted all the same).
    fn taken(&self, ptr: *mut libc::c_void) -> *mut u8 {
        if ptr.is_null() {
            self.0.refuse();
        } else {
            // SAFETY: `ptr` was just returned by the C allocator and not freed.
            self.0.took(unsafe { libc::malloc_usable_size(ptr) });
        }
        ptr.cast()
    }
}

// SAFETY: every block comes from the C allocator (`malloc`, `calloc`, `realloc`), which returns
// null or at least the bytes asked for, aligned for any type (more than `usize`);
// `usable_size` is the C allocator's own for those blocks; `dealloc` and `realloc` receive only
// blocks this allocator returned (QuickJS frees through the runtime that allocated).
#[allow(
    unsafe_code,
    reason = "the allocator QuickJS calls; each call is covered by its SAFETY comment"
)]
unsafe impl Allocator for Metered {
    fn alloc(&mut self, size: usize) -> *mut u8 {
        if !self.0.admit(0, size) {
            return std::ptr::null_mut();
        }
        // SAFETY: `malloc` accepts any size and reports failure as null.
        self.taken(unsafe { libc::malloc(size.max(1)) })
    }

    fn calloc(&mut self, count: usize, size: usize) -> *mut u8 {
        let Some(total) = count.checked_mul(size) else {
            self.0.refuse();
            return std::ptr::null_mut();
        };
        if !self.0.admit(0, total) {
            return std::ptr::null_mut();
        }
        // SAFETY: `calloc` accepts any counts and reports failure as null.
        self.taken(unsafe { libc::calloc(count.max(1), size.max(1)) })
    }

    unsafe fn dealloc(&mut self, ptr: *mut u8) {
        // SAFETY: the caller passes a live block of this allocator, so of the C allocator.
        let held = unsafe { libc::malloc_usable_size(ptr.cast()) };
        // SAFETY: as above; it is not used again.
        unsafe { libc::free(ptr.cast()) };
        self.0.gave_back(held);
    }

    unsafe fn realloc(&mut self, ptr: *mut u8, new_size: usize) -> *mut u8 {
        if ptr.is_null() {
            return self.alloc(new_size);
        }
        // SAFETY: the caller passes a live block of this allocator, so of the C allocator.
        let old = unsafe { libc::malloc_usable_size(ptr.cast()) };
        if !self.0.admit(old, new_size) {
            return std::ptr::null_mut();
        }
        // SAFETY: as above; on success the old block is gone and only the new one is used, on
        // failure the old block stays valid and counted.
        let moved = unsafe { libc::realloc(ptr.cast(), new_size.max(1)) };
        if moved.is_null() {
            self.0.refuse();
            return std::ptr::null_mut();
        }
        self.0.gave_back(old);
        self.taken(moved)
    }

    unsafe fn usable_size(ptr: *mut u8) -> usize {
        // SAFETY: QuickJS asks only about live blocks of this allocator.
        unsafe { libc::malloc_usable_size(ptr.cast()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_is_remembered_and_grants_the_reserve_once() {
        let (budget, mut metered) = Budget::new(1 << 20);
        let small = metered.alloc(1024);
        assert!(!small.is_null());
        assert!(!budget.refused());
        assert!(metered.alloc(2 << 20).is_null());
        assert!(budget.refused() && !budget.spent());
        // The reserve makes room for the engine's error.
        let error = metered.alloc(64 * 1024);
        assert!(!error.is_null());
        assert!(metered.alloc(2 << 20).is_null());
        assert!(budget.spent());
        // SAFETY: both blocks came from this allocator and are freed once.
        #[allow(unsafe_code, reason = "frees the test's blocks")]
        unsafe {
            metered.dealloc(small);
            metered.dealloc(error);
        }
        assert_eq!(budget.used.get(), 0);
        budget.start_call(1 << 20);
        assert!(!budget.refused() && !budget.spent());
    }
}
