//! Files the scheduler writes as root, written so that nobody who can write to the directory
//! can point the write somewhere else.
//!
//! Every file scx_hybridland writes (`--record`'s trace, live figures and decision log,
//! `--emit-topology`, the run-time control file) goes through [`replace`]:
//! - the directory is opened once and everything after is relative to that descriptor, so the
//!   directory cannot be swapped halfway;
//! - a target that exists and is not a regular file (a symbolic link, FIFO, device, socket or
//!   directory) is refused with [`SafeFileError::NotARegularFile`], and left as it is;
//! - the new content goes to a fresh file in the same directory, created with `O_EXCL` and
//!   `O_NOFOLLOW` (so a name planted in advance, link or not, is never opened) and given the
//!   stated mode whatever the umask; it is written, synced if asked, and renamed over the
//!   target. `rename` replaces a directory entry and never writes through one, so a link
//!   planted between the check and the rename is replaced, not followed.
//!
//! Reading the control file back ([`read_small`]) never follows a link, never blocks on a FIFO
//! and reads a bounded amount.

#![forbid(unsafe_code)]

#[cfg(test)]
mod tests;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use std::fs::File;
use std::io::{Read as _, Write};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

/// Mode of the outputs (recordings, the emitted machine, the control file): readable by
/// everyone, as nothing in them is more than what any user can already read in `/proc` and
/// `/sys` (task names, pids, CPU lists); writable by root only.
pub(crate) const OUTPUT_MODE: u32 = 0o644;

/// What a path turned out to be.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum FileKind {
    SymbolicLink,
    Fifo,
    CharacterDevice,
    BlockDevice,
    Socket,
    Directory,
    Other,
}

impl FileKind {
    fn of(t: FileType) -> Option<Self> {
        Some(match t {
            FileType::RegularFile => return None,
            FileType::Symlink => Self::SymbolicLink,
            FileType::Fifo => Self::Fifo,
            FileType::CharacterDevice => Self::CharacterDevice,
            FileType::BlockDevice => Self::BlockDevice,
            FileType::Socket => Self::Socket,
            FileType::Directory => Self::Directory,
            _ => Self::Other,
        })
    }
}

impl core::fmt::Display for FileKind {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            Self::SymbolicLink => "a symbolic link",
            Self::Fifo => "a FIFO",
            Self::CharacterDevice => "a character device",
            Self::BlockDevice => "a block device",
            Self::Socket => "a socket",
            Self::Directory => "a directory",
            Self::Other => "not a regular file",
        })
    }
}

/// Why a file was not written or read.
#[derive(Debug)]
pub(crate) enum SafeFileError {
    /// The path exists and is not a regular file; nothing was done to it.
    NotARegularFile { path: PathBuf, found: FileKind },
    /// A directory the file was to go in exists and is not a directory (or is a link to one,
    /// where the link is refused).
    NotADirectory { path: PathBuf, found: FileKind },
    /// A system call failed; `action` says which step.
    Io {
        path: PathBuf,
        action: &'static str,
        source: std::io::Error,
    },
}

impl core::fmt::Display for SafeFileError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::NotARegularFile { path, found } => write!(
                f,
                "{}: refusing to write: it is {found}, and scx_hybridland only replaces regular files",
                path.display()
            ),
            Self::NotADirectory { path, found } => write!(
                f,
                "{}: refusing to use it as a directory: it is {found}",
                path.display()
            ),
            Self::Io {
                path,
                action,
                source,
            } => write!(f, "{}: {action}: {source}", path.display()),
        }
    }
}

impl core::error::Error for SafeFileError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

fn io_err(path: &Path, action: &'static str) -> impl FnOnce(rustix::io::Errno) -> SafeFileError {
    let path = path.to_owned();
    move |e| SafeFileError::Io {
        path,
        action,
        source: e.into(),
    }
}

/// Whether the new content is flushed to the disk before it replaces the old.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Sync {
    /// fsync the file, then the directory after the rename: a recording survives a crash.
    Durable,
    /// Neither (a file in `/run` that is gone at the next boot anyway).
    No,
}

/// The directory `path` goes in and its last component.
fn split(path: &Path) -> Result<(&Path, &std::ffi::OsStr), SafeFileError> {
    let name = path.file_name().ok_or_else(|| SafeFileError::Io {
        path: path.to_owned(),
        action: "naming a file",
        source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "no file name"),
    })?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    Ok((dir, name))
}

