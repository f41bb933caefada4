//! Checks made before anything touches BPF, so a user sees one clear line instead of libbpf's
//! (`extern (func ksym) 'scx_bpf_dsq_nr_queued': not found in kernel or module BTFs`, then
//! `loading the idle-snapshot BPF program: Invalid argument`): the kernel has sched_ext, no
//! other sched_ext scheduler is loaded, we are root.

#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};

/// Why the scheduler cannot start here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// `<sysfs>/kernel/sched_ext` is missing.
    NoSchedExt(PathBuf),
    /// A sched_ext scheduler is loaded already: its name from `root/ops`, and the state.
    OtherLoaded { name: String, state: String },
    /// Not running as root.
    NotRoot,
}

impl core::fmt::Display for Refusal {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let program = crate::program();
        match self {
            Self::NoSchedExt(dir) => write!(
                f,
                "this kernel has no sched_ext ({} is missing): {program} needs Linux 6.12 or \
                 later built with CONFIG_SCHED_CLASS_EXT=y; `{program} --dry-run` works anyway",
                dir.display()
            ),
            Self::OtherLoaded { name, state } => write!(
                f,
                "another sched_ext scheduler is loaded ({name}, {state}): stop it first (for the scx \
                 package: `systemctl stop scx`); `{program} --dry-run` works anyway"
            ),
            Self::NotRoot => write!(
                f,
                "loading a sched_ext scheduler needs root (run it with sudo); \
                 `{program} --dry-run` works without"
            ),
        }
    }
}

impl core::error::Error for Refusal {}

/// Checks the sched_ext directory of the sysfs tree at `sysfs_root` and the effective user id.
pub(crate) fn check(sysfs_root: &Path, euid_is_root: bool) -> Result<(), Refusal> {
    let dir = sysfs_root.join("kernel/sched_ext");
    if !dir.is_dir() {
        return Err(Refusal::NoSchedExt(dir));
    }
    let read = |name: &str| {
        std::fs::read_to_string(dir.join(name))
            .ok()
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
    };
    let state = read("state").unwrap_or_else(|| "disabled".into());
    // `root/ops` exists only while a scheduler is loaded; `state` says so too (enabling,
    // enabled, disabling).
    if let Some(name) = read("root/ops").or_else(|| (state != "disabled").then(|| "unnamed".into()))
    {
        return Err(Refusal::OtherLoaded { name, state });
    }
    if !euid_is_root {
        return Err(Refusal::NotRoot);
    }
    Ok(())
}

/// Whether this process runs with root's effective user id.
pub(crate) fn running_as_root() -> bool {
    rustix::process::geteuid().is_root()
}

#[cfg(test)]
mod test {
    use super::*;

    /// A sysfs root of a test's own, removed when the test ends.
    struct FakeSys(tempfile::TempDir);

    impl FakeSys {
        fn new() -> Self {
            Self(crate::safe_file::testing::scratch())
        }

        /// The root to check.
        fn root(&self) -> &Path {
            self.0.path()
        }

        fn with_sched_ext(self, state: &str, ops: Option<&str>) -> Self {
            let d = self.root().join("kernel/sched_ext");
            std::fs::create_dir_all(d.join("root")).unwrap();
            std::fs::write(d.join("state"), format!("{state}\n")).unwrap();
            if let Some(ops) = ops {
                std::fs::write(d.join("root/ops"), format!("{ops}\n")).unwrap();
            }
            self
        }
    }

    #[test]
    fn a_kernel_without_sched_ext_is_named_in_one_line() {
        let sys = FakeSys::new();
        let e = check(sys.root(), true).unwrap_err();
        assert!(matches!(e, Refusal::NoSchedExt(_)));
        let line = e.to_string();
        assert!(!line.contains('\n'));
        for want in [
            "CONFIG_SCHED_CLASS_EXT",
            "6.12",
            "--dry-run",
            "kernel/sched_ext",
        ] {
            assert!(line.contains(want), "{line}");
        }
    }

    #[test]
    fn another_scheduler_is_named() {
        let sys = FakeSys::new().with_sched_ext("enabled", Some("bpfland_1.0.14_x86_64"));
        let e = check(sys.root(), true).unwrap_err();
        assert_eq!(
            e,
            Refusal::OtherLoaded {
                name: "bpfland_1.0.14_x86_64".into(),
                state: "enabled".into()
            }
        );
        assert!(e.to_string().contains("bpfland_1.0.14_x86_64"));
        // Root or not, the other scheduler is the first thing to fix.
        assert!(matches!(
            check(sys.root(), false),
            Err(Refusal::OtherLoaded { .. })
        ));
        let sys = FakeSys::new().with_sched_ext("enabling", None);
        assert!(matches!(
            check(sys.root(), true),
            Err(Refusal::OtherLoaded { .. })
        ));
    }

    #[test]
    fn not_root_then_ready() {
        let sys = FakeSys::new().with_sched_ext("disabled", None);
        let e = check(sys.root(), false).unwrap_err();
        assert_eq!(e, Refusal::NotRoot);
        assert!(e.to_string().contains("root") && e.to_string().contains("--dry-run"));
        assert_eq!(check(sys.root(), true), Ok(()));
    }
}
