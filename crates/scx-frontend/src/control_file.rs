//! The run-time knob: a control file a sysadmin writes, like a sysfs knob.
//!
//! At start the scheduler creates `<control-dir>/cluster_balance` (default
//! `/run/scx_hybridland/cluster_balance`) holding the mode in force. Writing `off`, `on` or
//! `auto` to it changes cluster balance without a restart. A thread of ours ([`Watcher`],
//! started before the scheduler loads) looks at the file's modification time every
//! [`POLL_NS`] and hands a change to the loop over a channel, so the loop does no file I/O. A
//! bad value is logged and ignored, and the file is rewritten with the mode still in force.
//! The directory is removed on exit.

#![forbid(unsafe_code)]

use crate::safe_file::{self, SafeFileError};
use hybridland_policy::ClusterBalance;
use std::path::{Path, PathBuf};
use std::time::SystemTime;
use tracing::warn;

/// Mode of the control directory: anyone may look, root writes.
const DIR_MODE: u32 = 0o755;
/// The most of the file read back: `auto\n` and some room for spaces.
const READ_LIMIT: usize = 64;

/// How often the watcher looks at the file.
pub(crate) const POLL_NS: u64 = 100_000_000;

/// The control file.
pub(crate) struct ControlFile {
    dir: PathBuf,
    path: PathBuf,
    modified: Option<SystemTime>,
    created_dir: bool,
    /// Whether the file there is ours (written at least once): only then is it removed.
    wrote: bool,
}

/// What a poll found.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum KnobChange {
    /// Nothing new.
    None,
    /// A new mode was written.
    Set(ClusterBalance),
    /// Something unreadable was written (the file was rewritten with the current mode).
    Rejected,
}

impl ControlFile {
    /// Creates `dir/cluster_balance` holding `current`. `dir` is created (mode 0755) if it is
    /// not there, its parents too; it must not be a link. The file is replaced as
    /// [`safe_file`] describes (mode 0644: anyone may read the mode in force, root sets it).
    pub(crate) fn create(dir: &Path, current: ClusterBalance) -> Result<Self, SafeFileError> {
        if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|source| SafeFileError::Io {
                path: parent.to_owned(),
                action: "creating the directory",
                source,
            })?;
        }
        let created_dir = safe_file::ensure_dir(dir, DIR_MODE)?;
        let path = dir.join("cluster_balance");
        let mut me = Self {
            dir: dir.to_owned(),
            path,
            modified: None,
            created_dir,
            wrote: false,
        };
        me.write(current)?;
        Ok(me)
    }

    /// The file's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    fn write(&mut self, mode: ClusterBalance) -> Result<(), SafeFileError> {
        // In /run (tmpfs) by default, and gone at exit: nothing to sync, and the loop calls this.
        safe_file::replace(
            &self.path,
            safe_file::OUTPUT_MODE,
            safe_file::Sync::No,
            |out| writeln!(out, "{mode}"),
        )?;
        self.wrote = true;
        self.modified = std::fs::symlink_metadata(&self.path)
            .and_then(|m| m.modified())
            .ok();
        Ok(())
    }

    /// Looks for a new value; `current` is the mode in force.
    pub(crate) fn poll(&mut self, current: ClusterBalance) -> KnobChange {
        let Ok(modified) = std::fs::symlink_metadata(&self.path).and_then(|m| m.modified()) else {
            // Deleted by someone: put it back.
            let _ = self.write(current);
            return KnobChange::None;
        };
        if Some(modified) == self.modified {
            return KnobChange::None;
        }
        self.modified = Some(modified);
        // Replaced by a link, FIFO or device (only root can): said once per change, never
        // followed or blocked on.
        let text = match safe_file::read_small(&self.path, READ_LIMIT) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(e) => {
                warn!("run-time control file: {e}; keeping {current}");
                return KnobChange::None;
            }
        };
        match text.trim().parse::<ClusterBalance>() {
            Ok(mode) if mode == current => KnobChange::None,
            Ok(mode) => KnobChange::Set(mode),
            Err(_) => {
                let _ = self.write(current);
                KnobChange::Rejected
            }
        }
    }
}

