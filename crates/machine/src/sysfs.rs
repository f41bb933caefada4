//! Reads the CPU topology files of a sysfs tree into plain data, nothing more.
//!
//! The tree is reached through [`SysfsFiles`], so the scheduler reads `/sys` ([`Disk`]), its
//! tests read the committed fake trees, and the fuzz target feeds file contents straight from
//! memory, all through the same parsing. Every file is optional: firmware differs, and what is
//! missing is `None` here and a fallback in [`detect`](crate::sysfs_detect::detect).

use hybridland_policy::{CpuId, CpuListError, CpuSet, MAX_CPUS, parse_cpu_list};
use std::path::{Path, PathBuf};

/// Where a sysfs tree's files come from.
pub trait SysfsFiles {
    /// The text of the file at `path`, or `None` when it is missing or unreadable.
    fn read(&self, path: &Path) -> Option<String>;
    /// The names of the entries of directory `dir` (none when it is missing).
    fn entries(&self, dir: &Path) -> Vec<String>;
}

/// The real file system.
#[derive(Clone, Copy, Debug, Default)]
pub struct Disk;

impl SysfsFiles for Disk {
    fn read(&self, path: &Path) -> Option<String> {
        std::fs::read_to_string(path).ok()
    }

    fn entries(&self, dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .collect()
    }
}

/// Why a sysfs tree gives no machine.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum SysfsError {
    /// A CPU list file that does not parse.
    #[error("{}: {error}", path.display())]
    List {
        /// The file.
        path: PathBuf,
        /// What is wrong, with the byte offset into the file.
        error: CpuListError,
    },
    /// The CPU directory has no `cpu<N>` entries.
    #[error("no CPUs under {}", dir.display())]
    NoCpus {
        /// `devices/system/cpu` under the root.
        dir: PathBuf,
    },
    /// A `cpu<N>` directory past the policy's CPU limit.
    #[error("{}: CPU id beyond the supported {MAX_CPUS}", dir.display())]
    CpuTooLarge {
        /// The directory.
        dir: PathBuf,
    },
    /// A bad file among one CPU's caches; the cause says which.
    #[error("{}", cpu_dir.display())]
    Cache {
        /// The CPU's directory.
        cpu_dir: PathBuf,
        /// The bad file.
        #[source]
        error: Box<Self>,
    },
}

/// Everything sysfs says about one logical CPU.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SysfsCpu {
    /// The CPU id.
    pub cpu: u16,
    /// SMT siblings including itself (`topology/thread_siblings_list`, or `core_cpus_list`).
    pub siblings: Option<CpuSet>,
    /// The kernel's cluster (`topology/cluster_cpus_list`).
    pub cluster: Option<CpuSet>,
    /// CPUs sharing the level-2 cache (`cache/index*/` with `level` 2, unified or data).
    pub l2: Option<CpuSet>,
    /// CPUs sharing the last-level cache (the highest `cache/index*/level` of 3 or more).
    pub llc: Option<CpuSet>,
    /// `cpu_capacity` (Arm, and x86 hybrid since 6.x), 0..=1024.
    pub capacity: Option<u32>,
    /// `acpi_cppc/highest_perf`.
    pub cppc_highest_perf: Option<u32>,
    /// `cpufreq/amd_pstate_prefcore_ranking` (AMD preferred-core ranking).
    pub amd_prefcore_ranking: Option<u32>,
    /// `cpufreq/amd_pstate_highest_perf`.
    pub amd_highest_perf: Option<u32>,
    /// `cpufreq/cpuinfo_max_freq` in kHz.
    pub max_freq_khz: Option<u32>,
}

/// The CPU part of one sysfs tree.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SysfsMachine {
    /// Where it was read from.
    pub root: PathBuf,
    /// Online CPUs, ascending.
    pub cpus: Vec<SysfsCpu>,
    /// `devices/cpu_core/cpus`: Intel hybrid P-cores.
    pub intel_core: Option<CpuSet>,
    /// `devices/cpu_atom/cpus`: Intel hybrid E-cores.
    pub intel_atom: Option<CpuSet>,
    /// `devices/system/node/node<N>/cpulist`, by node number.
    pub nodes: Vec<(u32, CpuSet)>,
}

/// `digits` as a number when the kernel would write it so: decimal digits, no sign, no
/// leading zero. Checked by hand rather than by printing the number back, which cost an
/// allocation per directory entry.
fn kernel_number(digits: &str) -> Option<u32> {
    let plain = digits.bytes().all(|b| b.is_ascii_digit());
    let padded = digits.len() > 1 && digits.starts_with('0');
    if !plain || padded {
        return None;
    }
    digits.parse().ok()
}

/// Reads one tree: the parsing shared by every [`SysfsFiles`].
struct Reader<'f, F: SysfsFiles + ?Sized> {
    files: &'f F,
}

