//! The canonical form as data: CPU runs with kind, capacity and rank, and the kernel's CPU
//! lists for cores, clusters, LLCs and nodes; checked into the policy's [`Topology`] and read
//! back out of one.
//!
//! Groups are numbered by their lowest CPU, whatever order a file lists them in, and a CPU
//! left out of every core is a core of its own, a core left out of every cluster a cluster of
//! its own, and the CPUs left out of every LLC (node) share one. So the topology depends only
//! on which CPUs share what, and [`Layout::of`] can write the shortest description of it.

use std::collections::BTreeMap;

use hybridland_policy::{CoreKind, CpuId, CpuSet, Topology, TopologyBuilder};

use crate::error::{MachineError, Problem};
use crate::left_out::{Field, class};

/// CPUs that share a kind, a capacity and a rank: one `[[cpus]]` entry.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct CpuRun {
    /// The CPUs (`list`).
    pub cpus: CpuSet,
    /// Their kind.
    pub kind: CoreKind,
    /// Their capacity, 1..=1024.
    pub capacity: u16,
    /// Their priority among equal capacities (ITMT/CPPC ranking); higher is preferred.
    pub rank: u16,
}

/// A machine in the canonical form, before it is checked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Layout {
    /// Every CPU, in runs.
    pub cpus: Vec<CpuRun>,
    /// SMT siblings.
    pub cores: Vec<CpuSet>,
    /// CPUs sharing an L2.
    pub clusters: Vec<CpuSet>,
    /// CPUs sharing the last-level cache.
    pub llcs: Vec<CpuSet>,
    /// NUMA nodes.
    pub nodes: Vec<CpuSet>,
}

fn single(cpu: CpuId) -> CpuSet {
    let mut s = CpuSet::EMPTY;
    s.insert(cpu);
    s
}

fn by_first_cpu(groups: &mut [CpuSet]) {
    groups.sort_by_key(CpuSet::first);
}

/// The groups of `field` a file must list, in order of their first CPU: those larger than what
/// a CPU in no list becomes (a core of one CPU, a cluster of one core), and those no larger
/// whose CPUs are alike (kind and capacity) to CPUs of a larger group, which a file leaving
/// them out would be warned about.
fn written(field: Field, groups: Vec<CpuSet>, topo: &Topology) -> Vec<CpuSet> {
    let (larger, own): (Vec<CpuSet>, Vec<CpuSet>) = groups
        .into_iter()
        .partition(|g| field.is_larger_than_own(topo, g));
    // A few kinds and capacities at most, however many CPUs.
    let mut grouped = Vec::new();
    for k in larger
        .iter()
        .flat_map(|g| g.iter().filter_map(|c| class(topo, c)))
    {
        if !grouped.contains(&k) {
            grouped.push(k);
        }
    }
    let mut out = larger;
    out.extend(own.into_iter().filter(|g| {
        g.first()
            .and_then(|c| class(topo, c))
            .is_some_and(|k| grouped.contains(&k))
    }));
    by_first_cpu(&mut out);
    out
}

/// Checks one level's lists against the described CPUs and each other; their union.
fn check_level(field: &str, groups: &[CpuSet], present: &CpuSet) -> Result<CpuSet, Problem> {
    let mut seen = CpuSet::EMPTY;
    for (i, g) in groups.iter().enumerate() {
        let entry = || format!("{field}[{i}]");
        if g.is_empty() {
            return Err(Problem::EmptyEntry { entry: entry() });
        }
        if let Some(cpu) = g.and_not(present).first() {
            return Err(Problem::UndescribedCpu {
                entry: entry(),
                cpu,
            });
        }
        if let Some(cpu) = g.and(&seen).first() {
            let j = groups[..i]
                .iter()
                .position(|h| h.contains(cpu))
                .unwrap_or(0);
            return Err(Problem::Overlap {
                entry: entry(),
                cpu,
                other: format!("{field}[{j}]"),
            });
        }
        seen = seen.or(g);
    }
    Ok(seen)
}

impl Layout {
    /// Checks the description into a topology; `source_name` goes into errors.
    pub fn build(&self, source_name: &str) -> Result<Topology, MachineError> {
        self.build_boxed(source_name).map(|t| *t)
    }

