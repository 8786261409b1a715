//! Artifact admission: a contained regular file turned once into an immutable snapshot, hashed,
//! and memory-mapped.
//!
//! The snapshot is an unnamed file on a disk-backed file system (the runtime's temporary
//! directory), so its pages are ordinary page cache the kernel can evict under pressure: a run
//! pins no memory in proportion to the artifact. It is made one of two ways:
//!
//! - **reflink** (`FICLONE`) where the file system shares extents between files (Btrfs, XFS):
//!   the clone costs no copy, and later writes to the source cannot reach it (copy on write).
//!   The digest is computed by reading the clone, so the bytes hashed are the clone's bytes.
//! - **copy** everywhere else, in one pass (`pipeline`): the source is read once, a chunk at a
//!   time, and each chunk is hashed and then written into the snapshot from the same buffer,
//!   so the bytes paged, which are the snapshot's, are the bytes hashed. The snapshot is the
//!   source's first `bytes` bytes, its size when it was opened. A source written while it is
//!   read could tear the snapshot (old bytes in one place, new ones in another), so a source
//!   that ends early, or whose size or modification time moved by the end of the pass, fails
//!   the run with `artifact_changed`. Once the pass is over (a fraction of a second), nothing
//!   done to the source reaches the run.
//!
//! The pass runs beside the run, not before it: [`admit`] returns once the file is
//! open, sized and the snapshot made, and framing follows the written part of the snapshot as
//! it grows ([`Artifact::wait_filled`]). Every page carries `whole_digest`, which is known only
//! once every byte is read, so a page is called no earlier than that
//! ([`Artifact::wait_digest`]); on two threads the pass takes about as long as the hash alone,
//! and page 0 is framed meanwhile.
//!
//! A file too large to fit in the pages a run may deliver at its runner's `page_bytes` is
//! refused by the pass, once the whole snapshot is read: its bytes that are not whitespace are
//! counted as they are read (only when the file is large enough to hold too many); they
//! bound how few pages it can take (`crate::framing::least_pages`). Its size alone cannot:
//! whitespace between records takes no page.
//!
//! Either way the snapshot is never linked into a directory, only this process holds a
//! writable descriptor to it, and it is made read-only (mode `0400`) before anything is
//! written; workers receive a read-only descriptor. A byte of the snapshot is written once,
//! and nothing reads it (this process or a worker) before it has been written.
//!
//! The source file is opened through [`runx_worker::Scope`], like every other file runx reads
//! for a package.

mod error;
mod open;
mod pipeline;

pub use error::AdmissionError;

use crate::framing;
use open::open_contained;
use pipeline::{Failure, Pass, Progress, Stamp};
use runx_profile::{ARTIFACT_BYTES, PAGE_COUNT};
use runx_worker::CancelToken;
use std::io;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long a wait on admission lasts before it looks at its caller's cancellation again
/// ([`Artifact::filled_unless`], [`Artifact::digest_unless`]): an interrupted run stops
/// waiting within it.
pub(crate) const CANCEL_PATIENCE: Duration = Duration::from_millis(20);

/// An admitted snapshot. Changes to the source file after admission do not reach it: the
/// snapshot is an unlinked temporary file only this process holds, written from the very
/// buffers admission hashed.
pub struct Artifact {
    /// Opaque, per-runtime-instance handle; never part of semantic output.
    pub artifact_ref: String,
    /// Size of the snapshot in bytes.
    pub bytes: u64,
    /// How the snapshot was made.
    #[cfg_attr(not(test), expect(dead_code, reason = "read by the tests only"))]
    pub made: Snapshot,
    /// A read-only map of the whole snapshot, of which only `[0, filled)` is ever read.
    map: Option<memmap2::MmapRaw>,
    /// A read-only descriptor of the snapshot, for workers to read their pages from.
    read_only: Option<Arc<std::fs::File>>,
    /// How far the admission pass is, and its digest once it is over.
    progress: Arc<Progress>,
    /// The thread of the admission pass, joined when the artifact is dropped.
    pass: Option<std::thread::JoinHandle<()>>,
    /// The artifact's path as given, for errors.
    path: String,
    /// The `page_bytes` it is admitted for, for errors.
    page_bytes: usize,
    /// Whether it is large enough that it may not fit in a run's pages: the pass counts its
    /// bytes and refuses it if it cannot.
    may_not_fit: bool,
}

