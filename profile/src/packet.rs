//! Packet schemas: JSON Schema files that name themselves with `"x-runx-packet-id"`.
//!
//! An input declared `packet: ID` must match the schema whose `x-runx-packet-id` is `ID`. Schemas
//! are looked up where runx packages keep them: in `packets/` and `dist/packets/` of the profile's
//! directory and of its ancestors, nearest first, [`PACKET_SEARCH_DEPTH`] directories up. The
//! file name does not matter, only the id inside it. Reading is bounded: symbolic links, FIFOs
//! and other special files are never opened, files over [`PACKET_SCHEMA_BYTES`] are not read,
//! and at most [`PACKET_DIR_ENTRIES`] entries of one directory are examined.

use std::cell::OnceCell;
use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::limits::{PACKET_DIR_ENTRIES, PACKET_SCHEMA_BYTES, PACKET_SEARCH_DEPTH};
use runx_receipts::sha256_hex;

/// The key a packet schema names itself with.
pub const PACKET_ID_KEY: &str = "x-runx-packet-id";

/// Where a packet input's schema came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PacketRef {
    /// The packet id (`x-runx-packet-id`).
    pub id: String,
    /// The schema file.
    pub file: PathBuf,
    /// `sha256:<hex>` of the file's bytes.
    pub digest: String,
}

/// A found packet schema.
struct Found {
    file: PathBuf,
    digest: String,
    schema: Value,
}

/// Packet lookups of one profile: the directories are indexed once, on the first lookup.
pub(crate) struct PacketFinder {
    dir: PathBuf,
    index: OnceCell<Index>,
}

#[derive(Default)]
struct Index {
    by_id: BTreeMap<String, Found>,
    searched: Vec<PathBuf>,
}

impl PacketFinder {
    /// A finder for a profile in `dir`.
    pub(crate) fn new(dir: &Path) -> PacketFinder {
        PacketFinder {
            dir: dir.to_path_buf(),
            index: OnceCell::new(),
        }
    }

    /// The schema of packet `id`, or a message naming where it was looked for.
    pub(crate) fn find(&self, id: &str) -> Result<(PacketRef, Value), String> {
        let index = self.index.get_or_init(|| Index::build(&self.dir));
        match index.by_id.get(id) {
            Some(found) => Ok((
                PacketRef {
                    id: id.to_string(),
                    file: found.file.clone(),
                    digest: found.digest.clone(),
                },
                found.schema.clone(),
            )),
            None => {
                let top = self
                    .dir
                    .ancestors()
                    .take(search_depth())
                    .last()
                    .unwrap_or(&self.dir);
                let found: Vec<String> = index
                    .searched
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect();
                Err(format!(
                    "packet `{id}` has no schema: no .json file with \"{PACKET_ID_KEY}\": \"{id}\" in packets/ or dist/packets/ of {} or its ancestors up to {} (directories that exist there: {})",
                    self.dir.display(),
                    top.display(),
                    if found.is_empty() {
                        "none".to_string()
                    } else {
                        found.join(", ")
                    }
                ))
            }
        }
    }
}

impl Index {
    /// Scans `packets/` and `dist/packets/` of `dir` and its ancestors, nearest first; the first
    /// file naming an id wins.
    fn build(dir: &Path) -> Index {
        let mut index = Index::default();
        for ancestor in dir.ancestors().take(search_depth()) {
            for sub in ["packets", "dist/packets"] {
                let candidate = ancestor.join(sub);
                // Only real directories: a symbolic link could point anywhere on the host.
                let is_dir = std::fs::symlink_metadata(&candidate).is_ok_and(|m| m.is_dir());
                if is_dir {
                    index.scan(&candidate);
                    index.searched.push(candidate);
                }
            }
        }
        index
    }

    fn scan(&mut self, dir: &Path) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let limit = usize::try_from(PACKET_DIR_ENTRIES.max).unwrap_or(usize::MAX);
        let mut files: Vec<PathBuf> = entries
            .take(limit)
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        files.sort();
        for file in files {
            let Some(bytes) = read_regular(&file) else {
                continue;
            };
            let Ok(schema) = serde_json::from_slice::<Value>(&bytes) else {
                continue;
            };
            let Some(id) = schema.get(PACKET_ID_KEY).and_then(Value::as_str) else {
                continue;
            };
            let id = id.to_string();
            self.by_id.entry(id).or_insert(Found {
                file,
                digest: format!("sha256:{}", sha256_hex(&bytes)),
                schema,
            });
        }
    }
}

