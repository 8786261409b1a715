//! Pages sent ahead: page N+1 goes to the worker before page N's reply has come back, so the
//! worker starts it the moment it has answered page N, and the host reads page N's reply and
//! sends page N+2 while page N+1 runs on the other core.
//!
//! Sending a page, reading a reply and checking it took about 0.3 ms of every page on this
//! project's 2-core machine, during which the worker waited: 4–5% of a run of 256 KiB pages
//! under QuickJS. Ahead, that work overlaps the next page's JavaScript.
//!
//! The state for page N+1 is only known once page N has answered, so the worker keeps the
//! state page N's result carries and gives it to page N+1 itself (`runx_worker::run_session`). The
//! host still parses and checks every reply as before, and compares the digest of the state
//! the worker gave each page with the state it parsed itself.
//!
//! Anything that is not the page's own failure (a worker lost mid-page, a request too large to
//! send ahead, a state that does not match) ends sending ahead: the pages not yet answered go
//! back, in order, to the one-call-at-a-time loop, which runs them again with the host's own
//! state. What a run returns, logs and records does not depend on which loop ran a page.

use super::page::{At, Framed, Prepared, Settled, Unanswered, Walk, ms};
use super::page_loop::PageLoop;
use super::queue::ConsumerGuard;
use crate::failure::RunError;
use crate::framing::Page;
use runx_profile::PAGE_COUNT;
use runx_worker::{Call, ConsoleLog, Lease, LeaseError, PagePayload, PageRecords, Reply};
use serde_json::Value;
use std::time::Instant;

/// A page sent to the leased worker whose reply has not been read.
struct Sent {
    id: u64,
    call: Call,
    page: Page,
    meta_prefix: String,
    /// Whether the page takes the state the worker kept from the page before.
    takes_kept_state: bool,
    /// When the worker began the page, as near as the host knows: when the page was sent,
    /// or when the reply before it arrived.
    since: Instant,
}

impl Sent {
    fn at(&self) -> At {
        At::of(&self.page)
    }

    /// The page as it was before it was sent, to run again elsewhere.
    fn into_prepared(mut self) -> Prepared {
        let records = match self.call.page.take() {
            Some(PagePayload { records, .. }) => records,
            None => PageRecords::Inline {
                ends: Vec::new(),
                blob: Vec::new(),
            },
        };
        Prepared {
            page: self.page,
            meta_prefix: self.meta_prefix,
            records,
        }
    }
}

/// What follows a page sent ahead.
enum Following {
    /// The page after it, sent (boxed: a sent page is ten times the size of the others).
    Sent(Box<Sent>),
    /// The page after it (or why there is none), for the other loop.
    Held(Unanswered),
    /// Nothing: the page is the last.
    Last,
}

/// A page for the other loop.
fn unanswered(page: Prepared, lost_once: bool) -> Unanswered {
    Unanswered {
        page: Ok(page),
        lost_once,
    }
}

/// Pages sent ahead on one worker leased for the run.
pub(super) struct SendAhead<'l, 'a> {
    page_loop: &'l PageLoop<'a>,
    lease: Lease<'a>,
}

impl<'l, 'a> SendAhead<'l, 'a> {
    /// Leases a worker that takes pages by descriptor; `None` when pages cannot go ahead
    /// (records travel inside the frame, which makes requests too large to send ahead, or no
    /// worker can be held: the other loop then reports why).
    pub(super) fn lease(page_loop: &'l PageLoop<'a>) -> Option<SendAhead<'l, 'a>> {
        page_loop.artifact.read_only()?;
        let lease = page_loop
            .pool
            .lease(&page_loop.module.digest, page_loop.cancel)
            .ok()?;
        lease
            .pages_by_descriptor()
            .then_some(SendAhead { page_loop, lease })
    }

    /// Runs pages ahead until the run ends (`Some`: its output) or the rest of the run is for
    /// the one-call-at-a-time loop (`None`), from `walk.state` and the pages in
    /// `walk.waiting`.
    pub(super) fn run(
        mut self,
        framed: &ConsumerGuard<'_, Framed>,
        walk: &mut Walk<'_>,
    ) -> Result<Option<Value>, RunError> {
        let first = self.page_loop.next_prepared(framed, &mut walk.record)?;
        let mut current = match self.send(first, Some(&walk.state), None, walk.log) {
            Ok(sent) => sent,
            Err(unsent) => {
                let (prepared, why) = *unsent;
                tracing::debug!("pages are not sent ahead: {why}");
                walk.waiting.push_back(unanswered(prepared, false));
                return Ok(None);
            }
        };
        loop {
            let at = current.at();
            // The page after this one goes now, unless this one is the last or the next one
            // must wait (it cannot be sent, or the framer failed).
            let following = if current.page.eof {
                Following::Last
            } else {
                self.follow(&current, framed, walk)
            };
            let (reply, arrived) = match self.receive(&current, walk)? {
                Ok(received) => received,
                Err(why) => {
                    tracing::warn!("page {} runs again on another worker: {why}", at.index);
                    walk.waiting
                        .push_back(unanswered(current.into_prepared(), true));
                    match following {
                        Following::Sent(next) => walk
                            .waiting
                            .push_back(unanswered(next.into_prepared(), false)),
                        Following::Held(held) => walk.waiting.push_back(held),
                        Following::Last => {}
                    }
                    return Ok(None);
                }
            };
            let (eof, covered) = (current.page.eof, current.page.next_offset);
            match self
                .page_loop
                .settle_page(&reply, at, eof, covered, &mut walk.record)?
            {
                Settled::Finished(output) => return Ok(Some(output)),
                Settled::Next(new_state) => walk.state = new_state,
            }
            match following {
                Following::Sent(mut sent) => {
                    sent.since = arrived;
                    current = *sent;
                }
                Following::Held(held) => {
                    walk.waiting.push_back(held);
                    return Ok(None);
                }
                Following::Last => {
                    return Err(RunError::internal(
                        "page_ahead",
                        "a page that was not the last had no page after it",
                    ));
                }
            }
        }
    }