/// How a snapshot was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Snapshot {
    /// A reflink clone of the source (no copy).
    Reflink,
    /// A copy of the source.
    Copy,
}

impl Artifact {
    /// A read-only descriptor of the snapshot: a worker reads its page's byte range from it,
    /// so page bytes do not travel through the worker's pipe. `None` when the snapshot could
    /// not be reopened read-only (pages then travel inline).
    pub fn read_only(&self) -> Option<&Arc<std::fs::File>> {
        self.read_only.as_ref()
    }

    /// The snapshot's bytes written so far: all of them at once for a reflink clone or an
    /// empty file, otherwise as far as the admission pass has reached.
    pub fn data(&self) -> &[u8] {
        let Some(map) = &self.map else { return &[] };
        filled_bytes(map, self.progress.filled())
    }

    /// Waits up to `patience` for the snapshot's first `end` bytes (or all of it) to be
    /// written, and returns [`Artifact::data`]; `None` when they are not written yet.
    pub fn wait_filled(
        &self,
        end: usize,
        patience: Duration,
    ) -> Result<Option<&[u8]>, AdmissionError> {
        let want = end.min(self.size());
        let ready = self
            .progress
            .wait(patience, |p| p.filled() >= want)
            .map_err(|f| self.error(&f))?;
        Ok(ready.then(|| self.data()))
    }

    /// Waits up to `patience` for the whole digest, `sha256:<hex>` of the snapshot: the stable
    /// content identity every page carries, known once every byte is read, hashed and
    /// written. `None` when admission is not over yet.
    pub fn wait_digest(&self, patience: Duration) -> Result<Option<&str>, AdmissionError> {
        let ready = self
            .progress
            .wait(patience, |p| p.digest().is_some())
            .map_err(|f| self.error(&f))?;
        Ok(ready.then(|| self.progress.digest()).flatten())
    }

    /// Waits for the snapshot's first `end` bytes (or all of it) to be written, and returns
    /// [`Artifact::data`]; `None` once `cancel` is set, which is looked at every
    /// [`CANCEL_PATIENCE`].
    pub fn filled_unless(
        &self,
        end: usize,
        cancel: &CancelToken,
    ) -> Result<Option<&[u8]>, AdmissionError> {
        self.unless(cancel, |a| a.wait_filled(end, CANCEL_PATIENCE))
    }

    /// Waits for the whole digest ([`Artifact::wait_digest`]); `None` once `cancel` is set,
    /// which is looked at every [`CANCEL_PATIENCE`].
    pub fn digest_unless(&self, cancel: &CancelToken) -> Result<Option<&str>, AdmissionError> {
        self.unless(cancel, |a| a.wait_digest(CANCEL_PATIENCE))
    }

    /// Repeats `wait` (a wait of [`CANCEL_PATIENCE`] at most) until it gives something or
    /// `cancel` is set.
    fn unless<'a, T>(
        &'a self,
        cancel: &CancelToken,
        wait: impl Fn(&'a Artifact) -> Result<Option<T>, AdmissionError>,
    ) -> Result<Option<T>, AdmissionError> {
        while !cancel.is_cancelled() {
            if let Some(ready) = wait(self)? {
                return Ok(Some(ready));
            }
        }
        Ok(None)
    }

    /// The whole digest, waiting for the admission pass as long as it takes.
    pub fn whole_digest(&self) -> Result<&str, AdmissionError> {
        loop {
            if let Some(digest) = self.wait_digest(Duration::from_secs(1))? {
                return Ok(digest);
            }
        }
    }

    /// Waits for the admission pass to end: the snapshot is whole and its digest known, or
    /// this fails with why it is not.
    pub fn finish(&self) -> Result<(), AdmissionError> {
        self.whole_digest().map(|_| ())
    }

    /// Whether the snapshot is large enough that it may not fit in a run's pages at its
    /// `page_bytes`: that is known only once the admission pass is over, which refuses it if
    /// it cannot.
    pub fn may_not_fit(&self) -> bool {
        self.may_not_fit
    }