/// Directories searched: the profile's and its ancestors.
fn search_depth() -> usize {
    usize::try_from(PACKET_SEARCH_DEPTH.max).unwrap_or(usize::MAX)
}

/// The bytes of `file` when it is a regular file (not a link, FIFO or device) of at most
/// [`PACKET_SCHEMA_BYTES`]. Opened without following links and without blocking, then checked
/// on the open handle, so a file swapped after listing cannot make the read hang or escape.
fn read_regular(file: &Path) -> Option<Vec<u8>> {
    let flags = nix::fcntl::OFlag::O_NOFOLLOW | nix::fcntl::OFlag::O_NONBLOCK;
    let handle = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits())
        .open(file)
        .ok()?;
    let meta = handle.metadata().ok()?;
    if !meta.is_file() || meta.len() > PACKET_SCHEMA_BYTES.max {
        return None;
    }
    let mut bytes = Vec::new();
    handle
        .take(PACKET_SCHEMA_BYTES.max + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    (bytes.len() as u64 <= PACKET_SCHEMA_BYTES.max).then_some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }

    #[test]
    fn nearest_schema_wins_and_names_are_ignored() {
        let root = tempfile::tempdir().expect("tempdir");
        let pkg = root.path().join("skills/a/graph/plan");
        std::fs::create_dir_all(&pkg).expect("mkdir");
        write(
            &root.path().join("dist/packets/any-name.json"),
            r#"{"x-runx-packet-id": "p.v1", "type": "object", "required": ["far"]}"#,
        );
        write(
            &root.path().join("skills/a/packets/near.json"),
            r#"{"x-runx-packet-id": "p.v1", "type": "object", "required": ["near"]}"#,
        );
        write(
            &root.path().join("dist/packets/other.json"),
            r#"{"x-runx-packet-id": "q.v1"}"#,
        );
        let finder = PacketFinder::new(&pkg);
        let (r, schema) = finder.find("p.v1").expect("found");
        assert_eq!(schema["required"], serde_json::json!(["near"]));
        assert!(r.file.ends_with("skills/a/packets/near.json"), "{r:?}");
        assert!(r.digest.starts_with("sha256:"));
        assert!(finder.find("q.v1").is_ok());
        let e = finder.find("missing.v1").expect_err("missing");
        assert!(e.contains("packet `missing.v1` has no schema"), "{e}");
        assert!(e.contains("dist/packets"), "{e}");
    }

    #[test]
    fn links_fifos_and_large_files_are_not_read() {
        let root = tempfile::tempdir().expect("tempdir");
        let dir = root.path().join("packets");
        std::fs::create_dir_all(&dir).expect("mkdir");
        let outside = root.path().join("outside.json");
        write(&outside, r#"{"x-runx-packet-id": "linked.v1"}"#);
        std::os::unix::fs::symlink(&outside, dir.join("link.json")).expect("symlink");
        nix::unistd::mkfifo(&dir.join("fifo.json"), nix::sys::stat::Mode::S_IRWXU).expect("fifo");
        let big = format!(
            r#"{{"x-runx-packet-id": "big.v1", "pad": "{}"}}"#,
            "x".repeat(PACKET_SCHEMA_BYTES.max as usize)
        );
        write(&dir.join("big.json"), &big);
        write(&dir.join("ok.json"), r#"{"x-runx-packet-id": "ok.v1"}"#);
        let finder = PacketFinder::new(root.path());
        assert!(finder.find("ok.v1").is_ok());
        assert!(finder.find("linked.v1").is_err());
        assert!(finder.find("big.v1").is_err());

        // A linked packets directory is not searched either.
        let other = tempfile::tempdir().expect("tempdir");
        std::os::unix::fs::symlink(&dir, other.path().join("packets")).expect("symlink");
        assert!(PacketFinder::new(other.path()).find("ok.v1").is_err());
    }
}