impl<F: SysfsFiles + ?Sized> Reader<'_, F> {
    /// A file's text without what firmware and drivers leave at its end: the newline, extra
    /// whitespace, NUL bytes (seen in dumps of an Arm server). The start is kept, so a parse
    /// error's byte offset is an offset into the file.
    fn trimmed(&self, path: &Path) -> Option<String> {
        let mut text = self.files.read(path)?;
        // Cut in place rather than copied: one allocation less per file.
        let end = text
            .trim_end_matches(|c: char| c.is_whitespace() || c == '\0')
            .len();
        text.truncate(end);
        (!text.trim_start().is_empty()).then_some(text)
    }

    fn list(&self, path: &Path) -> Result<Option<CpuSet>, SysfsError> {
        match self.trimmed(path) {
            None => Ok(None),
            Some(text) => parse_cpu_list(&text)
                .map(Some)
                .map_err(|error| SysfsError::List {
                    path: path.to_owned(),
                    error,
                }),
        }
    }

    fn number(&self, path: &Path) -> Option<u32> {
        self.trimmed(path).and_then(|s| s.trim_start().parse().ok())
    }

    /// Numbered entries `prefix<N>` of a directory, ascending by N. Only N as the kernel writes
    /// it: `cpu05` or `cpu+5` beside `cpu5` would be the same CPU twice.
    fn numbered(&self, dir: &Path, prefix: &str) -> Vec<(u32, PathBuf)> {
        let mut out: Vec<(u32, PathBuf)> = self
            .files
            .entries(dir)
            .into_iter()
            .filter_map(|name| {
                let n = kernel_number(name.strip_prefix(prefix)?)?;
                Some((n, dir.join(&name)))
            })
            .collect();
        out.sort();
        out
    }

    /// Cache sharing of one CPU: (level-2 sharers, last-level sharers).
    fn caches(&self, cpu_dir: &Path) -> Result<(Option<CpuSet>, Option<CpuSet>), SysfsError> {
        let mut l2 = None;
        let mut llc: Option<(u32, CpuSet)> = None;
        for (_, index) in self.numbered(&cpu_dir.join("cache"), "index") {
            let Some(level) = self.number(&index.join("level")) else {
                continue;
            };
            let kind = self.trimmed(&index.join("type")).unwrap_or_default();
            if kind.trim_start() == "Instruction" {
                continue;
            }
            let Some(shared) = self.list(&index.join("shared_cpu_list"))? else {
                continue;
            };
            if level == 2 {
                l2 = Some(shared);
            }
            if level >= 3 && llc.as_ref().is_none_or(|(l, _)| level > *l) {
                llc = Some((level, shared));
            }
        }
        Ok((l2, llc.map(|(_, s)| s)))
    }

    fn machine(&self, root: &Path) -> Result<SysfsMachine, SysfsError> {
        let cpu_root = root.join("devices/system/cpu");
        let online = self.list(&cpu_root.join("online"))?;
        let dirs = self.numbered(&cpu_root, "cpu");
        if dirs.is_empty() {
            return Err(SysfsError::NoCpus { dir: cpu_root });
        }
        let mut cpus = Vec::new();
        for (n, dir) in dirs {
            let id = u16::try_from(n).ok().filter(|n| usize::from(*n) < MAX_CPUS);
            let Some(id) = id else {
                return Err(SysfsError::CpuTooLarge { dir });
            };
            // Without the top-level list, a CPU's own `online` file says (CPU 0 often has
            // none: it cannot go offline).
            let is_online = match online {
                Some(o) => o.contains(CpuId(id)),
                None => self.number(&dir.join("online")) != Some(0),
            };
            if !is_online {
                continue;
            }
            let topo = dir.join("topology");
            let siblings = match self.list(&topo.join("thread_siblings_list"))? {
                Some(s) => Some(s),
                None => self.list(&topo.join("core_cpus_list"))?,
            };
            let (l2, llc) = self.caches(&dir).map_err(|e| SysfsError::Cache {
                cpu_dir: dir.clone(),
                error: Box::new(e),
            })?;
            cpus.push(SysfsCpu {
                cpu: id,
                siblings,
                cluster: self.list(&topo.join("cluster_cpus_list"))?,
                l2,
                llc,
                capacity: self.number(&dir.join("cpu_capacity")),
                cppc_highest_perf: self.number(&dir.join("acpi_cppc/highest_perf")),
                amd_prefcore_ranking: self.number(&dir.join("cpufreq/amd_pstate_prefcore_ranking")),
                amd_highest_perf: self.number(&dir.join("cpufreq/amd_pstate_highest_perf")),
                max_freq_khz: self.number(&dir.join("cpufreq/cpuinfo_max_freq")),
            });
        }
        let mut nodes = Vec::new();
        for (n, dir) in self.numbered(&root.join("devices/system/node"), "node") {
            match self.list(&dir.join("cpulist"))? {
                Some(set) if !set.is_empty() => nodes.push((n, set)),
                _ => {}
            }
        }
        Ok(SysfsMachine {
            root: root.to_owned(),
            cpus,
            intel_core: self.list(&root.join("devices/cpu_core/cpus"))?,
            intel_atom: self.list(&root.join("devices/cpu_atom/cpus"))?,
            nodes,
        })
    }
}

