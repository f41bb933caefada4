//! Which CPUs are idle right now, kept in the form the decision needs.

use crate::cpu_set::{CpuId, CpuSet, MAX_CPUS};
use crate::topology::{MAX_LOAD_LEVELS, Topology};

/// A snapshot of the machine's busy/idle state, owned and updated by the caller.
///
/// Besides the idle set it keeps the set of CPUs whose whole core is idle (the kernel's "idle
/// SMT mask"), the busy count of every cluster, and, for each busy share a cluster can take
/// (the topology's load ladder), the CPUs of the clusters at that share, so a decision reads
/// them instead of recomputing them. Build it once per snapshot with [`CpuState::from_idle`],
/// then keep it current with [`occupy`](Self::occupy) and [`release`](Self::release) as tasks
/// are placed and leave; each of those costs O(SMT width) plus the set words the CPU's cluster
/// spans (one for a cluster of neighbouring ids).
#[derive(Clone, PartialEq, Eq)]
pub struct CpuState {
    idle: CpuSet,
    idle_cores: CpuSet,
    cluster_busy: [u16; MAX_CPUS],
    /// `by_load[r]`: CPUs of the clusters whose busy share is rung `r` of the topology's
    /// ladder (all empty when the topology has none).
    by_load: [CpuSet; MAX_LOAD_LEVELS],
    nr_busy: u16,
    /// Per core (dense index): tasks whose home it is (the core they last ran on: its caches
    /// are warm for them).
    home_count: [u16; MAX_CPUS],
    /// CPUs of the cores with a non-zero `home_count`.
    homes: CpuSet,
}

impl CpuState {
    /// Every CPU of `topo` idle.
    pub fn all_idle(topo: &Topology) -> Self {
        Self::from_idle(topo, topo.cpus())
    }

    /// The CPUs in `idle` idle and the rest of `topo` busy. Ids not in `topo` are ignored.
    /// Costs O(CPUs).
    pub fn from_idle(topo: &Topology, idle: &CpuSet) -> Self {
        let mut state = Self {
            idle: CpuSet::EMPTY,
            idle_cores: CpuSet::EMPTY,
            cluster_busy: [0; MAX_CPUS],
            by_load: [CpuSet::EMPTY; MAX_LOAD_LEVELS],
            nr_busy: 0,
            home_count: [0; MAX_CPUS],
            homes: CpuSet::EMPTY,
        };
        state.reset_idle(topo, idle);
        state
    }

    /// Makes the CPUs in `idle` idle and the rest busy, keeping the homes: for a caller that
    /// reads a fresh idle snapshot before each decision. Costs what
    /// [`from_idle`](Self::from_idle) costs.
    pub fn reset_idle(&mut self, topo: &Topology, idle: &CpuSet) {
        let idle = idle.and(topo.cpus());
        self.idle = idle;
        self.idle_cores = CpuSet::EMPTY;
        self.cluster_busy[..topo.nr_clusters()].fill(0);
        self.by_load = [CpuSet::EMPTY; MAX_LOAD_LEVELS];
        self.nr_busy = 0;
        for cpu in topo.cpus().and_not(&idle).iter() {
            self.cluster_busy[topo.info_of(cpu).cluster as usize] += 1;
            self.nr_busy += 1;
        }
        if topo.ladder().len() > 0 {
            for cluster in 0..topo.nr_clusters() {
                let rung = self.rung(topo, cluster, self.cluster_busy[cluster]);
                for (word, bits) in topo.cluster_runs(cluster) {
                    self.by_load[rung].or_word(word, bits);
                }
            }
        }
        for cpu in idle.iter() {
            if topo.siblings(cpu).iter().all(|s| idle.contains(*s)) {
                self.idle_cores.insert(cpu);
            }
        }
    }

    /// Marks `cpu` busy. Returns `false` (changing nothing) if it was already busy or is not a
    /// CPU of `topo`.
    pub fn occupy(&mut self, topo: &Topology, cpu: CpuId) -> bool {
        if topo.info(cpu).is_none() || !self.idle.remove(cpu) {
            return false;
        }
        for &s in topo.siblings(cpu) {
            self.idle_cores.remove(s);
        }
        let cluster = usize::from(topo.info_of(cpu).cluster);
        self.cluster_busy[cluster] += 1;
        self.nr_busy += 1;
        self.move_cluster(topo, cluster, self.cluster_busy[cluster] - 1);
        true
    }

    /// Marks `cpu` idle. Returns `false` (changing nothing) if it was already idle or is not a
    /// CPU of `topo`.
    pub fn release(&mut self, topo: &Topology, cpu: CpuId) -> bool {
        if topo.info(cpu).is_none() || !self.idle.insert(cpu) {
            return false;
        }
        let siblings = topo.siblings(cpu);
        if siblings.iter().all(|s| self.idle.contains(*s)) {
            for &s in siblings {
                self.idle_cores.insert(s);
            }
        }
        let cluster = usize::from(topo.info_of(cpu).cluster);
        self.cluster_busy[cluster] -= 1;
        self.nr_busy -= 1;
        self.move_cluster(topo, cluster, self.cluster_busy[cluster] + 1);
        true
    }

