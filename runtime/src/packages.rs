//! Loaded packages kept between runs: a warm step does no profile parsing and no module
//! collecting, while a changed file is picked up by the very next step.
//!
//! A cached profile or module closure stands only while the files it was read from are the
//! files it was read from. Each is *stamped* with what `lstat` says of it (device, inode, mode,
//! size, modification and change times) and of every directory on its way from the package
//! directory (device, inode, mode): a file rewritten, replaced, renamed over or swapped for a
//! symbolic link (at any component) no longer matches, and the next step loads it afresh, with
//! every check a first load makes. The check costs one `realpath` and one `lstat` per stamped
//! path: a handful of system calls (`measure_the_check` in `packages_tests.rs` times it beside a
//! fresh load).
//!
//! Two races are closed:
//! - A file changed between its read and its stamp: a module closure is read again after it
//!   is stamped and kept only when the bytes are those collected; a profile is kept only when
//!   `X.yaml`'s stamp is the same before and after the load.
//! - A file changed twice within one tick of the file system's clock, with the same size,
//!   looks unchanged ("racily clean", as git calls it). A file changed less than
//!   [`SETTLED`] before it was stamped is therefore not cached at all: each step reads it
//!   until it has been left alone that long.
//!
//! Entries are keyed by the package's canonical directory, so two packages of the same name in
//! different directories never share one. Profiles whose inputs name packet schemas are not
//! cached: their schemas are searched for in directories up the tree, where a new file may
//! change the answer. The cache is bounded ([`MAX_PACKAGES`], [`MAX_SOURCE_BYTES`],
//! [`MAX_PROFILE_BYTES`]); the least recently used entry goes first.

use runx_profile::{PROFILE_FILE, Profile, ProfileError};
use runx_worker::{BundleError, ModuleBundle, Scope, collect_bundle};
use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// How long a file must have been left alone before a stamp of it is trusted.
pub(crate) const SETTLED: Duration = Duration::from_secs(2);
/// Most packages (profiles, and module closures apiece) kept.
pub(crate) const MAX_PACKAGES: usize = 256;
/// Most bytes of module source kept, over every closure.
pub(crate) const MAX_SOURCE_BYTES: usize = 64 * 1024 * 1024;
/// Most bytes of `X.yaml` text whose profiles are kept, over every package (a parsed profile
/// takes a few times its text).
pub(crate) const MAX_PROFILE_BYTES: usize = 16 * 1024 * 1024;

/// The package directory `given` names, relative to `base`: `base/given`, or, for a bare name
/// (`helpdesk`) that is not a directory there, `base/skills/NAME` when that is one (the runx
/// convention). `runx skill` and `runx serve` find packages alike through it.
pub fn package_dir(base: &Path, given: &Path) -> PathBuf {
    let direct = base.join(given);
    let mut parts = given.components();
    let bare = matches!(
        (parts.next(), parts.next()),
        (Some(Component::Normal(_)), None)
    );
    if bare && !direct.is_dir() {
        let conventional = base.join("skills").join(given);
        if conventional.is_dir() {
            return conventional;
        }
    }
    direct
}

/// What `lstat` said of a path when it was read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    mode: u32,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    /// The stamp of `path`, not following a final symbolic link. For a directory only its
    /// identity counts: entries come and go (a receipt folder, say) without changing a file.
    fn of(path: &Path) -> Option<Stamp> {
        let m = std::fs::symlink_metadata(path).ok()?;
        let whole = !m.is_dir();
        Some(Stamp {
            dev: m.dev(),
            ino: m.ino(),
            mode: m.mode(),
            size: if whole { m.size() } else { 0 },
            mtime: if whole {
                (m.mtime(), m.mtime_nsec())
            } else {
                (0, 0)
            },
            ctime: if whole {
                (m.ctime(), m.ctime_nsec())
            } else {
                (0, 0)
            },
        })
    }

    /// Whether the file changed less than `settled` before `now` (or its times are in the
    /// future): its stamp may not tell a later change within the same clock tick.
    fn unsettled(&self, now: SystemTime, settled: Duration) -> bool {
        let changed = std::time::UNIX_EPOCH
            + Duration::new(
                u64::try_from(self.ctime.0).unwrap_or(0),
                u32::try_from(self.ctime.1).unwrap_or(0),
            );
        now.duration_since(changed)
            .map_or(true, |age| age < settled)
    }
}

/// The stamps a cached value stands on.
#[derive(Debug, Default, PartialEq, Eq)]
struct Witness(Vec<(PathBuf, Stamp)>);

