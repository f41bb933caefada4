//! The built-in policies the scheduler core runs: hybridland, and the baselines that reproduce
//! what the seed documents complain about, each naming the seed it reproduces. They run in the
//! simulator and live alike; the simulator's other baselines (per-CPU queues with pull
//! balancing) need a balancer the live framework does not offer and stay there.

mod capacity_blind;
mod count_cluster;
mod spread;

pub use capacity_blind::CapacityBlind;
pub use count_cluster::CountCluster;
pub use spread::Spread;

use crate::config::{ConfigError, PolicyConfig};
use crate::idle_order::{Placement, Policy};
use crate::migration::SliceEnd;
use crate::placement_policy::{PlacementPolicy, View};
use crate::rng::Pcg32;
use crate::topology::Topology;

/// The generator a policy draws its random choices from for `seed`: a stream of its own,
/// distinct from anything else a caller draws from the same seed.
pub fn policy_rng(seed: u64) -> Pcg32 {
    Pcg32::new(seed, 0x706f_6c69_6379)
}

/// The built-in policies by name.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Builtin {
    /// The hybridland policy.
    Hybridland,
    /// First idle CPU by number (seed 003).
    CapacityBlind,
    /// Count-based cluster spreading (seed 000).
    CountCluster,
    /// Capacity-blind spread over every CPU (seed 004).
    Spread,
}

impl Builtin {
    /// Every built-in policy, hybridland first.
    pub const ALL: [Self; 4] = [
        Self::Hybridland,
        Self::CapacityBlind,
        Self::CountCluster,
        Self::Spread,
    ];

    /// The name on command lines.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Hybridland => "hybridland",
            Self::CapacityBlind => "capacity-blind",
            Self::CountCluster => "count-cluster",
            Self::Spread => "spread",
        }
    }

    /// One line on what it does and which seed it reproduces.
    pub const fn description(self) -> &'static str {
        match self {
            Self::Hybridland => {
                "the hybridland policy: idle P-core, idle E-core (cluster-balanced), busy sibling; primary domain, capacity fit"
            }
            Self::CapacityBlind => {
                "first idle CPU by number from a seeded start, blind to capacity (seed 003: lone runs land on fast or slow CPUs at random)"
            }
            Self::CountCluster => {
                "spread over L2 clusters by idle-CPU count, a P-core's SMT pair counted as a cluster (seed 000: Linux 5.16 put lone tasks on E-cores)"
            }
            Self::Spread => {
                "any idle CPU at random on every wake-up, fast or slow, like the default EEVDF spread (seed 004)"
            }
        }
    }

    /// Looks a name up.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|b| b.name() == name)
    }

    /// The policy for `topo`: hybridland with the knobs `config`, a baseline drawing from
    /// `seed` (the baselines have no knobs).
    pub fn build(
        self,
        topo: &Topology,
        config: &PolicyConfig,
        seed: u64,
    ) -> Result<BuiltinPolicy, ConfigError> {
        Ok(match self {
            Self::Hybridland => BuiltinPolicy::Hybridland(Policy::new(topo, config)?),
            Self::CapacityBlind => BuiltinPolicy::CapacityBlind(CapacityBlind::new(topo, seed)),
            Self::CountCluster => BuiltinPolicy::CountCluster(CountCluster),
            Self::Spread => BuiltinPolicy::Spread(Spread::new(seed)),
        })
    }
}

/// A built-in policy, built (no allocation: a caller without one holds it by value, and the
/// few hundred bytes hybridland's variant holds are the point).
#[derive(Clone, Debug)]
#[allow(clippy::large_enum_variant)]
pub enum BuiltinPolicy {
    /// See [`Builtin::Hybridland`].
    Hybridland(Policy),
    /// See [`Builtin::CapacityBlind`].
    CapacityBlind(CapacityBlind),
    /// See [`Builtin::CountCluster`].
    CountCluster(CountCluster),
    /// See [`Builtin::Spread`].
    Spread(Spread),
}

impl BuiltinPolicy {
    fn inner(&mut self) -> &mut dyn PlacementPolicy {
        match self {
            Self::Hybridland(p) => p,
            Self::CapacityBlind(p) => p,
            Self::CountCluster(p) => p,
            Self::Spread(p) => p,
        }
    }
}

impl PlacementPolicy for BuiltinPolicy {
    fn name(&self) -> &str {
        match self {
            Self::Hybridland(p) => p.name(),
            Self::CapacityBlind(p) => p.name(),
            Self::CountCluster(p) => p.name(),
            Self::Spread(p) => p.name(),
        }
    }

    fn wakeup(&mut self, view: &View<'_>) -> Placement {
        self.inner().wakeup(view)
    }

    fn slice_end(&mut self, view: &View<'_>) -> SliceEnd {
        self.inner().slice_end(view)
    }

    fn up_migration(&mut self, view: &View<'_>) -> Option<Placement> {
        self.inner().up_migration(view)
    }

    fn wake_table(&self, topo: &Topology) -> Option<crate::WakeTable> {
        self.hybridland().map(|p| p.wake_table(topo))
    }

    fn class_of(&self, topo: &Topology, util: u16) -> crate::TaskClass {
        self.hybridland()
            .map_or(crate::TaskClass(0), |p| p.class_of(topo, util))
    }

    fn hybridland(&self) -> Option<&Policy> {
        match self {
            Self::Hybridland(p) => Some(p),
            _ => None,
        }
    }

    fn hybridland_mut(&mut self) -> Option<&mut Policy> {
        match self {
            Self::Hybridland(p) => Some(p),
            _ => None,
        }
    }
}