    /// A task's home moved from the core of `from` (none for a new task) to the core of `to`,
    /// the CPU it now runs on: the idle order prefers, among otherwise equal CPUs, one whose
    /// core is no task's home, so tasks that sleep and wake keep cores of their own instead of
    /// taking each other's (musical chairs). Frontends call it whenever a task starts running
    /// (a move within one core changes nothing). Ids not in `topo` are ignored.
    pub fn move_home(&mut self, topo: &Topology, from: Option<CpuId>, to: CpuId) {
        let Some(core) = topo.info(to).map(|i| usize::from(i.core)) else {
            return;
        };
        if from.and_then(|f| topo.info(f)).map(|i| usize::from(i.core)) == Some(core) {
            return;
        }
        if let Some(from) = from {
            self.leave_home(topo, from);
        }
        self.home_count[core] = self.home_count[core].saturating_add(1);
        if self.home_count[core] == 1 {
            for &s in topo.siblings(to) {
                self.homes.insert(s);
            }
        }
    }

    /// A task whose home was the core of `cpu` exited (or is forgotten). Ids not in `topo`, or
    /// a core with no home counted, are ignored.
    pub fn leave_home(&mut self, topo: &Topology, cpu: CpuId) {
        let Some(core) = topo.info(cpu).map(|i| usize::from(i.core)) else {
            return;
        };
        if self.home_count[core] == 0 {
            return;
        }
        self.home_count[core] -= 1;
        if self.home_count[core] == 0 {
            for &s in topo.siblings(cpu) {
                self.homes.remove(s);
            }
        }
    }

    /// Takes the homes of `other` (kept across snapshots by a frontend that rebuilds its
    /// state from each idle snapshot), leaving idle and busy CPUs as they are.
    pub fn copy_homes(&mut self, other: &Self) {
        self.home_count = other.home_count;
        self.homes = other.homes;
    }

    /// CPUs whose core is some task's home.
    #[inline]
    pub fn homes(&self) -> &CpuSet {
        &self.homes
    }

    /// Tasks whose home is the core of `cpu` (0 for an id not in `topo`).
    pub fn home_count(&self, topo: &Topology, cpu: CpuId) -> u16 {
        topo.info(cpu)
            .map_or(0, |i| self.home_count[usize::from(i.core)])
    }

    /// The ladder rung of `cluster` with `busy` busy CPUs.
    #[inline]
    fn rung(&self, topo: &Topology, cluster: usize, busy: u16) -> usize {
        // A cluster holds at most MAX_CPUS CPUs: its size fits a u16.
        let size = topo.cluster_cpus(cluster).len() as u16;
        topo.ladder().rung(busy, size)
    }

    /// Moves `cluster`'s CPUs from the set of its old share (`was_busy` busy) to its current one.
    #[inline]
    fn move_cluster(&mut self, topo: &Topology, cluster: usize, was_busy: u16) {
        if topo.ladder().len() == 0 {
            return;
        }
        let from = self.rung(topo, cluster, was_busy);
        let to = self.rung(topo, cluster, self.cluster_busy[cluster]);
        if from == to {
            return;
        }
        for (word, bits) in topo.cluster_runs(cluster) {
            self.by_load[from].clear_word(word, bits);
            self.by_load[to].or_word(word, bits);
        }
    }

    /// Idle CPUs.
    pub fn idle(&self) -> &CpuSet {
        &self.idle
    }

    /// Idle CPUs whose SMT siblings are all idle too.
    pub fn idle_cores(&self) -> &CpuSet {
        &self.idle_cores
    }

    /// Whether `cpu` is idle.
    pub fn is_idle(&self, cpu: CpuId) -> bool {
        self.idle.contains(cpu)
    }

    /// Busy CPUs in cluster `cluster` (a dense index from [`CpuInfo`](crate::CpuInfo)).
    pub fn cluster_busy(&self, cluster: usize) -> u16 {
        self.cluster_busy.get(cluster).copied().unwrap_or(0)
    }

    /// Busy CPUs in all.
    pub fn nr_busy(&self) -> usize {
        self.nr_busy as usize
    }

    /// The CPUs of clusters at each busy share of the topology's load ladder, least busy
    /// first; empty when the topology has no ladder (see [`MAX_LOAD_LEVELS`]).
    #[inline]
    pub fn by_load<'a>(&'a self, topo: &Topology) -> &'a [CpuSet] {
        &self.by_load[..topo.ladder().len()]
    }
}

impl core::fmt::Debug for CpuState {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("CpuState")
            .field("idle", &self.idle)
            .field("idle_cores", &self.idle_cores)
            .field("nr_busy", &self.nr_busy)
            .finish()
    }
}
