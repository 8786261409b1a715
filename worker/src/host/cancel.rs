//! Cancellation of runs and calls: a flag that supervisors poll, plus the process groups to
//! kill at once when it is set.
//!
//! One [`CancelToken`] belongs to one run (or to everything a runtime does). Clones share it.
//! While a pool call runs under a token, the worker's process group is registered with it
//! ([`CancelToken::watch`]), so [`CancelToken::cancel`] kills that worker at once instead of
//! waiting for the call's wall. A token may be linked under another ([`CancelToken::link`]):
//! cancelling the outer one (Ctrl-C, a runtime shut down) cancels every linked token too.

use crate::host::process::kill_group;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

/// A cancellation flag shared by clones, with the process groups to kill when it is set.
#[derive(Clone, Debug, Default)]
pub struct CancelToken(Arc<Shared>);

#[derive(Debug, Default)]
struct Shared {
    /// Polled without the lock by supervisors; written only with `state` held.
    cancelled: AtomicBool,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Process groups of the calls running under this token.
    groups: Vec<u32>,
    /// Tokens cancelled with this one.
    linked: Vec<Weak<Shared>>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // The state is plain data; a panic elsewhere leaves it usable.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn cancel(&self) {
        let (groups, linked) = {
            let mut st = self.lock();
            if self.cancelled.swap(true, Ordering::SeqCst) {
                return;
            }
            (
                std::mem::take(&mut st.groups),
                std::mem::take(&mut st.linked),
            )
        };
        for pid in groups {
            kill_group(pid);
        }
        for token in linked.iter().filter_map(Weak::upgrade) {
            token.cancel();
        }
    }
}

impl CancelToken {
    /// A token that is not cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Requests cancellation of every run observing this token (and of every token linked
    /// under it): the process groups of calls running under it are killed now, supervised
    /// processes are stopped at their next poll.
    pub fn cancel(&self) {
        self.0.cancel();
    }

    /// Whether cancellation was requested.
    pub fn is_cancelled(&self) -> bool {
        self.0.cancelled.load(Ordering::SeqCst)
    }

    /// Makes cancelling `self` cancel `other` too; `other` is cancelled at once when `self`
    /// already is. The link does not keep `other` alive.
    pub fn link(&self, other: &CancelToken) {
        if Arc::ptr_eq(&self.0, &other.0) {
            return;
        }
        {
            let mut st = self.0.lock();
            if !self.is_cancelled() {
                st.linked.retain(|w| w.strong_count() > 0);
                st.linked.push(Arc::downgrade(&other.0));
                return;
            }
        }
        other.cancel();
    }

    /// Registers the process group led by `pid` to be killed on cancellation while the
    /// returned guard lives; `None` (nothing registered) when the token is already cancelled.
    /// The caller must keep the process unreaped while the guard lives, so that the group id
    /// cannot be reused.
    pub(crate) fn watch(&self, pid: u32) -> Option<Watch<'_>> {
        let mut st = self.0.lock();
        if self.is_cancelled() {
            return None;
        }
        st.groups.push(pid);
        Some(Watch { token: self, pid })
    }
}

/// A process group registered with a [`CancelToken`]; dropping it unregisters the group.
#[derive(Debug)]
pub(crate) struct Watch<'a> {
    token: &'a CancelToken,
    pid: u32,
}

impl Drop for Watch<'_> {
    fn drop(&mut self) {
        let mut st = self.token.0.lock();
        if let Some(i) = st.groups.iter().position(|&g| g == self.pid) {
            st.groups.swap_remove(i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linked_tokens_follow_their_outer_token_but_not_the_reverse() {
        let outer = CancelToken::new();
        let (a, b) = (CancelToken::new(), CancelToken::new());
        outer.link(&a);
        outer.link(&b);
        a.cancel();
        assert!(a.is_cancelled());
        assert!(!outer.is_cancelled() && !b.is_cancelled());
        outer.cancel();
        assert!(b.is_cancelled());
        // Linking under a cancelled token cancels at once.
        let late = CancelToken::new();
        outer.link(&late);
        assert!(late.is_cancelled());
    }

    #[test]
    fn dropped_tokens_do_not_pile_up_in_links() {
        let outer = CancelToken::new();
        for _ in 0..100 {
            outer.link(&CancelToken::new());
        }
        assert!(outer.0.lock().linked.len() <= 1);
        outer.link(&outer.clone());
        outer.cancel();
    }

    #[test]
    fn watches_register_until_dropped_and_refuse_once_cancelled() {
        let t = CancelToken::new();
        {
            let _w = t.watch(u32::MAX).expect("registered");
            assert_eq!(t.0.lock().groups, vec![u32::MAX]);
        }
        assert!(t.0.lock().groups.is_empty());
        t.cancel();
        assert!(t.watch(u32::MAX).is_none());
    }
}