impl SysfsMachine {
    /// Reads the tree under `root` (normally `/sys`) from the disk.
    ///
    /// # Errors
    /// A CPU list file that does not parse, no CPU directory, or a CPU id past the limit.
    pub fn read(root: &Path) -> Result<Self, SysfsError> {
        Self::read_from(&Disk, root)
    }

    /// Reads the tree under `root` from `files`.
    ///
    /// # Errors
    /// As [`read`](Self::read).
    pub fn read_from<F: SysfsFiles + ?Sized>(files: &F, root: &Path) -> Result<Self, SysfsError> {
        Reader { files }.machine(root)
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use std::collections::BTreeMap;

    /// Files from memory: what the fuzz target does with its input.
    struct Mem(BTreeMap<&'static str, &'static str>);

    impl SysfsFiles for Mem {
        fn read(&self, path: &Path) -> Option<String> {
            self.0.get(path.to_str()?).map(|s| (*s).to_owned())
        }

        fn entries(&self, dir: &Path) -> Vec<String> {
            let dir = dir.to_str().unwrap_or_default();
            let mut names: Vec<String> = self
                .0
                .keys()
                .filter_map(|p| p.strip_prefix(dir)?.strip_prefix('/')?.split('/').next())
                .map(str::to_owned)
                .collect();
            names.dedup();
            names
        }
    }

    #[test]
    fn any_source_is_read_the_same_way() {
        let m = SysfsMachine::read_from(
            &Mem(BTreeMap::from([
                ("/s/devices/system/cpu/online", "0-1\n"),
                (
                    "/s/devices/system/cpu/cpu0/topology/core_cpus_list",
                    "0-1\n\0",
                ),
                ("/s/devices/system/cpu/cpu1/cpu_capacity", "512\n"),
                ("/s/devices/system/cpu/cpu1/cache/index2/level", "2"),
                (
                    "/s/devices/system/cpu/cpu1/cache/index2/shared_cpu_list",
                    "1",
                ),
                ("/s/devices/system/cpu/cpu2/online", "1"),
                ("/s/devices/system/cpu/cpufreq/online", "1"),
                ("/s/devices/system/cpu/cpu01/online", "1"),
                ("/s/devices/system/cpu/cpu+1/online", "1"),
            ])),
            Path::new("/s"),
        )
        .unwrap();
        // CPU 2 is not in the online list; `cpufreq` is no CPU, nor are `cpu01` and `cpu+1`
        // (CPU 1 again).
        let ids: Vec<u16> = m.cpus.iter().map(|c| c.cpu).collect();
        assert_eq!(ids, [0, 1]);
        assert_eq!(m.cpus[0].siblings.unwrap().to_string(), "0-1");
        assert_eq!(
            (m.cpus[1].capacity, m.cpus[1].l2.unwrap().to_string()),
            (Some(512), "1".into())
        );
    }

    #[test]
    fn numbers_only_as_the_kernel_writes_them() {
        let read = ["0", "7", "10", "1023"].map(kernel_number);
        assert_eq!(read, [Some(0), Some(7), Some(10), Some(1023)]);
        for odd in ["", "00", "05", "+5", "-1", "5x", " 5", "٣", "99999999999"] {
            assert_eq!(kernel_number(odd), None, "{odd:?}");
        }
    }

    #[test]
    fn errors_name_the_file() {
        let bad = Mem(BTreeMap::from([
            ("/s/devices/system/cpu/cpu0/cache/index0/level", "3"),
            (
                "/s/devices/system/cpu/cpu0/cache/index0/shared_cpu_list",
                "0-",
            ),
        ]));
        let e = SysfsMachine::read_from(&bad, Path::new("/s")).unwrap_err();
        assert_eq!(e.to_string(), "/s/devices/system/cpu/cpu0");
        let SysfsError::Cache { error, .. } = e else {
            panic!("{e:?}")
        };
        assert_eq!(
            error.to_string(),
            "/s/devices/system/cpu/cpu0/cache/index0/shared_cpu_list: expected a CPU number at byte 2"
        );
        let e = SysfsMachine::read_from(&Mem(BTreeMap::new()), Path::new("/s")).unwrap_err();
        assert_eq!(
            e,
            SysfsError::NoCpus {
                dir: "/s/devices/system/cpu".into()
            }
        );
        let far = Mem(BTreeMap::from([(
            "/s/devices/system/cpu/cpu1024/online",
            "1",
        )]));
        let e = SysfsMachine::read_from(&far, Path::new("/s")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "/s/devices/system/cpu/cpu1024: CPU id beyond the supported 1024"
        );
    }
}
