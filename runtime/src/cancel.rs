//! Cooperative cancellation of the runs of one runtime.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once (Ctrl-C, [`crate::Runtime::interrupt`]) and observed by every supervised process;
/// a cancelled cli-tool run ends like a timeout and is reported as `interrupted`.
#[derive(Debug, Clone, Default)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    /// A token that is not cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Requests cancellation of every run observing this token.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether cancellation was requested.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}
