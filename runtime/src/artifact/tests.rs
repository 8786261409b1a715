use super::pipeline::CHUNK_BYTES;
use super::*;
use runx_profile::{PAGE_BYTES, PAGE_COUNT};
use std::time::Duration;

/// The default `page_bytes`: no file admitted at it is ever counted.
const MIB: usize = PAGE_BYTES.default as usize;

/// `body` written as `name` in a new directory, and admitted from it; the directory lives as
/// long as the caller keeps it.
fn admitted(name: &str, body: &[u8]) -> (tempfile::TempDir, Artifact) {
    admitted_at(name, body, MIB)
}

#[test]
fn the_snapshot_does_not_follow_the_source_once_copied() {
    let (dir, a) = admitted("a.json", b"[1, 2, 3]");
    a.finish().unwrap();
    std::fs::write(dir.path().join("a.json"), b"[4, 5, 6, 7, 8]").unwrap();
    assert_eq!(a.data(), b"[1, 2, 3]");
    assert_eq!(a.bytes, 9);
    assert_eq!(
        a.whole_digest().unwrap(),
        runx_receipts::sha256_hex(b"[1, 2, 3]")
    );
    let b = admit("a.json", dir.path(), "test", MIB).unwrap();
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
fn the_snapshot_fills_in_order_and_its_digest_comes_once_it_is_whole() {
    let body = chunky(5);
    let (_dir, a) = admitted("c.bin", &body);
    assert_eq!(a.bytes, body.len() as u64);
    // Whatever is written, at any moment, is a prefix of the source, and the digest is not
    // known before all of it is.
    let first = a
        .wait_filled(1, Duration::from_secs(10))
        .unwrap()
        .expect("a first chunk");
    assert!(!first.is_empty());
    assert_eq!(first, &body[..first.len()]);
    if let Some(digest) = a.wait_digest(Duration::ZERO).unwrap() {
        assert_eq!(a.data().len(), body.len(), "{digest}");
    }
    assert_eq!(a.whole_digest().unwrap(), runx_receipts::sha256_hex(&body));
    assert_eq!(a.data(), &body[..]);
    a.finish().unwrap();
    assert!(a.admitted_in().is_some());
}

#[test]
fn a_cancelled_wait_gives_up_and_an_uncancelled_one_gets_its_bytes() {
    let body = chunky(4);
    let (_dir, a) = admitted("w.bin", &body);
    // A run interrupted before (or while) it waits stops waiting, whatever admission does.
    let cancelled = CancelToken::new();
    cancelled.cancel();
    assert_eq!(a.digest_unless(&cancelled).unwrap(), None);
    assert_eq!(a.filled_unless(body.len(), &cancelled).unwrap(), None);
    // One that goes on waits as long as admission takes, and gets what it waited for.
    let running = CancelToken::new();
    let written = a.filled_unless(body.len(), &running).unwrap();
    assert_eq!(written, Some(&body[..]));
    let digest = a.digest_unless(&running).unwrap();
    assert_eq!(digest, Some(runx_receipts::sha256_hex(&body).as_str()));
}

#[test]
fn a_source_that_shrinks_while_it_is_read_fails_admission() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.bin");
    let body = chunky(3);
    std::fs::write(&path, &body[..body.len() - 1]).unwrap();
    // The pass as admission starts it, told the size the file had when it was opened: one
    // byte more than it now holds.
    let progress = Progress::new(0);
    Pass {
        source: std::fs::File::open(&path).unwrap(),
        snapshot: Some(tempfile::tempfile().unwrap()),
        total: body.len(),
        started: std::time::Instant::now(),
        opened: None,
        most_significant: None,
    }
    .run(&progress);
    let failure = progress
        .wait(Duration::ZERO, |p| p.digest().is_some())
        .unwrap_err();
    assert!(matches!(failure, Failure::Changed), "{failure:?}");
    assert_eq!(progress.digest(), None, "no digest for bytes not all read");
    // As a run sees it.
    let error = AdmissionError::Changed {
        path: "d.bin".into(),
    };
    assert_eq!(error.code(), "artifact_changed");
    assert!(error.to_string().contains("d.bin"), "{error}");
}

#[test]
fn a_source_written_while_it_is_read_fails_admission() {
    use std::io::{Seek as _, Write as _};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.bin");
    let body = chunky(2);
    std::fs::write(&path, &body).unwrap();
    let source = std::fs::File::open(&path).unwrap();
    let opened = Stamp::of(&source).unwrap();
    // Written in place, same size, as the pass reads: a byte, and its modification time.
    let mut writer = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    writer.seek(std::io::SeekFrom::Start(10)).unwrap();
    writer.write_all(b"x").unwrap();
    writer
        .set_modified(std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1))
        .unwrap();
    let progress = Progress::new(0);
    Pass {
        source,
        snapshot: Some(tempfile::tempfile().unwrap()),
        total: body.len(),
        started: std::time::Instant::now(),
        opened: Some(opened),
        most_significant: None,
    }
    .run(&progress);
    let failure = progress
        .wait(Duration::ZERO, |p| p.digest().is_some())
        .unwrap_err();
    assert!(matches!(failure, Failure::Changed), "{failure:?}");
    // Untouched, the same pass succeeds.
    std::fs::write(&path, &body).unwrap();
    let source = std::fs::File::open(&path).unwrap();
    let progress = Progress::new(0);
    Pass {
        opened: Some(Stamp::of(&source).unwrap()),
        source,
        snapshot: Some(tempfile::tempfile().unwrap()),
        total: body.len(),
        started: std::time::Instant::now(),
        most_significant: None,
    }
    .run(&progress);
    assert_eq!(progress.digest(), Some(&*runx_receipts::sha256_hex(&body)));
}

