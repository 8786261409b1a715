//! The stack an engine's call may use: `stack_bytes`, unless the calling thread's stack ends
//! sooner.
//!
//! Both engines take their limit as a distance below the frame that starts the call and trust
//! that the thread's stack reaches that far. A worker's engine thread
//! ([`crate::ENGINE_STACK_BYTES`], 16 MiB) always does; a thread of a test or of a program that
//! calls an engine in process may not (Rust gives a spawned thread 2 MiB), and deep recursion
//! there would run off the end of the stack and crash the process rather than fail the call.

/// Stack kept past the engine's limit for native frames beyond it: builtins and error paths
/// that check the limit only when they start.
const RESERVE_BYTES: usize = 1024 * 1024;

/// `stack_bytes`, or what is left of the calling thread's stack below this frame less
/// [`RESERVE_BYTES`] when that is less (at least 64 KiB, so a call can still start and fail).
#[inline(never)]
pub(crate) fn usable(stack_bytes: usize) -> usize {
    match room() {
        Some(room) => stack_bytes.min(room.saturating_sub(RESERVE_BYTES).max(64 * 1024)),
        None => stack_bytes,
    }
}

/// Bytes of stack between this frame and the lowest address of the thread's stack, when the
/// thread library can say.
#[cfg(target_os = "linux")]
#[allow(
    unsafe_code,
    reason = "asks the thread library where this thread's stack ends"
)]
fn room() -> Option<usize> {
    let here = 0u8;
    let position = std::ptr::addr_of!(here) as usize;
    let mut attr = std::mem::MaybeUninit::<libc::pthread_attr_t>::uninit();
    // SAFETY: `pthread_getattr_np` initialises `attr` for the calling thread when it returns 0;
    // only then is it read, and it is destroyed once, after the read.
    let (low, size) = unsafe {
        if libc::pthread_getattr_np(libc::pthread_self(), attr.as_mut_ptr()) != 0 {
            return None;
        }
        let mut low: *mut libc::c_void = std::ptr::null_mut();
        let mut size: libc::size_t = 0;
        let read = libc::pthread_attr_getstack(attr.as_ptr(), &mut low, &mut size);
        libc::pthread_attr_destroy(attr.as_mut_ptr());
        if read != 0 {
            return None;
        }
        (low as usize, size)
    };
    (size > 0).then(|| position.saturating_sub(low))
}

#[cfg(not(target_os = "linux"))]
fn room() -> Option<usize> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_smaller_than_the_limit_narrows_it_and_a_larger_one_does_not() {
        let on = |stack: usize| {
            std::thread::Builder::new()
                .stack_size(stack)
                .spawn(|| usable(8 * 1024 * 1024))
                .expect("a thread")
                .join()
                .expect("no panic")
        };
        let small = on(2 * 1024 * 1024);
        assert!((64 * 1024..1024 * 1024).contains(&small), "{small}");
        assert_eq!(on(16 * 1024 * 1024), 8 * 1024 * 1024);
    }
}
