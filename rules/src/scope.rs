//! Contained opens: files inside a directory, reached without following any symbolic link.
//!
//! Every file runx reads on behalf of a package or a caller (profiles, modules and their
//! imports, paged artifacts, `--inputs FILE`, fixture files, the harness's `fixtures/data`) is
//! opened here, and nowhere else. A [`Scope`] holds a descriptor of its root directory; a path
//! is resolved from that descriptor, component by component, by the kernel:
//!
//! - with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV)` where the kernel
//!   has it (Linux 5.6+), else
//! - by a walk of `openat(O_NOFOLLOW)` calls that holds a descriptor for every directory on the
//!   way.
//!
//! Either way no symbolic link is followed at any component and nothing is looked up by path
//! twice, so swapping a file for a symlink between a check and the open cannot redirect the
//! read. What was opened is then checked on its descriptor (`fstat`): a regular file on the
//! scope's own device. Files are opened non-blocking, so a FIFO cannot stall the open, and every
//! read is bounded by its cap (at most cap + 1 bytes are read, whatever size the file reports).

use nix::errno::Errno;
use nix::fcntl::{OFlag, OpenHow, ResolveFlag, openat, openat2};
use nix::sys::stat::{FileStat, Mode, SFlag, fstat};
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// Why a path inside a scope could not be opened or read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScopeError {
    /// The path is empty or absolute.
    #[error("`{}` must be a relative path inside {}", path.display(), scope.display())]
    NotRelative {
        /// The path as given.
        path: PathBuf,
        /// The scope's directory.
        scope: PathBuf,
    },
    /// The path climbs out of the scope with `..`.
    #[error("`{}` leaves {}", path.display(), scope.display())]
    Escapes {
        /// The path as given.
        path: PathBuf,
        /// The scope's directory.
        scope: PathBuf,
    },
    /// The path is, or passes through, a symbolic link.
    #[error(
        "`{}` is or passes through a symlink; runx follows no symlinks inside {}",
        path.display(), scope.display()
    )]
    Symlink {
        /// The path as given.
        path: PathBuf,
        /// The scope's directory.
        scope: PathBuf,
    },
    /// The path crosses into another file system (a mount point inside the scope).
    #[error("`{}` lies on another file system than {}", path.display(), scope.display())]
    OtherDevice {
        /// The path as given.
        path: PathBuf,
        /// The scope's directory.
        scope: PathBuf,
    },
    /// Nothing exists at the path (or a component on the way is not a directory).
    #[error("`{}` does not exist in {}", path.display(), scope.display())]
    NotFound {
        /// The path as given.
        path: PathBuf,
        /// The scope's directory.
        scope: PathBuf,
    },
    /// The path names something other than what was asked for (a FIFO, a device, a directory).
    #[error("`{}` is {found}, not {wanted}", path.display())]
    WrongType {
        /// The path as given.
        path: PathBuf,
        /// What it is: `a FIFO`, `a character device`, `a directory`, ...
        found: &'static str,
        /// What was asked for: `a regular file` or `a directory`.
        wanted: &'static str,
    },
    /// The file holds more bytes than the cap allows.
    #[error("`{}` holds {bytes} bytes or more; at most {cap} bytes are read", path.display())]
    TooLarge {
        /// The path as given.
        path: PathBuf,
        /// Its size as far as it was read (or as reported).
        bytes: u64,
        /// The cap.
        cap: u64,
    },
    /// The operating system refused the open or the read.
    #[error("`{}` cannot be read in {}: {source}", path.display(), scope.display())]
    Io {
        /// The path as given.
        path: PathBuf,
        /// The scope's directory.
        scope: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
}

/// What an entry of a scope directory is, seen without following it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link (never followed).
    Symlink,
    /// Anything else: FIFO, socket, device.
    Other,
}

/// A directory that contained opens start from.
#[derive(Debug)]
pub struct Scope {
    dir: OwnedFd,
    path: PathBuf,
    dev: u64,
    /// Resolve by the walk even where `openat2` exists (tests of the fallback).
    walk_only: bool,
}

