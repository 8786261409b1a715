//! The stack limit of a V8 call: `stack_bytes` below the frame that starts the call.
//!
//! V8 takes a stack limit as an address. The `v8` crate passes one only when an isolate is
//! made, and V8 then keeps the JavaScript limit of its `--stack-size` flag anyway; so the
//! engine sets the limit through V8's own `Isolate::SetStackLimit` before every call, from the
//! stack position of that call. The `v8` crate does not bind that method, so it is declared
//! here by its C++ symbol, which every build of V8 exports (it is part of V8's public API).

use rusty_v8 as v8;

#[allow(
    unsafe_code,
    reason = "declares a V8 member function the binding does not expose"
)]
unsafe extern "C" {
    /// `void v8::Isolate::SetStackLimit(uintptr_t stack_limit)`: a non-virtual member
    /// function, so under the Itanium C++ ABI a C function of `(Isolate* this, uintptr_t)`.
    #[link_name = "_ZN2v87Isolate13SetStackLimitEm"]
    fn v8_isolate_set_stack_limit(isolate: v8::UnsafeRawIsolatePtr, stack_limit: usize);
}

/// Lets JavaScript of the next call on `isolate` use at most `stack_bytes` of stack below the
/// caller's frame.
#[inline(never)]
#[allow(unsafe_code, reason = "calls that V8 member function on the isolate")]
pub(super) fn limit(isolate: &mut v8::OwnedIsolate, stack_bytes: usize) {
    let here = 0u8;
    let limit = (std::ptr::addr_of!(here) as usize).saturating_sub(stack_bytes);
    // SAFETY: the pointer is the live isolate owned by `isolate`, entered on this thread (the
    // only thread that uses it); `SetStackLimit` only stores the address, which lies within
    // this thread's stack: the caller passes `stack_bytes` narrowed to what the thread has
    // below this frame (`engine::stack::usable`).
    unsafe { v8_isolate_set_stack_limit(isolate.as_raw_isolate_ptr(), limit) };
}
