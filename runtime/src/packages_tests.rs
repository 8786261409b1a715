//! The package cache: what it keeps, and every change that must end a kept entry.

use super::Packages;
use std::fs::{self, File};
use std::path::Path;
use std::sync::Arc;

const LIMIT: usize = 1 << 20;

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

#[test]
fn an_unchanged_package_is_parsed_and_collected_once() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("pkg");
    package(&dir, "p", "export const v = 1;\n");
    let cache = Packages::default();
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
fn a_changed_file_is_read_again_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("pkg");
    package(&dir, "p", "export const v = 1;\n");
    let cache = Packages::default();
    let p = cache.profile(&dir).unwrap();
    let first = cache.bundle(&p.dir, "src/main.mjs", LIMIT).unwrap();
    // The same size, within the same tick of the file system's clock: only the bytes tell.
    fs::write(dir.join("src/lib.mjs"), "export const v = 2;\n").unwrap();
    let second = cache.bundle(&p.dir, "src/main.mjs", LIMIT).unwrap();
    assert_ne!(first.digest, second.digest);
    assert_eq!(
        second.bundle.modules["src/lib.mjs"],
        "export const v = 2;\n"
    );
    fs::write(
        dir.join("X.yaml"),
        "skill: q\nrun:\n  type: javascript\n  module: src/main.mjs\n",
    )
    .unwrap();
    assert_eq!(cache.profile(&dir).unwrap().skill, "q");
}

/// A shared writable mapping of `path`, as a writer may hold one (it outlives the file handle).
#[allow(unsafe_code, reason = "maps the file the way a writer may")]
fn mapped(path: &Path) -> memmap2::MmapMut {
    let file = File::options().read(true).write(true).open(path).unwrap();
    // SAFETY: the test owns the file; nothing else maps or truncates it.
    unsafe { memmap2::MmapMut::map_mut(&file).unwrap() }
}

/// Writes `text` (same length) over the start of a shared writable mapping.
fn poke(map: &mut memmap2::MmapMut, text: &str) {
    map[..text.len()].copy_from_slice(text.as_bytes());
}

/// Found by an attack: through a shared writable mapping, only the first store to a page
/// updates the file's times; later ones change the bytes and leave size, mtime and ctime alone
/// (ext4 until writeback, tmpfs for ever). A cache trusting `lstat` ran the old module.
#[test]
fn a_module_changed_through_a_mapping_is_read_again() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("pkg");
    package(&dir, "p", "export const v = 1;\n");
    let mut map = mapped(&dir.join("src/lib.mjs"));
    poke(&mut map, "export const v = 1;");
    let cache = Packages::default();
    let p = cache.profile(&dir).unwrap();
    cache.bundle(&p.dir, "src/main.mjs", LIMIT).unwrap();
    poke(&mut map, "export const v = 9;");
    let second = cache.bundle(&p.dir, "src/main.mjs", LIMIT).unwrap();
    assert_eq!(
        second.bundle.modules["src/lib.mjs"],
        "export const v = 9;\n"
    );
}

/// The same for `X.yaml`.
#[test]
fn a_profile_changed_through_a_mapping_is_read_again() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("pkg");
    package(&dir, "p", "export const v = 1;\n");
    let mut map = mapped(&dir.join("X.yaml"));
    poke(&mut map, "skill: p");
    let cache = Packages::default();
    assert_eq!(cache.profile(&dir).unwrap().skill, "p");
    poke(&mut map, "skill: q");
    assert_eq!(cache.profile(&dir).unwrap().skill, "q");
}

