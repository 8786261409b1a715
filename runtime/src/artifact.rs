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
//! - **copy** everywhere else, in two passes. Admission reads the source once and hashes it:
//!   that digest is `whole_digest`, which every page carries, so it must be known before page
//!   0. The copy into the snapshot then goes on beside the pages, a chunk at a time as framing
//!   reaches it ([`Artifact::fill_to`]), and hashes every chunk it writes; when the copy is
//!   whole, that second digest must equal the first ([`Artifact::finish`], which the paged
//!   runner calls before any result leaves the run), or the run fails with `artifact_changed`.
//!   So the bytes paged, which are the snapshot's, are the bytes hashed: checked, not assumed.
//!   Why two passes: hashing runs at ~1.4 GB/s from the page cache, while filling new page
//!   cache can cost several times that where the kernel must first get the memory back (a VM
//!   that reports free memory to its host), and the copy then overlaps the JavaScript instead
//!   of delaying page 0.
//!
//! Either way the snapshot is never linked into a directory, only this process holds a
//! writable descriptor to it, and it is made read-only (mode `0400`) before anything is
//! written; workers receive a read-only descriptor. A byte of the snapshot is written once,
//! and nothing reads it (this process or a worker) before it has been written.
//!
//! The source file is opened through [`runx_worker::Scope`], like every other file runx reads
//! for a package.

use runx_profile::{ARTIFACT_BYTES, LimitDef};
use runx_worker::{Scope, ScopeError};
use sha2::{Digest, Sha256};
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Why an artifact was not admitted.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AdmissionError {
    /// The path is empty or absolute.
    #[error("artifact path `{path}` must be a relative path inside its scope")]
    NotRelative {
        /// The path as given.
        path: String,
    },
    /// The scope directory cannot be opened.
    #[error("the artifact scope {} cannot be opened: {source}", root.display())]
    Scope {
        /// The scope directory.
        root: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The file cannot be opened or examined.
    #[error("artifact `{path}` cannot be opened in {}: {source}", root.display())]
    Open {
        /// The path as given.
        path: String,
        /// The scope directory.
        root: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The path climbs out of its scope (`..`), is or passes through a symbolic link, or
    /// crosses into another file system: it may lead outside its scope.
    #[error("artifact `{path}` is refused: {reason}")]
    OutsideScope {
        /// The path as given.
        path: String,
        /// Why, naming the scope.
        reason: String,
    },
    /// The path names something other than a regular file.
    #[error("artifact `{path}` is {found}, not a regular file")]
    NotAFile {
        /// The path as given.
        path: String,
        /// What it is: `a directory`, `a FIFO`, ...
        found: &'static str,
    },
    /// The file is larger than [`ARTIFACT_BYTES`] (or grew past it while it was copied).
    #[error("artifact `{path}` is {bytes} bytes or more; at most {} bytes (512 MiB) are admitted", ARTIFACT_BYTES.max)]
    TooLarge {
        /// The path as given.
        path: String,
        /// Its size, as far as it was read.
        bytes: u64,
    },
    /// Copying or hashing the file failed.
    #[error("copying `{path}` into its snapshot: {source}")]
    Copy {
        /// The path as given.
        path: String,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The file changed between the read that hashed it and the copy into the snapshot: the
    /// copy no longer matches the digest the pages carried.
    #[error(
        "artifact `{path}` changed while it was copied into its snapshot (the copy does not hash to the digest read first); run again once nothing writes to it"
    )]
    Changed {
        /// The path as given.
        path: String,
    },
}

impl AdmissionError {
    /// The failure code (kind `page`), unless a limit was exceeded.
    pub fn code(&self) -> &'static str {
        match self {
            AdmissionError::NotRelative { .. }
            | AdmissionError::Scope { .. }
            | AdmissionError::Open { .. } => "artifact_path",
            AdmissionError::OutsideScope { .. } => "artifact_scope",
            AdmissionError::NotAFile { .. } => "artifact_type",
            AdmissionError::TooLarge { .. } => ARTIFACT_BYTES.name,
            AdmissionError::Copy { .. } => "artifact_copy",
            AdmissionError::Changed { .. } => "artifact_changed",
        }
    }

    /// The limit the artifact exceeded, if that is why it was refused.
    pub fn limit(&self) -> Option<&'static LimitDef> {
        matches!(self, AdmissionError::TooLarge { .. }).then_some(&ARTIFACT_BYTES)
    }
}

