//! The machine as the policy sees it: logical CPUs grouped into cores (SMT siblings),
//! clusters (CPUs sharing an L2), LLCs and NUMA nodes, each CPU with a capacity and a kind.
//!
//! A [`Topology`] is only made by [`TopologyBuilder::build`], which checks the description for
//! contradictions, so every `Topology` in existence is consistent and the decision code never
//! re-validates. Group membership is stored as compact CPU lists (one array of ids sorted by
//! group plus start offsets), not one [`CpuSet`] per group: 1024 cores each holding a 128-byte
//! mask would make the type 128 KiB per level.

mod builder;
mod error;
mod load_ladder;

pub use builder::TopologyBuilder;
pub use error::{GroupLevel, TopologyError};
pub use load_ladder::MAX_LOAD_LEVELS;
pub(crate) use load_ladder::{ClusterRuns, LoadLadder};

use crate::cpu_set::{CpuId, CpuSet, MAX_CPUS};
use core::fmt;

/// Largest kernel capacity value (`SCHED_CAPACITY_SCALE`).
pub const MAX_CAPACITY: u16 = 1024;

/// At most this many distinct capacity values; firmware that reports more is quantised by the
/// frontend before building.
pub const MAX_CAPACITY_LEVELS: usize = 64;

/// What a core is built for.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
pub enum CoreKind {
    /// A big core (Intel P-core, Arm "big"); usually with SMT on x86.
    Performance,
    /// A small core (Intel E-core/Atom, Arm "LITTLE").
    Efficiency,
    /// A smaller core outside the main cluster fabric (Meteor Lake's low-power E-cores).
    LowPowerEfficiency,
}

impl CoreKind {
    /// Every kind, fastest first.
    pub const ALL: [Self; 3] = [
        Self::Performance,
        Self::Efficiency,
        Self::LowPowerEfficiency,
    ];

    /// Position in [`CoreKind::ALL`], for per-kind arrays.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The name used in files and flags.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Performance => "performance",
            Self::Efficiency => "efficiency",
            Self::LowPowerEfficiency => "low-power-efficiency",
        }
    }
}

impl fmt::Display for CoreKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A string that names no [`CoreKind`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct UnknownCoreKind;

impl fmt::Display for UnknownCoreKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("unknown core kind (expected performance, efficiency or low-power-efficiency)")
    }
}

impl core::error::Error for UnknownCoreKind {}

impl core::str::FromStr for CoreKind {
    type Err = UnknownCoreKind;
    fn from_str(s: &str) -> Result<Self, UnknownCoreKind> {
        match s {
            "performance" | "p" | "P" | "big" => Ok(Self::Performance),
            "efficiency" | "e" | "E" | "little" => Ok(Self::Efficiency),
            "low-power-efficiency" | "low-power" | "lp" | "LP" => Ok(Self::LowPowerEfficiency),
            _ => Err(UnknownCoreKind),
        }
    }
}

/// Everything the policy knows about one logical CPU. Group fields are dense indices
/// (`0..nr_cores()` and so on), not the labels the description used.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct CpuInfo {
    /// Core (SMT sibling group) index.
    pub core: u16,
    /// Cluster (shared L2) index.
    pub cluster: u16,
    /// Last-level cache index.
    pub llc: u16,
    /// NUMA node index.
    pub node: u16,
    /// Compute capacity, 1..=1024.
    pub capacity: u16,
    /// Core kind.
    pub kind: CoreKind,
    /// Priority among CPUs of equal capacity (ITMT / CPPC ranking); higher is preferred.
    pub rank: u16,
}

const UNSET_INFO: CpuInfo = CpuInfo {
    core: 0,
    cluster: 0,
    llc: 0,
    node: 0,
    capacity: 0,
    kind: CoreKind::Performance,
    rank: 0,
};

