//! The package cache: what it keeps, and every change that must end a kept entry.

use super::{Packages, SETTLED};
use std::fs::{self, File, FileTimes};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

const LIMIT: usize = 1 << 20;

/// A cache that trusts any stamp at once (the settle time is tested on its own).
fn eager() -> Packages {
    Packages {
        entries: Mutex::default(),
        settled: Duration::ZERO,
    }
}

fn package(dir: &Path, skill: &str, module: &str) {
    fs::create_dir_all(dir.join("src")).unwrap();
    fs::write(
        dir.join("X.yaml"),
        format!("skill: {skill}\nrun:\n  type: javascript\n  module: src/main.mjs\n"),
    )
    .unwrap();
    fs::write(
        dir.join("src/main.mjs"),
        "import { v } from './lib.mjs';\nexport default () => v;\n",
    )
    .unwrap();
    fs::write(dir.join("src/lib.mjs"), module).unwrap();
}

/// Rewrites `path` with `text`, giving it a modification time no earlier write had, so the
/// change shows in its stamp even within one tick of the file system's clock.
fn rewrite(path: &Path, text: &str, n: u64) {
    fs::write(path, text).unwrap();
    let when = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000 + n);
    File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_times(FileTimes::new().set_modified(when))
        .unwrap();
}

#[test]
fn an_unchanged_package_is_read_once() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("pkg");
    package(&dir, "p", "export const v = 1;\n");
    let cache = eager();
    let a = cache.profile(&dir).unwrap();
    let b = cache.profile(&dir).unwrap();
    assert!(Arc::ptr_eq(&a, &b));
    let x = cache.bundle(&a.dir, "src/main.mjs", LIMIT).unwrap();
    let y = cache.bundle(&a.dir, "src/main.mjs", LIMIT).unwrap();
    assert!(Arc::ptr_eq(&x.bundle, &y.bundle));
    assert_eq!(x.digest, y.digest);
    // A lower source limit collects again, and refuses what it must.
    assert!(cache.bundle(&a.dir, "src/main.mjs", 10).is_err());
}

#[test]
fn a_changed_file_is_read_again() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("pkg");
    package(&dir, "p", "export const v = 1;\n");
    let cache = eager();
    let p = cache.profile(&dir).unwrap();
    let first = cache.bundle(&p.dir, "src/main.mjs", LIMIT).unwrap();
    // The same size, another text: only the stamp tells.
    rewrite(&dir.join("src/lib.mjs"), "export const v = 2;\n", 1);
    let second = cache.bundle(&p.dir, "src/main.mjs", LIMIT).unwrap();
    assert_ne!(first.digest, second.digest);
    assert_eq!(
        second.bundle.modules["src/lib.mjs"],
        "export const v = 2;\n"
    );
    rewrite(
        &dir.join("X.yaml"),
        "skill: q\nrun:\n  type: javascript\n  module: src/main.mjs\n",
        2,
    );
    assert_eq!(cache.profile(&dir).unwrap().skill, "q");
}

#[test]
fn a_module_or_folder_swapped_for_a_link_is_refused_as_on_a_first_load() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("pkg");
    package(&dir, "p", "export const v = 1;\n");
    let outside = tmp.path().join("outside");
    fs::create_dir_all(&outside).unwrap();
    fs::write(outside.join("lib.mjs"), "export const v = 666;\n").unwrap();
    let cache = eager();
    let p = cache.profile(&dir).unwrap();
    cache.bundle(&p.dir, "src/main.mjs", LIMIT).unwrap();
    fs::remove_file(dir.join("src/lib.mjs")).unwrap();
    std::os::unix::fs::symlink(outside.join("lib.mjs"), dir.join("src/lib.mjs")).unwrap();
    assert!(cache.bundle(&p.dir, "src/main.mjs", LIMIT).is_err());
    // The folder itself, with a file of the same bytes behind it.
    fs::remove_file(dir.join("src/lib.mjs")).unwrap();
    fs::write(dir.join("src/lib.mjs"), "export const v = 1;\n").unwrap();
    cache.bundle(&p.dir, "src/main.mjs", LIMIT).unwrap();
    fs::rename(dir.join("src"), tmp.path().join("src-real")).unwrap();
    std::os::unix::fs::symlink(tmp.path().join("src-real"), dir.join("src")).unwrap();
    assert!(cache.bundle(&p.dir, "src/main.mjs", LIMIT).is_err());
}