impl Witness {
    /// Stamps `path` and every directory from `root` to it; `None` when one cannot be
    /// stamped.
    fn add(&mut self, root: &Path, rel: &Path) -> Option<()> {
        let mut at = root.to_path_buf();
        for part in rel.components() {
            match part {
                Component::Normal(name) => at.push(name),
                Component::CurDir => continue,
                // Module paths are normalised and relative; anything else is not cached.
                _ => return None,
            }
            if !self.0.iter().any(|(p, _)| *p == at) {
                self.0.push((at.clone(), Stamp::of(&at)?));
            }
        }
        Some(())
    }

    /// Whether every stamped path is still what it was.
    fn holds(&self) -> bool {
        self.0.iter().all(|(p, s)| Stamp::of(p).as_ref() == Some(s))
    }

    /// Whether a stamped file changed less than `settled` ago: too recently to be trusted.
    fn unsettled(&self, settled: Duration) -> bool {
        let now = SystemTime::now();
        self.0.iter().any(|(_, s)| s.unsettled(now, settled))
    }
}

/// A module closure as collected, with its digest.
pub(crate) struct Collected {
    pub bundle: Arc<ModuleBundle>,
    pub digest: String,
}

struct ProfileEntry {
    profile: Arc<Profile>,
    witness: Witness,
    /// Bytes of its `X.yaml`.
    bytes: usize,
    used: u64,
}

struct BundleEntry {
    bundle: Arc<ModuleBundle>,
    digest: String,
    /// The source limit it was collected under: a lower limit collects again (and refuses).
    limit: usize,
    bytes: usize,
    witness: Witness,
    used: u64,
}

#[derive(Default)]
struct Entries {
    profiles: HashMap<PathBuf, ProfileEntry>,
    bundles: HashMap<(PathBuf, String), BundleEntry>,
    source_bytes: usize,
    profile_bytes: usize,
    clock: u64,
}

/// The cache of one [`crate::Runtime`].
pub(crate) struct Packages {
    entries: Mutex<Entries>,
    /// [`SETTLED`], but in tests.
    settled: Duration,
}

impl Default for Packages {
    fn default() -> Packages {
        Packages {
            entries: Mutex::default(),
            settled: SETTLED,
        }
    }
}

impl Packages {
    /// The profile of the package in `dir`, as [`runx_profile::load`] reads it: from the
    /// cache while `X.yaml` and the directory are unchanged.
    pub(crate) fn profile(&self, dir: &Path) -> Result<Arc<Profile>, ProfileError> {
        let Ok(canonical) = dir.canonicalize() else {
            // The load says why, in its own words.
            return runx_profile::load(dir).map(Arc::new);
        };
        let mut witness = Witness::default();
        let stamped = witness
            .add(
                Path::new("/"),
                canonical.strip_prefix("/").unwrap_or(&canonical),
            )
            .and_then(|()| witness.add(&canonical, Path::new(PROFILE_FILE)));
        if stamped.is_some()
            && let Some(p) = self.lock().cached_profile(&canonical, &witness)
        {
            return Ok(p);
        }
        let profile = Arc::new(runx_profile::load(dir)?);
        let mut after = Witness::default();
        let unchanged = stamped.is_some()
            && after
                .add(
                    Path::new("/"),
                    canonical.strip_prefix("/").unwrap_or(&canonical),
                )
                .and_then(|()| after.add(&canonical, Path::new(PROFILE_FILE)))
                .is_some()
            && after == witness;
        if unchanged
            && profile.dir == canonical
            && !uses_packets(&profile)
            && !witness.unsettled(self.settled)
        {
            self.lock()
                .keep_profile(canonical, profile.clone(), witness);
        }
        Ok(profile)
    }