    /// The page after `current`: sent on the lease to take the state the worker keeps from
    /// `current`, or held for the other loop when it cannot be sent or the framer failed.
    fn follow(
        &mut self,
        current: &Sent,
        framed: &ConsumerGuard<'_, Framed>,
        walk: &mut Walk<'_>,
    ) -> Following {
        match self.page_loop.next_framed(framed, &mut walk.record) {
            Ok(p) if u64::from(p.page.index) < PAGE_COUNT.max => {
                match self.send(p, None, Some(current.id), walk.log) {
                    Ok(sent) => Following::Sent(Box::new(sent)),
                    Err(unsent) => {
                        let (p, why) = *unsent;
                        tracing::debug!("page {} is not sent ahead: {why}", p.page.index);
                        Following::Held(unanswered(p, false))
                    }
                }
            }
            other => Following::Held(Unanswered {
                page: other,
                lost_once: false,
            }),
        }
    }

    /// Reads the reply to `current` and records its call: the reply and when it arrived, or
    /// why the page must run again elsewhere (its worker was lost). A failure of the page
    /// itself ends the run.
    fn receive(
        &mut self,
        current: &Sent,
        walk: &mut Walk<'_>,
    ) -> Result<Result<(Reply, Instant), String>, RunError> {
        let at = current.at();
        let bound = self.page_loop.module.limits.log_bytes;
        // A page that took the worker's kept state must name the state the host holds.
        let expected = current
            .takes_kept_state
            .then(|| digest_of(&walk.state))
            .flatten();
        if current.takes_kept_state && expected.is_none() {
            return Err(RunError::internal("encode", "the state cannot be encoded"));
        }
        let reply = self
            .lease
            .receive(current.id, &current.call, expected.as_deref());
        let arrived = Instant::now();
        let mut reply = match reply {
            Ok(reply) => reply,
            Err(LeaseError::Failed(e)) => {
                walk.record.page_count = at.index + 1;
                walk.log.absorb(e.log, bound);
                return Err(at.fail(&mut walk.record, e.failure.into()));
            }
            Err(LeaseError::Retry(why)) => return Ok(Err(why)),
        };
        walk.record.page_count = at.index + 1;
        walk.record.timings.call_ms += ms(arrived.duration_since(current.since));
        walk.record.timings.engine_ms += ms(reply.engine_time);
        walk.log.absorb(std::mem::take(&mut reply.log), bound);
        Ok(Ok((reply, arrived)))
    }

    /// Sends a page on the lease: with `state`, or taking the state the worker keeps from the
    /// call `state_from`. The page comes back when it could not be sent.
    fn send(
        &mut self,
        prepared: Prepared,
        state: Option<&Value>,
        state_from: Option<u64>,
        log: &ConsoleLog,
    ) -> Result<Sent, Box<(Prepared, String)>> {
        let Prepared {
            page,
            meta_prefix,
            records,
        } = prepared;
        let mut meta = meta_prefix.clone();
        if let Some(state) = state {
            match serde_json::to_string(state) {
                Ok(json) => meta.push_str(&json),
                Err(e) => {
                    let back = Prepared {
                        page,
                        meta_prefix,
                        records,
                    };
                    return Err(Box::new((back, e.to_string())));
                }
            }
            meta.push('}');
        }
        // What the pages before it left of the console bound is known here up to the page
        // before the one still running; the run's log keeps the same lines either way (see
        // `ConsoleLog::absorb`).
        let call = self.page_loop.page_call(
            PagePayload {
                meta: meta.into_bytes(),
                records,
                keep_state: !page.eof,
                state_from,
                run: Some(self.page_loop.run),
            },
            log,
            true,
        );
        let mut sent = Sent {
            id: 0,
            call,
            page,
            meta_prefix,
            takes_kept_state: state_from.is_some(),
            since: Instant::now(),
        };
        match self.lease.send(&sent.call) {
            Ok(id) => {
                sent.id = id;
                Ok(sent)
            }
            Err(LeaseError::Retry(why)) => Err(Box::new((sent.into_prepared(), why))),
            Err(LeaseError::Failed(e)) => Err(Box::new((sent.into_prepared(), e.failure.message))),
        }
    }
}

/// The digest the worker reports for a state it gave a page, computed from the host's state.
fn digest_of(state: &Value) -> Option<String> {
    serde_json::to_vec(state)
        .ok()
        .map(|json| runx_worker::state_digest(&json))
}