/// An admitted snapshot. Changes to the source file after admission do not reach it: the
/// snapshot is an unlinked temporary file only this process holds, and a copy that would have
/// taken them in fails ([`AdmissionError::Changed`]).
pub struct Artifact {
    /// Opaque, per-runtime-instance handle; never part of semantic output.
    pub artifact_ref: String,
    /// `sha256:<hex>` of the whole snapshot: the stable content identity.
    pub whole_digest: String,
    /// Size of the snapshot in bytes.
    pub bytes: u64,
    /// How the snapshot was made.
    #[cfg_attr(not(test), expect(dead_code, reason = "read by the tests only"))]
    pub made: Snapshot,
    /// A read-only map of the whole snapshot, of which only `[0, filled)` is ever read.
    map: Option<memmap2::MmapRaw>,
    /// A read-only descriptor of the snapshot, for workers to read their pages from.
    read_only: Option<Arc<std::fs::File>>,
    /// Bytes `[0, filled)` of the snapshot are written, and never written again.
    filled: AtomicUsize,
    /// The copy still to make, if any.
    copy: Mutex<Copying>,
    /// The artifact's path as given, for errors.
    path: String,
}

/// Where the copy into the snapshot stands.
enum Copying {
    /// The snapshot is whole and matches `whole_digest`.
    Done,
    /// Chunks remain to copy.
    Going(Box<Filler>),
    /// The copy failed; every later call reports it again.
    Failed(Failure),
}

/// Why the copy into the snapshot failed, kept to be reported again.
enum Failure {
    /// The source no longer holds the bytes that were hashed.
    Changed,
    /// Reading the source or writing the snapshot failed.
    Io {
        kind: io::ErrorKind,
        os: Option<i32>,
        message: String,
    },
}

impl Failure {
    fn io(e: io::Error) -> Failure {
        Failure::Io {
            kind: e.kind(),
            os: e.raw_os_error(),
            message: e.to_string(),
        }
    }

    /// The error of the artifact at `path`.
    fn error(&self, path: &str) -> AdmissionError {
        let path = path.to_string();
        match self {
            Failure::Changed => AdmissionError::Changed { path },
            Failure::Io { kind, os, message } => AdmissionError::Copy {
                path,
                source: match os {
                    Some(code) => io::Error::from_raw_os_error(*code),
                    None => io::Error::new(*kind, message.clone()),
                },
            },
        }
    }
}

/// The second pass of a copied snapshot: the source, the snapshot's writable descriptor, and
/// the digest of what has been written so far.
struct Filler {
    source: std::fs::File,
    snapshot: std::fs::File,
    hasher: Sha256,
    buf: Vec<u8>,
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

    /// The snapshot's bytes written so far: all of them once the copy is whole (at once for a
    /// reflink clone or an empty file), otherwise as far as [`Artifact::fill_to`] has reached.
    pub fn data(&self) -> &[u8] {
        let Some(map) = &self.map else { return &[] };
        let len = self.filled.load(Ordering::Acquire);
        filled_bytes(map, len)
    }