    /// [`build`](Self::build) into the box a [`MachineDesc`](crate::MachineDesc) keeps: the
    /// topology is tens of kilobytes, and each `Result` it passed through by value was a copy
    /// (a few percent of detecting and reading back a small machine).
    pub(crate) fn build_boxed(&self, source_name: &str) -> Result<Box<Topology>, MachineError> {
        self.build_topology()
            .map_err(|p| MachineError::new(source_name, p))
    }

    fn build_topology(&self) -> Result<Box<Topology>, Problem> {
        let mut b = TopologyBuilder::new();
        let mut present = CpuSet::EMPTY;
        for (i, run) in self.cpus.iter().enumerate() {
            let entry = || format!("cpus[{i}]");
            if run.cpus.is_empty() {
                return Err(Problem::EmptyEntry { entry: entry() });
            }
            if let Some(cpu) = run.cpus.and(&present).first() {
                let j = self.cpus[..i]
                    .iter()
                    .position(|r| r.cpus.contains(cpu))
                    .unwrap_or(0);
                return Err(Problem::Overlap {
                    entry: entry(),
                    cpu,
                    other: format!("cpus[{j}]"),
                });
            }
            for cpu in run.cpus.iter() {
                b.add_cpu(cpu, run.kind, run.capacity, run.rank)
                    .map_err(|error| Problem::Cpu {
                        entry: entry(),
                        error,
                    })?;
            }
            present = present.or(&run.cpus);
        }
        if present.is_empty() {
            return Err(Problem::NoCpus);
        }

        let in_cores = check_level("cores", &self.cores, &present)?;
        let mut cores = self.cores.clone();
        cores.extend(present.and_not(&in_cores).iter().map(single));
        by_first_cpu(&mut cores);

        let in_clusters = check_level("clusters", &self.clusters, &present)?;
        let mut clusters = self.clusters.clone();
        // A core partly inside a listed cluster gets no cluster of its own: the builder then
        // names the split.
        clusters.extend(cores.iter().filter(|c| !c.intersects(&in_clusters)));
        by_first_cpu(&mut clusters);

        let shared_rest = |field: &str, groups: &[CpuSet]| -> Result<Vec<CpuSet>, Problem> {
            let listed = check_level(field, groups, &present)?;
            let mut all = groups.to_vec();
            let rest = present.and_not(&listed);
            if !rest.is_empty() {
                all.push(rest);
            }
            by_first_cpu(&mut all);
            Ok(all)
        };
        let llcs = shared_rest("llcs", &self.llcs)?;
        let nodes = shared_rest("nodes", &self.nodes)?;

        let topo = |error| Problem::Topology { error };
        let ids = |s: &CpuSet| s.iter().collect::<Vec<_>>();
        for c in &cores {
            b.add_core(&ids(c)).map_err(topo)?;
        }
        for c in &clusters {
            b.add_cluster(&ids(c)).map_err(topo)?;
        }
        for l in &llcs {
            b.add_llc(&ids(l)).map_err(topo)?;
        }
        for n in &nodes {
            b.add_node(&ids(n)).map_err(topo)?;
        }
        b.build().map(Box::new).map_err(topo)
    }