/// The thread that watches the control file, and the loop's end of it.
pub(crate) struct Watcher {
    path: PathBuf,
    /// The mode in force, which the watcher compares a written value with.
    current: std::sync::Arc<core::sync::atomic::AtomicU8>,
    changes: std::sync::mpsc::Receiver<KnobChange>,
    stop: std::sync::Arc<core::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

const MODES: [ClusterBalance; 3] = [
    ClusterBalance::Off,
    ClusterBalance::On,
    ClusterBalance::Auto,
];

fn mode_index(mode: ClusterBalance) -> u8 {
    MODES.iter().position(|m| *m == mode).unwrap_or(2) as u8
}

impl Watcher {
    /// Starts watching `file`, whose mode in force is `current`. Call before the scheduler
    /// loads (the framework forbids new threads afterwards).
    pub(crate) fn spawn(mut file: ControlFile, current: ClusterBalance) -> std::io::Result<Self> {
        use core::sync::atomic::{AtomicBool, AtomicU8, Ordering};
        let path = file.path.clone();
        let current = std::sync::Arc::new(AtomicU8::new(mode_index(current)));
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let (tx, changes) = std::sync::mpsc::channel();
        let (mode, quit) = (current.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("hl-knob".into())
            .stack_size(64 * 1024)
            .spawn(move || {
                while !quit.load(Ordering::Relaxed) {
                    let now = MODES[usize::from(mode.load(Ordering::Relaxed)).min(2)];
                    let change = file.poll(now);
                    if change != KnobChange::None && tx.send(change).is_err() {
                        break;
                    }
                    std::thread::sleep(core::time::Duration::from_nanos(POLL_NS));
                }
                // `file` drops here: the file and the directory go.
            })?;
        Ok(Self {
            path,
            current,
            changes,
            stop,
            thread: Some(thread),
        })
    }

    /// The file's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// A change the watcher found since the last call, if any.
    pub(crate) fn try_change(&self) -> Option<KnobChange> {
        self.changes.try_recv().ok()
    }

    /// Tells the watcher the mode now in force.
    pub(crate) fn applied(&self, mode: ClusterBalance) {
        self.current
            .store(mode_index(mode), core::sync::atomic::Ordering::Relaxed);
    }
}

impl Drop for Watcher {
    /// Stops the watcher and waits for it (at most one poll interval), so the file and its
    /// directory are gone when this returns.
    fn drop(&mut self) {
        self.stop.store(true, core::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for ControlFile {
    fn drop(&mut self) {
        if self.wrote {
            let _ = std::fs::remove_file(&self.path);
        }
        if self.created_dir {
            let _ = std::fs::remove_dir(&self.dir);
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn written_values_are_picked_up_and_bad_ones_rejected() {
        let dir = std::env::temp_dir().join(format!("hl-knob-{}", std::process::id()));
        let mut f = ControlFile::create(&dir, ClusterBalance::Auto).unwrap();
        assert_eq!(std::fs::read_to_string(f.path()).unwrap(), "auto\n");
        assert_eq!(f.poll(ClusterBalance::Auto), KnobChange::None);
        // mtime granularity: make sure the write is seen as new.
        std::thread::sleep(core::time::Duration::from_millis(20));
        std::fs::write(f.path(), "off\n").unwrap();
        f.modified = None;
        assert_eq!(
            f.poll(ClusterBalance::Auto),
            KnobChange::Set(ClusterBalance::Off)
        );
        assert_eq!(f.poll(ClusterBalance::Off), KnobChange::None);
        std::fs::write(f.path(), "sideways\n").unwrap();
        f.modified = None;
        assert_eq!(f.poll(ClusterBalance::Off), KnobChange::Rejected);
        assert_eq!(std::fs::read_to_string(f.path()).unwrap(), "off\n");
        drop(f);
        assert!(!dir.exists());
    }

    /// The watcher hands a written value to the loop, rejects a bad one, and removes the file
    /// and the directory when dropped.
    #[test]
    fn the_watcher_hands_changes_over_and_cleans_up() {
        let dir = std::env::temp_dir().join(format!("hl-knob-watch-{}", std::process::id()));
        let f = ControlFile::create(&dir, ClusterBalance::Auto).unwrap();
        let w = Watcher::spawn(f, ClusterBalance::Auto).unwrap();
        let wait = |w: &Watcher| {
            // Liveness only: generous for a loaded machine, never a speed claim.
            for _ in 0..1000 {
                if let Some(c) = w.try_change() {
                    return c;
                }
                std::thread::sleep(core::time::Duration::from_millis(10));
            }
            panic!("no change seen in 10 s");
        };
        std::thread::sleep(core::time::Duration::from_millis(20));
        std::fs::write(w.path(), "off\n").unwrap();
        assert_eq!(wait(&w), KnobChange::Set(ClusterBalance::Off));
        w.applied(ClusterBalance::Off);
        std::thread::sleep(core::time::Duration::from_millis(20));
        std::fs::write(w.path(), "sideways\n").unwrap();
        assert_eq!(wait(&w), KnobChange::Rejected);
        drop(w);
        assert!(!dir.exists());
    }

    /// A link or FIFO planted where the file goes is refused and left as it is, and so is a
    /// link planted as the directory; a FIFO swapped in while running is never read.
    #[test]
    fn planted_links_and_fifos_are_refused_and_left_alone() {
        use crate::safe_file::testing::*;
        let s = Scratch::new("knob");
        let dir = s.0.join("run");
        std::fs::create_dir(&dir).unwrap();
        let file = dir.join("cluster_balance");
        let victim = s.0.join("victim");
        plant_link(&file, &victim);
        let e = ControlFile::create(&dir, ClusterBalance::Auto)
            .err()
            .unwrap();
        assert!(e.to_string().contains("it is a symbolic link"), "{e}");
        assert_link_untouched(&file, &victim);
        std::fs::remove_file(&file).unwrap();

        plant_fifo(&file);
        let e = ControlFile::create(&dir, ClusterBalance::Auto)
            .err()
            .unwrap();
        assert!(e.to_string().contains("it is a FIFO"), "{e}");
        assert_fifo_untouched(&file);
        std::fs::remove_file(&file).unwrap();

        let linked_dir = s.0.join("linked-run");
        std::os::unix::fs::symlink(&dir, &linked_dir).unwrap();
        let e = ControlFile::create(&linked_dir, ClusterBalance::Auto)
            .err()
            .unwrap();
        assert!(e.to_string().contains("it is a symbolic link"), "{e}");
        assert_only(&dir, &[]);

        // Running, then the file becomes a FIFO: the poll neither blocks nor rewrites it.
        let mut f = ControlFile::create(&dir, ClusterBalance::On).unwrap();
        std::fs::remove_file(f.path()).unwrap();
        plant_fifo(f.path());
        f.modified = None;
        assert_eq!(f.poll(ClusterBalance::On), KnobChange::None);
        assert_fifo_untouched(f.path());
    }
}