/// CPUs grouped by a dense group index: `cpus[start[g]..start[g + 1]]` are group `g`'s.
#[derive(Clone)]
struct GroupLists {
    cpus: [CpuId; MAX_CPUS],
    start: [u16; MAX_CPUS + 1],
    len: u16,
}

impl GroupLists {
    const EMPTY: Self = Self {
        cpus: [CpuId(0); MAX_CPUS],
        start: [0; MAX_CPUS + 1],
        len: 0,
    };

    fn group(&self, g: usize) -> &[CpuId] {
        if g >= self.len as usize {
            return &[];
        }
        &self.cpus[self.start[g] as usize..self.start[g + 1] as usize]
    }
}

/// A validated machine description. Built by [`TopologyBuilder`].
#[derive(Clone)]
pub struct Topology {
    present: CpuSet,
    info: [CpuInfo; MAX_CPUS],
    kind_masks: [CpuSet; 3],
    cores: GroupLists,
    clusters: GroupLists,
    nr_llcs: u16,
    nr_nodes: u16,
    /// Distinct capacities, ascending.
    levels: [u16; MAX_CAPACITY_LEVELS],
    /// `at_least[l]`: CPUs whose capacity is at least `levels[l]`.
    at_least: [CpuSet; MAX_CAPACITY_LEVELS],
    nr_levels: u8,
    /// Whether CPUs of equal capacity all share one rank, so rank never breaks a tie.
    uniform_rank: bool,
    /// `present.count()`, kept because the auto cluster-balance test reads it per decision.
    nr_cpus: u16,
    /// Words of a [`CpuSet`] that can hold one of this machine's CPUs (up to the highest id).
    words: u8,
    /// The busy shares its clusters can take, for [`CpuState`](crate::CpuState)'s per-share sets.
    ladder: LoadLadder,
    /// Each cluster's CPUs as whole words, to move a cluster between those sets.
    cluster_runs: ClusterRuns,
}

impl Topology {
    /// Number of logical CPUs.
    pub fn nr_cpus(&self) -> usize {
        usize::from(self.nr_cpus)
    }

    /// Words of a [`CpuSet`] up to the one holding the highest CPU: beyond them every set
    /// derived from this machine's CPUs is empty, so the decision path skips them.
    #[inline]
    pub(crate) fn words(&self) -> usize {
        usize::from(self.words)
    }

    /// All logical CPUs.
    pub fn cpus(&self) -> &CpuSet {
        &self.present
    }

    /// The CPUs of one kind.
    pub fn kind_mask(&self, kind: CoreKind) -> &CpuSet {
        &self.kind_masks[kind.index()]
    }

    /// Facts about `cpu`, or `None` if the machine has no such CPU.
    #[inline]
    pub fn info(&self, cpu: CpuId) -> Option<&CpuInfo> {
        if self.present.contains(cpu) {
            Some(&self.info[cpu.index()])
        } else {
            None
        }
    }

    /// Facts about a CPU known to be present; callers hold ids taken from this topology.
    #[inline]
    pub(crate) fn info_of(&self, cpu: CpuId) -> &CpuInfo {
        &self.info[cpu.index()]
    }

    /// Number of cores (SMT sibling groups).
    pub fn nr_cores(&self) -> usize {
        self.cores.len as usize
    }

    /// Number of clusters (CPUs sharing an L2).
    pub fn nr_clusters(&self) -> usize {
        self.clusters.len as usize
    }

    /// Number of last-level caches.
    pub fn nr_llcs(&self) -> usize {
        self.nr_llcs as usize
    }

    /// Number of NUMA nodes.
    pub fn nr_nodes(&self) -> usize {
        self.nr_nodes as usize
    }

    /// The CPUs of core `core`, ascending; empty for an unknown index.
    pub fn core_cpus(&self, core: usize) -> &[CpuId] {
        self.cores.group(core)
    }

    /// The CPUs of cluster `cluster`, ascending; empty for an unknown index.
    pub fn cluster_cpus(&self, cluster: usize) -> &[CpuId] {
        self.clusters.group(cluster)
    }

