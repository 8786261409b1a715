//! The sequential loop: one partition, its pages called in order on its worker, each page sent
//! ahead of the reply before it when it can be.
//!
//! Page N+1 goes to the worker before page N's reply has come back, so the worker starts it the
//! moment it has answered page N, and the host reads page N's reply and sends page N+2 while
//! page N+1 runs on the other core. Sending a page, reading a reply and checking it took about
//! 0.3 ms of every page on this project's 2-core machine, during which the worker waited: 4–5%
//! of a run of 256 KiB pages under QuickJS. Ahead, that work overlaps the next page's
//! JavaScript.
//!
//! The state for page N+1 is only known once page N has answered, so the worker keeps the
//! state page N's result carries and gives it to page N+1 itself (`runx_worker::run_session`).
//! The host still parses and checks every reply, and compares the digest of the state the
//! worker gave each page with the state it parsed itself.
//!
//! A page that cannot go ahead (its request is too large to send ahead: records inside the
//! frame) is sent once the reply before it is in, with the host's state, to the same worker:
//! which pages went ahead changes nothing a page sees. A worker lost, or a state that does not
//! match, ends the run at that page ([`super::partition`]).

use super::page::{At, Framed, Prepared, Settled, Unframed, Walk};
use super::page_loop::PageLoop;
use super::partition::{Partition, PartitionError, Take};
use super::queue::ConsumerGuard;
use super::runx_page::{Beside, PageMeta};
use crate::failure::RunError;
use crate::framing::Page;
use runx_worker::{Call, LeaseError, PagePayload, PageRecords, Reply};
use serde_json::Value;
use std::sync::mpsc::Sender;
use std::time::Instant;

/// A page sent to the partition's worker whose reply has not been read.
struct Sent {
    id: u64,
    call: Call,
    page: Page,
    meta: PageMeta,
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

    /// The page as it was before it was sent, to send again.
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
            meta: self.meta,
            records,
        }
    }
}

/// What follows a page sent.
enum Following {
    /// The page after it, sent ahead (boxed: a sent page is ten times the size of the others).
    Sent(Box<Sent>),
    /// The page after it, to send once this one's reply is in (or why there is none).
    Held(Box<Result<Prepared, Unframed>>),
    /// Nothing: the page is the last.
    Last,
}

/// The pages of a sequential run, on the worker of its one partition.
pub(super) struct SendAhead<'l, 'a> {
    page_loop: &'l PageLoop<'a>,
    partition: Partition<'a>,
    /// Where the record buffers of pages sent in the frame go back to the framing thread.
    give_back: Sender<Vec<u8>>,
}

impl<'l, 'a> SendAhead<'l, 'a> {
    /// Takes the run's one partition (waiting for a worker when the pool's are busy).
    pub(super) fn take(
        page_loop: &'l PageLoop<'a>,
        give_back: Sender<Vec<u8>>,
    ) -> Result<SendAhead<'l, 'a>, RunError> {
        let partition = Partition::take(page_loop, 0, Take::Waiting)?;
        Ok(SendAhead {
            page_loop,
            partition,
            give_back,
        })
    }

    /// Calls every page until the run ends: its output.
    pub(super) fn run(
        mut self,
        framed: &ConsumerGuard<'_, Framed>,
        walk: &mut Walk<'_>,
    ) -> Result<Value, RunError> {
        let first = self.page_loop.next_prepared(framed, &mut walk.record)?;
        let mut current = self.send_now(first, walk)?;
        loop {
            let at = current.at();
            // The page after this one goes now, unless this one is the last or the next one
            // must wait (it cannot be sent ahead, or the framer failed).
            let following = if current.page.eof {
                Following::Last
            } else {
                self.follow(&current, framed, walk)
            };
            let (reply, arrived) = self.receive(&current, walk)?;
            if let Some(PagePayload {
                records: PageRecords::Inline { blob, .. },
                ..
            }) = current.call.page.take()
            {
                let _ = self.give_back.send(blob);
            }
            let (eof, covered) = (current.page.eof, current.page.next_offset);
            match self
                .page_loop
                .settle_page(&reply, at, eof, covered, &mut walk.record)?
            {
                Settled::Finished(output) => return Ok(output),
                Settled::Next(new_state) => walk.state = new_state,
            }
            current = match following {
                Following::Sent(mut sent) => {
                    sent.since = arrived;
                    *sent
                }
                Following::Held(held) => match *held {
                    Ok(held) => self.send_now(held, walk)?,
                    Err(unframed) => return Err(unframed.into_error(&mut walk.record)),
                },
                Following::Last => {
                    return Err(RunError::internal(
                        "page_ahead",
                        "a page that was not the last had no page after it",
                    ));
                }
            };
        }
    }

