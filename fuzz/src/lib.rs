//! Inputs shared by the fuzz targets, decoded from raw bytes with `arbitrary`: builder calls
//! (valid or contradictory), machine shapes, CPU sets, tasks and knobs.
//!
//! Decoders bias towards small ids and small machines so most inputs describe something the
//! builder accepts, and keep a path to everything else (ids past `MAX_CPUS`, capacity 0 or
//! above 1024, 1024-CPU machines) so the error paths are reached too.

use arbitrary::{Arbitrary, Result, Unstructured};
use hybridland_policy::testkit::{CoreGroup, Numbering, machine};
use hybridland_policy::{
    ClusterBalance, CoreKind, CpuId, CpuSet, MAX_CPUS, PolicyConfig, PrimaryDomain, Topology,
    TopologyBuilder, TopologyError,
};

/// At most this many builder operations are taken from one input.
pub const MAX_OPS: usize = 64;

/// A CPU id as the fuzzer picks it: mostly below 24 (so groups name described CPUs), then
/// anywhere up to just past `MAX_CPUS`, then anything a `u16` holds.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct FuzzCpu(pub CpuId);

impl<'a> Arbitrary<'a> for FuzzCpu {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        let raw = u16::arbitrary(u)?;
        let id = match raw >> 14 {
            0 | 1 => raw % 24,
            2 => raw % (MAX_CPUS as u16 + 64),
            _ => raw,
        };
        Ok(Self(CpuId(id)))
    }
}

/// A capacity: mostly the values real machines report, sometimes 0, 1025 or anything.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct FuzzCapacity(pub u16);

impl<'a> Arbitrary<'a> for FuzzCapacity {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        let sel = u8::arbitrary(u)?;
        let cap = match sel % 8 {
            0 | 1 => 1024,
            2 => 600,
            3 => 300,
            4 => 0,
            5 => 1025,
            _ => u16::arbitrary(u)?,
        };
        Ok(Self(cap))
    }
}

/// A core kind.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Arbitrary)]
pub enum FuzzKind {
    /// [`CoreKind::Performance`].
    P,
    /// [`CoreKind::Efficiency`].
    E,
    /// [`CoreKind::LowPowerEfficiency`].
    Lp,
}

impl FuzzKind {
    /// The policy's kind.
    pub fn kind(self) -> CoreKind {
        match self {
            Self::P => CoreKind::Performance,
            Self::E => CoreKind::Efficiency,
            Self::Lp => CoreKind::LowPowerEfficiency,
        }
    }
}

/// A level of the CPU hierarchy.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Arbitrary)]
pub enum Level {
    /// SMT siblings.
    Core,
    /// Shared L2.
    Cluster,
    /// Shared last-level cache.
    Llc,
    /// NUMA node.
    Node,
}

impl Level {
    /// Index of the level, 0 (core) to 3 (node).
    pub fn index(self) -> usize {
        self as usize
    }
}

/// One builder operation; the bulk forms reach large machines with few input bytes.
#[derive(Clone, Debug, Arbitrary)]
pub enum BuilderOp {
    /// One `add_cpu` call.
    Cpu {
        /// The id.
        cpu: FuzzCpu,
        /// Its kind.
        kind: FuzzKind,
        /// Its capacity.
        capacity: FuzzCapacity,
        /// Its rank.
        rank: u16,
    },
    /// `count` `add_cpu` calls for consecutive ids from `first`, all alike.
    Cpus {
        /// The first id.
        first: FuzzCpu,
        /// How many.
        count: u16,
        /// Their kind.
        kind: FuzzKind,
        /// Their capacity.
        capacity: FuzzCapacity,
        /// Their rank.
        rank: u16,
    },
    /// One `add_*` group call with the listed CPUs (possibly empty, repeated or unknown).
    Group {
        /// The level.
        level: Level,
        /// The members.
        cpus: Vec<FuzzCpu>,
    },
    /// `count` group calls of `width` consecutive ids each, starting at `first`.
    Groups {
        /// The level.
        level: Level,
        /// The first id.
        first: FuzzCpu,
        /// Members per group.
        width: u8,
        /// Number of groups.
        count: u8,
    },
}

/// A single builder call, as the bulk operations expand into.
#[derive(Clone, Debug)]
pub enum Call {
    /// `add_cpu(cpu, kind, capacity, rank)`.
    Cpu(CpuId, CoreKind, u16, u16),
    /// `add_core` / `add_cluster` / `add_llc` / `add_node`.
    Group(Level, Vec<CpuId>),
}