    /// The SMT siblings of `cpu` including itself.
    pub fn siblings(&self, cpu: CpuId) -> &[CpuId] {
        match self.info(cpu) {
            Some(info) => self.cores.group(info.core as usize),
            None => &[],
        }
    }

    /// The CPUs of core `core` as a set.
    pub fn core_mask(&self, core: usize) -> CpuSet {
        self.core_cpus(core).iter().copied().collect()
    }

    /// The CPUs of cluster `cluster` as a set.
    pub fn cluster_mask(&self, cluster: usize) -> CpuSet {
        self.cluster_cpus(cluster).iter().copied().collect()
    }

    /// Whether the machine mixes kinds or capacities, i.e. placement order matters for speed.
    pub fn is_hybrid(&self) -> bool {
        self.nr_levels > 1 || self.kind_masks.iter().filter(|m| !m.is_empty()).count() > 1
    }

    /// Whether any core has more than one logical CPU.
    pub fn has_smt(&self) -> bool {
        (0..self.nr_cores()).any(|c| self.core_cpus(c).len() > 1)
    }

    /// Distinct capacities on this machine, ascending.
    pub fn capacity_levels(&self) -> &[u16] {
        &self.levels[..self.nr_levels as usize]
    }

    /// CPUs with capacity of at least `capacity`.
    pub fn at_least_capacity(&self, capacity: u16) -> CpuSet {
        let levels = self.capacity_levels();
        match levels.iter().position(|&l| l >= capacity) {
            Some(l) => self.at_least[l],
            None => CpuSet::EMPTY,
        }
    }

    /// CPUs a task of utilisation `util` (0..=1024) fits: `util <= capacity * margin_pct / 100`.
    /// Costs one pass over the capacity levels and one set copy.
    #[inline]
    pub fn fitting(&self, util: u16, margin_pct: u8) -> CpuSet {
        let need = u32::from(util) * 100;
        let levels = self.capacity_levels();
        match levels
            .iter()
            .position(|&l| u32::from(l) * u32::from(margin_pct) >= need)
        {
            Some(l) => self.at_least[l],
            None => CpuSet::EMPTY,
        }
    }

    /// `at_least_levels()[l]`: the CPUs whose capacity is at least `capacity_levels()[l]`.
    #[inline]
    pub(crate) fn at_least_levels(&self) -> &[CpuSet] {
        &self.at_least[..self.nr_levels as usize]
    }

    pub(crate) fn uniform_rank(&self) -> bool {
        self.uniform_rank
    }

    #[inline]
    pub(crate) fn ladder(&self) -> &LoadLadder {
        &self.ladder
    }

    /// Every cluster's `(word, bits)` runs.
    pub(crate) fn cluster_run_table(&self) -> &ClusterRuns {
        &self.cluster_runs
    }

    #[inline]
    pub(crate) fn cluster_runs(&self, cluster: usize) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.cluster_runs.of(cluster)
    }
}

impl fmt::Debug for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Topology")
            .field("cpus", &self.present)
            .field("performance", &self.kind_masks[0])
            .field("efficiency", &self.kind_masks[1])
            .field("low_power", &self.kind_masks[2])
            .field("cores", &self.nr_cores())
            .field("clusters", &self.nr_clusters())
            .field("llcs", &self.nr_llcs)
            .field("nodes", &self.nr_nodes)
            .field("capacities", &self.capacity_levels())
            .finish()
    }
}

impl PartialEq for Topology {
    fn eq(&self, other: &Self) -> bool {
        self.present == other.present
            && self
                .present
                .iter()
                .all(|c| self.info[c.index()] == other.info[c.index()])
            && self.nr_cores() == other.nr_cores()
            && self.nr_clusters() == other.nr_clusters()
            && self.nr_llcs == other.nr_llcs
            && self.nr_nodes == other.nr_nodes
    }
}

impl Eq for Topology {}
