//! Loaded packages kept between runs: a warm step does no profile parsing and no module
//! collecting, while a changed file is picked up by the very next step.
//!
//! A cached profile or module closure stands only while the files it was made from hold the
//! bytes it was made from. Before each step, `X.yaml` and every module of the closure are read
//! again, through the same contained opens a first load uses ([`Scope`]: no symbolic link at
//! any component, regular files only), and compared with what was kept: equal bytes give an
//! equal profile and an equal closure, since parsing and import resolution depend on nothing
//! else. Any difference, or any file that can no longer be read so, loads the package afresh,
//! with every check and every message a first load gives. Reading a few files costs a fraction
//! of parsing and compiling them (`measure_the_check` in `packages_tests.rs` times both).
//!
//! File metadata (`lstat` times and sizes) is not trusted for this: a write through a shared
//! mapping changes a file's bytes without changing its times, and a network file system may
//! report old attributes for new content.
//!
//! Entries are keyed by the package's canonical directory, so two packages of the same name in
//! different directories never share one. Profiles whose inputs name packet schemas are not
//! cached: their schemas are searched for in directories up the tree, where a new file may
//! change the answer. The cache is bounded ([`MAX_PACKAGES`], [`MAX_SOURCE_BYTES`],
//! [`MAX_PROFILE_BYTES`]); the least recently used entry goes first.

use runx_profile::{PROFILE_FILE, Profile, ProfileError};
use runx_worker::{BundleError, ModuleBundle, Scope, collect_bundle};
use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

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
    if is_bare_name(given) && !direct.is_dir() {
        let conventional = base.join("skills").join(given);
        if conventional.is_dir() {
            return conventional;
        }
    }
    direct
}

/// Whether `given` is one plain name (`helpdesk`), which [`package_dir`] also looks for as
/// `skills/NAME`, not a path.
pub fn is_bare_name(given: &Path) -> bool {
    let mut parts = given.components();
    matches!(
        (parts.next(), parts.next()),
        (Some(Component::Normal(_)), None)
    )
}

/// A module closure as collected, with its digest.
pub(crate) struct Collected {
    pub bundle: Arc<ModuleBundle>,
    pub digest: String,
}

struct ProfileEntry {
    profile: Arc<Profile>,
    /// The `X.yaml` text it was parsed from.
    text: String,
    used: u64,
}

struct BundleEntry {
    bundle: Arc<ModuleBundle>,
    digest: String,
    /// The source limit it was collected under: a lower limit collects again (and refuses).
    limit: usize,
    bytes: usize,
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
#[derive(Default)]
pub(crate) struct Packages {
    entries: Mutex<Entries>,
}

impl Packages {
    /// The profile of the package in `dir`, as [`runx_profile::load`] reads it: kept while
    /// `X.yaml` holds the same text.
    pub(crate) fn profile(&self, dir: &Path) -> Result<Arc<Profile>, ProfileError> {
        let (canonical, text) = runx_profile::read_text(dir)?;
        if let Some(p) = self.lock().cached_profile(&canonical, &text) {
            return Ok(p);
        }
        let file = canonical.join(PROFILE_FILE);
        let profile = Arc::new(runx_profile::parse(&text, &canonical, &file)?);
        if !uses_packets(&profile) {
            self.lock().keep_profile(canonical, profile.clone(), text);
        }
        Ok(profile)
    }

