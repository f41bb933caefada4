//! The run-time knob: a control file a sysadmin writes, like a sysfs knob.
//!
//! At start the scheduler creates `<control-dir>/cluster_balance` (default
//! `/run/scx_hybridland/cluster_balance`) holding the mode in force. Writing `off`, `on` or
//! `auto` to it changes cluster balance without a restart. A thread of ours ([`Watcher`],
//! started before the scheduler loads) looks at the file's modification time every
//! [`POLL_NS`] and hands a change to the loop over a channel, so the loop does no file I/O. A
//! bad value is logged and ignored, and the file is rewritten with the mode still in force.
//! The directory is removed on exit.
//!
//! A policy's own knobs (`CustomPolicy::knobs`) get a file each beside it,
//! `<control-dir>/<knob name>`, holding the value in force as `--set` takes it; the same
//! watcher hands a written value to the loop ([`KnobChange::Own`]), which hands it to the core
//! as `Input::Knob` (so `--record`'s decision log keeps it). A value outside the knob's range
//! is logged and the file rewritten with the value in force.

#![forbid(unsafe_code)]

use crate::safe_file::{self, SafeFileError};
use hybridland_policy::{ClusterBalance, KnobSpec};
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
    /// The policy's own knob `index` was set to `value` (within its range).
    Own {
        /// The knob's place in the policy's knobs.
        index: u16,
        /// Its new value.
        value: i64,
    },
    /// A value the policy's own knob `index` does not take was written (the file was
    /// rewritten with the value in force).
    OwnRejected {
        /// The knob's place in the policy's knobs.
        index: u16,
    },
}

impl ControlFile {
    /// Creates `dir/cluster_balance` holding `current`. `dir` is created (mode 0755) if it is
    /// not there, its parents too; it must not be a link. The file is replaced as
    /// [`safe_file`] describes (mode 0644: anyone may read the mode in force, root sets it).
    pub(crate) fn create(dir: &Path, current: ClusterBalance) -> Result<Self, SafeFileError> {
        let created_dir = ensure_dir(dir)?;
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

/// The file of one of the policy's own knobs, `dir/<name>`.
pub(crate) struct KnobFile {
    path: PathBuf,
    spec: KnobSpec,
    index: u16,
    modified: Option<SystemTime>,
    wrote: bool,
}

impl KnobFile {
    /// Creates `dir/<spec.name>` holding `value` (the directory must exist: [`ensure_dir`]).
    pub(crate) fn create(
        dir: &Path,
        spec: KnobSpec,
        index: u16,
        value: i64,
    ) -> Result<Self, SafeFileError> {
        let mut me = Self {
            path: dir.join(spec.name),
            spec,
            index,
            modified: None,
            wrote: false,
        };
        me.write(value)?;
        Ok(me)
    }

    /// The file's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    fn write(&mut self, value: i64) -> Result<(), SafeFileError> {
        let text = self.spec.show(value).to_string();
        safe_file::replace(
            &self.path,
            safe_file::OUTPUT_MODE,
            safe_file::Sync::No,
            |out| writeln!(out, "{text}"),
        )?;
        self.wrote = true;
        self.modified = std::fs::symlink_metadata(&self.path)
            .and_then(|m| m.modified())
            .ok();
        Ok(())
    }

    /// Looks for a new value; `current` is the value in force.
    pub(crate) fn poll(&mut self, current: i64) -> KnobChange {
        let Ok(modified) = std::fs::symlink_metadata(&self.path).and_then(|m| m.modified()) else {
            let _ = self.write(current);
            return KnobChange::None;
        };
        if Some(modified) == self.modified {
            return KnobChange::None;
        }
        self.modified = Some(modified);
        let text = match safe_file::read_small(&self.path, READ_LIMIT) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(e) => {
                warn!(
                    "run-time control file: {e}; keeping {}",
                    self.spec.show(current)
                );
                return KnobChange::None;
            }
        };
        match self.spec.parse(&text) {
            Ok(value) if value == current => KnobChange::None,
            Ok(value) => KnobChange::Own {
                index: self.index,
                value,
            },
            Err(_) => {
                let _ = self.write(current);
                KnobChange::OwnRejected { index: self.index }
            }
        }
    }
}

impl Drop for KnobFile {
    fn drop(&mut self) {
        if self.wrote {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Makes the control directory (mode 0755, parents too; not a link). Returns whether it
/// created it.
pub(crate) fn ensure_dir(dir: &Path) -> Result<bool, SafeFileError> {
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|source| SafeFileError::Io {
            path: parent.to_owned(),
            action: "creating the directory",
            source,
        })?;
    }
    safe_file::ensure_dir(dir, DIR_MODE)
}

/// The thread that watches the control file, and the loop's end of it.
pub(crate) struct Watcher {
    path: PathBuf,
    /// The mode in force, which the watcher compares a written value with.
    current: std::sync::Arc<core::sync::atomic::AtomicU8>,
    /// The policy's own knobs' values in force, by index.
    own: std::sync::Arc<Vec<core::sync::atomic::AtomicI64>>,
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
    #[cfg(test)]
    pub(crate) fn spawn(file: ControlFile, current: ClusterBalance) -> std::io::Result<Self> {
        Self::spawn_all(Some((file, current)), Vec::new(), &[], None)
    }

