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
//! - **copy** everywhere else: the source is read once, each chunk is written to the snapshot
//!   and hashed (on a second thread, one chunk behind), so the bytes hashed are the bytes
//!   written. Write-back is started as the copy goes, so the page cache holds clean, evictable
//!   pages soon after admission.
//!
//! Either way the snapshot is never linked into a directory, only this process holds a
//! writable descriptor to it, and it is made read-only (mode `0400`) before use; workers
//! receive a read-only descriptor. Nothing that holds a writable handle writes after the hash.
//!
//! The source file is opened through [`runx_worker::scope`], like every other file runx reads
//! for a package.

use crate::limits::{ARTIFACT_BYTES, LimitDef};
use runx_worker::scope::{Scope, ScopeError};
use sha2::{Digest, Sha256};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

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
        }
    }

    /// The limit the artifact exceeded, if that is why it was refused.
    pub fn limit(&self) -> Option<&'static LimitDef> {
        matches!(self, AdmissionError::TooLarge { .. }).then_some(&ARTIFACT_BYTES)
    }
}

/// An admitted snapshot. Changes to the source file after admission do not reach it: the
/// snapshot is an unlinked temporary file only this process holds.
pub struct Artifact {
    /// Opaque, per-runtime-instance handle; never part of semantic output.
    pub artifact_ref: String,
    /// `sha256:<hex>` of the whole snapshot: the stable content identity.
    pub whole_digest: String,
    /// Size of the snapshot in bytes.
    pub bytes: u64,
    /// How the snapshot was made.
    pub made: Snapshot,
    map: Option<memmap2::Mmap>,
    /// A read-only descriptor of the snapshot, for workers to read their pages from.
    read_only: Option<Arc<std::fs::File>>,
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

    /// The snapshot's bytes.
    pub fn data(&self) -> &[u8] {
        self.map.as_deref().unwrap_or(&[])
    }

    /// Tells the kernel this process is done with `start..end` of the snapshot, so the memory
    /// pages behind it leave this process's resident set: host memory stays flat however large
    /// the artifact is. Reading the range again still works (it is faulted back in from the
    /// snapshot file). Only whole memory pages inside the range are released.
    pub fn release(&self, start: usize, end: usize) {
        let Some(map) = &self.map else { return };
        const PAGE: usize = 4096;
        let from = start.div_ceil(PAGE) * PAGE;
        let to = (end.min(map.len()) / PAGE) * PAGE;
        if to > from {
            release_range(map, from, to - from);
        }
    }
}

#[allow(unsafe_code)]
fn release_range(map: &memmap2::Mmap, offset: usize, len: usize) {
    // SAFETY: the map is a read-only shared mapping of the snapshot file, which no one writes
    // after admission. MADV_DONTNEED only drops this process's page-table entries: the next
    // access reads the same bytes back from the file, so every `&[u8]` into the map keeps
    // seeing unchanged data. (The advice is "unchecked" in memmap2 because on private writable
    // maps it would discard changes; there are none here.)
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
    let (made, total, digest) = match clone_into(&file, &snapshot) {
        Ok(total) => {
            let digest = hash_snapshot(&mut snapshot).map_err(copy)?;
            (Snapshot::Reflink, total, digest)
        }
        Err(_) => {
            // Never more than one byte past the limit is read, whatever size the file claims
            // or grows to.
            let mut bounded = (&mut file).take(ARTIFACT_BYTES.max + 1);
            let (total, digest) = copy_and_hash(&mut bounded, &mut snapshot, path)?;
            (Snapshot::Copy, total, digest)
        }
    };
    if total > ARTIFACT_BYTES.max {
        return Err(AdmissionError::TooLarge {
            path: path.to_string(),
            bytes: total,
        });
    }
    seal(&snapshot).map_err(copy)?;
    snapshot.seek(SeekFrom::Start(0)).map_err(copy)?;
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
    })
}

/// Makes `snapshot` a reflink clone of `source`, returning its size; fails where the file
/// system cannot share extents (ext4, tmpfs, across file systems).
fn clone_into(source: &std::fs::File, snapshot: &std::fs::File) -> io::Result<u64> {
    rustix::fs::ioctl_ficlone(snapshot, source)?;
    Ok(snapshot.metadata()?.len())
}

/// The digest of a cloned snapshot, read from the clone itself.
fn hash_snapshot(snapshot: &mut std::fs::File) -> io::Result<String> {
    snapshot.seek(SeekFrom::Start(0))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; CHUNK_BYTES];
    loop {
        let n = read_full(snapshot, &mut buf)?;
        if n == 0 {
            return Ok(crate::digest::spell(&h.finalize()));
        }
        h.update(&buf[..n]);
    }
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
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
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

/// Copies `source` into `snapshot` while a second thread hashes what was copied, one chunk
/// behind: admission then costs about the larger of copying and hashing, not their sum.
fn copy_and_hash(
    source: &mut impl Read,
    snapshot: &mut std::fs::File,
    path: &str,
) -> Result<(u64, String), AdmissionError> {
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
            crate::digest::spell(&h.finalize())
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
            // Write-back is left to the kernel. Starting it for every chunk made admission wait
            // on the disk (twice the hashing time at 256–512 MiB when runs followed each other);
            // a snapshot that lives only for its run is dropped on close without reaching the
            // disk, unless memory runs short, when the kernel writes it out and reclaims it
            // like any dirty file page.
            snapshot.write_all(&buf).map_err(&io)?;
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

#[allow(unsafe_code)]
fn map_snapshot(file: &std::fs::File) -> std::io::Result<memmap2::Mmap> {
    // SAFETY: the snapshot is an unnamed file this process created, wrote (or cloned) and made
    // read-only before mapping; no other process has a writable handle to it and this process
    // never writes it again, so the mapped bytes do not change while the map is alive.
    unsafe { memmap2::Mmap::map(file) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_snapshot_does_not_follow_the_source() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.json"), b"[1, 2, 3]").unwrap();
        let a = admit("a.json", dir.path(), "test").unwrap();
        std::fs::write(dir.path().join("a.json"), b"[4, 5, 6, 7, 8]").unwrap();
        assert_eq!(a.data(), b"[1, 2, 3]");
        assert_eq!(a.bytes, 9);
        assert_eq!(a.whole_digest, crate::digest::sha256_hex(b"[1, 2, 3]"));
        let b = admit("a.json", dir.path(), "test").unwrap();
        assert_ne!(a.artifact_ref, b.artifact_ref);
        assert_eq!(b.data(), b"[4, 5, 6, 7, 8]");
    }

    #[test]
    fn the_snapshot_is_an_unnamed_read_only_file_on_disk() {
        use std::io::Write as _;
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.json"), b"[1, 2, 3]").unwrap();
        let a = admit("a.json", dir.path(), "test").unwrap();
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
        assert_eq!(a.whole_digest, crate::digest::sha256_hex(a.data()));
    }

    #[test]
    fn released_ranges_read_back_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let body: Vec<u8> = (0..3 * 4096 + 100).map(|i| (i % 251) as u8).collect();
        std::fs::write(dir.path().join("b.bin"), &body).unwrap();
        let a = admit("b.bin", dir.path(), "test").unwrap();
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
    }
}