#[test]
fn a_module_or_folder_swapped_for_a_link_is_refused_as_on_a_first_load() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("pkg");
    package(&dir, "p", "export const v = 1;\n");
    let outside = tmp.path().join("outside");
    fs::create_dir_all(&outside).unwrap();
    // The same bytes behind the link: only the rule against links refuses it.
    fs::write(outside.join("lib.mjs"), "export const v = 1;\n").unwrap();
    let cache = Packages::default();
    let p = cache.profile(&dir).unwrap();
    cache.bundle(&p.dir, "src/main.mjs", LIMIT).unwrap();
    fs::remove_file(dir.join("src/lib.mjs")).unwrap();
    std::os::unix::fs::symlink(outside.join("lib.mjs"), dir.join("src/lib.mjs")).unwrap();
    assert!(cache.bundle(&p.dir, "src/main.mjs", LIMIT).is_err());
    // The folder itself.
    fs::remove_file(dir.join("src/lib.mjs")).unwrap();
    fs::write(dir.join("src/lib.mjs"), "export const v = 1;\n").unwrap();
    cache.bundle(&p.dir, "src/main.mjs", LIMIT).unwrap();
    fs::rename(dir.join("src"), tmp.path().join("src-real")).unwrap();
    std::os::unix::fs::symlink(tmp.path().join("src-real"), dir.join("src")).unwrap();
    assert!(cache.bundle(&p.dir, "src/main.mjs", LIMIT).is_err());
    // And `X.yaml`.
    fs::rename(dir.join("X.yaml"), tmp.path().join("X.yaml")).unwrap();
    std::os::unix::fs::symlink(tmp.path().join("X.yaml"), dir.join("X.yaml")).unwrap();
    assert!(cache.profile(&dir).is_err());
}

#[test]
fn a_package_swapped_for_a_link_and_namesakes_are_other_packages() {
    let tmp = tempfile::tempdir().unwrap();
    let (one, two) = (tmp.path().join("one/pkg"), tmp.path().join("two/pkg"));
    package(&one, "same", "export const v = 1;\n");
    package(&two, "same", "export const v = 2;\n");
    let cache = Packages::default();
    let a = cache.profile(&one).unwrap();
    let b = cache.profile(&two).unwrap();
    assert_ne!(a.dir, b.dir);
    let x = cache.bundle(&a.dir, "src/main.mjs", LIMIT).unwrap();
    let y = cache.bundle(&b.dir, "src/main.mjs", LIMIT).unwrap();
    assert_ne!(x.digest, y.digest);
    // A link to one package, then to the other: each step reads the package it names.
    let link = tmp.path().join("link");
    std::os::unix::fs::symlink(&one, &link).unwrap();
    assert_eq!(cache.profile(&link).unwrap().dir, a.dir);
    fs::remove_file(&link).unwrap();
    std::os::unix::fs::symlink(&two, &link).unwrap();
    assert_eq!(cache.profile(&link).unwrap().dir, b.dir);
}

#[test]
fn a_folder_replaced_by_another_at_the_same_path_is_read_again() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("pkg");
    package(&dir, "first", "export const v = 1;\n");
    let cache = Packages::default();
    assert_eq!(cache.profile(&dir).unwrap().skill, "first");
    fs::rename(&dir, tmp.path().join("old")).unwrap();
    package(&dir, "secnd", "export const v = 2;\n");
    assert_eq!(cache.profile(&dir).unwrap().skill, "secnd");
    let p = cache.profile(&dir).unwrap();
    let b = cache.bundle(&p.dir, "src/main.mjs", LIMIT).unwrap();
    assert_eq!(b.bundle.modules["src/lib.mjs"], "export const v = 2;\n");
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
    let cache = Packages::default();
    let a = cache.profile(&dir).unwrap();
    let b = cache.profile(&dir).unwrap();
    assert!(!Arc::ptr_eq(&a, &b));
}

#[test]
fn the_cache_stays_within_its_bounds() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = Packages::default();
    for n in 0..(super::MAX_PACKAGES + 8) {
        let dir = tmp.path().join(format!("p{n}"));
        package(&dir, "p", "export const v = 1;\n");
        let p = cache.profile(&dir).unwrap();
        cache.bundle(&p.dir, "src/main.mjs", LIMIT).unwrap();
    }
    let entries = cache.lock();
    assert_eq!(entries.profiles.len(), super::MAX_PACKAGES);
    assert_eq!(entries.bundles.len(), super::MAX_PACKAGES);
    let kept: usize = entries.bundles.values().map(|e| e.bytes).sum();
    assert_eq!(kept, entries.source_bytes);
    let profiles: usize = entries.profiles.values().map(|e| e.text.len()).sum();
    assert_eq!(profiles, entries.profile_bytes);
    // The first packages went first.
    assert!(!entries.profiles.keys().any(|k| k.ends_with("p0")));
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
    let cache = Packages::default();
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
