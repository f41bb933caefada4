//! Turns what sysfs says (or a `--topology` TOML file) into the policy's [`Topology`].
//!
//! Detection rules, in order of trust:
//! - **Kinds.** On Intel hybrid parts `devices/cpu_core/cpus` are P-cores and
//!   `devices/cpu_atom/cpus` E-cores; these stay right when every CPU reports the same maximum
//!   frequency. Elsewhere a CPU whose capacity is below 80% of the largest is an E-core, the
//!   rest P-cores (so a symmetric machine is all P).
//! - **Capacity and rank.** The first source every CPU has, of: `cpu_capacity`, ACPI CPPC
//!   `highest_perf`, `amd_pstate_highest_perf`, `cpuinfo_max_freq`; scaled so the largest is
//!   1024. P-cores all get the P capacity of their kind's best CPU and keep the raw value as
//!   their rank (ITMT favoured cores, AMD preferred cores), so a favoured core wins ties without
//!   making its siblings look slow. `amd_pstate_prefcore_ranking` is the rank when present.
//! - **SMT.** `thread_siblings_list` (or `core_cpus_list`).
//! - **Clusters.** `cluster_cpus_list`, the kernel's own cluster, unless it is missing or just
//!   the CPU's core; then the CPUs sharing the L2 (`cache/index*/` of level 2); else the core.
//! - **LLC** from the highest cache level of 3 or more, **nodes** from `devices/system/node`.

#![forbid(unsafe_code)]

use crate::sysfs::SysfsMachine;
use anyhow::{Context, Result, anyhow, bail};
use hybridland_policy::{CoreKind, CpuId, CpuSet, Topology, TopologyBuilder, parse_cpu_list};
use serde::Deserialize;
use std::path::Path;

/// A machine description in plain data: what the builder is fed, kept for `--dry-run`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct MachineDesc {
    /// Where it came from, for people.
    pub(crate) source: String,
    /// How kinds and capacities were found, for people.
    pub(crate) notes: Vec<String>,
    /// Every CPU: id, kind, capacity, rank.
    pub(crate) cpus: Vec<(CpuId, CoreKind, u16, u16)>,
    /// SMT sibling groups with more than one CPU.
    pub(crate) cores: Vec<CpuSet>,
    /// Cluster groups.
    pub(crate) clusters: Vec<CpuSet>,
    /// Last-level cache groups.
    pub(crate) llcs: Vec<CpuSet>,
    /// NUMA node groups.
    pub(crate) nodes: Vec<CpuSet>,
}

impl MachineDesc {
    /// Checks the description into a topology.
    pub(crate) fn build(&self) -> Result<Topology> {
        let mut b = TopologyBuilder::new();
        for &(cpu, kind, capacity, rank) in &self.cpus {
            b.add_cpu(cpu, kind, capacity, rank)
                .with_context(|| format!("cpu {cpu}"))?;
        }
        let ids = |s: &CpuSet| s.iter().collect::<Vec<_>>();
        for core in &self.cores {
            b.add_core(&ids(core))
                .with_context(|| format!("SMT core {core}"))?;
        }
        for cluster in &self.clusters {
            b.add_cluster(&ids(cluster))
                .with_context(|| format!("cluster {cluster}"))?;
        }
        for llc in &self.llcs {
            b.add_llc(&ids(llc)).with_context(|| format!("LLC {llc}"))?;
        }
        for node in &self.nodes {
            b.add_node(&ids(node))
                .with_context(|| format!("node {node}"))?;
        }
        b.build()
            .with_context(|| format!("topology from {}", self.source))
    }
}

/// Distinct groups, each restricted to `present`, in order of their first CPU.
fn distinct(groups: impl IntoIterator<Item = CpuSet>, present: &CpuSet) -> Vec<CpuSet> {
    let mut out: Vec<CpuSet> = Vec::new();
    for g in groups {
        let g = g.and(present);
        if !g.is_empty() && !out.contains(&g) {
            out.push(g);
        }
    }
    out.sort_by_key(|g| g.first());
    out
}

/// Scales raw performance values so the largest is 1024 (at least 1).
fn scale(raw: u32, max: u32) -> u16 {
    let v = (u64::from(raw) * 1024).div_ceil(u64::from(max.max(1)));
    v.clamp(1, 1024) as u16
}