    /// The module closure of `entry` in the package at `root` (canonical), as
    /// [`collect_bundle`] collects it: from the cache while every module of it and every
    /// directory on their way are unchanged.
    pub(crate) fn bundle(
        &self,
        root: &Path,
        entry: &str,
        source_limit: usize,
    ) -> Result<Collected, BundleError> {
        let key = (root.to_path_buf(), entry.to_string());
        if let Some(hit) = self.lock().cached_bundle(&key, source_limit) {
            return Ok(hit);
        }
        let bundle = collect_bundle(root, entry, source_limit)?;
        let collected = Collected {
            digest: bundle.digest(),
            bundle: Arc::new(bundle),
        };
        if let Some(witness) = bundle_witness(root, &collected.bundle, self.settled) {
            self.lock()
                .keep_bundle(key, &collected, source_limit, witness);
        }
        Ok(collected)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        // A panic while holding the lock leaves at worst a stale map: every entry is checked
        // against its witness before use.
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Whether any input of the profile names a packet schema (searched for up the tree).
fn uses_packets(p: &Profile) -> bool {
    p.input_definitions.values().any(|d| d.packet.is_some())
        || p.runners
            .values()
            .any(|r| r.inputs.values().any(|d| d.packet.is_some()))
}

/// The stamps of every module of `bundle` and the directories on their way, taken after the
/// bundle was collected; `None` (do not cache) when a module's bytes are no longer those
/// collected, or one was changed too recently to trust its stamp.
fn bundle_witness(root: &Path, bundle: &ModuleBundle, settled: Duration) -> Option<Witness> {
    let mut witness = Witness::default();
    witness.add(Path::new("/"), root.strip_prefix("/").ok()?)?;
    for path in bundle.modules.keys() {
        witness.add(root, Path::new(path))?;
    }
    if witness.unsettled(settled) {
        return None;
    }
    // Read again after stamping: a module changed between its read and its stamp would
    // otherwise stand under the new stamp with the old bytes.
    let scope = Scope::open(root).ok()?;
    for (path, source) in &bundle.modules {
        let bytes = scope.read(path, source.len() as u64 + 1).ok()?;
        if bytes != source.as_bytes() {
            return None;
        }
    }
    Some(witness)
}

impl Entries {
    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    fn cached_profile(&mut self, dir: &Path, witness: &Witness) -> Option<Arc<Profile>> {
        let now = self.tick();
        let entry = self.profiles.get_mut(dir)?;
        if entry.witness != *witness {
            let bytes = entry.bytes;
            self.profiles.remove(dir);
            self.profile_bytes -= bytes;
            return None;
        }
        entry.used = now;
        Some(entry.profile.clone())
    }

    fn keep_profile(&mut self, dir: PathBuf, profile: Arc<Profile>, witness: Witness) {
        // The last stamp is `X.yaml`'s.
        let bytes = witness
            .0
            .last()
            .map_or(0, |(_, s)| usize::try_from(s.size).unwrap_or(usize::MAX));
        if bytes > MAX_PROFILE_BYTES {
            return;
        }
        if let Some(old) = self.profiles.remove(&dir) {
            self.profile_bytes -= old.bytes;
        }
        while self.profiles.len() >= MAX_PACKAGES || self.profile_bytes + bytes > MAX_PROFILE_BYTES
        {
            let Some(oldest) = self
                .profiles
                .iter()
                .min_by_key(|(_, e)| e.used)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            if let Some(gone) = self.profiles.remove(&oldest) {
                self.profile_bytes -= gone.bytes;
            }
        }
        let used = self.tick();
        self.profile_bytes += bytes;
        self.profiles.insert(
            dir,
            ProfileEntry {
                profile,
                witness,
                bytes,
                used,
            },
        );
    }

    fn cached_bundle(&mut self, key: &(PathBuf, String), limit: usize) -> Option<Collected> {
        let now = self.tick();
        let entry = self.bundles.get_mut(key)?;
        if entry.limit != limit || !entry.witness.holds() {
            let bytes = entry.bytes;
            self.bundles.remove(key);
            self.source_bytes -= bytes;
            return None;
        }
        entry.used = now;
        Some(Collected {
            bundle: entry.bundle.clone(),
            digest: entry.digest.clone(),
        })
    }

    fn keep_bundle(
        &mut self,
        key: (PathBuf, String),
        collected: &Collected,
        limit: usize,
        witness: Witness,
    ) {
        let bytes: usize = collected
            .bundle
            .modules
            .iter()
            .map(|(p, s)| p.len() + s.len())
            .sum();
        if bytes > MAX_SOURCE_BYTES {
            return;
        }
        if let Some(old) = self.bundles.remove(&key) {
            self.source_bytes -= old.bytes;
        }
        while self.bundles.len() >= MAX_PACKAGES || self.source_bytes + bytes > MAX_SOURCE_BYTES {
            let Some(oldest) = self
                .bundles
                .iter()
                .min_by_key(|(_, e)| e.used)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            if let Some(gone) = self.bundles.remove(&oldest) {
                self.source_bytes -= gone.bytes;
            }
        }
        let used = self.tick();
        self.source_bytes += bytes;
        self.bundles.insert(
            key,
            BundleEntry {
                bundle: collected.bundle.clone(),
                digest: collected.digest.clone(),
                limit,
                bytes,
                witness,
                used,
            },
        );
    }
}

#[cfg(test)]
#[path = "packages_tests.rs"]
mod tests;
