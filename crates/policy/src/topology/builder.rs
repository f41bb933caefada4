use super::{
    ClusterRuns, CoreKind, CpuInfo, GroupLevel, GroupLists, LoadLadder, MAX_CAPACITY,
    MAX_CAPACITY_LEVELS, Topology, TopologyError, UNSET_INFO,
};
use crate::cpu_set::{CpuId, CpuSet, MAX_CPUS};

const NONE: u16 = u16::MAX;
const UNSEEN: u16 = u16::MAX - 1;

/// Collects a machine description and checks it into a [`Topology`].
///
/// Describe every CPU with [`add_cpu`](Self::add_cpu), then its groups; any level may be left
/// out. A CPU in no core becomes a core of its own; a core in no cluster becomes a cluster of its
/// own (as the kernel's `cluster_cpus` does on machines without clusters); CPUs in no LLC share
/// one; CPUs in no node share one. Each `add_*` call either takes effect whole or returns an
/// error and changes nothing.
///
/// ```
/// use hybridland_policy::{CoreKind, CpuId, TopologyBuilder};
/// let mut b = TopologyBuilder::new();
/// for cpu in 0..4 {
///     let kind = if cpu < 2 { CoreKind::Performance } else { CoreKind::Efficiency };
///     b.add_cpu(CpuId(cpu), kind, if cpu < 2 { 1024 } else { 600 }, 0).unwrap();
/// }
/// b.add_core(&[CpuId(0), CpuId(1)]).unwrap();
/// b.add_cluster(&[CpuId(2), CpuId(3)]).unwrap();
/// let topo = b.build().unwrap();
/// assert_eq!(topo.nr_cores(), 3);
/// assert_eq!(topo.nr_clusters(), 2);
/// ```
#[derive(Clone)]
pub struct TopologyBuilder {
    present: CpuSet,
    kind: [CoreKind; MAX_CPUS],
    capacity: [u16; MAX_CPUS],
    rank: [u16; MAX_CPUS],
    /// Per level, per CPU: the group index or `NONE`.
    group_of: [[u16; MAX_CPUS]; 4],
    nr_groups: [u16; 4],
}

impl Default for TopologyBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl TopologyBuilder {
    /// An empty description.
    pub fn new() -> Self {
        Self {
            present: CpuSet::EMPTY,
            kind: [CoreKind::Performance; MAX_CPUS],
            capacity: [0; MAX_CPUS],
            rank: [0; MAX_CPUS],
            group_of: [[NONE; MAX_CPUS]; 4],
            nr_groups: [0; 4],
        }
    }

    /// Describes one logical CPU: its kind, capacity (1..=1024) and priority rank (higher is
    /// preferred among equal capacities).
    pub fn add_cpu(
        &mut self,
        cpu: CpuId,
        kind: CoreKind,
        capacity: u16,
        rank: u16,
    ) -> Result<(), TopologyError> {
        if cpu.index() >= MAX_CPUS {
            return Err(TopologyError::CpuOutOfRange {
                cpu: u32::from(cpu.0),
            });
        }
        if self.present.contains(cpu) {
            return Err(TopologyError::DuplicateCpu { cpu });
        }
        if capacity == 0 {
            return Err(TopologyError::ZeroCapacity { cpu });
        }
        if capacity > MAX_CAPACITY {
            return Err(TopologyError::CapacityTooLarge { cpu, capacity });
        }
        self.present.insert(cpu);
        self.kind[cpu.index()] = kind;
        self.capacity[cpu.index()] = capacity;
        self.rank[cpu.index()] = rank;
        Ok(())
    }

    /// Declares SMT siblings sharing one core.
    pub fn add_core(&mut self, cpus: &[CpuId]) -> Result<(), TopologyError> {
        self.add_group(GroupLevel::Core, cpus)
    }

    /// Declares CPUs sharing an L2 cache (a cluster).
    pub fn add_cluster(&mut self, cpus: &[CpuId]) -> Result<(), TopologyError> {
        self.add_group(GroupLevel::Cluster, cpus)
    }

