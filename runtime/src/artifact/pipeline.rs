//! The admission pass: the source read once, each chunk hashed and then written into the
//! snapshot from the same buffer, on two threads beside the run.
//!
//! The reading thread reads a chunk, hands it to the hashing thread, and writes into the
//! snapshot the chunks the hasher has handed back, so reading and writing overlap the hash,
//! the slowest of the three. The bytes written are the bytes hashed: there is nothing to check
//! afterwards, and every byte is hashed once by admission (its page's range digest is the
//! other hash it gets). Progress is published as it goes: how far the snapshot is written
//! (framing follows it), then the digest, which is published last, once every byte is written.

use crate::framing;
use sha2::{Digest, Sha256};
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{channel, sync_channel};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// Bytes read, hashed and written at a time.
pub(super) const CHUNK_BYTES: usize = 1 << 20;

/// Chunks read ahead of the hash: enough to keep the hasher busy while a read waits.
const READ_AHEAD: usize = 2;

/// Where admission stands, shared by its threads and the run.
pub(super) struct Progress {
    /// Bytes `[0, filled)` of the snapshot are written, and never written again.
    filled: AtomicUsize,
    /// Set when the run no longer needs the snapshot: the pass stops at its next chunk.
    stop: AtomicBool,
    /// `sha256:<hex>` of the whole snapshot, set once every byte of it is written.
    digest: OnceLock<String>,
    /// How long the pass took, from admission's start to the digest.
    took: OnceLock<Duration>,
    /// Why the pass failed, once it has.
    failure: Mutex<Option<Failure>>,
    /// Signalled whenever any of the above moves.
    moved: Condvar,
}

/// Why the admission pass failed, kept to be reported again to every caller.
#[derive(Clone, Debug)]
pub(super) enum Failure {
    /// The source was written while it was read: it ended before the size it had when it
    /// was opened, or its size or modification time moved.
    Changed,
    /// Reading the source or writing the snapshot failed.
    Io {
        kind: io::ErrorKind,
        os: Option<i32>,
        message: String,
    },
    /// The run stopped needing the snapshot.
    Stopped,
    /// The snapshot holds more significant bytes (not JSON whitespace) than fit in a run's
    /// pages: it cannot be paged.
    TooManyPages {
        /// Its significant bytes, all of them counted.
        significant: u64,
    },
}

impl Failure {
    fn io(e: &io::Error) -> Failure {
        Failure::Io {
            kind: e.kind(),
            os: e.raw_os_error(),
            message: e.to_string(),
        }
    }
}

impl Progress {
    /// The progress of a snapshot of which `filled` bytes are already written.
    pub(super) fn new(filled: usize) -> Progress {
        Progress {
            filled: AtomicUsize::new(filled),
            stop: AtomicBool::new(false),
            digest: OnceLock::new(),
            took: OnceLock::new(),
            failure: Mutex::new(None),
            moved: Condvar::new(),
        }
    }

    /// Bytes of the snapshot written so far.
    pub(super) fn filled(&self) -> usize {
        self.filled.load(Ordering::Acquire)
    }

    /// The whole digest, once the pass is over.
    pub(super) fn digest(&self) -> Option<&str> {
        self.digest.get().map(String::as_str)
    }

    /// How long the pass took, once it is over.
    pub(super) fn took(&self) -> Option<Duration> {
        self.took.get().copied()
    }

    /// Asks the pass to stop at its next chunk.
    pub(super) fn stop(&self) {
        self.stop.store(true, Ordering::Release);
    }

    /// Waits until `ready` holds, the pass fails, or `patience` runs out, and tells which: the
    /// failure, or whether `ready` holds.
    pub(super) fn wait(
        &self,
        patience: Duration,
        ready: impl Fn(&Progress) -> bool,
    ) -> Result<bool, Failure> {
        let deadline = Instant::now() + patience;
        let mut failure = self.lock();
        loop {
            if ready(self) {
                return Ok(true);
            }
            if let Some(f) = &*failure {
                return Err(f.clone());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(false);
            }
            failure = self
                .moved
                .wait_timeout(failure, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    fn lock(&self) -> MutexGuard<'_, Option<Failure>> {
        self.failure.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Publishes that `[0, filled)` is written. Under the lock, so no waiter misses it.
    fn publish_filled(&self, filled: usize) {
        let _guard = self.lock();
        self.filled.store(filled, Ordering::Release);
        self.moved.notify_all();
    }

    /// Publishes how the pass ended; only the first outcome counts.
    fn conclude(&self, outcome: Result<String, Failure>, took: Duration) {
        let mut failure = self.lock();
        if failure.is_some() || self.digest.get().is_some() {
            return;
        }
        match outcome {
            Ok(digest) => {
                let _ = self.took.set(took);
                let _ = self.digest.set(digest);
            }
            Err(f) => *failure = Some(f),
        }
        self.moved.notify_all();
    }
}

/// One admission pass: `total` bytes of `source`, hashed, and written into `snapshot` unless
/// the source is the snapshot itself (a clone).
pub(super) struct Pass {
    pub source: std::fs::File,
    pub snapshot: Option<std::fs::File>,
    pub total: usize,
    pub started: Instant,
    /// The source's size and times when it was opened, when it can change (not a clone).
    pub opened: Option<Stamp>,
    /// The most significant bytes a snapshot may hold and fit in a run's pages, when it is
    /// large enough to hold more: its bytes are counted as they are read.
    pub most_significant: Option<u64>,
}

/// What changes when a file's bytes are written: its size and its modification time. (Not
/// its change time, which a rename or a new link moves too, with the bytes untouched.) This
/// is a courtesy to a user whose file is still being written, not a defence: the bytes
/// paged are the bytes hashed whatever a writer does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Stamp {
    size: u64,
    modified: (i64, i64),
}

impl Stamp {
    /// The stamp of an open file.
    pub(super) fn of(file: &std::fs::File) -> io::Result<Stamp> {
        use std::os::unix::fs::MetadataExt;
        let m = file.metadata()?;
        Ok(Stamp {
            size: m.len(),
            modified: (m.mtime(), m.mtime_nsec()),
        })
    }
}

impl Pass {
    /// Runs the pass and publishes its outcome in `progress`: always one, so no one waits for
    /// a pass that is over (a panic of the pass publishes a failure as it unwinds).
    pub(super) fn run(self, progress: &Progress) {
        struct Concluded<'a>(&'a Progress);
        impl Drop for Concluded<'_> {
            fn drop(&mut self) {
                let failed = Failure::io(&io::Error::other("the admission pass failed"));
                self.0.conclude(Err(failed), Duration::ZERO);
            }
        }
        let _unwinding = Concluded(progress);
        let outcome = self.read_hash_write(progress);
        progress.conclude(outcome, self.started.elapsed());
    }

