//! The tests of root's file writes: new and replaced files get their content and mode; links,
//! FIFOs, devices and directories are refused and left alone; a failed write leaves the old
//! file; planted temporary names are skipped; directories are created with their mode; small
//! reads refuse links and FIFOs without blocking.

use super::testing::*;
use super::*;
use std::os::unix::fs::PermissionsExt as _;

fn write_text(path: &Path, text: &str) -> Result<(), SafeFileError> {
    replace(path, OUTPUT_MODE, Sync::Durable, |out| {
        out.write_all(text.as_bytes())
    })
}

#[test]
fn a_new_file_and_a_replaced_one_get_the_content_and_the_stated_mode() {
    let s = scratch();
    let path = s.path().join("out.json");
    // A loose umask must not loosen the mode, a tight one must not tighten it.
    let guard = UMASK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let old = rustix::process::umask(Mode::from_raw_mode(0o077));
    let first = write_text(&path, "one\n");
    rustix::process::umask(old);
    drop(guard);
    first.unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "one\n");
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o7777,
        0o644
    );
    // A regular file there, with another mode and a second link to it: replaced by a new
    // file, the other link keeps the old content.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
    let other = s.path().join("hardlink");
    std::fs::hard_link(&path, &other).unwrap();
    write_text(&path, "two\n").unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "two\n");
    assert_eq!(std::fs::read_to_string(&other).unwrap(), "one\n");
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o7777,
        0o644
    );
    assert_only(s.path(), &["hardlink", "out.json"]);
}

#[test]
fn links_fifos_devices_and_directories_are_refused_and_left_alone() {
    let s = scratch();
    let link = s.path().join("link");
    let victim = s.path().join("victim");
    plant_link(&link, &victim);
    let e = write_text(&link, "x").unwrap_err();
    assert!(
        matches!(&e, SafeFileError::NotARegularFile { path, found: FileKind::SymbolicLink } if *path == link),
        "{e}"
    );
    assert!(
        e.to_string()
            .contains("link: refusing to write: it is a symbolic link"),
        "{e}"
    );
    assert_link_untouched(&link, &victim);

    // A dangling link too: following it would create the file it names.
    let dangling = s.path().join("dangling");
    std::os::unix::fs::symlink(s.path().join("created-through-link"), &dangling).unwrap();
    assert!(write_text(&dangling, "x").is_err());
    assert!(!s.path().join("created-through-link").exists());

    let fifo = s.path().join("fifo");
    plant_fifo(&fifo);
    let e = write_text(&fifo, "x").unwrap_err();
    assert!(
        matches!(
            e,
            SafeFileError::NotARegularFile {
                found: FileKind::Fifo,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("it is a FIFO"), "{e}");
    assert_fifo_untouched(&fifo);

    let e = write_text(Path::new("/dev/null"), "x").unwrap_err();
    assert!(
        matches!(
            e,
            SafeFileError::NotARegularFile {
                found: FileKind::CharacterDevice,
                ..
            }
        ),
        "{e}"
    );
    let sub = s.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let e = write_text(&sub, "x").unwrap_err();
    assert!(
        matches!(
            e,
            SafeFileError::NotARegularFile {
                found: FileKind::Directory,
                ..
            }
        ),
        "{e}"
    );
    assert_only(s.path(), &["dangling", "fifo", "link", "sub", "victim"]);
}

#[test]
fn a_failed_write_leaves_the_old_file_and_no_temporary() {
    let s = scratch();
    let path = s.path().join("out");
    write_text(&path, "old\n").unwrap();
    let e = replace(&path, OUTPUT_MODE, Sync::No, |out| {
        out.write_all(b"half")?;
        Err(std::io::Error::other("disk full"))
    })
    .unwrap_err();
    assert!(e.to_string().contains("writing: disk full"), "{e}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "old\n");
    assert_only(s.path(), &["out"]);
}

#[test]
fn planted_temporary_names_are_skipped_and_never_followed() {
    let s = scratch();
    let victim = s.path().join("victim");
    std::fs::write(&victim, VICTIM_TEXT).unwrap();
    let dir = open_dir(s.path()).unwrap();
    let name = std::ffi::OsStr::new("out");
    let plant = |attempt: u32| {
        let tmp = s.path().join(temporary_name(name, 0xabc, attempt));
        std::os::unix::fs::symlink(&victim, tmp).unwrap();
    };
    for attempt in 0..8 {
        plant(attempt);
    }
    let (tmp, fd) = create_temporary(&dir, name, 0o644, &s.path().join("out"), 0xabc).unwrap();
    assert_eq!(tmp, temporary_name(name, 0xabc, 8));
    drop(fd);
    std::fs::remove_file(s.path().join(&tmp)).unwrap();
    for attempt in 8..TEMPORARY_TRIES {
        plant(attempt);
    }
    let e = create_temporary(&dir, name, 0o644, &s.path().join("out"), 0xabc).unwrap_err();
    assert!(e.to_string().contains("were all taken"), "{e}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), VICTIM_TEXT);
}

#[test]
fn directories_are_created_with_their_mode_and_links_to_one_refused() {
    let s = scratch();
    let d = s.path().join("run");
    let guard = UMASK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let old = rustix::process::umask(Mode::from_raw_mode(0o077));
    let created = ensure_dir(&d, 0o755);
    rustix::process::umask(old);
    drop(guard);
    assert!(created.unwrap());
    assert_eq!(
        std::fs::metadata(&d).unwrap().permissions().mode() & 0o7777,
        0o755
    );
    assert!(!ensure_dir(&d, 0o755).unwrap());
    let link = s.path().join("link");
    std::os::unix::fs::symlink(&d, &link).unwrap();
    let e = ensure_dir(&link, 0o755).unwrap_err();
    assert!(
        matches!(
            e,
            SafeFileError::NotADirectory {
                found: FileKind::SymbolicLink,
                ..
            }
        ),
        "{e}"
    );
    let fifo = s.path().join("fifo");
    plant_fifo(&fifo);
    assert!(matches!(
        ensure_dir(&fifo, 0o755).unwrap_err(),
        SafeFileError::NotADirectory {
            found: FileKind::Fifo,
            ..
        }
    ));
}

#[test]
fn small_reads_refuse_links_and_fifos_without_blocking() {
    let s = scratch();
    let f = s.path().join("f");
    std::fs::write(&f, "auto\nand more").unwrap();
    assert_eq!(read_small(&f, 5).unwrap(), b"auto\n");
    let link = s.path().join("link");
    std::os::unix::fs::symlink(&f, &link).unwrap();
    assert!(matches!(
        read_small(&link, 5).unwrap_err(),
        SafeFileError::NotARegularFile {
            found: FileKind::SymbolicLink,
            ..
        }
    ));
    // No writer: a blocking open would never return.
    let fifo = s.path().join("fifo");
    plant_fifo(&fifo);
    assert!(matches!(
        read_small(&fifo, 5).unwrap_err(),
        SafeFileError::NotARegularFile {
            found: FileKind::Fifo,
            ..
        }
    ));
}