    /// The page after `current`: sent ahead to take the state the worker keeps from
    /// `current`, or held until `current`'s reply is in.
    fn follow(
        &mut self,
        current: &Sent,
        framed: &ConsumerGuard<'_, Framed>,
        walk: &mut Walk<'_>,
    ) -> Following {
        match self.page_loop.next_framed(framed, &mut walk.record) {
            Ok(p) => match self.send(p, Some(current.id), walk) {
                Ok(sent) => Following::Sent(Box::new(sent)),
                Err(unsent) => {
                    let (p, why) = *unsent;
                    tracing::debug!("page {} is not sent ahead: {why:?}", p.page.index);
                    Following::Held(Box::new(Ok(p)))
                }
            },
            Err(unframed) => Following::Held(Box::new(Err(unframed))),
        }
    }

    /// Sends a page with the host's state, nothing owed before it: the page's own failure when
    /// it cannot be sent.
    fn send_now(&mut self, prepared: Prepared, walk: &mut Walk<'_>) -> Result<Sent, RunError> {
        let at = At::of(&prepared.page);
        self.send(prepared, None, walk).map_err(|unsent| {
            let PartitionError(e, log) = self.partition.error(unsent.1, at);
            walk.record_failure(at, e, log)
        })
    }

    /// Reads the reply to `current` and records its call: the reply and when it arrived. A
    /// failure of the page, or the loss of its worker, ends the run.
    fn receive(
        &mut self,
        current: &Sent,
        walk: &mut Walk<'_>,
    ) -> Result<(Reply, Instant), RunError> {
        let at = current.at();
        // A page that took the worker's kept state must name the state the host holds.
        let expected = current
            .takes_kept_state
            .then(|| digest_of(&walk.state))
            .flatten();
        if current.takes_kept_state && expected.is_none() {
            return Err(RunError::internal("encode", "the state cannot be encoded"));
        }
        let reply = self
            .partition
            .lease
            .receive(current.id, &current.call, expected.as_deref());
        let arrived = Instant::now();
        let mut reply = match reply {
            Ok(reply) => reply,
            Err(e) => {
                let PartitionError(e, log) = self.partition.error(e, at);
                return Err(walk.record_failure(at, e, log));
            }
        };
        let log = std::mem::take(&mut reply.log);
        walk.record_call(
            at,
            arrived.duration_since(current.since),
            reply.engine_time,
            log,
        );
        Ok((reply, arrived))
    }

    /// Sends a page on the partition's worker: with the host's state, or taking the state the
    /// worker keeps from the call `state_from`. The page comes back, with why, when it was not
    /// sent.
    fn send(
        &mut self,
        prepared: Prepared,
        state_from: Option<u64>,
        walk: &Walk<'_>,
    ) -> Result<Sent, Box<(Prepared, LeaseError)>> {
        let beside = match state_from {
            Some(_) => Beside::KeptState,
            None => Beside::State(&walk.state),
        };
        let meta = match prepared.meta.encode(beside) {
            Ok(meta) => meta,
            Err(e) => {
                let failure =
                    runx_worker::Failure::new(runx_worker::FailureCode::Internal, e.message);
                return Err(Box::new((prepared, LeaseError::Failed(failure.into()))));
            }
        };
        let Prepared {
            page,
            meta: page_meta,
            records,
        } = prepared;
        // What the pages before it left of the console bound is known here up to the page
        // before the one still running; the run's log keeps the same lines either way (see
        // `ConsoleLog::absorb`).
        let call = self.partition.page_call(
            self.page_loop,
            PagePayload {
                meta,
                records,
                keep_state: !page.eof,
                state_from,
                run: None,
            },
            walk.log,
        );
        let mut sent = Sent {
            id: 0,
            call,
            page,
            meta: page_meta,
            takes_kept_state: state_from.is_some(),
            since: Instant::now(),
        };
        match self.partition.lease.send(&sent.call) {
            Ok(id) => {
                sent.id = id;
                Ok(sent)
            }
            Err(e) => Err(Box::new((sent.into_prepared(), e))),
        }
    }
}

/// The digest the worker reports for a state it gave a page, computed from the host's state.
fn digest_of(state: &Value) -> Option<String> {
    serde_json::to_vec(state)
        .ok()
        .map(|json| runx_worker::state_digest(&json))
}