/// Builds a description from a sysfs tree.
pub(crate) fn from_sysfs(m: &SysfsMachine) -> Result<MachineDesc> {
    let present: CpuSet = m.cpus.iter().map(|c| CpuId(c.cpu)).collect();
    let mut notes = Vec::new();

    // Capacity source: the first one every CPU has.
    type Pick = fn(&crate::sysfs::SysfsCpu) -> Option<u32>;
    let sources: [(&str, Pick); 4] = [
        ("cpu_capacity", |c| c.capacity),
        ("acpi_cppc/highest_perf", |c| c.cppc_highest_perf),
        ("amd_pstate_highest_perf", |c| c.amd_highest_perf),
        ("cpuinfo_max_freq", |c| c.max_freq_khz),
    ];
    let (source, raw): (&str, Vec<u32>) = sources
        .iter()
        .find_map(|(name, pick)| {
            let v: Option<Vec<u32>> = m.cpus.iter().map(pick).collect();
            v.filter(|v| v.iter().all(|x| *x > 0)).map(|v| (*name, v))
        })
        .unwrap_or(("none (all CPUs equal)", vec![1024; m.cpus.len()]));
    let max = raw.iter().copied().max().unwrap_or(1);
    let mut capacity: Vec<u16> = raw.iter().map(|r| scale(*r, max)).collect();
    notes.push(format!("capacity from {source}"));

    // Kinds.
    let intel = m
        .intel_core
        .zip(m.intel_atom)
        .filter(|(p, e)| !p.is_empty() && !e.is_empty());
    let kinds: Vec<CoreKind> = match intel {
        Some((p_set, e_set)) => {
            notes.push(format!(
                "kinds from devices/cpu_core/cpus ({p_set}) and devices/cpu_atom/cpus ({e_set})"
            ));
            m.cpus
                .iter()
                .map(|c| {
                    if e_set.contains(CpuId(c.cpu)) && !p_set.contains(CpuId(c.cpu)) {
                        CoreKind::Efficiency
                    } else {
                        CoreKind::Performance
                    }
                })
                .collect()
        }
        None => {
            notes.push("kinds from capacity (below 80% of the largest = efficiency)".into());
            capacity
                .iter()
                .map(|c| {
                    if u32::from(*c) * 100 < 1024 * 80 {
                        CoreKind::Efficiency
                    } else {
                        CoreKind::Performance
                    }
                })
                .collect()
        }
    };
    // One capacity per kind for P-cores where the raw values rank favoured cores (CPPC, AMD
    // highest_perf, turbo frequencies): the favoured core is told apart by rank, not by a
    // capacity that makes its siblings look slow. `cpu_capacity` off Intel is the kernel's
    // own per-CPU capacity and stays as it is: a phone's middle tier keeps its 871 for the
    // fit test. Every kind is flattened when the kinds came from Intel's PMU lists.
    let flatten_p = source != "cpu_capacity" || intel.is_some();
    for kind in CoreKind::ALL {
        let flatten = if kind == CoreKind::Performance {
            flatten_p
        } else {
            intel.is_some()
        };
        if !flatten {
            continue;
        }
        let best = kinds
            .iter()
            .zip(&capacity)
            .filter(|(k, _)| **k == kind)
            .map(|(_, c)| *c)
            .max();
        if let Some(best) = best {
            for (k, c) in kinds.iter().zip(capacity.iter_mut()) {
                if *k == kind {
                    *c = best;
                }
            }
        }
    }
    let ranks: Vec<u16> = m
        .cpus
        .iter()
        .zip(&raw)
        .map(|(c, r)| {
            let rank = c.amd_prefcore_ranking.or(c.cppc_highest_perf).unwrap_or(*r);
            rank.min(u32::from(u16::MAX)) as u16
        })
        .collect();
    // Ranks only matter within equal capacities; if they are all equal there, drop them so
    // the dry-run output stays quiet.
    let cpus = m
        .cpus
        .iter()
        .enumerate()
        .map(|(i, c)| (CpuId(c.cpu), kinds[i], capacity[i], ranks[i]))
        .collect::<Vec<_>>();

    let cores = distinct(m.cpus.iter().filter_map(|c| c.siblings), &present)
        .into_iter()
        .filter(|s| s.count() > 1)
        .collect::<Vec<_>>();
    let core_of = |cpu: u16| {
        cores
            .iter()
            .find(|s| s.contains(CpuId(cpu)))
            .copied()
            .unwrap_or_else(|| {
                let mut s = CpuSet::EMPTY;
                s.insert(CpuId(cpu));
                s
            })
    };
    let mut used_cluster_files = false;
    let mut used_l2 = false;
    let clusters = distinct(
        m.cpus.iter().map(|c| {
            let core = core_of(c.cpu);
            let nontrivial =
                |s: &CpuSet| s.and(&present) != core && s.and(&present).is_subset(&present);
            if let Some(cl) = c.cluster.filter(nontrivial) {
                used_cluster_files = true;
                cl.or(&core)
            } else if let Some(l2) = c.l2.filter(nontrivial) {
                used_l2 = true;
                l2.or(&core)
            } else {
                core
            }
        }),
        &present,
    );
    notes.push(
        match (used_cluster_files, used_l2) {
            (true, false) => "clusters from topology/cluster_cpus_list",
            (true, true) => "clusters from topology/cluster_cpus_list, else the L2 sharers",
            (false, true) => "clusters from the CPUs sharing an L2 (cache/index*/shared_cpu_list)",
            (false, false) => "no clusters larger than a core",
        }
        .into(),
    );
    let llcs = distinct(m.cpus.iter().filter_map(|c| c.llc), &present);
    let nodes = distinct(m.nodes.iter().map(|(_, s)| *s), &present);
    Ok(MachineDesc {
        source: format!("sysfs at {}", m.root.display()),
        notes,
        cpus,
        cores,
        clusters,
        llcs,
        nodes,
    })
}