    /// Starts watching the cluster-balance file `cluster` (with the mode in force) and the
    /// policy's own knob files `own` (their values in force `values`, by index). The thread
    /// removes the files when it ends, then `created_dir` if given.
    pub(crate) fn spawn_all(
        mut cluster: Option<(ControlFile, ClusterBalance)>,
        mut own: Vec<KnobFile>,
        values: &[i64],
        created_dir: Option<PathBuf>,
    ) -> std::io::Result<Self> {
        use core::sync::atomic::{AtomicBool, AtomicI64, AtomicU8, Ordering};
        let path = cluster
            .as_ref()
            .map(|(f, _)| f.path.clone())
            .or_else(|| own.first().map(|f| f.path.clone()))
            .unwrap_or_default();
        let start = cluster.as_ref().map_or(ClusterBalance::Auto, |(_, m)| *m);
        let current = std::sync::Arc::new(AtomicU8::new(mode_index(start)));
        let own_now: std::sync::Arc<Vec<AtomicI64>> =
            std::sync::Arc::new(values.iter().map(|v| AtomicI64::new(*v)).collect());
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let (tx, changes) = std::sync::mpsc::channel();
        let (mode, quit, own_values) = (current.clone(), stop.clone(), own_now.clone());
        let thread = std::thread::Builder::new()
            .name("hl-knob".into())
            .stack_size(64 * 1024)
            .spawn(move || {
                'watch: while !quit.load(Ordering::Relaxed) {
                    let now = MODES[usize::from(mode.load(Ordering::Relaxed)).min(2)];
                    let cluster_change = cluster.as_mut().map(|(f, _)| f.poll(now));
                    let own_changes = own.iter_mut().map(|f| {
                        let value = own_values
                            .get(usize::from(f.index))
                            .map_or(0, |v| v.load(Ordering::Relaxed));
                        f.poll(value)
                    });
                    for change in cluster_change.into_iter().chain(own_changes) {
                        if change != KnobChange::None && tx.send(change).is_err() {
                            break 'watch;
                        }
                    }
                    std::thread::sleep(core::time::Duration::from_nanos(POLL_NS));
                }
                // The files go, then the directory (the cluster file's own drop removes it
                // when it made it).
                drop(own);
                drop(cluster);
                if let Some(dir) = created_dir {
                    let _ = std::fs::remove_dir(dir);
                }
            })?;
        Ok(Self {
            path,
            current,
            own: own_now,
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

    /// Tells the watcher the value now in force of the policy's own knob `index`.
    pub(crate) fn applied_own(&self, index: u16, value: i64) {
        if let Some(v) = self.own.get(usize::from(index)) {
            v.store(value, core::sync::atomic::Ordering::Relaxed);
        }
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

    /// A policy's own knob gets a file holding its value; a written value in range is handed
    /// over, one out of range is refused and the file rewritten; the files and the directory
    /// go when the watcher does.
    #[test]
    fn a_policys_own_knobs_are_files_beside_it() {
        let dir = std::env::temp_dir().join(format!("hl-own-knob-{}", std::process::id()));
        let created = ensure_dir(&dir).unwrap();
        assert!(created);
        let specs = [
            KnobSpec::int("heavy_util", 0, 1024, 256, ""),
            KnobSpec::on_off("move_up", true, ""),
        ];
        let files: Vec<KnobFile> = specs
            .iter()
            .enumerate()
            .map(|(i, s)| KnobFile::create(&dir, *s, i as u16, s.default).unwrap())
            .collect();
        assert_eq!(
            std::fs::read_to_string(dir.join("move_up")).unwrap(),
            "on\n"
        );
        let w = Watcher::spawn_all(None, files, &[256, 1], Some(dir.clone())).unwrap();
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
        std::fs::write(dir.join("heavy_util"), "300\n").unwrap();
        assert_eq!(
            wait(&w),
            KnobChange::Own {
                index: 0,
                value: 300
            }
        );
        w.applied_own(0, 300);
        std::thread::sleep(core::time::Duration::from_millis(20));
        std::fs::write(dir.join("heavy_util"), "5000\n").unwrap();
        assert_eq!(wait(&w), KnobChange::OwnRejected { index: 0 });
        // Rewritten with the value in force.
        for _ in 0..1000 {
            if std::fs::read_to_string(dir.join("heavy_util")).unwrap() == "300\n" {
                break;
            }
            std::thread::sleep(core::time::Duration::from_millis(10));
        }
        assert_eq!(
            std::fs::read_to_string(dir.join("heavy_util")).unwrap(),
            "300\n"
        );
        std::fs::write(dir.join("move_up"), "off\n").unwrap();
        assert_eq!(wait(&w), KnobChange::Own { index: 1, value: 0 });
        drop(w);
        assert!(!dir.exists());
    }
}
