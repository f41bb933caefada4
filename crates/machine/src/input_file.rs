//! Reading an input file with its size bounded before and during the read: the one reader
//! behind every file the frontends take from a user (machine files here; traces, rt-app files,
//! ftrace text and live files in `hybrid-sim`).
//!
//! A size taken from `metadata` alone is not enough: a FIFO or a device reports 0 bytes and
//! then blocks or never ends (`/dev/zero`), and a file can grow between the check and the read.
//! So the file's type is checked before it is opened (only a regular file is read), it is
//! opened with `O_NONBLOCK` so that one replaced by a FIFO in between cannot hang the open, its
//! type is checked again on the open descriptor, and at most `limit + 1` bytes are read.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Why an input file was not read. Every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum InputFileError {
    /// The file could not be opened or read.
    #[error("{path}: cannot read: {error}")]
    Io {
        /// The file.
        path: String,
        /// The OS error.
        error: std::io::Error,
    },
    /// Not a regular file: a directory, a FIFO, a device or a socket.
    #[error("{path}: is {what}, not a regular file; give a file")]
    NotRegular {
        /// The file.
        path: String,
        /// What it is instead, e.g. "a FIFO (named pipe)".
        what: &'static str,
    },
    /// Larger than the limit for its kind; nothing past the limit was read.
    #[error("{path}: {kind} is {bytes} bytes, more than the {max} accepted")]
    TooLarge {
        /// The file.
        path: String,
        /// What kind of input it was read as ("trace", "file", "live file").
        kind: &'static str,
        /// Its size by `metadata`, or the bytes read when it grew past the limit.
        bytes: u64,
        /// The limit.
        max: u64,
    },
    /// Not UTF-8 text.
    #[error("{path}: cannot read: not UTF-8 text ({error})")]
    NotText {
        /// The file.
        path: String,
        /// Where the first bad byte is.
        error: std::string::FromUtf8Error,
    },
}

/// What a file that is not a regular file is, in words; `None` for a regular file.
fn special_kind(file_type: std::fs::FileType) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    if file_type.is_file() {
        None
    } else if file_type.is_dir() {
        Some("a directory")
    } else if file_type.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if file_type.is_char_device() {
        Some("a character device")
    } else if file_type.is_block_device() {
        Some("a block device")
    } else if file_type.is_socket() {
        Some("a socket")
    } else {
        Some("not a regular file")
    }
}

/// Reads `path` as UTF-8 text of at most `max` bytes; `kind` names the input in the size
/// error ("trace is N bytes, more than the M accepted").
pub fn read_bounded(path: &Path, max: u64, kind: &'static str) -> Result<String, InputFileError> {
    let name = || path.display().to_string();
    let io = |error| InputFileError::Io {
        path: name(),
        error,
    };
    let check = |meta: &std::fs::Metadata| {
        if let Some(what) = special_kind(meta.file_type()) {
            return Err(InputFileError::NotRegular { path: name(), what });
        }
        if meta.len() > max {
            return Err(InputFileError::TooLarge {
                path: name(),
                kind,
                bytes: meta.len(),
                max,
            });
        }
        Ok(())
    };
    check(&std::fs::metadata(path).map_err(io)?)?;
    // O_NONBLOCK: a FIFO swapped in after the check must not block the open.
    let file: File = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(io)?;
    // The path may name something else by now; what counts is what was opened.
    check(&file.metadata().map_err(io)?)?;
    let mut bytes = Vec::new();
    file.take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > max {
        return Err(InputFileError::TooLarge {
            path: name(),
            kind,
            bytes: bytes.len() as u64,
            max,
        });
    }
    String::from_utf8(bytes).map_err(|error| InputFileError::NotText {
        path: name(),
        error,
    })
}

/// Test helpers: a scratch directory.
#[cfg(test)]
pub(crate) mod testing {
    /// A fresh empty directory `hl-test-*` of a test's own under the system's temporary
    /// directory, removed when dropped (a failed assertion unwinding drops it too): every test
    /// of this crate that writes files writes them in one, held for as long as they are used.
    pub(crate) fn scratch() -> tempfile::TempDir {
        tempfile::Builder::new()
            .prefix("hl-test-")
            .tempdir()
            .unwrap()
    }
}

#[cfg(test)]
mod test {
    use super::testing::scratch;
    use super::*;

    #[test]
    fn a_regular_file_within_the_limit_is_read() {
        let dir = scratch();
        let p = dir.path().join("ok.txt");
        std::fs::write(&p, "hello").unwrap();
        assert_eq!(read_bounded(&p, 5, "file").unwrap(), "hello");
    }

    #[test]
    fn a_file_over_the_limit_is_refused_with_its_size() {
        let dir = scratch();
        let p = dir.path().join("big.txt");
        std::fs::write(&p, "hello!").unwrap();
        let e = read_bounded(&p, 5, "file").unwrap_err();
        assert!(
            matches!(
                e,
                InputFileError::TooLarge {
                    bytes: 6,
                    max: 5,
                    ..
                }
            ),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            format!("{}: file is 6 bytes, more than the 5 accepted", p.display())
        );
    }

    #[test]
    fn special_files_are_refused_by_name_without_blocking() {
        let s = scratch();
        let dir = s.path().join("a-directory");
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = s.path().join("a-fifo");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        for (path, what) in [
            (dir.as_path(), "a directory"),
            (fifo.as_path(), "a FIFO (named pipe)"),
            (Path::new("/dev/zero"), "a character device"),
        ] {
            let e = read_bounded(path, 1 << 20, "file").unwrap_err();
            assert!(
                matches!(&e, InputFileError::NotRegular { what: w, .. } if *w == what),
                "{}: {e:?}",
                path.display()
            );
            assert!(
                e.to_string().starts_with(&path.display().to_string()),
                "{e}"
            );
        }
    }

    #[test]
    fn not_utf8_is_an_error_not_a_panic() {
        let dir = scratch();
        let p = dir.path().join("bin");
        std::fs::write(&p, [0xff, 0xfe]).unwrap();
        assert!(matches!(
            read_bounded(&p, 10, "file"),
            Err(InputFileError::NotText { .. })
        ));
    }
}