#[test]
fn dropping_an_artifact_stops_its_admission() {
    let (_dir, a) = admitted("big.bin", &chunky(64));
    let progress = Arc::clone(&a.progress);
    drop(a);
    // The pass is over (the drop joined it): it either finished first or stopped.
    match progress.wait(Duration::ZERO, |p| p.digest().is_some()) {
        Ok(finished) => assert!(finished),
        Err(failure) => assert!(matches!(failure, Failure::Stopped), "{failure:?}"),
    }
}

#[test]
fn the_snapshot_is_an_unnamed_read_only_file_on_disk() {
    use std::io::Write as _;
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::PermissionsExt;
    let (_dir, a) = admitted("a.json", b"[1, 2, 3]");
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
    assert_eq!(
        a.whole_digest().unwrap(),
        runx_receipts::sha256_hex(a.data())
    );
}

#[test]
fn released_ranges_read_back_unchanged() {
    let body: Vec<u8> = (0..3 * 4096 + 100).map(|i| (i % 251) as u8).collect();
    let (_dir, a) = admitted("b.bin", &body);
    a.finish().unwrap();
    a.release(0, body.len());
    assert_eq!(a.data(), &body[..]);
}

/// At one byte a page, a run's 4096 pages hold 73,728 bytes that are not whitespace at most
/// (64 KiB of head, then a byte and a comma a page): a file with more is refused once it is
/// read whole, with the figures a person needs; one of any size whose records fit is not.
#[test]
fn a_file_that_cannot_fit_in_a_runs_pages_is_refused_by_its_admission() {
    let most = 65_536 + 4096 * 2;
    let fits = format!("window.x = [1,{}2]", " \n".repeat(600_000));
    let (_dir, a) = admitted_at("fits.js", fits.as_bytes(), 1);
    assert!(a.may_not_fit(), "larger than the bound: counted");
    a.finish().unwrap();
    // Its records alone: two pages. One more significant byte than fit is refused.
    let over = format!("[{}]", vec!["1"; most / 2].join(","));
    assert_eq!(framing::significant_bytes(over.as_bytes()), most as u64 + 1);
    let (_dir, a) = admitted_at("over.json", over.as_bytes(), 1);
    let error = a.finish().unwrap_err();
    assert!(
        matches!(
            error,
            AdmissionError::TooManyPages {
                bytes: 73_729,
                significant: 73_729,
                page_bytes: 1,
                least_pages: 4097,
                least_page_bytes: 2,
                ..
            }
        ),
        "{error:?}"
    );
    assert_eq!(error.code(), "page_count");
    assert_eq!(error.limit(), Some(&PAGE_COUNT));
    let message = error.to_string();
    for figure in [
        "over.json",
        "4097 pages",
        "page_bytes 1,",
        "at most 4096",
        "73729 bytes",
    ] {
        assert!(message.contains(figure), "{figure}: {message}");
    }
    assert!(a.whole_digest().is_err(), "no digest for a refused file");
    // One byte fewer is not counted as too many (it may still need more pages than a run
    // delivers: the bound is a floor).
    let under = format!("[{}]", vec!["1"; most / 2 - 1].join(","));
    let (_dir, a) = admitted_at("under.json", under.as_bytes(), 1);
    a.finish().unwrap();
    // At the default page size no file is counted at all.
    let (_dir, a) = admitted("over.json", over.as_bytes());
    assert!(!a.may_not_fit());
    a.finish().unwrap();
}

/// `body` admitted as `name` for pages of `page_bytes`.
fn admitted_at(name: &str, body: &[u8], page_bytes: usize) -> (tempfile::TempDir, Artifact) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(name), body).unwrap();
    let a = admit(name, dir.path(), "test", page_bytes).unwrap();
    (dir, a)
}

#[test]
fn empty_files_are_admitted() {
    let (_dir, a) = admitted("e.json", b"");
    assert_eq!(a.bytes, 0);
    assert!(a.data().is_empty());
    a.finish().unwrap();
}

/// Admission's rate on a file in the page cache, for comparing changes to the pass:
/// `cargo test --release -p runx-runtime -- --ignored admission_rate --nocapture`. A figure,
/// not a check: times on a shared machine are noisy. The second figure is of a pass that also
/// counts the bytes that are not whitespace (a file larger than 4096 pages of `page_bytes`),
/// to the end, where it refuses these bytes.
#[test]
#[ignore = "a measurement, not a check"]
fn admission_rate() {
    let dir = tempfile::tempdir().unwrap();
    let body = chunky(128);
    std::fs::write(dir.path().join("m.bin"), &body).unwrap();
    let median = |page_bytes: usize| {
        let mut times = Vec::new();
        for _ in 0..5 {
            let started = std::time::Instant::now();
            let a = admit("m.bin", dir.path(), "test", page_bytes).unwrap();
            assert_eq!(a.may_not_fit(), page_bytes == 1);
            assert_eq!(a.finish().is_ok(), page_bytes != 1);
            times.push(started.elapsed().as_secs_f64());
        }
        times.sort_by(f64::total_cmp);
        times[2]
    };
    let (plain, counted) = (median(MIB), median(1));
    let hash_only = {
        let started = std::time::Instant::now();
        let digest = runx_receipts::sha256_hex(&body);
        assert!(digest.starts_with("sha256:"));
        started.elapsed().as_secs_f64()
    };
    println!(
        "admission of 128 MiB: median {:.0} ms, {:.0} ms counted (hashing alone in memory {:.0} ms)",
        plain * 1e3,
        counted * 1e3,
        hash_only * 1e3
    );
}