    /// Copies into the snapshot until at least its first `end` bytes (or all of it) are
    /// written, and returns [`Artifact::data`]. When the copy becomes whole, its digest is
    /// compared with `whole_digest`. Callers on several threads take turns.
    pub fn fill_to(&self, end: usize) -> Result<&[u8], AdmissionError> {
        let total = self.size();
        let want = end.min(total);
        if self.filled.load(Ordering::Acquire) >= want {
            return Ok(self.data());
        }
        let mut copying = self.copy.lock().unwrap_or_else(|e| e.into_inner());
        let filler = match &mut *copying {
            Copying::Done => return Ok(self.data()),
            Copying::Failed(failure) => return Err(failure.error(&self.path)),
            Copying::Going(filler) => filler,
        };
        let mut at = self.filled.load(Ordering::Acquire);
        let outcome = (|| {
            while at < want {
                let n = filler.copy_chunk(at, total)?;
                // The last chunk is published only once the whole copy is known to match: a
                // copy that does not never reads as whole.
                if at + n == total {
                    let digest =
                        runx_receipts::spell(&std::mem::take(&mut filler.hasher).finalize());
                    if digest != self.whole_digest {
                        return Err(Failure::Changed);
                    }
                }
                at += n;
                self.filled.store(at, Ordering::Release);
            }
            Ok(at == total)
        })();
        match outcome {
            Ok(false) => Ok(self.data()),
            Ok(true) => {
                *copying = Copying::Done;
                Ok(self.data())
            }
            Err(failure) => {
                let error = failure.error(&self.path);
                *copying = Copying::Failed(failure);
                Err(error)
            }
        }
    }

    /// Completes the copy and checks it against `whole_digest`: the snapshot holds exactly the
    /// bytes that were hashed, or this fails with [`AdmissionError::Changed`].
    pub fn finish(&self) -> Result<(), AdmissionError> {
        self.fill_to(self.size()).map(|_| ())
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
        let to = (end.min(self.filled.load(Ordering::Acquire)) / PAGE) * PAGE;
        if to > from {
            release_range(map, from, to - from);
        }
    }
}