/// The `--topology` file: for machines and VMs whose firmware does not say.
///
/// ```toml
/// cores = ["0-1", "2-3"]          # SMT siblings; unlisted CPUs are cores of their own
/// clusters = ["4-5", "6-7"]       # CPUs sharing an L2; unlisted cores are their own cluster
/// llcs = ["0-7"]                  # optional
/// nodes = ["0-7"]                 # optional
///
/// [[cpus]]
/// list = "0-3"
/// kind = "performance"            # performance | efficiency | low-power-efficiency
/// capacity = 1024                 # 1..=1024
/// rank = 0                        # optional, higher is preferred among equal capacities
///
/// [[cpus]]
/// list = "4-7"
/// kind = "efficiency"
/// capacity = 640
/// ```
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TopologyFile {
    #[serde(default)]
    cores: Vec<String>,
    #[serde(default)]
    clusters: Vec<String>,
    #[serde(default)]
    llcs: Vec<String>,
    #[serde(default)]
    nodes: Vec<String>,
    cpus: Vec<CpuRun>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CpuRun {
    list: String,
    kind: String,
    capacity: u16,
    #[serde(default)]
    rank: u16,
}

/// Parses a `--topology` TOML text (`name` is used in messages).
pub(crate) fn from_toml(text: &str, name: &str) -> Result<MachineDesc> {
    let file: TopologyFile =
        toml::from_str(text).with_context(|| format!("{name}: not a topology file"))?;
    let list =
        |what: &str, s: &str| parse_cpu_list(s).map_err(|e| anyhow!("{name}: {what} `{s}`: {e}"));
    let mut cpus = Vec::new();
    for run in &file.cpus {
        let kind: CoreKind = run
            .kind
            .parse()
            .map_err(|e| anyhow!("{name}: cpus `{}`: {e}", run.list))?;
        for cpu in list("cpus", &run.list)?.iter() {
            cpus.push((cpu, kind, run.capacity, run.rank));
        }
    }
    if cpus.is_empty() {
        bail!("{name}: no [[cpus]] entries");
    }
    cpus.sort_by_key(|c| c.0);
    let groups =
        |what: &str, v: &[String]| v.iter().map(|s| list(what, s)).collect::<Result<Vec<_>>>();
    Ok(MachineDesc {
        source: format!("file {name}"),
        notes: vec!["kinds, capacities and groups as the file says".into()],
        cpus,
        cores: groups("core", &file.cores)?,
        clusters: groups("cluster", &file.clusters)?,
        llcs: groups("llc", &file.llcs)?,
        nodes: groups("node", &file.nodes)?,
    })
}

/// Reads the machine from `--topology FILE` if given, else from the sysfs tree at `sysfs_root`.
pub(crate) fn detect(
    topology_file: Option<&Path>,
    sysfs_root: &Path,
) -> Result<(MachineDesc, Topology)> {
    let desc = match topology_file {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            from_toml(&text, &path.display().to_string())?
        }
        None => from_sysfs(&SysfsMachine::read(sysfs_root)?)?,
    };
    let topo = desc.build()?;
    Ok((desc, topo))
}

#[cfg(test)]
mod test {
    use super::*;
    use hybridland_policy::CoreKind::{Efficiency, Performance};

