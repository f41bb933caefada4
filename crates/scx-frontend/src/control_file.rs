//! The run-time knob: a control file a sysadmin writes, like a sysfs knob.
//!
//! At start the scheduler creates `<control-dir>/cluster_balance` (default
//! `/run/scx_hybridland/cluster_balance`) holding the mode in force. Writing `off`, `on` or
//! `auto` to it changes cluster balance without a restart. A thread of ours ([`Watcher`],
//! started before the scheduler loads) sleeps on the directory's inotify events, looks at the
//! file's modification time when one comes, and hands a change to the loop over a channel, so
//! the loop does no file I/O and an unchanged file wakes nothing (where inotify cannot be had,
//! its limits reached, the thread looks every [`POLL_NS`] instead). A bad value is logged and
//! ignored, and the file is rewritten with the mode still in force. The directory is removed on
//! exit.
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

/// How often the watcher looks at the files when it has no inotify watch.
pub(crate) const POLL_NS: u64 = 100_000_000;

/// A small text file someone may rewrite: its path, and when the loop last wrote it or saw
/// it change.
struct ValueFile {
    path: PathBuf,
    modified: Option<SystemTime>,
    /// Whether the file there is ours (written at least once): only then is it removed.
    wrote: bool,
}

impl ValueFile {
    fn new(path: PathBuf) -> Self {
        Self {
            path,
            modified: None,
            wrote: false,
        }
    }

    fn write(&mut self, text: &str) -> Result<(), SafeFileError> {
        // In /run (tmpfs) by default, and gone at exit: nothing to sync, and the loop calls this.
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

    /// What was written since the last look, if anything; `current` (the value in force, as
    /// the file shows it) is put back if the file was deleted, and named in the warning when
    /// the file cannot be read.
    fn changed(&mut self, current: &str) -> Option<String> {
        let Ok(modified) = std::fs::symlink_metadata(&self.path).and_then(|m| m.modified()) else {
            // Deleted by someone: put it back.
            let _ = self.write(current);
            return None;
        };
        if Some(modified) == self.modified {
            return None;
        }
        self.modified = Some(modified);
        // Replaced by a link, FIFO or device (only root can): said once per change, never
        // followed or blocked on.
        match safe_file::read_small(&self.path, READ_LIMIT) {
            Ok(bytes) => Some(String::from_utf8_lossy(&bytes).into_owned()),
            Err(e) => {
                warn!("run-time control file: {e}; keeping {current}");
                None
            }
        }
    }

    /// Removes the file if it is ours.
    fn remove(&mut self) {
        if self.wrote {
            let _ = std::fs::remove_file(&self.path);
            self.wrote = false;
        }
    }
}

impl Drop for ValueFile {
    fn drop(&mut self) {
        self.remove();
    }
}

/// The control file.
pub(crate) struct ControlFile {
    dir: PathBuf,
    file: ValueFile,
    created_dir: bool,
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
        let mut me = Self {
            dir: dir.to_owned(),
            file: ValueFile::new(dir.join("cluster_balance")),
            created_dir,
        };
        me.file.write(&current.to_string())?;
        Ok(me)
    }

    /// The file's path.
    pub(crate) fn path(&self) -> &Path {
        &self.file.path
    }

    /// Looks for a new value; `current` is the mode in force.
    pub(crate) fn poll(&mut self, current: ClusterBalance) -> KnobChange {
        let shown = current.to_string();
        let Some(text) = self.file.changed(&shown) else {
            return KnobChange::None;
        };
        match text.trim().parse::<ClusterBalance>() {
            Ok(mode) if mode == current => KnobChange::None,
            Ok(mode) => KnobChange::Set(mode),
            Err(_) => {
                let _ = self.file.write(&shown);
                KnobChange::Rejected
            }
        }
    }
}

/// The file of one of the policy's own knobs, `dir/<name>`.
pub(crate) struct KnobFile {
    file: ValueFile,
    spec: KnobSpec,
    index: u16,
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
            file: ValueFile::new(dir.join(spec.name)),
            spec,
            index,
        };
        me.file.write(&spec.show(value).to_string())?;
        Ok(me)
    }

    /// The file's path.
    pub(crate) fn path(&self) -> &Path {
        &self.file.path
    }

    /// Looks for a new value; `current` is the value in force.
    pub(crate) fn poll(&mut self, current: i64) -> KnobChange {
        let shown = self.spec.show(current).to_string();
        let Some(text) = self.file.changed(&shown) else {
            return KnobChange::None;
        };
        match self.spec.parse(&text) {
            Ok(value) if value == current => KnobChange::None,
            Ok(value) => KnobChange::Own {
                index: self.index,
                value,
            },
            Err(_) => {
                let _ = self.file.write(&shown);
                KnobChange::OwnRejected { index: self.index }
            }
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
    /// The pipe the watcher sleeps on besides the directory's events: dropped, it ends it.
    stop: Option<std::io::PipeWriter>,
    /// Times the watcher looked at the files (written by it, read by tests).
    #[cfg_attr(not(test), expect(dead_code, reason = "read only by tests"))]
    looks: std::sync::Arc<core::sync::atomic::AtomicU64>,
    /// Whether it sleeps on inotify events (false: it looks every [`POLL_NS`]).
    #[cfg_attr(not(test), expect(dead_code, reason = "read only by tests"))]
    event_driven: bool,
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
        use core::sync::atomic::{AtomicI64, AtomicU8, AtomicU64, Ordering};
        let path = cluster
            .as_ref()
            .map(|(f, _)| f.path().to_path_buf())
            .or_else(|| own.first().map(|f| f.path().to_path_buf()))
            .unwrap_or_default();
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let (mut wake, stop) = wake::Wake::new(&dir)?;
        let event_driven = wake.has_inotify();
        let start = cluster.as_ref().map_or(ClusterBalance::Auto, |(_, m)| *m);
        let current = std::sync::Arc::new(AtomicU8::new(mode_index(start)));
        let own_now: std::sync::Arc<Vec<AtomicI64>> =
            std::sync::Arc::new(values.iter().map(|v| AtomicI64::new(*v)).collect());
        let looks = std::sync::Arc::new(AtomicU64::new(0));
        let (tx, changes) = std::sync::mpsc::channel();
        let (mode, own_values, looked) = (current.clone(), own_now.clone(), looks.clone());
        let thread = std::thread::Builder::new()
            .name("hl-knob".into())
            .stack_size(64 * 1024)
            .spawn(move || {
                'watch: loop {
                    looked.fetch_add(1, Ordering::Relaxed);
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
                    if wake.wait() == wake::Woke::Stop {
                        break;
                    }
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
            stop: Some(stop),
            looks,
            event_driven,
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
    /// Stops the watcher (closing its pipe wakes it) and waits for it, so the file and its
    /// directory are gone when this returns.
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for ControlFile {
    fn drop(&mut self) {
        // The file first: the directory goes only when empty.
        self.file.remove();
        if self.created_dir {
            let _ = std::fs::remove_dir(&self.dir);
        }
    }
}

#[cfg(test)]
mod tests;
mod wake;
