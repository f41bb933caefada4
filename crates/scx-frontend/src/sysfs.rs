//! Reads the CPU topology files of a sysfs tree into plain data, nothing more.
//!
//! The root is a parameter so tests read the committed fake trees under `tests/fixtures/`
//! exactly as the scheduler reads `/sys` on a real machine. Every file is optional: firmware
//! differs, and what is missing is `None` here and a fallback in
//! [`topology_detect`](crate::topology_detect).

#![forbid(unsafe_code)]

use anyhow::{Context, Result, bail};
use hybridland_policy::{CpuId, CpuSet, parse_cpu_list};
use std::path::{Path, PathBuf};

/// Everything sysfs says about one logical CPU.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct SysfsCpu {
    /// The CPU id.
    pub(crate) cpu: u16,
    /// SMT siblings including itself (`topology/thread_siblings_list`, or `core_cpus_list`).
    pub(crate) siblings: Option<CpuSet>,
    /// The kernel's cluster (`topology/cluster_cpus_list`).
    pub(crate) cluster: Option<CpuSet>,
    /// CPUs sharing the level-2 cache (`cache/index*/` with `level` 2, unified or data).
    pub(crate) l2: Option<CpuSet>,
    /// CPUs sharing the last-level cache (the highest `cache/index*/level` of 3 or more).
    pub(crate) llc: Option<CpuSet>,
    /// `cpu_capacity` (Arm, and x86 hybrid since 6.x), 0..=1024.
    pub(crate) capacity: Option<u32>,
    /// `acpi_cppc/highest_perf`.
    pub(crate) cppc_highest_perf: Option<u32>,
    /// `cpufreq/amd_pstate_prefcore_ranking` (AMD preferred-core ranking).
    pub(crate) amd_prefcore_ranking: Option<u32>,
    /// `cpufreq/amd_pstate_highest_perf`.
    pub(crate) amd_highest_perf: Option<u32>,
    /// `cpufreq/cpuinfo_max_freq` in kHz.
    pub(crate) max_freq_khz: Option<u32>,
}

/// The CPU part of one sysfs tree.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct SysfsMachine {
    /// Where it was read from.
    pub(crate) root: PathBuf,
    /// Online CPUs, ascending.
    pub(crate) cpus: Vec<SysfsCpu>,
    /// `devices/cpu_core/cpus`: Intel hybrid P-cores.
    pub(crate) intel_core: Option<CpuSet>,
    /// `devices/cpu_atom/cpus`: Intel hybrid E-cores.
    pub(crate) intel_atom: Option<CpuSet>,
    /// `devices/system/node/node<N>/cpulist`, by node number.
    pub(crate) nodes: Vec<(u32, CpuSet)>,
}

/// A sysfs file's text without what firmware and drivers leave at its end: the newline, extra
/// whitespace, NUL bytes (seen in dumps of an Arm server). The start is kept, so a parse
/// error's byte offset is an offset into the file.
fn read_trimmed(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| {
            s.trim_end_matches(|c: char| c.is_whitespace() || c == '\0')
                .to_owned()
        })
        .filter(|s| !s.trim_start().is_empty())
}

fn read_list(path: &Path) -> Result<Option<CpuSet>> {
    match read_trimmed(path) {
        None => Ok(None),
        Some(text) => parse_cpu_list(&text)
            .map(Some)
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display())),
    }
}

fn read_u32(path: &Path) -> Option<u32> {
    read_trimmed(path).and_then(|s| s.trim_start().parse().ok())
}

/// Numbered entries `prefix<N>` of a directory, ascending by N.
fn numbered(dir: &Path, prefix: &str) -> Vec<(u32, PathBuf)> {
    let mut out: Vec<(u32, PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let n = name.strip_prefix(prefix)?.parse().ok()?;
            Some((n, e.path()))
        })
        .collect();
    out.sort();
    out
}

