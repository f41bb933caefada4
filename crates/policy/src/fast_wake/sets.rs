//! The table's facts as sets: what the walk asks of many CPUs at once (which are present, in
//! the primary domain, on P-cores, of each capacity, beside a busy sibling), gathered once
//! when the table is built, so that a wake-up costs the machine's set words rather than its
//! CPUs.

use super::WakeCpu;
use crate::cluster_balance::ClusterLoad;
use crate::cpu_set::{CpuId, CpuSet, MAX_CPUS};
use crate::topology::{ClusterRuns, CoreKind, MAX_CAPACITY_LEVELS, Topology};
use core::fmt;

/// At most this many distinct distances between the CPUs of one group (a core's SMT
/// siblings, a cluster's CPUs) are walked as shifted sets: two (+1, -1) for SMT pairs numbered
/// consecutively or for split numbering (+N, -N), six for groups of four in a row. Groups
/// whose CPUs lie at more distances than this are walked one CPU at a time.
const MAX_OFFSETS: usize = 8;

/// CPUs a fixed distance from a mate (a CPU of the same group): `cpus` holds `c` when
/// `c + delta` is a mate of `c`.
#[derive(Copy, Clone, Debug, Default)]
struct Offset {
    delta: i16,
    cpus: CpuSet,
}

/// A partition of the machine's CPUs into groups, as the distances between mates, when they
/// are few.
#[derive(Copy, Clone, Debug)]
struct Mates {
    offsets: [Offset; MAX_OFFSETS],
    nr: u8,
}

impl Mates {
    /// The distances between mates of `groups`, if there are at most [`MAX_OFFSETS`].
    fn new<'a>(groups: impl Iterator<Item = &'a [CpuId]>) -> Option<Self> {
        let mut m = Self {
            offsets: [Offset::default(); MAX_OFFSETS],
            nr: 0,
        };
        for cpus in groups {
            for &c in cpus {
                for &s in cpus.iter().filter(|&&s| s != c) {
                    let delta = (s.index() as isize - c.index() as isize) as i16;
                    let n = usize::from(m.nr);
                    let at = match m.offsets[..n].iter().position(|o| o.delta == delta) {
                        Some(at) => at,
                        None if n < MAX_OFFSETS => {
                            m.offsets[n].delta = delta;
                            m.nr += 1;
                            n
                        }
                        None => return None,
                    };
                    m.offsets[at].cpus.insert(c);
                }
            }
        }
        Some(m)
    }

    fn offsets(&self) -> &[Offset] {
        &self.offsets[..usize::from(self.nr)]
    }

    /// The CPUs with a mate in `busy`.
    fn beside(&self, busy: &CpuSet) -> CpuSet {
        let mut beside = CpuSet::EMPTY;
        for o in self.offsets() {
            // `c` has a busy mate at `c + delta` when `c + delta` is busy.
            beside = beside.or(&busy.offset(-isize::from(o.delta)).and(&o.cpus));
        }
        beside
    }

    /// The lowest-numbered mate of `cpu` in `set`.
    fn mate_in(&self, cpu: CpuId, set: &CpuSet) -> Option<CpuId> {
        self.offsets()
            .iter()
            .filter(|o| o.cpus.contains(cpu))
            .map(|o| CpuId((cpu.index() as isize + isize::from(o.delta)) as u16))
            .filter(|s| set.contains(*s))
            .min()
    }
}

/// The walk's sets for one machine and policy.
#[derive(Clone)]
pub(super) struct WalkSets {
    /// The machine's CPUs.
    pub(super) present: CpuSet,
    /// The primary domain's.
    pub(super) primary: CpuSet,
    /// The performance cores'.
    pub(super) p_core: CpuSet,
    /// `at_least[l]`: CPUs of capacity level `l` and above.
    at_least: [CpuSet; MAX_CAPACITY_LEVELS],
    nr_levels: u8,
    /// SMT siblings as distances, when there are few (`None`: too many).
    siblings: Option<Mates>,
    /// Cluster loads as counts of busy mates, when a cluster's CPUs lie at few distances.
    cluster_ladder: Option<ClusterLadder>,
    /// Each CPU's position in the table's rank order.
    position: [u16; MAX_CPUS],
    /// Whether CPUs of one capacity are ranked in id order (ranks are uniform), so the first
    /// in rank order of a set of one capacity is its lowest id.
    ranked_by_id: bool,
    clusters: ClusterRuns,
}