fn open_dir(dir: &Path) -> Result<OwnedFd, SafeFileError> {
    rustix::fs::open(
        dir,
        OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(io_err(dir, "opening the directory"))
}

/// What is at `name` in `dir`, without following a link: `None` when nothing is.
fn kind_at(
    dir: &OwnedFd,
    name: &std::ffi::OsStr,
    path: &Path,
) -> Result<Option<FileType>, SafeFileError> {
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => Ok(Some(FileType::from_raw_mode(st.st_mode))),
        Err(rustix::io::Errno::NOENT) => Ok(None),
        Err(e) => Err(io_err(path, "looking at it")(e)),
    }
}

/// Replaces the regular file at `path` (or creates it) with what `fill` writes, with `mode`,
/// as the module documentation describes. On error the target is as it was and no temporary
/// file is left.
pub(crate) fn replace(
    path: &Path,
    mode: u32,
    sync: Sync,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<(), SafeFileError> {
    let (dir_path, name) = split(path)?;
    let dir = open_dir(dir_path)?;
    if let Some(found) = kind_at(&dir, name, path)?.and_then(FileKind::of) {
        return Err(SafeFileError::NotARegularFile {
            path: path.to_owned(),
            found,
        });
    }
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let (tmp_name, fd) = create_temporary(&dir, name, mode, path, stamp)?;
    let written = (|| {
        // Exactly `mode`: the umask applied at creation may have taken bits away.
        rustix::fs::fchmod(&fd, Mode::from_raw_mode(mode))
            .map_err(io_err(path, "setting the new file's mode"))?;
        let mut out = std::io::BufWriter::new(File::from(fd));
        fill(&mut out)
            .and_then(|()| out.flush())
            .map_err(|source| SafeFileError::Io {
                path: path.to_owned(),
                action: "writing",
                source,
            })?;
        let file = out.into_inner().map_err(|e| SafeFileError::Io {
            path: path.to_owned(),
            action: "writing",
            source: e.into_error(),
        })?;
        if sync == Sync::Durable {
            rustix::fs::fsync(&file).map_err(io_err(path, "syncing the new file"))?;
        }
        rustix::fs::renameat(&dir, &tmp_name, &dir, name)
            .map_err(io_err(path, "renaming the new file over it"))
    })();
    if let Err(e) = written {
        let _ = rustix::fs::unlinkat(&dir, &tmp_name, AtFlags::empty());
        return Err(e);
    }
    if sync == Sync::Durable {
        rustix::fs::fsync(&dir).map_err(io_err(dir_path, "syncing the directory"))?;
    }
    Ok(())
}

/// Temporary names tried beside a target before giving up.
const TEMPORARY_TRIES: u32 = 64;

/// The `attempt`th temporary name for `name`: hidden, and unlikely to be taken (the pid and a
/// stamp from the clock), though nothing relies on that.
fn temporary_name(name: &std::ffi::OsStr, stamp: u32, attempt: u32) -> std::ffi::OsString {
    let mut tmp = std::ffi::OsString::from(".");
    tmp.push(name);
    tmp.push(format!(".{}.{stamp:x}.{attempt}.tmp", std::process::id()));
    tmp
}

/// A new file beside `name`, under a name no one has planted: `O_EXCL` fails on anything that
/// is already there (a link included), and then the next name is tried.
fn create_temporary(
    dir: &OwnedFd,
    name: &std::ffi::OsStr,
    mode: u32,
    path: &Path,
    stamp: u32,
) -> Result<(std::ffi::OsString, OwnedFd), SafeFileError> {
    for attempt in 0..TEMPORARY_TRIES {
        let tmp = temporary_name(name, stamp, attempt);
        match rustix::fs::openat(
            dir,
            &tmp,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(mode),
        ) {
            Ok(fd) => return Ok((tmp, fd)),
            Err(rustix::io::Errno::EXIST) => {}
            Err(e) => return Err(io_err(path, "creating the new file")(e)),
        }
    }
    Err(SafeFileError::Io {
        path: path.to_owned(),
        action: "creating the new file",
        source: std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            format!("{TEMPORARY_TRIES} temporary names beside it were all taken"),
        ),
    })
}

