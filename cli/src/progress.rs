//! A progress bar for long paged runs, on stderr, only when stderr is a terminal.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use runx_runtime::{PageProgress, ProgressSink};
use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Runs shorter than this never show a bar.
const QUIET_FOR: Duration = Duration::from_millis(500);

/// A sink that draws a bar once a run has lasted a moment; `None` when stderr is not a terminal.
pub fn sink() -> Option<(ProgressSink, Arc<Mutex<Option<ProgressBar>>>)> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let started = Instant::now();
    let bar: Arc<Mutex<Option<ProgressBar>>> = Arc::new(Mutex::new(None));
    let shared = bar.clone();
    let sink = ProgressSink::new(move |p: &PageProgress| {
        let Ok(mut slot) = shared.lock() else { return };
        if slot.is_none() && started.elapsed() >= QUIET_FOR {
            let b =
                ProgressBar::with_draw_target(Some(p.total_bytes), ProgressDrawTarget::stderr());
            if let Ok(style) = ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {wide_bar} {binary_bytes}/{binary_total_bytes} {msg}",
            ) {
                b.set_style(style);
            }
            *slot = Some(b);
        }
        if let Some(b) = slot.as_ref() {
            b.set_position(p.bytes);
            b.set_message(format!("page {}", p.pages));
        }
    });
    Some((sink, bar))
}

/// Clears the bar, if one was drawn.
pub fn finish(bar: &Arc<Mutex<Option<ProgressBar>>>) {
    if let Ok(slot) = bar.lock()
        && let Some(b) = slot.as_ref()
    {
        b.finish_and_clear();
    }
}
