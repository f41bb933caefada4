use crate::cpu_set::CpuId;
use core::fmt;

/// Which kind of CPU group an error is about.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum GroupLevel {
    /// SMT siblings.
    Core,
    /// CPUs sharing an L2.
    Cluster,
    /// CPUs sharing the last-level cache.
    Llc,
    /// A NUMA node.
    Node,
}

impl GroupLevel {
    pub(crate) const ALL: [Self; 4] = [Self::Core, Self::Cluster, Self::Llc, Self::Node];

    /// The level's name as used in topology files.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Core => "core",
            Self::Cluster => "cluster",
            Self::Llc => "llc",
            Self::Node => "node",
        }
    }
}

impl fmt::Display for GroupLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A machine description that contradicts itself or exceeds the policy's capacity. Each
/// variant names the CPU or group at fault; `group` indices count the `add_*` calls of that
/// level from 0.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TopologyError {
    /// A CPU id at or beyond [`MAX_CPUS`](crate::MAX_CPUS).
    CpuOutOfRange {
        /// The id given.
        cpu: u32,
    },
    /// The same CPU was described twice.
    DuplicateCpu {
        /// The CPU.
        cpu: CpuId,
    },
    /// A capacity of 0, which would make the CPU useless and divisions meaningless.
    ZeroCapacity {
        /// The CPU.
        cpu: CpuId,
    },
    /// A capacity above 1024, the kernel's scale.
    CapacityTooLarge {
        /// The CPU.
        cpu: CpuId,
        /// The capacity given.
        capacity: u16,
    },
    /// More distinct capacities than [`MAX_CAPACITY_LEVELS`](super::MAX_CAPACITY_LEVELS).
    TooManyCapacityLevels,
    /// A group with no CPUs.
    EmptyGroup {
        /// Level of the group.
        level: GroupLevel,
        /// Index of the group among that level's `add_*` calls.
        group: usize,
    },
    /// A group names a CPU that was never described with `add_cpu`.
    UnknownCpu {
        /// Level of the group.
        level: GroupLevel,
        /// Index of the group.
        group: usize,
        /// The CPU.
        cpu: CpuId,
    },
    /// A CPU appears in two groups of one level (or twice in one group).
    CpuInTwoGroups {
        /// Level of the groups.
        level: GroupLevel,
        /// The CPU.
        cpu: CpuId,
        /// The group that already held it.
        first: usize,
        /// The group that named it again.
        second: usize,
    },
    /// SMT siblings of different kinds: a core is one piece of silicon.
    SiblingKindMismatch {
        /// A CPU of the core.
        cpu: CpuId,
        /// A sibling with another kind.
        sibling: CpuId,
    },
    /// A group of a level is split across two groups of the enclosing level (a core across
    /// clusters, a cluster across LLCs, an LLC across nodes).
    SplitGroup {
        /// The inner level.
        inner: GroupLevel,
        /// The enclosing level.
        outer: GroupLevel,
        /// A CPU of the inner group.
        cpu: CpuId,
        /// A CPU of the same inner group in another (or no) outer group.
        other: CpuId,
    },
    /// No CPU was described.
    NoCpus,
}

impl fmt::Display for TopologyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::CpuOutOfRange { cpu } => {
                write!(
                    f,
                    "cpu {cpu} is out of range (at most {} CPUs)",
                    crate::MAX_CPUS
                )
            }
            Self::DuplicateCpu { cpu } => write!(f, "cpu {cpu} is described twice"),
            Self::ZeroCapacity { cpu } => write!(f, "cpu {cpu} has capacity 0 (must be 1..=1024)"),
            Self::CapacityTooLarge { cpu, capacity } => {
                write!(f, "cpu {cpu} has capacity {capacity} (must be 1..=1024)")
            }
            Self::TooManyCapacityLevels => write!(
                f,
                "more than {} distinct capacities; quantise them first",
                super::MAX_CAPACITY_LEVELS
            ),
            Self::EmptyGroup { level, group } => write!(f, "{level} #{group} has no CPUs"),
            Self::UnknownCpu { level, group, cpu } => {
                write!(
                    f,
                    "{level} #{group} names cpu {cpu}, which is not described"
                )
            }
            Self::CpuInTwoGroups {
                level,
                cpu,
                first,
                second,
            } => {
                if first == second {
                    write!(f, "{level} #{first} lists cpu {cpu} twice")
                } else {
                    write!(f, "cpu {cpu} is in {level} #{first} and {level} #{second}")
                }
            }
            Self::SiblingKindMismatch { cpu, sibling } => {
                write!(
                    f,
                    "SMT siblings cpu {cpu} and cpu {sibling} have different core kinds"
                )
            }
            Self::SplitGroup {
                inner,
                outer,
                cpu,
                other,
            } => write!(
                f,
                "cpu {cpu} and cpu {other} share a {inner} but are not in the same {outer}"
            ),
            Self::NoCpus => f.write_str("the topology has no CPUs"),
        }
    }
}

impl core::error::Error for TopologyError {}