    /// How long admission took, from [`admit`] to the whole digest, once it is known.
    pub fn admitted_in(&self) -> Option<Duration> {
        self.progress.took()
    }

    /// The snapshot's size in bytes, whole (`bytes`), however much is written yet.
    pub fn size(&self) -> usize {
        usize::try_from(self.bytes).unwrap_or(usize::MAX)
    }

    /// Tells the kernel this process is done with `start..end` of the snapshot, so the memory
    /// pages behind it leave this process's resident set: host memory stays flat however large
    /// the artifact is. Reading the range again still works (it is faulted back in from the
    /// snapshot file). Only whole memory pages inside the written part of the range are
    /// released.
    pub fn release(&self, start: usize, end: usize) {
        let Some(map) = &self.map else { return };
        const PAGE: usize = 4096;
        let from = start.div_ceil(PAGE) * PAGE;
        let to = (end.min(self.progress.filled()) / PAGE) * PAGE;
        if to > from {
            release_range(map, from, to - from);
        }
    }

    /// The error of a failed admission pass.
    fn error(&self, failure: &Failure) -> AdmissionError {
        let path = self.path.clone();
        match failure {
            Failure::Changed => AdmissionError::Changed { path },
            Failure::Io { kind, os, message } => AdmissionError::Copy {
                path,
                source: match os {
                    Some(code) => io::Error::from_raw_os_error(*code),
                    None => io::Error::new(*kind, message.clone()),
                },
            },
            Failure::Stopped => AdmissionError::Copy {
                path,
                source: io::Error::other("admission was stopped"),
            },
            Failure::TooManyPages { significant } => AdmissionError::TooManyPages {
                path,
                bytes: self.bytes,
                significant: *significant,
                page_bytes: self.page_bytes,
                least_pages: framing::least_pages(*significant, self.page_bytes),
                least_page_bytes: framing::least_page_bytes(*significant, PAGE_COUNT.max),
            },
        }
    }
}

impl Drop for Artifact {
    /// Stops the admission pass at its next chunk and waits for it, so no thread outlives the
    /// artifact or writes into a snapshot no one reads.
    fn drop(&mut self) {
        self.progress.stop();
        if let Some(pass) = self.pass.take() {
            let _ = pass.join();
        }
    }
}

#[allow(
    unsafe_code,
    reason = "a slice of the written part of a shared map; see SAFETY"
)]
fn filled_bytes(map: &memmap2::MmapRaw, len: usize) -> &[u8] {
    let len = len.min(map.len());
    // SAFETY: the map is a read-only shared mapping of the snapshot, `map.len()` bytes long
    // (the file's length was set before mapping and never changes). Bytes `[0, len)` were
    // written before `len` was published (a release store read with acquire), and no one
    // writes them again: this process writes each byte of the snapshot once, through its own
    // descriptor, and no other process has a writable one (the file is unnamed and mode
    // 0400). The bytes past `len`, which the admission pass may be writing, are not part of
    // the slice.
    unsafe { std::slice::from_raw_parts(map.as_ptr(), len) }
}

#[allow(
    unsafe_code,
    reason = "madvise on a range of a read-only map; see SAFETY"
)]
fn release_range(map: &memmap2::MmapRaw, offset: usize, len: usize) {
    // SAFETY: the map is a read-only shared mapping of the snapshot file, and the range lies
    // in its written part, which no one writes again. MADV_DONTNEED only drops this process's
    // page-table entries: the next access reads the same bytes back from the file, so every
    // `&[u8]` into the map keeps seeing unchanged data. (The advice is "unchecked" in memmap2
    // because on private writable maps it would discard changes; there are none here.)
    let _ = unsafe { map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, offset, len) };
}

