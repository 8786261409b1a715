//! The queue between the framing thread and the page loop: pages framed ahead of the calls,
//! bounded by the bytes they hold, refilled in bursts.
//!
//! Why bursts: a producer that blocks whenever the queue is full is woken by every page the
//! loop takes, which is the moment the loop hands that page to the worker. On a machine with
//! two cores the framing thread and the worker then wake together, and the scheduler often
//! queues the worker behind the framing thread for a whole time slice: measured on this
//! project's 2-core machine, a page of 1 MiB waited 2–3 ms for its worker in long streaks, 6–8%
//! of a paged run's wall. Here a producer that found the queue full sleeps until the loop has
//! drained it to half, so it wakes once per half a queue instead of once per page, and most
//! pages reach a worker that is not competing with it.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard};

/// A bounded queue of items with a weight in bytes, for one producer and one consumer.
pub(super) struct PageQueue<T> {
    state: Mutex<State<T>>,
    /// Signalled when an item arrives or the producer leaves.
    filled: Condvar,
    /// Signalled when the queue has drained to half, or the consumer leaves.
    drained: Condvar,
    limit: usize,
}

struct State<T> {
    items: VecDeque<(T, usize)>,
    bytes: usize,
    /// The producer finished or was dropped: no more items will come.
    producer_gone: bool,
    /// The consumer stopped taking items: the producer should stop making them.
    consumer_gone: bool,
}

impl<T> PageQueue<T> {
    /// A queue that holds at most `limit` bytes of items, or one item of any weight.
    pub(super) fn new(limit: usize) -> PageQueue<T> {
        PageQueue {
            state: Mutex::new(State {
                items: VecDeque::new(),
                bytes: 0,
                producer_gone: false,
                consumer_gone: false,
            }),
            filled: Condvar::new(),
            drained: Condvar::new(),
            limit,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // A panic while holding this lock leaves only plain data behind; keep going.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `item` of `bytes`. When it does not fit, waits until the queue has drained to
    /// half its limit (or is empty). Returns `false`, dropping the item, once the consumer
    /// has gone.
    pub(super) fn push(&self, item: T, bytes: usize) -> bool {
        let mut st = self.lock();
        if !st.items.is_empty() && st.bytes + bytes > self.limit {
            while !st.consumer_gone && !st.items.is_empty() && st.bytes > self.limit / 2 {
                st = self.drained.wait(st).unwrap_or_else(|e| e.into_inner());
            }
        }
        if st.consumer_gone {
            return false;
        }
        st.bytes += bytes;
        st.items.push_back((item, bytes));
        self.filled.notify_one();
        true
    }

    /// The next item, waiting for one; `None` once the queue is empty and the producer gone.
    pub(super) fn pop(&self) -> Option<T> {
        let mut st = self.lock();
        loop {
            if let Some((item, bytes)) = st.items.pop_front() {
                let was_above = st.bytes > self.limit / 2;
                st.bytes -= bytes;
                if was_above && st.bytes <= self.limit / 2 {
                    self.drained.notify_one();
                }
                return Some(item);
            }
            if st.producer_gone {
                return None;
            }
            st = self.filled.wait(st).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Marks the producer as finished; called by [`ProducerGuard`] however it ends.
    fn producer_leaves(&self) {
        self.lock().producer_gone = true;
        self.filled.notify_one();
    }

    /// Marks the consumer as finished, so a waiting producer stops; called by
    /// [`ConsumerGuard`] however the page loop ends.
    fn consumer_leaves(&self) {
        let mut st = self.lock();
        st.consumer_gone = true;
        st.items.clear();
        st.bytes = 0;
        drop(st);
        self.drained.notify_one();
    }

    /// A guard for the producer's thread: the consumer learns it has gone even if it panics.
    pub(super) fn producer(&self) -> ProducerGuard<'_, T> {
        ProducerGuard(self)
    }

    /// A guard for the consumer: the producer stops once it is dropped.
    pub(super) fn consumer(&self) -> ConsumerGuard<'_, T> {
        ConsumerGuard(self)
    }
}

/// Ends production when dropped.
pub(super) struct ProducerGuard<'a, T>(&'a PageQueue<T>);

impl<T> ProducerGuard<'_, T> {
    /// See [`PageQueue::push`].
    pub(super) fn push(&self, item: T, bytes: usize) -> bool {
        self.0.push(item, bytes)
    }
}