impl BuilderOp {
    /// The calls this operation stands for.
    pub fn calls(&self) -> Vec<Call> {
        match self {
            Self::Cpu {
                cpu,
                kind,
                capacity,
                rank,
            } => {
                vec![Call::Cpu(cpu.0, kind.kind(), capacity.0, *rank)]
            }
            Self::Cpus {
                first,
                count,
                kind,
                capacity,
                rank,
            } => {
                // Mostly a few CPUs; with the top bit set, up to a whole 1024-CPU machine.
                let count = if *count & 0x8000 != 0 {
                    usize::from(*count) % (MAX_CPUS + 1)
                } else {
                    usize::from(*count) % 33
                };
                (0..count)
                    .map(|i| {
                        let id = CpuId(first.0.0.saturating_add(i as u16));
                        Call::Cpu(id, kind.kind(), capacity.0, *rank)
                    })
                    .collect()
            }
            Self::Group { level, cpus } => {
                vec![Call::Group(
                    *level,
                    cpus.iter().take(64).map(|c| c.0).collect(),
                )]
            }
            Self::Groups {
                level,
                first,
                width,
                count,
            } => {
                let width = usize::from(*width % 16);
                (0..usize::from(*count))
                    .map(|g| {
                        let ids = (0..width)
                            .map(|i| CpuId(first.0.0.saturating_add((g * width + i) as u16)))
                            .collect();
                        Call::Group(*level, ids)
                    })
                    .collect()
            }
        }
    }
}

/// Makes one call on the builder.
pub fn apply(b: &mut TopologyBuilder, call: &Call) -> core::result::Result<(), TopologyError> {
    match call {
        Call::Cpu(cpu, kind, capacity, rank) => b.add_cpu(*cpu, *kind, *capacity, *rank),
        Call::Group(level, cpus) => match level {
            Level::Core => b.add_core(cpus),
            Level::Cluster => b.add_cluster(cpus),
            Level::Llc => b.add_llc(cpus),
            Level::Node => b.add_node(cpus),
        },
    }
}

/// Runs up to [`MAX_OPS`] operations (and at most 4096 calls) on a fresh builder, ignoring
/// refused calls, and builds.
pub fn build_from_ops(ops: &[BuilderOp]) -> core::result::Result<Topology, TopologyError> {
    let mut b = TopologyBuilder::new();
    let calls = ops
        .iter()
        .take(MAX_OPS)
        .flat_map(BuilderOp::calls)
        .take(4096);
    for call in calls {
        let _refused = apply(&mut b, &call);
    }
    b.build()
}

/// One run of identical cores in a generated machine (see `testkit::machine`).
#[derive(Clone, Debug, Arbitrary)]
pub struct GroupShape {
    kind: FuzzKind,
    capacity: u16,
    cores: u8,
    smt: u8,
    per_cluster: u8,
    ranks: Vec<u8>,
    /// One value in eight multiplies the core count by 8 or more, reaching machines of
    /// hundreds of CPUs (rarely: the checkers cost O(CPUs^2) per decision).
    scale: u8,
}

/// A regular machine: up to four runs of identical cores, consecutive or split numbering.
#[derive(Clone, Debug, Arbitrary)]
pub struct Shape {
    groups: Vec<GroupShape>,
    split: bool,
}

impl Shape {
    /// The machine, always valid: capacities 1..=1024, at most 1024 CPUs, at most 4 groups.
    pub fn topology(&self) -> Topology {
        let mut groups = Vec::new();
        let mut cpus = 0usize;
        for g in self.groups.iter().take(4) {
            let smt = 1 + usize::from(g.smt % 4);
            let mut cores = 1 + usize::from(g.cores % 16);
            if g.scale % 8 == 7 {
                cores *= 8 + usize::from(g.cores % 8);
            }
            cores = cores.min((MAX_CPUS - cpus) / smt);
            if cores == 0 {
                break;
            }
            cpus += cores * smt;
            let capacity = 1 + g.capacity % 1024;
            let mut group = CoreGroup::new(
                g.kind.kind(),
                capacity,
                cores,
                smt,
                usize::from(g.per_cluster % 9),
            );
            group.ranks = g.ranks.iter().take(4).map(|r| u16::from(*r % 8)).collect();
            groups.push(group);
        }
        if groups.is_empty() {
            groups.push(CoreGroup::new(CoreKind::Performance, 1024, 1, 1, 0));
        }
        // Split numbering gives thread t of core c the id t * cores + c: keep it in range.
        let total_cores: usize = groups.iter().map(|g| g.cores).sum();
        let max_smt = groups.iter().map(|g| g.smt).max().unwrap_or(1);
        let numbering = if self.split && max_smt * total_cores <= MAX_CPUS {
            Numbering::Split
        } else {
            Numbering::Consecutive
        };
        machine(&groups, numbering)
    }
}

/// A machine for the placement target: a regular shape, or whatever a run of builder calls
/// produced (irregular groups, siblings of different capacities, sparse ids).
#[derive(Clone, Debug, Arbitrary)]
pub enum TopologyInput {
    /// A regular machine.
    Shape(Shape),
    /// Builder calls; inputs the builder refuses are skipped.
    Ops(Vec<BuilderOp>),
}

impl TopologyInput {
    /// The machine, or `None` when the builder refused the description.
    pub fn topology(&self) -> Option<Topology> {
        match self {
            Self::Shape(s) => Some(s.topology()),
            Self::Ops(ops) => build_from_ops(ops).ok(),
        }
    }
}