    fn fixture(name: &str) -> (MachineDesc, Topology) {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name);
        detect(None, &root).unwrap()
    }

    #[test]
    fn laptop_has_six_smt_p_cores_and_two_e_clusters() {
        let (_, t) = fixture("i7-13800h");
        assert_eq!(t.nr_cpus(), 20);
        assert_eq!(t.kind_mask(Performance).to_string(), "0-11");
        assert_eq!(t.kind_mask(Efficiency).to_string(), "12-19");
        assert_eq!(t.nr_cores(), 6 + 8);
        assert_eq!(t.core_cpus(0), &[CpuId(0), CpuId(1)]);
        // 6 P-core clusters (each its own L2) + 2 E clusters of 4.
        assert_eq!(t.nr_clusters(), 8);
        let e_cluster = t.info(CpuId(12)).unwrap().cluster as usize;
        assert_eq!(t.cluster_cpus(e_cluster).len(), 4);
        assert!(t.info(CpuId(0)).unwrap().capacity > t.info(CpuId(12)).unwrap().capacity);
        assert!(t.is_hybrid());
    }

    #[test]
    fn atom_server_has_six_clusters_of_four() {
        let (_, t) = fixture("atom-24");
        assert_eq!(t.nr_cpus(), 24);
        assert_eq!(t.nr_clusters(), 6);
        assert!((0..6).all(|c| t.cluster_cpus(c).len() == 4));
        assert!(!t.is_hybrid());
    }

    #[test]
    fn big_little_uses_cpu_capacity() {
        let (_, t) = fixture("big-little-2-3");
        assert_eq!(t.kind_mask(Performance).to_string(), "3-4");
        assert_eq!(t.kind_mask(Efficiency).to_string(), "0-2");
        assert_eq!(t.info(CpuId(0)).unwrap().capacity, 446);
        assert_eq!(t.nr_clusters(), 2);
    }

    #[test]
    fn three_tier_phone_keeps_each_cpu_capacity() {
        let (_, t) = fixture("phone-3-tiers");
        let cap = |c: u16| t.info(CpuId(c)).unwrap().capacity;
        assert_eq!((cap(0), cap(4), cap(6), cap(7)), (280, 871, 871, 1024));
        assert_eq!(t.kind_mask(Performance).to_string(), "4-7");
        assert_eq!(t.kind_mask(Efficiency).to_string(), "0-3");
        assert_eq!(t.nr_clusters(), 3);
    }

    #[test]
    fn nul_endings_and_offline_cpus() {
        let (_, t) = fixture("arm-nul-endings");
        assert_eq!(t.nr_clusters(), 2);
        assert_eq!(t.kind_mask(Efficiency).to_string(), "2-3");
        let (_, t) = fixture("no-online-list");
        assert_eq!(t.nr_cpus(), 3);
        assert!(t.info(CpuId(2)).is_none());
    }

    #[test]
    fn symmetric_box_with_split_smt_numbering() {
        let (_, t) = fixture("symmetric-4c8t");
        assert_eq!(t.nr_cpus(), 8);
        assert_eq!(t.nr_cores(), 4);
        assert_eq!(t.core_cpus(0), &[CpuId(0), CpuId(4)]);
        assert!(!t.is_hybrid());
        assert_eq!(t.nr_clusters(), 4);
    }

    #[test]
    fn toml_file_round_trip() {
        let text = r#"
cores = ["0-1", "2-3"]
clusters = ["4-5", "6-7"]
[[cpus]]
list = "0-3"
kind = "performance"
capacity = 1024
[[cpus]]
list = "4-7"
kind = "efficiency"
capacity = 640
"#;
        let t = from_toml(text, "t.toml").unwrap().build().unwrap();
        assert_eq!(t.nr_cores(), 6);
        assert_eq!(t.nr_clusters(), 4);
        assert_eq!(t.kind_mask(Efficiency).to_string(), "4-7");
    }

    #[test]
    fn toml_errors_name_the_problem() {
        let bad_kind = "[[cpus]]\nlist = \"0-3\"\nkind = \"turbo\"\ncapacity = 1024\n";
        let e = from_toml(bad_kind, "t.toml").unwrap_err().to_string();
        assert!(e.contains("t.toml") && e.contains("0-3"), "{e}");
        let dup = "[[cpus]]\nlist = \"0-3\"\nkind = \"p\"\ncapacity = 1024\n[[cpus]]\nlist = \"3\"\nkind = \"e\"\ncapacity = 500\n";
        assert!(from_toml(dup, "t.toml").unwrap().build().is_err());
        let unknown = "cpu = 3\n[[cpus]]\nlist = \"0\"\nkind = \"p\"\ncapacity = 1\n";
        assert!(from_toml(unknown, "t.toml").is_err());
        let zero = "[[cpus]]\nlist = \"0\"\nkind = \"p\"\ncapacity = 0\n";
        assert!(from_toml(zero, "t.toml").unwrap().build().is_err());
    }
}