/// Admits `path` (relative to `root`) as a snapshot to be paged at `page_bytes`: opens it,
/// makes and maps the snapshot, and starts the admission pass on a thread of its own.
pub fn admit(
    path: &str,
    root: &Path,
    instance: &str,
    page_bytes: usize,
) -> Result<Artifact, AdmissionError> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let started = Instant::now();
    let file = open_contained(path, root)?;
    let copy = |source| AdmissionError::Copy {
        path: path.to_string(),
        source,
    };
    let snapshot = tempfile::tempfile().map_err(copy)?;
    // A clone is the snapshot already, read and hashed from itself; a source to be copied is
    // read for as many bytes as it had when it was opened (checked against the limit then).
    let (made, total) = match clone_into(&file, &snapshot) {
        Ok(()) => (Snapshot::Reflink, snapshot.metadata().map_err(copy)?.len()),
        Err(_) => (Snapshot::Copy, file.metadata().map_err(copy)?.len()),
    };
    if total > ARTIFACT_BYTES.max {
        return Err(AdmissionError::TooLarge {
            path: path.to_string(),
            bytes: total,
        });
    }
    let len = usize::try_from(total).map_err(|_| {
        copy(io::Error::other(
            "the artifact does not fit this machine's address space",
        ))
    })?;
    // A file no larger than this cannot hold more significant bytes than fit, so it is not
    // counted; the size to compare is the snapshot's, the one the pass reads.
    let most_significant = framing::most_significant_bytes(PAGE_COUNT.max, page_bytes);
    let most_significant = (total > most_significant).then_some(most_significant);
    // Read-only before any byte is copied in: the descriptor held here keeps its write access;
    // a reopening for writing (through /proc) is refused from now on.
    seal(&snapshot).map_err(copy)?;
    let pass = match made {
        Snapshot::Reflink => Pass {
            source: snapshot.try_clone().map_err(copy)?,
            snapshot: None,
            total: len,
            started,
            opened: None,
            most_significant,
        },
        Snapshot::Copy => {
            snapshot.set_len(total).map_err(copy)?;
            Pass {
                opened: Some(Stamp::of(&file).map_err(copy)?),
                source: file,
                snapshot: Some(snapshot.try_clone().map_err(copy)?),
                total: len,
                started,
                most_significant,
            }
        }
    };
    let map = if total == 0 {
        None
    } else {
        Some(map_snapshot(&snapshot).map_err(copy)?)
    };
    let progress = Arc::new(Progress::new(match made {
        Snapshot::Reflink => len,
        Snapshot::Copy => 0,
    }));
    let pass = {
        let progress = Arc::clone(&progress);
        std::thread::Builder::new()
            .name("runx-admit".into())
            .spawn(move || pass.run(&progress))
            .map_err(copy)?
    };
    Ok(Artifact {
        artifact_ref: format!(
            "artifact:{instance}:{}",
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ),
        bytes: total,
        made,
        map,
        read_only: reopen_read_only(&snapshot).map(Arc::new),
        progress,
        pass: Some(pass),
        path: path.to_string(),
        page_bytes,
        may_not_fit: most_significant.is_some(),
    })
}

/// Makes `snapshot` a reflink clone of `source`; fails where the file system cannot share
/// extents (ext4, tmpfs, across file systems).
fn clone_into(source: &std::fs::File, snapshot: &std::fs::File) -> io::Result<()> {
    rustix::fs::ioctl_ficlone(snapshot, source)?;
    Ok(())
}

/// Makes the snapshot read-only for everyone (mode `0400`): the descriptor this process holds
/// keeps its write access, which it no longer uses; any reopening for writing is refused
/// (except to a privileged process).
fn seal(snapshot: &std::fs::File) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    snapshot.set_permissions(std::fs::Permissions::from_mode(0o400))
}

/// A new, read-only open file description of the unnamed snapshot, through `/proc`.
fn reopen_read_only(snapshot: &std::fs::File) -> Option<std::fs::File> {
    use std::os::fd::AsRawFd;
    let path = format!("/proc/self/fd/{}", snapshot.as_raw_fd());
    match std::fs::File::open(&path) {
        Ok(f) => Some(f),
        Err(e) => {
            tracing::debug!("cannot reopen the snapshot read-only ({e}); pages travel inline");
            None
        }
    }
}

/// A read-only map of the whole snapshot, whose length is set and never changes. Only its
/// written part is ever read ([`filled_bytes`]).
fn map_snapshot(file: &std::fs::File) -> std::io::Result<memmap2::MmapRaw> {
    memmap2::MmapOptions::new().map_raw_read_only(file)
}

#[cfg(test)]
mod tests;