/// Cache sharing of one CPU: (level-2 sharers, last-level sharers).
fn caches(cpu_dir: &Path) -> Result<(Option<CpuSet>, Option<CpuSet>)> {
    let mut l2 = None;
    let mut llc: Option<(u32, CpuSet)> = None;
    for (_, index) in numbered(&cpu_dir.join("cache"), "index") {
        let Some(level) = read_u32(&index.join("level")) else {
            continue;
        };
        let kind = read_trimmed(&index.join("type")).unwrap_or_default();
        if kind.trim_start() == "Instruction" {
            continue;
        }
        let Some(shared) = read_list(&index.join("shared_cpu_list"))? else {
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

impl SysfsMachine {
    /// Reads the tree under `root` (normally `/sys`).
    pub(crate) fn read(root: &Path) -> Result<Self> {
        let cpu_root = root.join("devices/system/cpu");
        let online = read_list(&cpu_root.join("online"))?;
        let dirs = numbered(&cpu_root, "cpu");
        if dirs.is_empty() {
            bail!("no CPUs under {}", cpu_root.display());
        }
        let mut cpus = Vec::new();
        for (n, dir) in dirs {
            let id = u16::try_from(n)
                .ok()
                .filter(|n| usize::from(*n) < hybridland_policy::MAX_CPUS);
            let Some(id) = id else {
                bail!("{}: CPU id beyond the supported 1024", dir.display())
            };
            // Without the top-level list, a CPU's own `online` file says (CPU 0 often has
            // none: it cannot go offline).
            let is_online = match online {
                Some(o) => o.contains(CpuId(id)),
                None => read_u32(&dir.join("online")) != Some(0),
            };
            if !is_online {
                continue;
            }
            let topo = dir.join("topology");
            let siblings = match read_list(&topo.join("thread_siblings_list"))? {
                Some(s) => Some(s),
                None => read_list(&topo.join("core_cpus_list"))?,
            };
            let (l2, llc) = caches(&dir).with_context(|| format!("{}", dir.display()))?;
            cpus.push(SysfsCpu {
                cpu: id,
                siblings,
                cluster: read_list(&topo.join("cluster_cpus_list"))?,
                l2,
                llc,
                capacity: read_u32(&dir.join("cpu_capacity")),
                cppc_highest_perf: read_u32(&dir.join("acpi_cppc/highest_perf")),
                amd_prefcore_ranking: read_u32(&dir.join("cpufreq/amd_pstate_prefcore_ranking")),
                amd_highest_perf: read_u32(&dir.join("cpufreq/amd_pstate_highest_perf")),
                max_freq_khz: read_u32(&dir.join("cpufreq/cpuinfo_max_freq")),
            });
        }
        let nodes = numbered(&root.join("devices/system/node"), "node")
            .into_iter()
            .filter_map(|(n, dir)| match read_list(&dir.join("cpulist")) {
                Ok(Some(set)) if !set.is_empty() => Some(Ok((n, set))),
                Ok(_) => None,
                Err(e) => Some(Err(e)),
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            root: root.to_owned(),
            cpus,
            intel_core: read_list(&root.join("devices/cpu_core/cpus"))?,
            intel_atom: read_list(&root.join("devices/cpu_atom/cpus"))?,
            nodes,
        })
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name)
    }

    #[test]
    fn reads_the_laptop_fixture() {
        let m = SysfsMachine::read(&fixture("i7-13800h")).unwrap();
        assert_eq!(m.cpus.len(), 20);
        assert_eq!(m.intel_core.unwrap().to_string(), "0-11");
        assert_eq!(m.intel_atom.unwrap().to_string(), "12-19");
        let c3 = &m.cpus[3];
        assert_eq!(c3.siblings.unwrap().to_string(), "2-3");
        assert_eq!(m.cpus[13].l2.unwrap().to_string(), "12-15");
        assert_eq!(m.cpus[13].llc.unwrap().to_string(), "0-19");
        assert_eq!(m.nodes.len(), 1);
    }

    #[test]
    fn trailing_whitespace_and_nul_bytes_are_trimmed() {
        let m = SysfsMachine::read(&fixture("arm-nul-endings")).unwrap();
        assert_eq!(m.cpus.len(), 4);
        assert_eq!(m.cpus[1].cluster.unwrap().to_string(), "0-1");
        assert_eq!(m.cpus[2].l2.unwrap().to_string(), "2-3");
        assert_eq!(m.cpus[3].capacity, Some(512));
        assert_eq!(m.nodes[0].1.to_string(), "0-3");
    }

    #[test]
    fn without_the_online_list_each_cpu_says_for_itself() {
        let m = SysfsMachine::read(&fixture("no-online-list")).unwrap();
        let ids: Vec<u16> = m.cpus.iter().map(|c| c.cpu).collect();
        assert_eq!(ids, [0, 1, 3]);
    }

    #[test]
    fn a_parse_error_points_at_the_offending_byte() {
        let dir = std::env::temp_dir().join(format!("hl-sysfs-{}", std::process::id()));
        let cpu0 = dir.join("devices/system/cpu/cpu0/topology");
        std::fs::create_dir_all(&cpu0).unwrap();
        // "0-3,5x" with sysfs's endings: the `x` is byte 5.
        std::fs::write(cpu0.join("cluster_cpus_list"), "0-3,5x\n\0").unwrap();
        let e = SysfsMachine::read(&dir).unwrap_err().to_string();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(
            e.contains("cluster_cpus_list") && e.contains("at byte 5"),
            "{e}"
        );
    }

    #[test]
    fn missing_root_is_an_error() {
        assert!(SysfsMachine::read(Path::new("/nonexistent/sys")).is_err());
    }
}
