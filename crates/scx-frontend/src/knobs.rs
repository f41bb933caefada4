//! The run-time knob: a control file a sysadmin writes, like a sysfs knob.
//!
//! At start the scheduler creates `<control-dir>/cluster_balance` (default
//! `/run/scx_hybridland/cluster_balance`) holding the mode in force. Writing `off`, `on` or
//! `auto` to it changes cluster balance without a restart; the loop looks at the file's
//! modification time at most every [`POLL_NS`] and at least about once a second (the
//! framework wakes the loop that often even on an idle machine). A bad value is logged and
//! ignored, and the file is rewritten with the mode still in force. The directory is removed
//! on exit.

#![forbid(unsafe_code)]

use hybridland_policy::ClusterBalance;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// How often the loop may look at the file.
pub(crate) const POLL_NS: u64 = 100_000_000;

/// The control file.
pub(crate) struct ControlFile {
    dir: PathBuf,
    path: PathBuf,
    modified: Option<SystemTime>,
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
}

impl ControlFile {
    /// Creates `dir/cluster_balance` holding `current`.
    pub(crate) fn create(dir: &Path, current: ClusterBalance) -> std::io::Result<Self> {
        let created_dir = !dir.exists();
        std::fs::create_dir_all(dir)?;
        let path = dir.join("cluster_balance");
        let mut me = Self {
            dir: dir.to_owned(),
            path,
            modified: None,
            created_dir,
        };
        me.write(current)?;
        Ok(me)
    }

    /// The file's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    fn write(&mut self, mode: ClusterBalance) -> std::io::Result<()> {
        std::fs::write(&self.path, format!("{mode}\n"))?;
        self.modified = std::fs::metadata(&self.path)
            .and_then(|m| m.modified())
            .ok();
        Ok(())
    }

    /// Looks for a new value; `current` is the mode in force.
    pub(crate) fn poll(&mut self, current: ClusterBalance) -> KnobChange {
        let Ok(modified) = std::fs::metadata(&self.path).and_then(|m| m.modified()) else {
            // Deleted by someone: put it back.
            let _ = self.write(current);
            return KnobChange::None;
        };
        if Some(modified) == self.modified {
            return KnobChange::None;
        }
        self.modified = Some(modified);
        let text = std::fs::read_to_string(&self.path).unwrap_or_default();
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

impl Drop for ControlFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
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
}