impl fmt::Debug for WalkSets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WalkSets")
            .field("present", &self.present)
            .field("primary", &self.primary)
            .field("p_core", &self.p_core)
            .field("sibling_offsets", &self.siblings.map(|m| m.nr))
            .field("cluster_offsets", &self.cluster_ladder.map(|l| l.mates.nr))
            .field("ranked_by_id", &self.ranked_by_id)
            .finish_non_exhaustive()
    }
}

impl WalkSets {
    /// The sets of `topo` with primary domain `primary`, its CPUs in rank order `ranked`.
    pub(super) fn new(topo: &Topology, primary: &CpuSet, ranked: &[CpuId]) -> Self {
        let levels = topo.capacity_levels();
        let mut at_least = [CpuSet::EMPTY; MAX_CAPACITY_LEVELS];
        for (l, set) in at_least.iter_mut().zip(topo.at_least_levels()) {
            *l = *set;
        }
        let mut position = [0; MAX_CPUS];
        for (r, cpu) in ranked.iter().enumerate() {
            position[cpu.index()] = r as u16;
        }
        let capacity = |c: CpuId| topo.info_of(c).capacity;
        let ranked_by_id = ranked
            .windows(2)
            .all(|w| capacity(w[0]) != capacity(w[1]) || w[0] < w[1]);
        Self {
            present: *topo.cpus(),
            primary: primary.and(topo.cpus()),
            p_core: *topo.kind_mask(CoreKind::Performance),
            at_least,
            nr_levels: levels.len() as u8,
            siblings: Mates::new((0..topo.nr_cores()).map(|c| topo.core_cpus(c))),
            cluster_ladder: ClusterLadder::new(topo),
            position,
            ranked_by_id,
            clusters: topo.cluster_run_table().clone(),
        }
    }

    /// The CPUs class `class` fits: those of level `class` and above (none past the levels).
    #[inline]
    pub(super) fn fitting(&self, class: u8) -> &CpuSet {
        if class < self.nr_levels {
            &self.at_least[usize::from(class)]
        } else {
            &CpuSet::EMPTY
        }
    }

    /// The members of `set` at its highest capacity level, and that level; `None` for an
    /// empty set.
    #[inline]
    pub(super) fn top_of(&self, set: &CpuSet) -> Option<(u8, CpuSet)> {
        (0..self.nr_levels)
            .rev()
            .map(|l| (l, set.and(&self.at_least[usize::from(l)])))
            .find(|(_, m)| !m.is_empty())
    }

    /// The members of `free` (CPUs that are not busy) whose whole core is free: no sibling in
    /// `busy`.
    pub(super) fn whole_cores(&self, free: &CpuSet, busy: &CpuSet, cpus: &[WakeCpu]) -> CpuSet {
        match &self.siblings {
            Some(siblings) => free.and_not(&siblings.beside(busy)),
            None => {
                // Cores by dense index, of which there are at most as many as CPUs.
                let mut busy_cores = CpuSet::EMPTY;
                for cpu in busy.iter() {
                    busy_cores.insert(CpuId(cpus[cpu.index()].core));
                }
                let mut whole = CpuSet::EMPTY;
                for cpu in free.iter() {
                    if !busy_cores.contains(CpuId(cpus[cpu.index()].core)) {
                        whole.insert(cpu);
                    }
                }
                whole
            }
        }
    }

    /// The lowest-numbered member of `set` on `cpu`'s core other than `cpu`.
    pub(super) fn sibling_in(&self, cpu: CpuId, set: &CpuSet, cpus: &[WakeCpu]) -> Option<CpuId> {
        match &self.siblings {
            Some(siblings) => siblings.mate_in(cpu, set),
            None => {
                let core = cpus[cpu.index()].core;
                set.iter()
                    .find(|s| *s != cpu && cpus[s.index()].core == core)
            }
        }
    }

    /// The first member of `set`, CPUs of one capacity, in the table's rank order.
    #[inline]
    pub(super) fn first_ranked(&self, set: &CpuSet) -> Option<CpuId> {
        if self.ranked_by_id {
            set.first()
        } else {
            set.iter().min_by_key(|c| self.position[c.index()])
        }
    }

