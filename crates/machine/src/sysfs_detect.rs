//! Turns what sysfs says ([`SysfsMachine`]) into the one machine description, as the live
//! scheduler detects its machine.
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

use crate::sysfs::{SysfsCpu, SysfsMachine};
use crate::{CpuRun, Layout, MachineDesc, MachineError};
use hybridland_policy::{CoreKind, CpuId, CpuSet};
use std::collections::BTreeSet;

/// The machine as detected, with how it was found, kept for `--dry-run` and
/// `--emit-topology`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Detected {
    /// Where it came from, for people.
    pub source: String,
    /// How kinds and capacities were found, for people.
    pub notes: Vec<String>,
    /// The machine in the one format both frontends read.
    pub machine: MachineDesc,
}

/// Distinct groups, each restricted to `present`, in order of their first CPU. Seen ones are
/// kept ordered by their words, so a 1,024-CPU machine's groups are not compared pairwise; a
/// B-tree rather than a hash set, as hashing all 128 bytes of each group cost more than the
/// few word comparisons that tell groups apart.
fn distinct(groups: impl IntoIterator<Item = CpuSet>, present: &CpuSet) -> Vec<CpuSet> {
    let mut seen = BTreeSet::new();
    let mut out: Vec<CpuSet> = Vec::new();
    for g in groups {
        let g = g.and(present);
        if !g.is_empty() && seen.insert(*g.words()) {
            out.push(g);
        }
    }
    out.sort_by_key(|g| g.first());
    out
}

/// Per CPU id below `span`, the index of the first group holding it. Looked up per CPU
/// instead of searching the groups: on a 1,024-CPU machine that search was half a million
/// tests.
fn first_group_of(groups: &[CpuSet], span: usize) -> Vec<Option<usize>> {
    let mut first = vec![None; span];
    for (i, g) in groups.iter().enumerate() {
        for cpu in g.iter() {
            first[usize::from(cpu.0)].get_or_insert(i);
        }
    }
    first
}

/// Scales raw performance values so the largest is 1024 (at least 1).
fn scale(raw: u32, max: u32) -> u16 {
    let v = (u64::from(raw) * 1024).div_ceil(u64::from(max.max(1)));
    v.clamp(1, 1024) as u16
}

/// Builds a description from a sysfs tree.
///
/// # Errors
/// Groups that do not describe a machine (a CPU in two cores, ...), named as a machine file
/// would name them.
pub fn detect(m: &SysfsMachine) -> Result<Detected, MachineError> {
    let present: CpuSet = m.cpus.iter().map(|c| CpuId(c.cpu)).collect();
    let mut notes = Vec::new();

    // Capacity source: the first one every CPU has.
    type Pick = fn(&SysfsCpu) -> Option<u32>;
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
    let first_core = first_group_of(&cores, present.span());
    let core_of = |cpu: u16| {
        first_core
            .get(usize::from(cpu))
            .copied()
            .flatten()
            .map_or_else(|| single(CpuId(cpu)), |i| cores[i])
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
    let topology = layout.build_boxed(&source)?;
    Ok(Detected {
        machine: MachineDesc {
            name: None,
            description: Some(format!("detected by scx_hybridland from {source}")),
            topology,
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