impl Filler {
    /// Copies the chunk of the source at `at` (of `total` bytes) into the snapshot and hashes
    /// it; the bytes hashed are the bytes written. A source that has shrunk ends the copy as
    /// changed. Write-back is left to the kernel: a snapshot lives for its run and is usually
    /// dropped before it reaches the disk (starting write-back for every chunk once made runs
    /// wait on the disk), and under memory pressure the kernel writes and reclaims it like any
    /// dirty file page.
    fn copy_chunk(&mut self, at: usize, total: usize) -> Result<usize, Failure> {
        let n = CHUNK_BYTES.min(total - at);
        self.buf.resize(CHUNK_BYTES, 0);
        let chunk = &mut self.buf[..n];
        match self.source.read_exact_at(chunk, at as u64) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Err(Failure::Changed),
            Err(e) => return Err(Failure::io(e)),
        }
        self.snapshot
            .write_all_at(chunk, at as u64)
            .map_err(Failure::io)?;
        self.hasher.update(&*chunk);
        Ok(n)
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
    // 0400). The bytes past `len`, which the copy may be writing, are not part of the slice.
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

/// Admits `path` (relative to `root`) as a snapshot.
pub fn admit(path: &str, root: &Path, instance: &str) -> Result<Artifact, AdmissionError> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut file = open_contained(path, root)?;
    let copy = |source| AdmissionError::Copy {
        path: path.to_string(),
        source,
    };
    let mut snapshot = tempfile::tempfile().map_err(copy)?;
    // Never more than one byte past the limit is read, whatever size the file claims or grows
    // to. A clone is hashed from the clone itself, a source to be copied from the source.
    let bound = ARTIFACT_BYTES.max + 1;
    let (made, total, digest) = match clone_into(&file, &snapshot) {
        Ok(()) => {
            snapshot.seek(SeekFrom::Start(0)).map_err(copy)?;
            let (total, digest) = read_and_hash(&mut (&mut snapshot).take(bound), path)?;
            (Snapshot::Reflink, total, digest)
        }
        Err(_) => {
            let (total, digest) = read_and_hash(&mut (&mut file).take(bound), path)?;
            (Snapshot::Copy, total, digest)
        }
    };
    if total > ARTIFACT_BYTES.max {
        return Err(AdmissionError::TooLarge {
            path: path.to_string(),
            bytes: total,
        });
    }
    // Read-only before any byte is copied in: the descriptor held here keeps its write access;
    // a reopening for writing (through /proc) is refused from now on.
    seal(&snapshot).map_err(copy)?;
    let len = usize::try_from(total).map_err(|_| {
        copy(io::Error::other(
            "the artifact does not fit this machine's address space",
        ))
    })?;
    let (filled, copying) = match made {
        Snapshot::Reflink => (len, Copying::Done),
        Snapshot::Copy if total == 0 => (0, Copying::Done),
        Snapshot::Copy => {
            snapshot.set_len(total).map_err(copy)?;
            let filler = Filler {
                source: file,
                snapshot: snapshot.try_clone().map_err(copy)?,
                hasher: Sha256::new(),
                buf: Vec::new(),
            };
            (0, Copying::Going(Box::new(filler)))
        }
    };
    let map = if total == 0 {
        None
    } else {
        Some(map_snapshot(&snapshot).map_err(copy)?)
    };
    Ok(Artifact {
        artifact_ref: format!(
            "artifact:{instance}:{}",
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ),
        whole_digest: digest,
        bytes: total,
        made,
        map,
        read_only: reopen_read_only(&snapshot).map(Arc::new),
        filled: AtomicUsize::new(filled),
        copy: Mutex::new(copying),
        path: path.to_string(),
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

/// Opens `path` inside `root`: relative, resolving inside the scope, a regular file within
/// the size limit.
/// Opens `path` inside `root` through [`Scope`]: relative, reached without any symlink, a
/// regular file on the scope's device (checked on the opened descriptor), within the size
/// limit. Nothing is looked up by path twice, so the file cannot be swapped for a link between
/// a check and the open.
fn open_contained(path: &str, root: &Path) -> Result<std::fs::File, AdmissionError> {
    let scope = Scope::open(root).map_err(|source| AdmissionError::Scope {
        root: root.to_path_buf(),
        source,
    })?;
    let file = scope.open_file(path).map_err(|e| refused(path, root, e))?;
    let len = file
        .metadata()
        .map_err(|source| AdmissionError::Open {
            path: path.to_string(),
            root: root.to_path_buf(),
            source,
        })?
        .len();
    if len > ARTIFACT_BYTES.max {
        return Err(AdmissionError::TooLarge {
            path: path.to_string(),
            bytes: len,
        });
    }
    Ok(file)
}

/// Why the scope refused the artifact, in admission's words.
fn refused(path: &str, root: &Path, e: ScopeError) -> AdmissionError {
    let path = path.to_string();
    match e {
        ScopeError::NotRelative { .. } => AdmissionError::NotRelative { path },
        ScopeError::Escapes { .. }
        | ScopeError::Symlink { .. }
        | ScopeError::OtherDevice { .. } => AdmissionError::OutsideScope {
            path,
            reason: e.to_string(),
        },
        ScopeError::WrongType { found, .. } => AdmissionError::NotAFile { path, found },
        ScopeError::TooLarge { bytes, .. } => AdmissionError::TooLarge { path, bytes },
        ScopeError::NotFound { .. } => AdmissionError::Open {
            path,
            root: root.to_path_buf(),
            // Not `ErrorKind::NotFound`, whose text is "entity not found".
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"),
        },
        ScopeError::Io { source, .. } => AdmissionError::Open {
            path,
            root: root.to_path_buf(),
            source,
        },
        other => AdmissionError::Open {
            path,
            root: root.to_path_buf(),
            source: std::io::Error::other(other.to_string()),
        },
    }
}

/// Bytes read, hashed and written at a time.
const CHUNK_BYTES: usize = 1 << 20;

/// Reads `source` to its end while a second thread hashes what was read, one chunk behind:
/// the first pass of a copied snapshot costs about the larger of reading and hashing, not
/// their sum. Returns the bytes read and their digest.
fn read_and_hash(source: &mut impl Read, path: &str) -> Result<(u64, String), AdmissionError> {
    let io = |source| AdmissionError::Copy {
        path: path.to_string(),
        source,
    };
    std::thread::scope(|s| {
        let (to_hash, chunks) = std::sync::mpsc::sync_channel::<Vec<u8>>(2);
        let (give_back, spare) = std::sync::mpsc::channel::<Vec<u8>>();
        let hasher = s.spawn(move || {
            let mut h = Sha256::new();
            for chunk in chunks {
                h.update(&chunk);
                let _ = give_back.send(chunk);
            }
            runx_receipts::spell(&h.finalize())
        });
        let mut total = 0u64;
        loop {
            let mut buf = spare.try_recv().unwrap_or_default();
            buf.resize(CHUNK_BYTES, 0);
            let n = read_full(source, &mut buf).map_err(&io)?;
            if n == 0 {
                break;
            }
            total += n as u64;
            if total > ARTIFACT_BYTES.max {
                return Err(AdmissionError::TooLarge {
                    path: path.to_string(),
                    bytes: total,
                });
            }
            buf.truncate(n);
            if to_hash.send(buf).is_err() {
                break;
            }
        }
        drop(to_hash);
        let digest = hasher
            .join()
            .map_err(|_| io(io::Error::other("the hashing thread failed")))?;
        Ok((total, digest))
    })
}

/// Reads until `buf` is full or the file ends.
fn read_full(file: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match file.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// A read-only map of the whole snapshot, whose length is set and never changes. Only its
/// written part is ever read ([`filled_bytes`]).
fn map_snapshot(file: &std::fs::File) -> std::io::Result<memmap2::MmapRaw> {
    memmap2::MmapOptions::new().map_raw_read_only(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_snapshot_does_not_follow_the_source_once_copied() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.json"), b"[1, 2, 3]").unwrap();
        let a = admit("a.json", dir.path(), "test").unwrap();
        a.finish().unwrap();
        std::fs::write(dir.path().join("a.json"), b"[4, 5, 6, 7, 8]").unwrap();
        assert_eq!(a.data(), b"[1, 2, 3]");
        assert_eq!(a.bytes, 9);
        assert_eq!(a.whole_digest, runx_receipts::sha256_hex(b"[1, 2, 3]"));
        let b = admit("a.json", dir.path(), "test").unwrap();
        b.finish().unwrap();
        assert_ne!(a.artifact_ref, b.artifact_ref);
        assert_eq!(b.data(), b"[4, 5, 6, 7, 8]");
    }

    /// A file of `chunks` whole copy chunks and a few bytes, no two chunks alike.
    fn chunky(chunks: usize) -> Vec<u8> {
        (0..chunks * CHUNK_BYTES + 77)
            .map(|i| (i / 7 % 251) as u8 ^ (i / CHUNK_BYTES) as u8)
            .collect()
    }

    #[test]
    fn the_copy_goes_as_far_as_asked_and_checks_the_digest_once_whole() {
        let dir = tempfile::tempdir().unwrap();
        let body = chunky(3);
        std::fs::write(dir.path().join("c.bin"), &body).unwrap();
        let a = admit("c.bin", dir.path(), "test").unwrap();
        assert_eq!(a.whole_digest, runx_receipts::sha256_hex(&body));
        if a.made == Snapshot::Copy {
            assert!(
                a.data().is_empty(),
                "nothing is copied before it is asked for"
            );
            assert_eq!(a.fill_to(1).unwrap(), &body[..CHUNK_BYTES]);
            assert_eq!(
                a.fill_to(CHUNK_BYTES + 1).unwrap(),
                &body[..2 * CHUNK_BYTES]
            );
        }
        assert_eq!(a.fill_to(usize::MAX).unwrap(), &body[..]);
        a.finish().unwrap();
        assert_eq!(a.data(), &body[..]);
    }

    #[test]
    fn a_source_changed_before_its_copy_fails_the_copy() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.bin");
        let body = chunky(2);
        // Past the first chunk (copied before the change): the same length with one byte
        // different at the end; shorter; longer with a byte different in the second chunk.
        let mut flipped = body.clone();
        *flipped.last_mut().unwrap() ^= 1;
        let shorter = body[..body.len() - 1].to_vec();
        let mut longer = body.clone();
        longer[CHUNK_BYTES + 1] ^= 1;
        longer.extend_from_slice(b"more");
        for changed in [flipped, shorter, longer] {
            std::fs::write(&path, &body).unwrap();
            let a = admit("d.bin", dir.path(), "test").unwrap();
            if a.made == Snapshot::Reflink {
                return; // A clone is whole at admission: nothing later can reach it.
            }
            assert_eq!(a.fill_to(1).unwrap(), &body[..CHUNK_BYTES]);
            std::fs::write(&path, &changed).unwrap();
            let e = a.finish().unwrap_err();
            assert!(matches!(e, AdmissionError::Changed { .. }), "{e}");
            assert_eq!(e.code(), "artifact_changed");
            assert!(e.to_string().contains("d.bin"), "{e}");
            // The failure stays: asking again does not copy on.
            let again = a.fill_to(usize::MAX).unwrap_err();
            assert_eq!(again.code(), "artifact_changed");
        }
    }

    #[test]
    fn a_source_that_grew_after_admission_is_copied_as_admitted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.bin");
        let body = chunky(1);
        std::fs::write(&path, &body).unwrap();
        let a = admit("g.bin", dir.path(), "test").unwrap();
        let mut grown = body.clone();
        grown.extend_from_slice(&chunky(1));
        std::fs::write(&path, &grown).unwrap();
        a.finish().unwrap();
        assert_eq!(a.data(), &body[..]);
        assert_eq!(a.bytes, body.len() as u64);
    }

    #[test]
    fn the_snapshot_is_an_unnamed_read_only_file_on_disk() {
        use std::io::Write as _;
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.json"), b"[1, 2, 3]").unwrap();
        let a = admit("a.json", dir.path(), "test").unwrap();
        a.finish().unwrap();
        let ro = a.read_only().expect("a read-only descriptor for workers");
        let link = std::fs::read_link(format!("/proc/self/fd/{}", ro.as_raw_fd())).unwrap();
        let link = link.to_string_lossy();
        // Not a memory file (whose pages no reclaim can take), and linked nowhere.
        assert!(!link.starts_with("/memfd:"), "{link}");
        assert!(link.ends_with("(deleted)"), "{link}");
        assert_eq!(ro.metadata().unwrap().permissions().mode() & 0o777, 0o400);
        assert!(
            (&**ro).write_all(b"x").is_err(),
            "the workers' descriptor is read-only"
        );
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut &**ro, &mut bytes).unwrap();
        assert_eq!(bytes, b"[1, 2, 3]");
        // ext4 and tmpfs cannot clone; either way the digest is of the bytes paged.
        assert!(matches!(a.made, Snapshot::Copy | Snapshot::Reflink));
        assert_eq!(a.whole_digest, runx_receipts::sha256_hex(a.data()));
    }

    #[test]
    fn released_ranges_read_back_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let body: Vec<u8> = (0..3 * 4096 + 100).map(|i| (i % 251) as u8).collect();
        std::fs::write(dir.path().join("b.bin"), &body).unwrap();
        let a = admit("b.bin", dir.path(), "test").unwrap();
        a.finish().unwrap();
        a.release(0, body.len());
        assert_eq!(a.data(), &body[..]);
    }

    #[test]
    fn empty_files_are_admitted() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("e.json"), b"").unwrap();
        let a = admit("e.json", dir.path(), "test").unwrap();
        assert_eq!(a.bytes, 0);
        assert!(a.data().is_empty());
        a.finish().unwrap();
    }
}