    fn read_hash_write(&self, progress: &Progress) -> Result<String, Failure> {
        std::thread::scope(|s| {
            let (to_hash, chunks) = sync_channel::<Vec<u8>>(READ_AHEAD);
            let (hashed, to_write) = channel::<Vec<u8>>();
            let hasher = std::thread::Builder::new()
                .name("runx-hash".into())
                .spawn_scoped(s, move || {
                    let mut h = Sha256::new();
                    for chunk in chunks {
                        h.update(&chunk);
                        if hashed.send(chunk).is_err() {
                            break;
                        }
                    }
                    runx_receipts::spell(&h.finalize())
                })
                .map_err(|e| Failure::io(&e))?;
            let mut writer = Writer {
                snapshot: self.snapshot.as_ref(),
                written: progress.filled(),
                spare: Vec::new(),
                progress,
            };
            let mut at = 0;
            let mut significant = 0;
            while at < self.total {
                if progress.stop.load(Ordering::Acquire) {
                    return Err(Failure::Stopped);
                }
                while let Ok(chunk) = to_write.try_recv() {
                    writer.write(chunk)?;
                }
                let mut chunk = writer.spare.pop().unwrap_or_default();
                chunk.resize(CHUNK_BYTES.min(self.total - at), 0);
                match self.source.read_exact_at(&mut chunk, at as u64) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                        return Err(Failure::Changed);
                    }
                    Err(e) => return Err(Failure::io(&e)),
                }
                at += chunk.len();
                // Counted on this thread, while the hasher (the slower) works on the chunk before.
                if self.most_significant.is_some() {
                    significant += framing::significant_bytes(&chunk);
                }
                if to_hash.send(chunk).is_err() {
                    break;
                }
            }
            drop(to_hash);
            for chunk in to_write {
                writer.write(chunk)?;
            }
            // A write into the source while it was read could have torn the snapshot (old
            // bytes here, new ones there): its size or modification time tell, as far as the
            // file system's clock resolves them.
            if let Some(opened) = self.opened
                && Stamp::of(&self.source).map_err(|e| Failure::io(&e))? != opened
            {
                return Err(Failure::Changed);
            }
            let digest = hasher
                .join()
                .map_err(|_| Failure::io(&io::Error::other("the hashing thread failed")))?;
            if at < self.total {
                return Err(Failure::io(&io::Error::other(
                    "the hashing thread stopped early",
                )));
            }
            // Only now, on the whole snapshot: its bytes are what a run would page, and a
            // source that changed fails as such above.
            if self.most_significant.is_some_and(|most| significant > most) {
                return Err(Failure::TooManyPages { significant });
            }
            Ok(digest)
        })
    }
}

/// The writing side of the pass: chunks come back from the hasher in order.
struct Writer<'a> {
    /// `None` when the source is the snapshot (a clone, whole from the start).
    snapshot: Option<&'a std::fs::File>,
    written: usize,
    spare: Vec<Vec<u8>>,
    progress: &'a Progress,
}

impl Writer<'_> {
    /// Writes `chunk` where the snapshot's written part ends and publishes it. Write-back is
    /// left to the kernel: a snapshot lives for its run and is usually dropped before it
    /// reaches the disk, and under memory pressure the kernel writes and reclaims it like any
    /// dirty file page.
    fn write(&mut self, chunk: Vec<u8>) -> Result<(), Failure> {
        if let Some(snapshot) = self.snapshot {
            snapshot
                .write_all_at(&chunk, self.written as u64)
                .map_err(|e| Failure::io(&e))?;
            self.written += chunk.len();
            self.progress.publish_filled(self.written);
        }
        if self.spare.len() < READ_AHEAD + 2 {
            self.spare.push(chunk);
        }
        Ok(())
    }
}