impl<T> Drop for ProducerGuard<'_, T> {
    fn drop(&mut self) {
        self.0.producer_leaves();
    }
}

/// Ends consumption when dropped.
pub(super) struct ConsumerGuard<'a, T>(&'a PageQueue<T>);

impl<T> ConsumerGuard<'_, T> {
    /// See [`PageQueue::pop`].
    pub(super) fn pop(&self) -> Option<T> {
        self.0.pop()
    }
}

impl<T> Drop for ConsumerGuard<'_, T> {
    fn drop(&mut self) {
        self.0.consumer_leaves();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[test]
    fn items_arrive_in_order_and_the_end_is_seen() {
        let q = PageQueue::new(100);
        std::thread::scope(|s| {
            s.spawn(|| {
                let p = q.producer();
                for i in 0..1000 {
                    assert!(p.push(i, 7));
                }
            });
            let c = q.consumer();
            let got: Vec<i32> = std::iter::from_fn(|| c.pop()).collect();
            assert_eq!(got, (0..1000).collect::<Vec<_>>());
        });
    }

    #[test]
    fn the_producer_stays_within_the_limit_and_refills_from_half() {
        let q = PageQueue::new(100);
        let pushed = AtomicUsize::new(0);
        std::thread::scope(|s| {
            s.spawn(|| {
                let p = q.producer();
                for i in 0..40 {
                    assert!(p.push(i, 10));
                    pushed.fetch_add(1, Ordering::SeqCst);
                }
            });
            let c = q.consumer();
            std::thread::sleep(Duration::from_millis(50));
            // Ten items of 10 bytes fill the 100-byte queue; the eleventh waits.
            assert_eq!(pushed.load(Ordering::SeqCst), 10);
            for _ in 0..4 {
                c.pop();
            }
            std::thread::sleep(Duration::from_millis(50));
            // 60 bytes queued, above half: the producer still sleeps.
            assert_eq!(pushed.load(Ordering::SeqCst), 10);
            c.pop();
            std::thread::sleep(Duration::from_millis(50));
            // Drained to half: it refills to the limit in one burst.
            assert_eq!(pushed.load(Ordering::SeqCst), 15);
            while c.pop().is_some() {}
            assert_eq!(pushed.load(Ordering::SeqCst), 40);
        });
    }

    #[test]
    fn an_item_heavier_than_the_limit_passes_alone() {
        let q = PageQueue::new(10);
        std::thread::scope(|s| {
            s.spawn(|| {
                let p = q.producer();
                assert!(p.push("big", 1000));
                assert!(p.push("bigger", 5000));
            });
            let c = q.consumer();
            assert_eq!(c.pop(), Some("big"));
            assert_eq!(c.pop(), Some("bigger"));
            assert_eq!(c.pop(), None);
        });
    }

    #[test]
    fn a_consumer_that_leaves_releases_a_waiting_producer() {
        let q = PageQueue::new(10);
        std::thread::scope(|s| {
            let producer = s.spawn(|| {
                let p = q.producer();
                let mut accepted = 0;
                while p.push(0u8, 10) {
                    accepted += 1;
                }
                accepted
            });
            {
                let c = q.consumer();
                assert_eq!(c.pop(), Some(0));
                std::thread::sleep(Duration::from_millis(20));
            }
            // The producer was waiting with a full queue; it returns instead of hanging.
            assert!(producer.join().unwrap() >= 1);
        });
    }

    #[test]
    fn a_producer_that_panics_ends_the_queue() {
        let q = PageQueue::<u8>::new(10);
        std::thread::scope(|s| {
            let h = s.spawn(|| {
                let p = q.producer();
                assert!(p.push(1, 1));
                panic!("framing failed");
            });
            assert!(h.join().is_err());
            let c = q.consumer();
            assert_eq!(c.pop(), Some(1));
            assert_eq!(c.pop(), None);
        });
    }
}
