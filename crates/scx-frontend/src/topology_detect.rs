//! Turns what sysfs says (or a `--topology` machine file, read by `hybridland-machine` as the
//! simulator reads it) into the policy's [`Topology`].
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
use anyhow::Result;
use hybridland_machine::{CpuRun, Layout, MachineDesc};
use hybridland_policy::{CoreKind, CpuId, CpuSet, Topology};
use std::path::Path;

/// The machine as detected, with how it was found, kept for `--dry-run` and
/// `--emit-topology`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Detected {
    /// Where it came from, for people.
    pub(crate) source: String,
    /// How kinds and capacities were found, for people.
    pub(crate) notes: Vec<String>,
    /// The machine in the one format both frontends read.
    pub(crate) machine: MachineDesc,
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
pub(crate) fn from_sysfs(m: &SysfsMachine) -> Result<Detected> {
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
    let source = format!("sysfs at {}", m.root.display());
    let layout = Layout {
        cpus: cpus
            .iter()
            .map(|&(cpu, kind, capacity, rank)| CpuRun {
                cpus: single(cpu),
                kind,
                capacity,
                rank,
            })
            .collect(),
        cores,
        clusters,
        llcs,
        nodes,
    };
    let topology = layout.build(&source)?;
    Ok(Detected {
        machine: MachineDesc {
            name: None,
            description: Some(format!("detected by scx_hybridland from {source}")),
            topology: Box::new(topology),
            model: None,
        },
        source,
        notes,
    })
}

fn single(cpu: CpuId) -> CpuSet {
    let mut s = CpuSet::EMPTY;
    s.insert(cpu);
    s
}

/// Reads the machine from `--topology FILE` if given, else from the sysfs tree at `sysfs_root`.
pub(crate) fn detect(
    topology_file: Option<&Path>,
    sysfs_root: &Path,
) -> Result<(Detected, Topology)> {
    let detected = match topology_file {
        Some(path) => {
            let machine = hybridland_machine::load(path)?;
            let mut notes = vec!["kinds, capacities and groups as the file says".to_owned()];
            if machine.model.is_some() {
                notes.push("its [model] table is the simulator's and is not used here".into());
            }
            Detected {
                source: format!("file {}", path.display()),
                notes,
                machine,
            }
        }
        None => from_sysfs(&SysfsMachine::read(sysfs_root)?)?,
    };
    let topo = (*detected.machine.topology).clone();
    Ok((detected, topo))
}

#[cfg(test)]
mod test {
    use super::*;
    use hybridland_policy::CoreKind::{Efficiency, Performance};

    fn fixture(name: &str) -> (Detected, Topology) {
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

    /// The `--topology` file is read by the one parser: the VM's file as the simulator reads
    /// it, a `[model]` table noted and left alone, and errors naming the file and entry.
    #[test]
    fn topology_files_are_read_by_the_one_parser() {
        let dir = std::env::temp_dir().join(format!("hl-topology-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let vm =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/vm/topology-2p-smt-4e.toml");
        let (d, t) = detect(Some(&vm), Path::new("/nonexistent")).unwrap();
        assert_eq!(t.nr_cores(), 6);
        assert_eq!(t.nr_clusters(), 4);
        assert_eq!(t.kind_mask(Efficiency).to_string(), "0-3");
        assert_eq!(d.machine.name.as_deref(), Some("vm-2p-smt-4e"));
        let with_model = dir.join("model.toml");
        std::fs::write(
            &with_model,
            "[[groups]]\nkind = \"p\"\ncapacity = 1024\ncores = 2\nsmt = 2\n[model]\nsmt_slowdown_pct = 30\n",
        )
        .unwrap();
        let (d, t) = detect(Some(&with_model), Path::new("/nonexistent")).unwrap();
        assert_eq!(t.nr_cores(), 2);
        assert!(
            d.notes.iter().any(|n| n.contains("[model]")),
            "{:?}",
            d.notes
        );
        let bad = dir.join("bad.toml");
        std::fs::write(
            &bad,
            "[[cpus]]\nlist = \"0-3\"\nkind = \"p\"\ncapacity = 1024\n[[cpus]]\nlist = \"3\"\nkind = \"e\"\ncapacity = 500\n",
        )
        .unwrap();
        let e = detect(Some(&bad), Path::new("/nonexistent"))
            .unwrap_err()
            .to_string();
        assert!(
            e.ends_with("bad.toml: cpus[1]: cpu 3 is already in cpus[0]"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
