//! What the map threads and the fold share: the framed pages handed out in order, the map
//! results waiting for their turn, and when everyone stops.
//!
//! Position `seq` (the page index) belongs to partition `seq mod N`, whose map thread asks for
//! exactly its positions in increasing order; pages framed for another partition wait on the
//! board for theirs. Maps may finish in any order; the fold takes position 0, 1, 2, … and
//! nothing else, so what it sees does not depend on which worker finished first. The map
//! threads stay within a window of positions past the fold, so a slow page holds back at most
//! that many results in memory.

use super::super::page::{At, Framed, Unframed};
use super::super::queue::ConsumerGuard;
use super::super::runx_page::PageMeta;
use crate::failure::{FailureKind, RunError};
use runx_worker::{CancelToken, ConsoleLog};
use serde_json::value::RawValue;
use std::collections::BTreeMap;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// How often a fold waiting for a page looks at the run's cancel token: a cancelled run kills
/// the map calls (whose failures then wake it), so this only bounds the wait when none runs.
const CANCEL_POLL: Duration = Duration::from_millis(50);

/// A page whose map call is over.
pub(super) struct Mapped {
    pub at: At,
    pub eof: bool,
    /// The page's `next_offset`: the source bytes covered once it is folded.
    pub covered: u64,
    /// The page's metadata, for the fold.
    pub meta: PageMeta,
    /// The time its framing took.
    pub framing: Duration,
    pub outcome: MapOutcome,
}

/// What a map call gave.
pub(super) enum MapOutcome {
    /// The page's result, as JSON text, with its call and engine times and its console log.
    Result {
        output: Box<RawValue>,
        call: Duration,
        engine: Duration,
        log: ConsoleLog,
    },
    /// The page failed: the run fails here unless the fold finished before it.
    Failed { error: RunError, log: ConsoleLog },
}

/// What the fold finds at a position.
pub(super) enum Slot {
    Page(Box<Mapped>),
    /// The pages end here without a last page (a framing error, an interrupted framer), with
    /// the time framing took.
    Unframed(Unframed, Duration),
}

impl Slot {
    /// Whether nothing after this position is needed: the run ends at it either way.
    pub(super) fn ends(&self) -> bool {
        match self {
            Slot::Page(m) => m.eof || matches!(m.outcome, MapOutcome::Failed { .. }),
            Slot::Unframed(..) => true,
        }
    }
}

struct Shared {
    /// Positions mapped, waiting for the fold.
    slots: BTreeMap<u32, Slot>,
    /// The next position the fold takes.
    folded: u32,
    /// The first position the run ends at, once known: nothing after it is mapped.
    last: Option<u32>,
    /// Map threads still running.
    mappers: usize,
    /// The fold is over: map threads take no more pages.
    stopped: bool,
}

/// The framed pages, taken in order.
struct Source<'q> {
    framed: Option<ConsumerGuard<'q, Framed>>,
    /// The position of the next page the queue gives.
    next: u32,
    /// Pages taken from the queue for partitions that have not asked for them yet.
    routed: BTreeMap<u32, Framed>,
}

/// The board of one map/fold run.
pub(super) struct Board<'q> {
    shared: Mutex<Shared>,
    changed: Condvar,
    source: Mutex<Source<'q>>,
    /// Positions the map threads may run ahead of the fold.
    window: u32,
}