    /// The shortest description of `topo` that reads back without a warning: runs in order of
    /// their lowest CPU, cores of more than one CPU and clusters larger than a core (and a
    /// lone CPU's core, a lone core's cluster, when CPUs of its kind and capacity are grouped
    /// in larger ones), LLCs and nodes only when there is more than one.
    pub fn of(topo: &Topology) -> Self {
        let mut cpus: Vec<CpuRun> = Vec::new();
        let mut llcs: BTreeMap<u16, CpuSet> = BTreeMap::new();
        let mut nodes: BTreeMap<u16, CpuSet> = BTreeMap::new();
        for cpu in topo.cpus().iter() {
            let Some(info) = topo.info(cpu) else { continue };
            match cpus
                .iter_mut()
                .find(|r| (r.kind, r.capacity, r.rank) == (info.kind, info.capacity, info.rank))
            {
                Some(run) => {
                    run.cpus.insert(cpu);
                }
                None => cpus.push(CpuRun {
                    cpus: single(cpu),
                    kind: info.kind,
                    capacity: info.capacity,
                    rank: info.rank,
                }),
            }
            llcs.entry(info.llc).or_default().insert(cpu);
            nodes.entry(info.node).or_default().insert(cpu);
        }
        let cores: Vec<CpuSet> = (0..topo.nr_cores()).map(|c| topo.core_mask(c)).collect();
        let clusters: Vec<CpuSet> = (0..topo.nr_clusters())
            .map(|c| topo.cluster_mask(c))
            .collect();
        let cores = written(Field::Cores, cores, topo);
        let clusters = written(Field::Clusters, clusters, topo);
        let several = |m: BTreeMap<u16, CpuSet>| {
            let mut v: Vec<CpuSet> = m.into_values().collect();
            if v.len() < 2 {
                v.clear();
            }
            by_first_cpu(&mut v);
            v
        };
        Self {
            cpus,
            cores,
            clusters,
            llcs: several(llcs),
            nodes: several(nodes),
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use hybridland_policy::parse_cpu_list;

    fn set(s: &str) -> CpuSet {
        parse_cpu_list(s).unwrap()
    }

    fn run(list: &str, kind: CoreKind, capacity: u16) -> CpuRun {
        CpuRun {
            cpus: set(list),
            kind,
            capacity,
            rank: 0,
        }
    }

    /// The VM of scripts/vm: E-cores 0-3 in clusters {0,2} {1,3}, SMT P-cores 4-5 and 6-7.
    fn vm() -> Layout {
        Layout {
            cpus: vec![
                run("0-3", CoreKind::Efficiency, 640),
                run("4-7", CoreKind::Performance, 1024),
            ],
            cores: vec![set("6-7"), set("4-5")],
            clusters: vec![set("1,3"), set("0,2")],
            llcs: vec![set("0-7")],
            ..Layout::default()
        }
    }

    #[test]
    fn groups_are_numbered_by_their_lowest_cpu_whatever_the_listing_order() {
        let t = vm().build("vm").unwrap();
        let core = |c: u16| t.info(CpuId(c)).unwrap().core;
        let cluster = |c: u16| t.info(CpuId(c)).unwrap().cluster;
        assert_eq!(
            (0..8).map(core).collect::<Vec<_>>(),
            [0, 1, 2, 3, 4, 4, 5, 5]
        );
        assert_eq!(
            (0..8).map(cluster).collect::<Vec<_>>(),
            [0, 1, 0, 1, 2, 2, 3, 3]
        );
        let shortest = Layout::of(&t);
        assert_eq!(shortest.cores, [set("4-5"), set("6-7")]);
        assert_eq!(shortest.clusters, [set("0,2"), set("1,3")]);
        assert!(shortest.llcs.is_empty() && shortest.nodes.is_empty());
        assert_eq!(shortest.build("again").unwrap(), t);
    }

    #[test]
    fn errors_name_the_entry() {
        let mut l = vm();
        l.clusters.push(set("2,5"));
        let e = l.build("vm.toml").unwrap_err().to_string();
        assert_eq!(e, "vm.toml: clusters[2]: cpu 2 is already in clusters[1]");
        let mut l = vm();
        l.cores.push(set("8-9"));
        let e = l.build("vm.toml").unwrap_err().to_string();
        assert_eq!(e, "vm.toml: cores[2]: cpu 8 is in no [[cpus]] run");
        let mut l = vm();
        l.cpus[1].capacity = 2000;
        let e = l.build("vm.toml").unwrap_err().to_string();
        assert_eq!(
            e,
            "vm.toml: cpus[1]: cpu 4 has capacity 2000 (must be 1..=1024)"
        );
        let mut l = vm();
        l.clusters.push(set("4"));
        let e = l.build("vm.toml").unwrap_err();
        assert!(
            matches!(e.problem, Problem::Topology { .. }),
            "a core split across clusters: {e}"
        );
        let e = Layout::default().build("none").unwrap_err().to_string();
        assert_eq!(e, "none: no CPUs: give [[cpus]] runs (or [[groups]])");
    }
}