/// Set once the kernel has refused `openat2` (too old, or filtered): the walk is used after.
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

/// How many times an `openat2` that reported a concurrent rename (`EAGAIN`) is tried again.
const OPENAT2_RETRIES: usize = 8;

impl Scope {
    /// Opens the directory `path` as a scope. The root itself is the caller's choice (a package
    /// directory, the working directory) and is opened as named; only what lies below it is
    /// contained.
    pub fn open(path: &Path) -> io::Result<Scope> {
        let dir = nix::fcntl::open(
            path,
            OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(io::Error::from)?;
        let dev = fstat(&dir).map_err(io::Error::from)?.st_dev;
        Ok(Scope {
            dir,
            path: path.to_path_buf(),
            dev,
            walk_only: false,
        })
    }

    /// The directory this scope was opened at, as named.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Opens the regular file `rel` inside the scope, read-only.
    pub fn open_file(&self, rel: impl AsRef<Path>) -> Result<File, ScopeError> {
        let rel = rel.as_ref();
        let fd = self.resolve(rel, false)?;
        Ok(File::from(fd))
    }

    /// Reads the regular file `rel` inside the scope: at most `cap` bytes, else
    /// [`ScopeError::TooLarge`] (after reading at most `cap + 1` bytes).
    pub fn read(&self, rel: impl AsRef<Path>, cap: u64) -> Result<Vec<u8>, ScopeError> {
        let rel = rel.as_ref();
        let mut file = self.open_file(rel)?;
        let reported = file.metadata().map(|m| m.len()).unwrap_or(0);
        if reported > cap {
            return Err(ScopeError::TooLarge {
                path: rel.to_path_buf(),
                bytes: reported,
                cap,
            });
        }
        match read_capped(&mut file, cap, reported) {
            Ok(Ok(bytes)) => Ok(bytes),
            Ok(Err(bytes)) => Err(ScopeError::TooLarge {
                path: rel.to_path_buf(),
                bytes,
                cap,
            }),
            Err(source) => Err(self.io(rel, source)),
        }
    }

    /// Opens the directory `rel` inside the scope as a scope of its own (on the same device).
    pub fn open_dir(&self, rel: impl AsRef<Path>) -> Result<Scope, ScopeError> {
        let rel = rel.as_ref();
        let dir = self.resolve(rel, true)?;
        Ok(Scope {
            dir,
            path: self.path.join(rel),
            dev: self.dev,
            walk_only: self.walk_only,
        })
    }

    /// The entries of the scope's directory with what each is (links are not followed), sorted
    /// by name.
    pub fn entries(&self) -> Result<Vec<(std::ffi::OsString, EntryKind)>, ScopeError> {
        use std::os::unix::ffi::OsStrExt;
        let here = Path::new(".");
        let listing = nix::dir::Dir::openat(
            &self.dir,
            here,
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| self.io(here, e.into()))?;
        let mut out = Vec::new();
        for entry in listing {
            let entry = entry.map_err(|e| self.io(here, e.into()))?;
            let name = entry.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            let name = std::ffi::OsStr::from_bytes(name).to_os_string();
            let kind = match nix::sys::stat::fstatat(
                &self.dir,
                name.as_os_str(),
                nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
            ) {
                Ok(st) => entry_kind(&st),
                // Gone since it was listed.
                Err(Errno::ENOENT) => continue,
                Err(e) => return Err(self.io(Path::new(&name), e.into())),
            };
            out.push((name, kind));
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    /// Resolves `rel` to a descriptor of a regular file (or, with `dir`, a directory), checked
    /// on the descriptor.
    fn resolve(&self, rel: &Path, dir: bool) -> Result<OwnedFd, ScopeError> {
        let parts = self.components(rel)?;
        let flags = if dir {
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC
        } else {
            OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_NOCTTY | OFlag::O_CLOEXEC
        };
        let fd = match self.open_beneath(&parts, flags) {
            Some(result) => result,
            None => self.walk(&parts, flags),
        }
        .map_err(|e| self.open_error(rel, e))?;
        let st = fstat(&fd).map_err(|e| self.io(rel, e.into()))?;
        let (wanted, ok) = if dir {
            ("a directory", is(&st, SFlag::S_IFDIR))
        } else {
            ("a regular file", is(&st, SFlag::S_IFREG))
        };
        if !ok {
            return Err(ScopeError::WrongType {
                path: rel.to_path_buf(),
                found: describe(&st),
                wanted,
            });
        }
        if st.st_dev != self.dev {
            return Err(ScopeError::OtherDevice {
                path: rel.to_path_buf(),
                scope: self.path.clone(),
            });
        }
        Ok(fd)
    }

    /// The normal components of `rel`, with `.` dropped and `..` applied; climbing above the
    /// root is refused. Since no component may be a symlink, applying `..` to the text gives
    /// the same directory the kernel would reach.
    fn components(&self, rel: &Path) -> Result<Vec<PathBuf>, ScopeError> {
        let mut parts: Vec<PathBuf> = Vec::new();
        if rel.as_os_str().is_empty() {
            return Err(ScopeError::NotRelative {
                path: rel.to_path_buf(),
                scope: self.path.clone(),
            });
        }
        for c in rel.components() {
            match c {
                Component::Normal(p) => parts.push(PathBuf::from(p)),
                Component::CurDir => {}
                Component::ParentDir => {
                    if parts.pop().is_none() {
                        return Err(ScopeError::Escapes {
                            path: rel.to_path_buf(),
                            scope: self.path.clone(),
                        });
                    }
                }
                Component::RootDir | Component::Prefix(_) => {
                    return Err(ScopeError::NotRelative {
                        path: rel.to_path_buf(),
                        scope: self.path.clone(),
                    });
                }
            }
        }
        Ok(parts)
    }

    /// `openat2` beneath the root with no symlinks and no mount crossings; `None` when the
    /// kernel does not offer it.
    fn open_beneath(&self, parts: &[PathBuf], flags: OFlag) -> Option<Result<OwnedFd, Errno>> {
        if self.walk_only || NO_OPENAT2.load(Ordering::Relaxed) {
            return None;
        }
        let joined: PathBuf = if parts.is_empty() {
            PathBuf::from(".")
        } else {
            parts.iter().collect()
        };
        let how = OpenHow::new().flags(flags).resolve(
            ResolveFlag::RESOLVE_BENEATH
                | ResolveFlag::RESOLVE_NO_SYMLINKS
                | ResolveFlag::RESOLVE_NO_MAGICLINKS
                | ResolveFlag::RESOLVE_NO_XDEV,
        );
        for _ in 0..OPENAT2_RETRIES {
            match openat2(&self.dir, joined.as_path(), how) {
                Err(Errno::EAGAIN) => continue,
                Err(Errno::ENOSYS | Errno::EPERM | Errno::E2BIG) => {
                    NO_OPENAT2.store(true, Ordering::Relaxed);
                    return None;
                }
                other => return Some(other),
            }
        }
        Some(Err(Errno::EAGAIN))
    }

    /// The fallback: one `openat(O_NOFOLLOW)` per component, holding each directory's
    /// descriptor, each directory checked to be on the scope's device.
    fn walk(&self, parts: &[PathBuf], flags: OFlag) -> Result<OwnedFd, Errno> {
        let step = OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let Some((last, dirs)) = parts.split_last() else {
            return openat(&self.dir, ".", flags, Mode::empty());
        };
        let mut here: Option<OwnedFd> = None;
        for part in dirs {
            let at = here.as_ref().map_or(self.dir.as_fd(), |f| f.as_fd());
            let next = openat(at, part.as_path(), step, Mode::empty())
                .map_err(|e| classify_step(at, part, e))?;
            if fstat(&next)?.st_dev != self.dev {
                return Err(Errno::EXDEV);
            }
            here = Some(next);
        }
        let at = here.as_ref().map_or(self.dir.as_fd(), |f| f.as_fd());
        openat(at, last.as_path(), flags | OFlag::O_NOFOLLOW, Mode::empty())
            .map_err(|e| classify_step(at, last, e))
    }

    fn open_error(&self, rel: &Path, e: Errno) -> ScopeError {
        let path = rel.to_path_buf();
        let scope = self.path.clone();
        match e {
            Errno::ELOOP => ScopeError::Symlink { path, scope },
            Errno::EXDEV => ScopeError::OtherDevice { path, scope },
            Errno::ENOENT | Errno::ENOTDIR => ScopeError::NotFound { path, scope },
            other => ScopeError::Io {
                path,
                scope,
                source: other.into(),
            },
        }
    }

    fn io(&self, rel: &Path, source: io::Error) -> ScopeError {
        ScopeError::Io {
            path: rel.to_path_buf(),
            scope: self.path.clone(),
            source,
        }
    }
}

/// An `openat(O_NOFOLLOW)` on a symlink fails with `ELOOP`, or `ENOTDIR` when a directory was
/// asked for; tell the two apart so a symlink is always reported as one.
fn classify_step(at: std::os::fd::BorrowedFd<'_>, part: &Path, e: Errno) -> Errno {
    if e == Errno::ENOTDIR
        && nix::sys::stat::fstatat(at, part, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW)
            .is_ok_and(|st| is(&st, SFlag::S_IFLNK))
    {
        return Errno::ELOOP;
    }
    e
}

fn is(st: &FileStat, kind: SFlag) -> bool {
    SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT == kind
}

fn entry_kind(st: &FileStat) -> EntryKind {
    if is(st, SFlag::S_IFREG) {
        EntryKind::File
    } else if is(st, SFlag::S_IFDIR) {
        EntryKind::Dir
    } else if is(st, SFlag::S_IFLNK) {
        EntryKind::Symlink
    } else {
        EntryKind::Other
    }
}

/// What a file is, for messages.
fn describe(st: &FileStat) -> &'static str {
    match SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT {
        SFlag::S_IFREG => "a regular file",
        SFlag::S_IFDIR => "a directory",
        SFlag::S_IFIFO => "a FIFO",
        SFlag::S_IFCHR => "a character device",
        SFlag::S_IFBLK => "a block device",
        SFlag::S_IFSOCK => "a socket",
        SFlag::S_IFLNK => "a symbolic link",
        _ => "a special file",
    }
}

/// Reads `r` to its end, but never more than `cap + 1` bytes: `Ok(Ok(bytes))` when it held at
/// most `cap`, `Ok(Err(read))` when it held more (`read` = `cap + 1`). `hint` (a reported size)
/// only sizes the first allocation, never the bound.
pub fn read_capped(r: &mut impl Read, cap: u64, hint: u64) -> io::Result<Result<Vec<u8>, u64>> {
    let mut buf = Vec::with_capacity(usize::try_from(hint.min(cap)).unwrap_or(0));
    r.take(cap.saturating_add(1)).read_to_end(&mut buf)?;
    let got = buf.len() as u64;
    Ok(if got > cap { Err(got) } else { Ok(buf) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    impl Scope {
        fn walking(mut self, walk: bool) -> Scope {
            self.walk_only = walk;
            self
        }
    }

    fn scope_with(files: &[(&str, &str)]) -> (tempfile::TempDir, Scope) {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            let p = dir.path().join(name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        let scope = Scope::open(dir.path()).unwrap();
        (dir, scope)
    }

    #[test]
    fn reads_regular_files_below_the_root() {
        let (_d, s) = scope_with(&[("a.txt", "A"), ("sub/b.txt", "B")]);
        assert_eq!(s.read("a.txt", 10).unwrap(), b"A");
        assert_eq!(s.read("./sub/../sub/b.txt", 10).unwrap(), b"B");
        let sub = s.open_dir("sub").unwrap();
        assert_eq!(sub.read("b.txt", 10).unwrap(), b"B");
        assert_eq!(
            s.entries().unwrap(),
            vec![
                ("a.txt".into(), EntryKind::File),
                ("sub".into(), EntryKind::Dir)
            ]
        );
    }

    #[test]
    fn refuses_escapes_links_and_special_files() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "S").unwrap();
        let (d, scope) = scope_with(&[("a.txt", "A")]);
        symlink(outside.path().join("secret"), d.path().join("link")).unwrap();
        symlink(outside.path(), d.path().join("dirlink")).unwrap();
        symlink("a.txt", d.path().join("inner-link")).unwrap();
        nix::unistd::mkfifo(&d.path().join("fifo"), Mode::S_IRWXU).unwrap();
        symlink("/dev/zero", d.path().join("zero")).unwrap();
        type Expect = fn(&ScopeError) -> bool;
        let cases: [(&str, Expect); 9] = [
            ("../a.txt", |e| matches!(e, ScopeError::Escapes { .. })),
            ("/etc/hostname", |e| {
                matches!(e, ScopeError::NotRelative { .. })
            }),
            ("", |e| matches!(e, ScopeError::NotRelative { .. })),
            ("link", |e| matches!(e, ScopeError::Symlink { .. })),
            ("dirlink/secret", |e| {
                matches!(e, ScopeError::Symlink { .. })
            }),
            ("inner-link", |e| matches!(e, ScopeError::Symlink { .. })),
            ("zero", |e| matches!(e, ScopeError::Symlink { .. })),
            ("fifo", |e| {
                matches!(
                    e,
                    ScopeError::WrongType {
                        found: "a FIFO",
                        ..
                    }
                )
            }),
            ("missing", |e| matches!(e, ScopeError::NotFound { .. })),
        ];
        for walk in [false, true] {
            let s = Scope::open(scope.path()).unwrap().walking(walk);
            for (path, ok) in &cases {
                let e = s.read(path, 100).expect_err(path);
                assert!(ok(&e), "{path} (walk: {walk}): {e:?}");
            }
            assert_eq!(s.read("a.txt", 1).unwrap(), b"A");
        }
    }

    #[test]
    fn reads_are_capped_whatever_the_reported_size() {
        let (_d, s) = scope_with(&[("ten", "0123456789")]);
        assert_eq!(s.read("ten", 10).unwrap().len(), 10);
        assert!(matches!(
            s.read("ten", 9),
            Err(ScopeError::TooLarge {
                bytes: 10,
                cap: 9,
                ..
            })
        ));
        // A source that reports no size and never ends: at most cap + 1 bytes are read.
        let mut zero = std::io::repeat(0);
        assert_eq!(read_capped(&mut zero, 1000, 0).unwrap(), Err(1001));
    }

    /// The race issue 13 found: a file swapped with a symlink to an outside file while it is
    /// opened. Both resolution strategies must never read the outside file.
    #[test]
    fn a_swapped_symlink_is_never_followed() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "OUTSIDE").unwrap();
        let (d, scope) = scope_with(&[("race.json", "inside")]);
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let swapper = {
            let (root, target, stop) = (
                d.path().to_path_buf(),
                outside.path().join("secret"),
                stop.clone(),
            );
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let _ = symlink(&target, root.join("tmp-link"));
                    let _ = std::fs::rename(root.join("tmp-link"), root.join("race.json"));
                    let _ = std::fs::write(root.join("tmp-file"), "inside");
                    let _ = std::fs::rename(root.join("tmp-file"), root.join("race.json"));
                }
            })
        };
        let (mut inside, mut refused) = (0, 0);
        for walk in [false, true] {
            let s = Scope::open(scope.path()).unwrap().walking(walk);
            for _ in 0..20_000 {
                match s.read("race.json", 100) {
                    Ok(bytes) => {
                        assert_eq!(bytes, b"inside", "read outside the scope (walk: {walk})");
                        inside += 1;
                    }
                    Err(_) => refused += 1,
                }
            }
        }
        stop.store(true, Ordering::Relaxed);
        swapper.join().unwrap();
        assert!(
            inside > 0 && refused > 0,
            "the swap raced: {inside} / {refused}"
        );
    }
}
