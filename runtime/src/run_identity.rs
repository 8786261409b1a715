//! A run's id as runx 0.8.2 derives it, so that the same package and inputs get the same
//! `run_id` here and in runx (in the envelope, the receipt and CI results).
//!
//! runx hashes, as compact JSON in this order, `{"schema": "runx.skill_run_identity.v1",
//! "skill", "runner", "source_type", "request_id": null, "inputs", "package_digest",
//! "execution_closure_digest"}`, where `inputs` are the caller's inputs with the runner's
//! declared defaults filled in (keys sorted at every depth), and takes
//! `run_<runner>_<first 16 hex of its SHA-256>`:
//!
//! - the package digest frames every file of the package (the nearest directory up from the
//!   profile holding `SKILL.md`; `.git`, `.runx`, `node_modules` and `target` left out) by its
//!   relative path and bytes, in path order, after `runx.skill-package.v1\0`;
//! - the execution closure digest frames runx's release (`0.8.2`), the skill, the runner and
//!   the package digest after `runx.execution-closure.v1\0`.
//!
//! Where runx would not admit the package (a symbolic link or another kind of file in it, a
//! path that is not UTF-8, more than 500 files or 20 MiB) or binds more than this runtime
//! knows (an input packet's schema), there is no runx id to match, and [`runx_run_id`] is
//! `None`: the run keeps this runtime's own rule (`receipt::run_id`).

use runx_profile::{Profile, Runner};
use runx_receipts::runx::identifier_segment;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The runx release whose rule this is; runx binds it into every execution closure.
const RUNX_RELEASE: &str = "0.8.2";

/// runx's admission limits for a package: more files or bytes, and runx refuses it.
const MAX_FILES: usize = 500;
const MAX_BYTES: u64 = 20 * 1024 * 1024;

/// Directories walked at most: runx has no such bound, but a package root found by walking up
/// (the nearest `SKILL.md`) may be a large tree of empty directories, which no file bound
/// would stop.
const MAX_DIRS: usize = 10_000;

/// Entries runx leaves out of a package, at any depth.
const IGNORED: [&str; 4] = [".git", ".runx", "node_modules", "target"];

/// The id runx 0.8.2 gives a run of `runner` of `profile` with `inputs` (as the caller gave
/// them; the runner's defaults are filled in here), or `None` where runx has none to match
/// (see the module documentation).
pub fn runx_run_id(
    profile: &Profile,
    runner: &Runner,
    inputs: &Map<String, Value>,
) -> Option<String> {
    if runner.inputs.values().any(|decl| decl.packet.is_some()) {
        return None;
    }
    let package_digest = package_digest(&package_root(&profile.dir))?;
    let closure_digest = {
        let mut framed = b"runx.execution-closure.v1\0".to_vec();
        for field in [RUNX_RELEASE, &profile.skill, &runner.name, &package_digest] {
            frame(&mut framed, field.as_bytes());
        }
        prefixed(&Sha256::digest(&framed))
    };
    // The inputs with the defaults of absent ones, by reference: a step's inputs are held once
    // (they may be hundreds of megabytes of small values), and their text goes straight into
    // the hash. serde_json's maps are sorted at every depth: runx's `BTreeMap` order.
    let mut given: BTreeMap<&str, &Value> = inputs.iter().map(|(k, v)| (k.as_str(), v)).collect();
    for (name, decl) in &runner.inputs {
        // As runx: a default fills an absent input, never one given as null.
        if let Some(default) = &decl.default {
            given.entry(name.as_str()).or_insert(default);
        }
    }
    let mut hash = Sha256::new();
    hash.update(format!(
        "{{\"schema\":\"runx.skill_run_identity.v1\",\"skill\":{},\"runner\":{},\"source_type\":{},\"request_id\":null,\"inputs\":",
        Value::from(profile.skill.as_str()),
        Value::from(runner.name.as_str()),
        Value::from(runner.kind.type_name()),
    ));
    serde_json::to_writer(Hashing(&mut hash), &given).ok()?;
    hash.update(format!(
        ",\"package_digest\":{},\"execution_closure_digest\":{}}}",
        Value::from(package_digest.as_str()),
        Value::from(closure_digest.as_str()),
    ));
    let hex = hex::encode(hash.finalize());
    Some(format!(
        "run_{}_{}",
        identifier_segment(&runner.name),
        &hex[..16]
    ))
}

/// The package a profile belongs to: the nearest directory from `dir` up that holds
/// `SKILL.md` (a nested profile, `graph/plan/X.yaml`, belongs to its package); `dir` itself
/// when none does.
fn package_root(dir: &Path) -> PathBuf {
    dir.ancestors()
        .find(|d| d.join("SKILL.md").is_file())
        .unwrap_or(dir)
        .to_path_buf()
}

/// runx's package digest of the files under `root`, or `None` where runx would refuse the
/// package.
fn package_digest(root: &Path) -> Option<String> {
    let mut files = Vec::new();
    let mut dirs = 0;
    collect(root, root, &mut files, &mut dirs)?;
    files.sort();
    let mut hash = Sha256::new();
    hash.update(b"runx.skill-package.v1\0");
    let mut total = 0u64;
    for (relative, path) in &files {
        // Opened without following a link: a file swapped for one since it was listed is
        // refused, as a link would have been.
        let mut file = open_regular(path)?;
        let len = file.metadata().ok()?.len();
        total = total.checked_add(len)?;
        if total > MAX_BYTES {
            return None;
        }
        hash.update((relative.len() as u64).to_be_bytes());
        hash.update(relative.as_bytes());
        let mut bytes = Vec::with_capacity(usize::try_from(len).ok()?);
        // Read no more than was measured: a file growing now cannot push past the bound.
        (&mut file).take(len).read_to_end(&mut bytes).ok()?;
        if bytes.len() as u64 != len {
            return None;
        }
        hash.update(len.to_be_bytes());
        hash.update(&bytes);
    }
    Some(prefixed(&hash.finalize()))
}

