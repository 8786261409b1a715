//! Artifact admission: a contained regular file copied once into an immutable, memory-mapped
//! snapshot while it is hashed.

use crate::error::RunError;
use sha2::{Digest, Sha256};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// The largest artifact admitted: 512 MiB.
pub const MAX_ARTIFACT_BYTES: u64 = 512 * 1024 * 1024;

/// An admitted snapshot. Changes to the source file after admission do not reach it: the
/// snapshot is an unlinked temporary file only this process holds.
pub struct Artifact {
    /// Opaque, per-runtime-instance handle; never part of semantic output.
    pub artifact_ref: String,
    /// `sha256:<hex>` of the whole snapshot: the stable content identity.
    pub whole_digest: String,
    /// Size of the snapshot in bytes.
    pub bytes: u64,
    map: Option<memmap2::Mmap>,
}

impl Artifact {
    /// The snapshot's bytes.
    pub fn data(&self) -> &[u8] {
        self.map.as_deref().unwrap_or(&[])
    }
}

fn admission(code: &str, message: String) -> RunError {
    RunError::new("page", code, message)
}

/// Admits `path` (relative to `root`) as a snapshot.
pub fn admit(path: &str, root: &Path, instance: &str) -> Result<Artifact, RunError> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let rel = Path::new(path);
    if path.is_empty() || rel.is_absolute() {
        return Err(admission(
            "artifact_path",
            format!("artifact path `{path}` must be a relative path inside its scope"),
        ));
    }
    let root = root.canonicalize().map_err(|e| {
        admission(
            "artifact_path",
            format!(
                "the artifact scope {} cannot be opened: {e}",
                root.display()
            ),
        )
    })?;
    let full = root.join(rel).canonicalize().map_err(|e| {
        admission(
            "artifact_path",
            format!(
                "artifact `{path}` cannot be opened in {}: {e}",
                root.display()
            ),
        )
    })?;
    if !full.starts_with(&root) {
        return Err(admission(
            "artifact_scope",
            format!(
                "artifact `{path}` resolves to {}, outside its scope {}",
                full.display(),
                root.display()
            ),
        ));
    }
    let mut file = std::fs::File::open(&full)
        .map_err(|e| admission("artifact_path", format!("artifact `{path}`: {e}")))?;
    let meta = file
        .metadata()
        .map_err(|e| admission("artifact_path", format!("artifact `{path}`: {e}")))?;
    if !meta.is_file() {
        return Err(admission(
            "artifact_type",
            format!("artifact `{path}` is not a regular file"),
        ));
    }
    if meta.len() > MAX_ARTIFACT_BYTES {
        return Err(admission(
            "artifact_bytes",
            format!(
                "artifact `{path}` is {} bytes; at most {MAX_ARTIFACT_BYTES} bytes (512 MiB) are admitted",
                meta.len()
            ),
        ));
    }
    let io = |e: std::io::Error| admission("artifact_copy", format!("copying `{path}`: {e}"));
    let mut snapshot = tempfile::tempfile().map_err(io)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0u64;
    loop {
        let n = file.read(&mut buf).map_err(io)?;
        if n == 0 {
            break;
        }
        total += n as u64;
        if total > MAX_ARTIFACT_BYTES {
            return Err(admission(
                "artifact_bytes",
                format!("artifact `{path}` grew past 512 MiB while it was being admitted"),
            ));
        }
        hasher.update(&buf[..n]);
        snapshot.write_all(&buf[..n]).map_err(io)?;
    }
    snapshot.flush().map_err(io)?;
    snapshot.seek(SeekFrom::Start(0)).map_err(io)?;
    let map = if total == 0 {
        None
    } else {
        Some(map_snapshot(&snapshot).map_err(io)?)
    };
    Ok(Artifact {
        artifact_ref: format!(
            "artifact:{instance}:{}",
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ),
        whole_digest: format!("sha256:{}", hex::encode(hasher.finalize())),
        bytes: total,
        map,
    })
}

#[allow(unsafe_code)]
fn map_snapshot(file: &std::fs::File) -> std::io::Result<memmap2::Mmap> {
    // SAFETY: the snapshot is an unlinked temporary file created and written by this process
    // alone; nothing else can open, truncate or modify it while the map is alive.
    unsafe { memmap2::Mmap::map(file) }
}