    /// The members of `set` (free CPUs) in the clusters of least busy share among theirs,
    /// `busy` the machine's busy CPUs and `cluster_size` each cluster's CPU count: as counted
    /// busy mates ([`ClusterLadder`]) when the machine allows, else one cluster at a time.
    pub(super) fn least_loaded(
        &self,
        set: &CpuSet,
        busy: &CpuSet,
        cpus: &[WakeCpu],
        cluster_size: &[u16],
    ) -> CpuSet {
        if let Some(ladder) = &self.cluster_ladder {
            return ladder.least_loaded(set, busy);
        }
        let (mut rest, mut equal) = (*set, CpuSet::EMPTY);
        let mut least: Option<ClusterLoad> = None;
        while let Some(cpu) = rest.first() {
            let c = usize::from(cpus[cpu.index()].cluster);
            let load = ClusterLoad {
                busy: self
                    .clusters
                    .of(c)
                    .map(|(w, bits)| (busy.words()[w] & bits).count_ones() as u16)
                    .sum(),
                size: cluster_size[c],
            };
            if least.is_none_or(|l| load < l) {
                least = Some(load);
                equal = CpuSet::EMPTY;
            }
            for (w, bits) in self.clusters.of(c) {
                if Some(load) == least {
                    equal.or_word(w, rest.words()[w] & bits);
                }
                rest.clear_word(w, bits);
            }
        }
        equal
    }

    /// Forgets the distances between mates, so the walk finds whole cores and cluster loads
    /// one CPU at a time as on a machine with too many: for tests that hold both ways to one
    /// answer.
    #[cfg(test)]
    pub(super) fn without_offsets(&mut self) {
        self.siblings = None;
        self.cluster_ladder = None;
    }
}

/// Cluster sizes the ladder tells apart; a machine with more walks its clusters one by one.
const MAX_CLUSTER_SIZES: usize = 4;

/// Cluster loads for free CPUs without visiting clusters: a free CPU's cluster has as many busy
/// CPUs as the CPU has busy mates, which [`Mates`] count for all CPUs at once in bit planes
/// (one shifted set per distance, added with a carry), and a share is that count over the
/// cluster's size, which a set per size gives.
#[derive(Copy, Clone, Debug)]
struct ClusterLadder {
    mates: Mates,
    sizes: [(u16, CpuSet); MAX_CLUSTER_SIZES],
    nr_sizes: u8,
}

/// Bit planes enough for a count of busy mates: at most [`MAX_OFFSETS`].
const COUNT_PLANES: usize = 4;
const _: () = assert!(MAX_OFFSETS < 1 << COUNT_PLANES);

impl ClusterLadder {
    fn new(topo: &Topology) -> Option<Self> {
        let mates = Mates::new((0..topo.nr_clusters()).map(|c| topo.cluster_cpus(c)))?;
        let mut l = Self {
            mates,
            sizes: [(0, CpuSet::EMPTY); MAX_CLUSTER_SIZES],
            nr_sizes: 0,
        };
        for c in 0..topo.nr_clusters() {
            let cpus = topo.cluster_cpus(c);
            let size = cpus.len() as u16;
            let n = usize::from(l.nr_sizes);
            let at = match l.sizes[..n].iter().position(|(s, _)| *s == size) {
                Some(at) => at,
                None if n < MAX_CLUSTER_SIZES => {
                    l.sizes[n].0 = size;
                    l.nr_sizes += 1;
                    n
                }
                None => return None,
            };
            for &cpu in cpus {
                l.sizes[at].1.insert(cpu);
            }
        }
        Some(l)
    }

    /// See [`WalkSets::least_loaded`].
    fn least_loaded(&self, set: &CpuSet, busy: &CpuSet) -> CpuSet {
        // planes[p] holds the CPUs whose count of busy mates has bit p set.
        let mut planes = [CpuSet::EMPTY; COUNT_PLANES];
        for o in self.mates.offsets() {
            let mut carry = busy.offset(-isize::from(o.delta)).and(&o.cpus).and(set);
            for plane in &mut planes {
                if carry.is_empty() {
                    break;
                }
                let sum = plane.xor(&carry);
                carry = plane.and(&carry);
                *plane = sum;
            }
        }
        let mut least: Option<ClusterLoad> = None;
        let mut equal = CpuSet::EMPTY;
        for (size, cpus) in &self.sizes[..usize::from(self.nr_sizes)] {
            let of_size = set.and(cpus);
            // A free CPU's cluster has at most size - 1 busy CPUs.
            if of_size.is_empty() {
                continue;
            }
            // A free CPU's cluster has at most size - 1 busy CPUs; past the least share so far,
            // no count of this size can tie or beat it.
            for count in 0..*size {
                let load = ClusterLoad {
                    busy: count,
                    size: *size,
                };
                if least.is_some_and(|l| load > l) {
                    break;
                }
                let mut at = of_size;
                for (p, plane) in planes.iter().enumerate() {
                    at = if count & (1 << p) != 0 {
                        at.and(plane)
                    } else {
                        at.and_not(plane)
                    };
                }
                if at.is_empty() {
                    continue;
                }
                if least == Some(load) {
                    equal = equal.or(&at);
                } else {
                    least = Some(load);
                    equal = at;
                }
            }
        }
        equal
    }
}
