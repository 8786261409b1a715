//! Progress of a paged run, reported after each page (a progress bar, a log line, a step
//! server's notification).

use std::sync::Arc;

/// Where a paged run stands after a page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageProgress {
    /// Pages finished.
    pub pages: u32,
    /// Source bytes covered by the finished pages.
    pub bytes: u64,
    /// Size of the artifact.
    pub total_bytes: u64,
}

/// Receives [`PageProgress`] after each page.
#[derive(Clone)]
pub struct ProgressSink(pub Arc<dyn Fn(&PageProgress) + Send + Sync>);

impl ProgressSink {
    /// A sink calling `f`.
    pub fn new(f: impl Fn(&PageProgress) + Send + Sync + 'static) -> ProgressSink {
        ProgressSink(Arc::new(f))
    }

    /// Reports `p`.
    pub fn report(&self, p: &PageProgress) {
        (self.0)(p)
    }
}

impl std::fmt::Debug for ProgressSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProgressSink")
    }
}