    /// Declares CPUs sharing the last-level cache.
    pub fn add_llc(&mut self, cpus: &[CpuId]) -> Result<(), TopologyError> {
        self.add_group(GroupLevel::Llc, cpus)
    }

    /// Declares the CPUs of a NUMA node.
    pub fn add_node(&mut self, cpus: &[CpuId]) -> Result<(), TopologyError> {
        self.add_group(GroupLevel::Node, cpus)
    }

    fn add_group(&mut self, level: GroupLevel, cpus: &[CpuId]) -> Result<(), TopologyError> {
        let l = level as usize;
        let group = self.nr_groups[l] as usize;
        if cpus.is_empty() {
            return Err(TopologyError::EmptyGroup { level, group });
        }
        // Check everything before writing anything, so a failed call leaves no trace.
        let mut seen = CpuSet::EMPTY;
        for &cpu in cpus {
            if cpu.index() >= MAX_CPUS {
                return Err(TopologyError::CpuOutOfRange {
                    cpu: u32::from(cpu.0),
                });
            }
            if !self.present.contains(cpu) {
                return Err(TopologyError::UnknownCpu { level, group, cpu });
            }
            let first = self.group_of[l][cpu.index()];
            if first != NONE {
                return Err(TopologyError::CpuInTwoGroups {
                    level,
                    cpu,
                    first: first as usize,
                    second: group,
                });
            }
            if !seen.insert(cpu) {
                return Err(TopologyError::CpuInTwoGroups {
                    level,
                    cpu,
                    first: group,
                    second: group,
                });
            }
        }
        for &cpu in cpus {
            self.group_of[l][cpu.index()] = group as u16;
        }
        self.nr_groups[l] += 1;
        Ok(())
    }

    /// Checks the description and derives the masks and lists the policy uses.
    pub fn build(&self) -> Result<Topology, TopologyError> {
        if self.present.is_empty() {
            return Err(TopologyError::NoCpus);
        }
        let mut group_of = self.group_of;
        let mut nr_groups = self.nr_groups;

        for cpu in self.present.iter() {
            if group_of[0][cpu.index()] == NONE {
                group_of[0][cpu.index()] = nr_groups[0];
                nr_groups[0] += 1;
            }
        }
        for outer in 1..4 {
            nest_level(&mut group_of, &mut nr_groups, &self.present, outer)?;
        }

        let mut topo = Topology {
            present: self.present,
            info: [UNSET_INFO; MAX_CPUS],
            kind_masks: [CpuSet::EMPTY; 3],
            cores: GroupLists::EMPTY,
            clusters: GroupLists::EMPTY,
            nr_llcs: nr_groups[2],
            nr_nodes: nr_groups[3],
            levels: [0; MAX_CAPACITY_LEVELS],
            at_least: [CpuSet::EMPTY; MAX_CAPACITY_LEVELS],
            nr_levels: 0,
            uniform_rank: true,
            // At most MAX_CPUS CPUs (1024) and MAX_CPUS / 64 words (16): both fit.
            nr_cpus: self.present.count() as u16,
            words: self.present.span().div_ceil(64) as u8,
            ladder: LoadLadder::NONE,
            cluster_runs: ClusterRuns::EMPTY,
        };
        for cpu in self.present.iter() {
            let i = cpu.index();
            topo.info[i] = CpuInfo {
                core: group_of[0][i],
                cluster: group_of[1][i],
                llc: group_of[2][i],
                node: group_of[3][i],
                capacity: self.capacity[i],
                kind: self.kind[i],
                rank: self.rank[i],
            };
            topo.kind_masks[self.kind[i].index()].insert(cpu);
        }
        fill_lists(&mut topo.cores, &self.present, nr_groups[0], |c| {
            group_of[0][c.index()]
        });
        fill_lists(&mut topo.clusters, &self.present, nr_groups[1], |c| {
            group_of[1][c.index()]
        });

        for core in 0..topo.nr_cores() {
            let cpus = topo.core_cpus(core);
            let kind = topo.info[cpus[0].index()].kind;
            if let Some(&other) = cpus.iter().find(|c| topo.info[c.index()].kind != kind) {
                return Err(TopologyError::SiblingKindMismatch {
                    cpu: cpus[0],
                    sibling: other,
                });
            }
        }

        for cpu in self.present.iter() {
            let cap = self.capacity[cpu.index()];
            let n = topo.nr_levels as usize;
            if let Err(pos) = topo.levels[..n].binary_search(&cap) {
                if n == MAX_CAPACITY_LEVELS {
                    return Err(TopologyError::TooManyCapacityLevels);
                }
                topo.levels.copy_within(pos..n, pos + 1);
                topo.levels[pos] = cap;
                topo.nr_levels += 1;
            }
        }
        let mut rank_of_level = [None; MAX_CAPACITY_LEVELS];
        for cpu in self.present.iter() {
            let info = topo.info[cpu.index()];
            let n = topo.nr_levels as usize;
            // Levels are distinct and sorted, so the CPU's own level is found exactly.
            let own = topo.levels[..n].binary_search(&info.capacity).unwrap_or(0);
            for set in &mut topo.at_least[..=own] {
                set.insert(cpu);
            }
            match rank_of_level[own] {
                None => rank_of_level[own] = Some(info.rank),
                Some(r) if r != info.rank => topo.uniform_rank = false,
                Some(_) => {}
            }
        }
        let clusters = 0..topo.nr_clusters();
        // A cluster holds at most MAX_CPUS CPUs: its size fits a u16.
        topo.ladder = LoadLadder::new(clusters.clone().map(|c| topo.cluster_cpus(c).len() as u16));
        topo.cluster_runs = ClusterRuns::new(clusters.map(|c| topo.cluster_cpus(c)));
        Ok(topo)
    }
}