/// Lists the regular files under `dir` as (relative path with `/`, path); `None` for a link,
/// another kind of file, a name that is not UTF-8, more than [`MAX_FILES`] files or more than
/// [`MAX_DIRS`] directories.
fn collect(
    root: &Path,
    dir: &Path,
    files: &mut Vec<(String, PathBuf)>,
    dirs: &mut usize,
) -> Option<()> {
    *dirs += 1;
    if *dirs > MAX_DIRS {
        return None;
    }
    for entry in fs::read_dir(dir).ok()? {
        let entry = entry.ok()?;
        let name = entry.file_name();
        let name = name.to_str()?;
        if IGNORED.contains(&name) {
            continue;
        }
        let path = entry.path();
        let kind = fs::symlink_metadata(&path).ok()?.file_type();
        if kind.is_dir() {
            collect(root, &path, files, dirs)?;
        } else if kind.is_file() {
            let relative = path.strip_prefix(root).ok()?.to_str()?.to_string();
            files.push((relative, path));
            if files.len() > MAX_FILES {
                return None;
            }
        } else {
            return None;
        }
    }
    Some(())
}

/// `path` opened for reading if it is a regular file, never through a symbolic link and never
/// blocking on a FIFO.
fn open_regular(path: &Path) -> Option<fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    file.metadata().ok()?.is_file().then_some(file)
}

/// Bytes written into a hash.
struct Hashing<'a>(&'a mut Sha256);

impl std::io::Write for Hashing<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.update(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// runx's framing of one field: its length as a big-endian u64, then its bytes.
fn frame(into: &mut Vec<u8>, field: &[u8]) {
    into.extend_from_slice(&(field.len() as u64).to_be_bytes());
    into.extend_from_slice(field);
}

fn prefixed(digest: &[u8]) -> String {
    format!("sha256:{}", hex::encode(digest))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn package(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let path = dir.path().join(path);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        }
        dir
    }

    const PROFILE: &str = "skill: tp\nrunners:\n  main:\n    default: true\n    type: javascript\n    module: main.mjs\n    inputs:\n      n: { type: number, required: true }\n      label: { type: string, default: x }\n";

    #[test]
    fn the_package_digest_frames_every_file_but_the_ignored() {
        let a = package(&[("SKILL.md", "s"), ("X.yaml", "y"), ("lib/m.mjs", "m")]);
        let b = package(&[
            ("SKILL.md", "s"),
            ("X.yaml", "y"),
            ("lib/m.mjs", "m"),
            (".runx/receipts/r.json", "{}"),
            ("node_modules/p/i.js", ""),
        ]);
        let digest = package_digest(a.path()).unwrap();
        assert_eq!(Some(digest.clone()), package_digest(b.path()));
        let mut expected = b"runx.skill-package.v1\0".to_vec();
        for (path, text) in [("SKILL.md", "s"), ("X.yaml", "y"), ("lib/m.mjs", "m")] {
            frame(&mut expected, path.as_bytes());
            frame(&mut expected, text.as_bytes());
        }
        assert_eq!(digest, prefixed(&Sha256::digest(&expected)));
        fs::write(a.path().join("lib/m.mjs"), "changed").unwrap();
        assert_ne!(Some(digest), package_digest(a.path()));
    }

    #[test]
    fn a_package_runx_would_refuse_has_no_runx_id() {
        let linked = package(&[("SKILL.md", "s")]);
        std::os::unix::fs::symlink("/etc/passwd", linked.path().join("p")).unwrap();
        assert_eq!(package_digest(linked.path()), None);
        let fifo = package(&[("SKILL.md", "s")]);
        nix::unistd::mkfifo(&fifo.path().join("f"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert_eq!(
            package_digest(fifo.path()),
            None,
            "a FIFO is neither read nor waited on"
        );
        let many = package(&[("SKILL.md", "s")]);
        for i in 0..=MAX_FILES {
            fs::write(many.path().join(format!("f{i}")), "").unwrap();
        }
        assert_eq!(package_digest(many.path()), None);
        let deep = package(&[("SKILL.md", "s")]);
        for i in 0..=MAX_DIRS {
            fs::create_dir(deep.path().join(format!("d{i}"))).unwrap();
        }
        assert_eq!(
            package_digest(deep.path()),
            None,
            "a tree of empty directories"
        );
        let big = package(&[("SKILL.md", "s")]);
        fs::write(big.path().join("big"), vec![b'x'; MAX_BYTES as usize + 1]).unwrap();
        assert_eq!(package_digest(big.path()), None);
    }

    #[test]
    fn the_id_takes_defaults_and_is_the_same_for_the_same_request() {
        let dir = package(&[("SKILL.md", "s"), ("X.yaml", PROFILE), ("main.mjs", "")]);
        let profile = runx_profile::load(dir.path()).unwrap();
        let runner = profile.runner(None).unwrap();
        let given = |v: Value| v.as_object().unwrap().clone();
        let a = runx_run_id(&profile, runner, &given(serde_json::json!({"n": 2}))).unwrap();
        let b = runx_run_id(
            &profile,
            runner,
            &given(serde_json::json!({"n": 2, "label": "x"})),
        );
        assert_eq!(Some(a.clone()), b, "the default is filled in");
        assert!(
            a.starts_with("run_main_") && a.len() == "run_main_".len() + 16,
            "{a}"
        );
        let c = runx_run_id(&profile, runner, &given(serde_json::json!({"n": 3})));
        assert_ne!(Some(a), c);
    }
}