#[test]
fn a_package_swapped_for_a_link_and_namesakes_are_other_packages() {
    let tmp = tempfile::tempdir().unwrap();
    let (one, two) = (tmp.path().join("one/pkg"), tmp.path().join("two/pkg"));
    package(&one, "same", "export const v = 1;\n");
    package(&two, "same", "export const v = 2;\n");
    let cache = eager();
    let a = cache.profile(&one).unwrap();
    let b = cache.profile(&two).unwrap();
    assert_ne!(a.dir, b.dir);
    let x = cache.bundle(&a.dir, "src/main.mjs", LIMIT).unwrap();
    let y = cache.bundle(&b.dir, "src/main.mjs", LIMIT).unwrap();
    assert_ne!(x.digest, y.digest);
    // `one/pkg` becomes a link to `two/pkg`: the step reads two's package.
    let link = tmp.path().join("link");
    std::os::unix::fs::symlink(&one, &link).unwrap();
    assert_eq!(cache.profile(&link).unwrap().dir, a.dir);
    fs::remove_file(&link).unwrap();
    std::os::unix::fs::symlink(&two, &link).unwrap();
    assert_eq!(cache.profile(&link).unwrap().dir, b.dir);
}

#[test]
fn a_file_changed_just_now_is_not_trusted() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("pkg");
    package(&dir, "p", "export const v = 1;\n");
    let cache = Packages::default();
    assert_eq!(cache.settled, SETTLED);
    let a = cache.profile(&dir).unwrap();
    let b = cache.profile(&dir).unwrap();
    assert!(
        !Arc::ptr_eq(&a, &b),
        "a file written just now is read again"
    );
    let x = cache.bundle(&a.dir, "src/main.mjs", LIMIT).unwrap();
    let y = cache.bundle(&a.dir, "src/main.mjs", LIMIT).unwrap();
    assert!(!Arc::ptr_eq(&x.bundle, &y.bundle));
}

#[test]
fn packet_profiles_are_not_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("pkg");
    package(&dir, "p", "export const v = 1;\n");
    fs::create_dir_all(dir.join("packets")).unwrap();
    fs::write(
        dir.join("packets/t.json"),
        r#"{"x-runx-packet-id": "t.v1", "type": "object"}"#,
    )
    .unwrap();
    fs::write(
        dir.join("X.yaml"),
        "skill: p\nrun:\n  type: javascript\n  module: src/main.mjs\n  inputs:\n    t: { type: json, packet: t.v1 }\n",
    )
    .unwrap();
    let cache = eager();
    let a = cache.profile(&dir).unwrap();
    let b = cache.profile(&dir).unwrap();
    assert!(!Arc::ptr_eq(&a, &b));
}

#[test]
fn the_cache_stays_within_its_bounds() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = eager();
    for n in 0..(super::MAX_PACKAGES + 8) {
        let dir = tmp.path().join(format!("p{n}"));
        package(&dir, "p", "export const v = 1;\n");
        let p = cache.profile(&dir).unwrap();
        cache.bundle(&p.dir, "src/main.mjs", LIMIT).unwrap();
    }
    let entries = cache.lock();
    assert_eq!(entries.profiles.len(), super::MAX_PACKAGES);
    assert_eq!(entries.bundles.len(), super::MAX_PACKAGES);
    assert!(entries.source_bytes <= super::MAX_SOURCE_BYTES);
    let kept: usize = entries.bundles.values().map(|e| e.bytes).sum();
    assert_eq!(kept, entries.source_bytes);
    let profiles: usize = entries.profiles.values().map(|e| e.bytes).sum();
    assert_eq!(profiles, entries.profile_bytes);
    // The first packages went first.
    assert!(!entries.profiles.keys().any(|k| k.ends_with("p0")));
}

#[test]
fn a_folder_replaced_by_another_at_the_same_path_is_another_package() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("pkg");
    package(&dir, "first", "export const v = 1;\n");
    let cache = eager();
    assert_eq!(cache.profile(&dir).unwrap().skill, "first");
    fs::rename(&dir, tmp.path().join("old")).unwrap();
    package(&dir, "second", "export const v = 1;\n");
    // Even with `X.yaml`'s times made equal, the folder and file are other inodes.
    assert_eq!(cache.profile(&dir).unwrap().skill, "second");
}

/// The cost of the check a kept package passes before each step, beside loading and collecting
/// it afresh, in one run (a ratio; nothing is asserted):
/// `cargo test --release -p runx-runtime -- --ignored measure_the_check --nocapture`.
#[test]
#[ignore = "a measurement, run by hand"]
fn measure_the_check() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("pkg");
    package(&dir, "p", "export const v = 1;\n");
    let cache = eager();
    let p = cache.profile(&dir).unwrap();
    cache.bundle(&p.dir, "src/main.mjs", LIMIT).unwrap();
    let n = 20_000;
    let t = std::time::Instant::now();
    for _ in 0..n {
        let p = cache.profile(&dir).unwrap();
        cache.bundle(&p.dir, "src/main.mjs", LIMIT).unwrap();
    }
    let hit = t.elapsed() / n;
    let t = std::time::Instant::now();
    for _ in 0..200 {
        runx_profile::load(&dir).unwrap();
        runx_worker::collect_bundle(&p.dir, "src/main.mjs", LIMIT).unwrap();
    }
    let miss = t.elapsed() / 200;
    eprintln!(
        "the check of a kept package: {hit:?} per step; load and collect afresh: {miss:?} ({:.1}x)",
        miss.as_secs_f64() / hit.as_secs_f64()
    );
}
