//! The bounds of `runx serve`, for tool calls: at most `pool_size` calls run at once and
//! `queue` more wait in order; past that a call is refused `busy` at once, never queued.

use runx_serve::{RpcError, ServeConfig, busy_error};
use std::sync::{Arc, Mutex};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Calls admitted and not yet answered.
#[derive(Debug)]
pub struct Admission {
    /// One permit a running call.
    slots: Arc<Semaphore>,
    /// Calls admitted (running or waiting for a slot).
    admitted: Mutex<usize>,
    config: ServeConfig,
}

/// An admitted call; it stops counting when dropped.
#[derive(Debug)]
pub struct Ticket {
    admission: Arc<Admission>,
}

impl Admission {
    /// Bounds from `config` (its `pool_size` and `queue`).
    pub fn new(config: &ServeConfig) -> Arc<Admission> {
        Arc::new(Admission {
            slots: Arc::new(Semaphore::new(config.pool_size.max(1))),
            admitted: Mutex::new(0),
            config: config.clone(),
        })
    }

    /// Admits one call, or refuses it `busy` (the error `runx serve` answers) when
    /// `pool_size + queue` calls are in already.
    pub fn admit(self: &Arc<Self>) -> Result<Ticket, RpcError> {
        let mut admitted = self.lock();
        let capacity = self.config.pool_size.max(1) + self.config.queue;
        if *admitted >= capacity {
            let running = self.running();
            return Err(busy_error(
                running,
                admitted.saturating_sub(running),
                &self.config,
            ));
        }
        *admitted += 1;
        Ok(Ticket {
            admission: self.clone(),
        })
    }

    /// Calls admitted and not yet answered.
    pub fn in_flight(&self) -> usize {
        *self.lock()
    }

    fn running(&self) -> usize {
        self.config
            .pool_size
            .max(1)
            .saturating_sub(self.slots.available_permits())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, usize> {
        self.admitted.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Ticket {
    /// Waits for a step slot, in the order calls asked; the slot is free again when the permit
    /// is dropped.
    pub async fn slot(&self) -> Option<OwnedSemaphorePermit> {
        // The semaphore is never closed, so this waits and never fails.
        self.admission.slots.clone().acquire_owned().await.ok()
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut admitted = self.admission.lock();
        *admitted = admitted.saturating_sub(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[tokio::test]
    async fn pool_plus_queue_then_busy() {
        let config = ServeConfig::new(PathBuf::from(".")).pool_size(1).queue(1);
        let a = Admission::new(&config);
        let first = a.admit().expect("first");
        let second = a.admit().expect("second waits");
        let _running = first.slot().await.expect("slot");
        let busy = a.admit().expect_err("third is refused");
        assert_eq!(busy.code.code(), -32001);
        assert_eq!(
            busy.data.as_ref().map(|d| d["running"].clone()),
            Some(1.into())
        );
        assert_eq!(
            busy.data.as_ref().map(|d| d["queued"].clone()),
            Some(1.into())
        );
        drop(second);
        assert_eq!(a.in_flight(), 1);
        let _third = a.admit().expect("room again");
    }
}