/// A set of CPUs, chosen relative to a machine.
#[derive(Clone, Debug, Arbitrary)]
pub enum SetInput {
    /// Every CPU of the machine.
    All,
    /// No CPU.
    Empty,
    /// Raw words (may name CPUs the machine lacks).
    Words(Vec<u64>),
    /// Each CPU of the machine with probability `density / 256`, from a seed.
    Density(u8, u64),
    /// `len` consecutive CPUs of the machine from its `start`-th.
    Run(u16, u16),
}

impl SetInput {
    /// The set on `topo`.
    pub fn set(&self, topo: &Topology) -> CpuSet {
        match self {
            Self::All => *topo.cpus(),
            Self::Empty => CpuSet::EMPTY,
            Self::Words(words) => {
                let mut w = [0u64; CpuSet::WORDS];
                for (dst, src) in w.iter_mut().zip(words) {
                    *dst = *src;
                }
                CpuSet::from_words(w)
            }
            Self::Density(density, seed) => {
                let mut rng = SplitMix(*seed);
                topo.cpus()
                    .iter()
                    .filter(|_| (rng.next() as u8) < *density)
                    .collect()
            }
            Self::Run(start, len) => {
                let n = topo.nr_cpus();
                let start = usize::from(*start) % n.max(1);
                topo.cpus()
                    .iter()
                    .skip(start)
                    .take(usize::from(*len))
                    .collect()
            }
        }
    }
}

/// A CPU chosen relative to a machine.
#[derive(Copy, Clone, Debug, Arbitrary)]
pub enum CpuInput {
    /// The `n`-th CPU of the machine (modulo its size).
    Nth(u16),
    /// Any id, present or not.
    Raw(FuzzCpu),
}

impl CpuInput {
    /// The CPU on `topo`.
    pub fn cpu(&self, topo: &Topology) -> CpuId {
        match self {
            Self::Nth(n) => {
                let n = usize::from(*n) % topo.nr_cpus().max(1);
                topo.cpus().iter().nth(n).unwrap_or(CpuId(0))
            }
            Self::Raw(c) => c.0,
        }
    }
}

/// The policy's knobs; `raw` passes the numbers through unclamped (and the CPU list unmasked)
/// so `Policy::new`'s refusals are reached too.
#[derive(Clone, Debug, Arbitrary)]
pub struct KnobsInput {
    domain: DomainInput,
    balance: u8,
    low: u8,
    high: u8,
    fit: u8,
    raw: bool,
    affine: bool,
}

#[derive(Clone, Debug, Arbitrary)]
enum DomainInput {
    All,
    Performance,
    Powersave,
    Cpus(SetInput),
}

impl KnobsInput {
    /// The knobs for `topo`.
    pub fn config(&self, topo: &Topology) -> PolicyConfig {
        let primary_domain = match &self.domain {
            DomainInput::All => PrimaryDomain::All,
            DomainInput::Performance => PrimaryDomain::Performance,
            DomainInput::Powersave => PrimaryDomain::Powersave,
            DomainInput::Cpus(s) => {
                let set = s.set(topo);
                PrimaryDomain::Cpus(if self.raw { set } else { set.and(topo.cpus()) })
            }
        };
        let cluster_balance = balance_mode(self.balance);
        let (low, high, fit) = if self.raw {
            (self.low, self.high, self.fit)
        } else {
            let (a, b) = (self.low % 101, self.high % 101);
            (a.min(b), a.max(b), 1 + self.fit % 100)
        };
        PolicyConfig {
            primary_domain,
            cluster_balance,
            auto_low_busy_pct: low,
            auto_high_busy_pct: high,
            fit_margin_pct: fit,
            wake_affine: self.affine,
        }
    }
}

/// One of the three cluster-balance modes.
pub fn balance_mode(sel: u8) -> ClusterBalance {
    match sel % 3 {
        0 => ClusterBalance::Off,
        1 => ClusterBalance::On,
        _ => ClusterBalance::Auto,
    }
}

/// The SplitMix64 generator: a fixed, named algorithm, so a corpus input always decodes to
/// the same set.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

pub mod small_trace;
pub mod sysfs_tree;

/// Whether an input takes a costly shape: true for one input in `n`, decided by a hash of all
/// its bytes (FNV-1a, then SplitMix64's mix; `salt` tells apart the shapes of one target).
///
/// Not by a field of the input: libFuzzer keeps the inputs that reach new code, which the
/// costly shapes do, and most mutations leave a field as it was, so a field's rare value
/// becomes most of what runs (`replay`, one input in 32 by a byte, ran about one input a
/// second). A hash changes with any mutated byte, so a costly input's children are costly one
/// time in `n` too.
pub fn one_in(data: &[u8], n: u64, salt: u64) -> bool {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ salt;
    for &b in data {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    n != 0 && SplitMix(h).next().is_multiple_of(n)
}