    /// The module closure of `entry` in the package at `root` (canonical), as
    /// [`collect_bundle`] collects it: kept while every module of it holds the same bytes.
    pub(crate) fn bundle(
        &self,
        root: &Path,
        entry: &str,
        source_limit: usize,
    ) -> Result<Collected, BundleError> {
        let key = (root.to_path_buf(), entry.to_string());
        let kept = self.lock().cached_bundle(&key, source_limit);
        if let Some(hit) = kept {
            if unchanged(root, &hit.bundle) {
                return Ok(hit);
            }
            self.lock().forget_bundle(&key);
        }
        let bundle = collect_bundle(root, entry, source_limit)?;
        let collected = Collected {
            digest: bundle.digest(),
            bundle: Arc::new(bundle),
        };
        self.lock().keep_bundle(key, &collected, source_limit);
        Ok(collected)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        // A panic while holding the lock leaves at worst a stale map: every entry is compared
        // with the files before use.
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Whether every module of `bundle` still holds its bytes, read as a first load reads it.
fn unchanged(root: &Path, bundle: &ModuleBundle) -> bool {
    let Ok(scope) = Scope::open(root) else {
        return false;
    };
    bundle.modules.iter().all(|(path, source)| {
        scope
            .read(path, source.len() as u64 + 1)
            .is_ok_and(|bytes| bytes == source.as_bytes())
    })
}

/// Whether any input of the profile names a packet schema (searched for up the tree).
fn uses_packets(p: &Profile) -> bool {
    p.input_definitions.values().any(|d| d.packet.is_some())
        || p.runners
            .values()
            .any(|r| r.inputs.values().any(|d| d.packet.is_some()))
}

impl Entries {
    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    fn cached_profile(&mut self, dir: &Path, text: &str) -> Option<Arc<Profile>> {
        let now = self.tick();
        let entry = self.profiles.get_mut(dir)?;
        if entry.text != text {
            self.forget_profile(dir);
            return None;
        }
        entry.used = now;
        Some(entry.profile.clone())
    }

    fn keep_profile(&mut self, dir: PathBuf, profile: Arc<Profile>, text: String) {
        let bytes = text.len();
        if bytes > MAX_PROFILE_BYTES {
            return;
        }
        self.forget_profile(&dir);
        while self.profiles.len() >= MAX_PACKAGES || self.profile_bytes + bytes > MAX_PROFILE_BYTES
        {
            let Some(oldest) = least_used(&self.profiles, |e| e.used) else {
                break;
            };
            self.forget_profile(&oldest);
        }
        let used = self.tick();
        self.profile_bytes += bytes;
        self.profiles.insert(
            dir,
            ProfileEntry {
                profile,
                text,
                used,
            },
        );
    }

    fn cached_bundle(&mut self, key: &(PathBuf, String), limit: usize) -> Option<Collected> {
        let now = self.tick();
        let entry = self.bundles.get_mut(key)?;
        if entry.limit != limit {
            self.forget_bundle(key);
            return None;
        }
        entry.used = now;
        Some(Collected {
            bundle: entry.bundle.clone(),
            digest: entry.digest.clone(),
        })
    }

    fn forget_profile(&mut self, dir: &Path) {
        if let Some(gone) = self.profiles.remove(dir) {
            self.profile_bytes -= gone.text.len();
        }
    }

    fn forget_bundle(&mut self, key: &(PathBuf, String)) {
        if let Some(gone) = self.bundles.remove(key) {
            self.source_bytes -= gone.bytes;
        }
    }

    fn keep_bundle(&mut self, key: (PathBuf, String), collected: &Collected, limit: usize) {
        let bytes: usize = collected
            .bundle
            .modules
            .iter()
            .map(|(p, s)| p.len() + s.len())
            .sum();
        if bytes > MAX_SOURCE_BYTES {
            return;
        }
        self.forget_bundle(&key);
        while self.bundles.len() >= MAX_PACKAGES || self.source_bytes + bytes > MAX_SOURCE_BYTES {
            let Some(oldest) = least_used(&self.bundles, |e| e.used) else {
                break;
            };
            self.forget_bundle(&oldest);
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
                used,
            },
        );
    }
}

/// The key of the entry used longest ago.
fn least_used<K: Clone, V>(entries: &HashMap<K, V>, used: impl Fn(&V) -> u64) -> Option<K> {
    entries
        .iter()
        .min_by_key(|(_, e)| used(e))
        .map(|(k, _)| k.clone())
}

#[cfg(test)]
#[path = "packages_tests.rs"]
mod tests;