impl<'q> Board<'q> {
    /// A board over the framed pages of `framed`, for `mappers` map threads that may run
    /// `window` positions ahead of the fold.
    pub(super) fn new(framed: ConsumerGuard<'q, Framed>, mappers: usize, window: u32) -> Board<'q> {
        Board {
            shared: Mutex::new(Shared {
                slots: BTreeMap::new(),
                folded: 0,
                last: None,
                mappers,
                stopped: false,
            }),
            changed: Condvar::new(),
            source: Mutex::new(Source {
                framed: Some(framed),
                next: 0,
                routed: BTreeMap::new(),
            }),
            window: window.max(1),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Shared> {
        // Plain data: a panic elsewhere leaves it usable.
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The framed page at position `seq`, once the window has room for it; `None` when the
    /// run needs no page there (the fold is over, or the pages end before it). Each position
    /// is asked for once, by its partition's map thread.
    pub(super) fn next_page(&self, seq: u32) -> Option<Framed> {
        {
            let mut st = self.lock();
            loop {
                if st.stopped || st.last.is_some_and(|last| seq > last) {
                    return None;
                }
                if seq < st.folded.saturating_add(self.window) {
                    break;
                }
                st = self.changed.wait(st).unwrap_or_else(|e| e.into_inner());
            }
        }
        let mut source = self.source.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(item) = source.routed.remove(&seq) {
            return Some(item);
        }
        while source.next <= seq {
            let framed = source.framed.as_ref()?;
            let item = match framed.pop() {
                Some(item) => item,
                None => {
                    // The framing thread always ends with a last page or the reason there is
                    // none.
                    let lost = RunError::internal(
                        "framing_thread",
                        "the framing thread stopped without a final page",
                    );
                    (Err(Unframed::Run(lost)), Duration::ZERO)
                }
            };
            let at = source.next;
            source.next += 1;
            if !matches!(&item.0, Ok(Some(p)) if !p.page.eof) {
                // Nothing is framed after it: the pages end here.
                source.framed = None;
                self.end_at(at);
            }
            if at == seq {
                return Some(item);
            }
            source.routed.insert(at, item);
        }
        None
    }

    /// Whether the page at `seq` still matters: no earlier position ends the run.
    pub(super) fn wanted(&self, seq: u32) -> bool {
        let st = self.lock();
        !st.stopped && st.last.is_none_or(|last| seq <= last)
    }

    fn end_at(&self, seq: u32) {
        let mut st = self.lock();
        st.last = Some(st.last.map_or(seq, |last| last.min(seq)));
        drop(st);
        self.changed.notify_all();
    }

    /// Posts what the page at `seq` gave.
    pub(super) fn post(&self, seq: u32, slot: Slot) {
        let mut st = self.lock();
        if slot.ends() {
            st.last = Some(st.last.map_or(seq, |last| last.min(seq)));
        }
        st.slots.insert(seq, slot);
        drop(st);
        self.changed.notify_all();
    }

    /// A map thread leaves (however it ends): a fold waiting for a page no thread will map
    /// learns it.
    pub(super) fn mapper_leaves(&self) {
        let mut st = self.lock();
        st.mappers = st.mappers.saturating_sub(1);
        drop(st);
        self.changed.notify_all();
    }

    /// What the page at `seq` gave, waiting for it; the run's failure when it is cancelled
    /// meanwhile, or when no map thread is left to map it.
    pub(super) fn take(&self, seq: u32, cancel: &CancelToken) -> Result<Slot, RunError> {
        let mut st = self.lock();
        loop {
            if let Some(slot) = st.slots.remove(&seq) {
                st.folded = seq + 1;
                drop(st);
                self.changed.notify_all();
                return Ok(slot);
            }
            if cancel.is_cancelled() {
                return Err(RunError::interrupted());
            }
            if st.mappers == 0 {
                return Err(RunError::new(
                    FailureKind::Internal,
                    "map_threads",
                    format!("the map threads stopped before page {seq} was mapped"),
                ));
            }
            st = self
                .changed
                .wait_timeout(st, CANCEL_POLL)
                .map(|(g, _)| g)
                .unwrap_or_else(|e| e.into_inner().0);
        }
    }

    /// Ends the run's mapping: map threads take no more pages, and the framing thread is let
    /// go (its queue's consumer leaves).
    pub(super) fn stop(&self) {
        self.lock().stopped = true;
        self.changed.notify_all();
        let framed = self
            .source
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .framed
            .take();
        drop(framed);
    }
}

/// Stops the board when dropped, however the fold ends.
pub(super) struct StopOnDrop<'b, 'q>(pub &'b Board<'q>);

impl Drop for StopOnDrop<'_, '_> {
    fn drop(&mut self) {
        self.0.stop();
    }
}

/// Tells the board a map thread left when dropped, however it ends.
pub(super) struct MapperLeaves<'b, 'q>(pub &'b Board<'q>);

impl Drop for MapperLeaves<'_, '_> {
    fn drop(&mut self) {
        self.0.mapper_leaves();
    }
}