/// Makes sure `path` is a directory, creating it (its parent must exist) with `mode` if it is
/// not there. Returns whether it was created. A link, even to a directory, is refused.
pub(crate) fn ensure_dir(path: &Path, mode: u32) -> Result<bool, SafeFileError> {
    let (parent_path, name) = split(path)?;
    let parent = open_dir(parent_path)?;
    let created = match rustix::fs::mkdirat(&parent, name, Mode::from_raw_mode(mode)) {
        Ok(()) => true,
        Err(rustix::io::Errno::EXIST) => false,
        Err(e) => return Err(io_err(path, "creating the directory")(e)),
    };
    match kind_at(&parent, name, path)? {
        Some(FileType::Directory) => {}
        Some(t) => {
            return Err(SafeFileError::NotADirectory {
                path: path.to_owned(),
                found: FileKind::of(t).unwrap_or(FileKind::Other),
            });
        }
        None => {
            return Err(io_err(path, "creating the directory")(
                rustix::io::Errno::NOENT,
            ));
        }
    }
    if created {
        // Exactly `mode`, whatever the umask.
        let fd = rustix::fs::openat(
            &parent,
            name,
            OFlags::DIRECTORY | OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(io_err(path, "opening the new directory"))?;
        rustix::fs::fchmod(&fd, Mode::from_raw_mode(mode))
            .map_err(io_err(path, "setting the directory's mode"))?;
    }
    Ok(created)
}

/// Reads at most `limit` bytes of the regular file at `path`: a link is not followed, a FIFO
/// or device is refused without blocking (it is opened non-blocking and checked before any
/// read).
pub(crate) fn read_small(path: &Path, limit: usize) -> Result<Vec<u8>, SafeFileError> {
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| match e {
        // O_NOFOLLOW on a link.
        rustix::io::Errno::LOOP => SafeFileError::NotARegularFile {
            path: path.to_owned(),
            found: FileKind::SymbolicLink,
        },
        e => io_err(path, "opening")(e),
    })?;
    let st = rustix::fs::fstat(&fd).map_err(io_err(path, "looking at it"))?;
    if let Some(found) = FileKind::of(FileType::from_raw_mode(st.st_mode)) {
        return Err(SafeFileError::NotARegularFile {
            path: path.to_owned(),
            found,
        });
    }
    let mut out = Vec::new();
    File::from(fd)
        .take(limit as u64)
        .read_to_end(&mut out)
        .map_err(|source| SafeFileError::Io {
            path: path.to_owned(),
            action: "reading",
            source,
        })?;
    Ok(out)
}

/// Test helpers: a scratch directory, and the hostile things planted in it.
#[cfg(test)]
pub(crate) mod testing {
    use std::path::Path;

    /// Held by every test that changes the umask (it is per process, tests run in threads).
    pub(crate) static UMASK: std::sync::Mutex<()> = std::sync::Mutex::new(());

    /// A fresh empty directory `hl-test-*` of a test's own under the system's temporary
    /// directory, removed when dropped (a failed assertion unwinding drops it too): every test
    /// of this crate that writes files writes them in one, held for as long as they are used.
    pub(crate) fn scratch() -> tempfile::TempDir {
        tempfile::Builder::new()
            .prefix("hl-test-")
            .tempdir()
            .unwrap()
    }

    /// A file a planted link points at, with content that must survive.
    pub(crate) const VICTIM_TEXT: &str = "precious\n";

    /// Plants at `at` a symbolic link to a new file `victim` holding [`VICTIM_TEXT`].
    pub(crate) fn plant_link(at: &Path, victim: &Path) {
        std::fs::write(victim, VICTIM_TEXT).unwrap();
        std::os::unix::fs::symlink(victim, at).unwrap();
    }

    /// Plants a FIFO at `at`.
    pub(crate) fn plant_fifo(at: &Path) {
        rustix::fs::mknodat(
            rustix::fs::CWD,
            at,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
    }

    /// `at` is still a link to `victim`, and `victim` still holds [`VICTIM_TEXT`].
    pub(crate) fn assert_link_untouched(at: &Path, victim: &Path) {
        assert_eq!(std::fs::read_link(at).unwrap(), victim);
        assert_eq!(std::fs::read_to_string(victim).unwrap(), VICTIM_TEXT);
    }

    /// `at` is still a FIFO.
    pub(crate) fn assert_fifo_untouched(at: &Path) {
        use std::os::unix::fs::FileTypeExt as _;
        assert!(std::fs::symlink_metadata(at).unwrap().file_type().is_fifo());
    }

    /// Nothing but `expected` names in `dir` (no temporary file left behind).
    pub(crate) fn assert_only(dir: &Path, expected: &[&str]) {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        let mut expected: Vec<String> = expected.iter().map(|s| (*s).to_owned()).collect();
        expected.sort();
        assert_eq!(names, expected);
    }
}