/// Checks that every group of level `outer - 1` lies inside one group of level `outer`, and
/// places inner groups that have none: a cluster of its own per core, otherwise one shared
/// group for all of them.
fn nest_level(
    group_of: &mut [[u16; MAX_CPUS]; 4],
    nr_groups: &mut [u16; 4],
    present: &CpuSet,
    outer: usize,
) -> Result<(), TopologyError> {
    let inner = outer - 1;
    let mut outer_of = [UNSEEN; MAX_CPUS];
    let mut lead = [CpuId(0); MAX_CPUS];
    for cpu in present.iter() {
        let g = group_of[inner][cpu.index()] as usize;
        let o = group_of[outer][cpu.index()];
        if outer_of[g] == UNSEEN {
            outer_of[g] = o;
            lead[g] = cpu;
        } else if outer_of[g] != o {
            return Err(TopologyError::SplitGroup {
                inner: GroupLevel::ALL[inner],
                outer: GroupLevel::ALL[outer],
                cpu: lead[g],
                other: cpu,
            });
        }
    }
    let mut shared = NONE;
    for slot in &mut outer_of[..nr_groups[inner] as usize] {
        if *slot != NONE {
            continue;
        }
        *slot = if outer == 1 {
            nr_groups[outer] += 1;
            nr_groups[outer] - 1
        } else {
            if shared == NONE {
                shared = nr_groups[outer];
                nr_groups[outer] += 1;
            }
            shared
        };
    }
    for cpu in present.iter() {
        let g = group_of[inner][cpu.index()] as usize;
        group_of[outer][cpu.index()] = outer_of[g];
    }
    Ok(())
}

/// Counting sort of the present CPUs by group index into `lists`.
fn fill_lists(lists: &mut GroupLists, present: &CpuSet, nr: u16, group: impl Fn(CpuId) -> u16) {
    lists.len = nr;
    let mut count = [0u16; MAX_CPUS + 1];
    for cpu in present.iter() {
        count[group(cpu) as usize + 1] += 1;
    }
    for g in 0..nr as usize {
        count[g + 1] += count[g];
    }
    lists.start[..=nr as usize].copy_from_slice(&count[..=nr as usize]);
    let mut next = count;
    for cpu in present.iter() {
        let g = group(cpu) as usize;
        lists.cpus[next[g] as usize] = cpu;
        next[g] += 1;
    }
}
