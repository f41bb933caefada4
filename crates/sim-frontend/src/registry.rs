//! The policies by name: what a command line's `--policy` turns into. The one module that
//! knows every concrete policy, so adding one touches nothing the engine depends on.

use crate::baselines::{CapacityBlind, CountCluster, KernelDefault, Spread, SummedCapacity};
use crate::hybridland::Hybridland;
use crate::knobs::Knobs;
use crate::sim_policy::{PolicyError, SimPolicy};

/// The policies by name.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PolicyKind {
    /// The hybridland policy from the policy crate.
    Hybridland,
    /// First idle CPU by number (seed 003).
    CapacityBlind,
    /// Count-based cluster spreading (seed 000).
    CountCluster,
    /// Group balance by summed capacity (seed 003).
    SummedCapacity,
    /// Capacity-blind spread over every CPU (seed 004).
    Spread,
    /// The default scheduler's wake-up path (`select_idle_sibling`).
    KernelDefault,
}

impl PolicyKind {
    /// Every policy, hybridland first.
    pub const ALL: [Self; 6] = [
        Self::Hybridland,
        Self::CapacityBlind,
        Self::CountCluster,
        Self::SummedCapacity,
        Self::Spread,
        Self::KernelDefault,
    ];

    /// The name on command lines.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Hybridland => "hybridland",
            Self::CapacityBlind => "capacity-blind",
            Self::CountCluster => "count-cluster",
            Self::SummedCapacity => "summed-capacity",
            Self::Spread => "spread",
            Self::KernelDefault => "kernel-default",
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
            Self::SummedCapacity => {
                "balance task counts across clusters by summed capacity with per-CPU queues (seed 003: 3 tasks on 2 fast CPUs beside an idle slow one)"
            }
            Self::Spread => {
                "any idle CPU at random on every wake-up, fast or slow, like the default EEVDF spread (seed 004)"
            }
            Self::KernelDefault => {
                "the default scheduler's wake-up path: previous CPU if idle, wake-affine, idle core then idle CPU in the LLC, idle SMT sibling; capacity-aware only with asymmetric capacity (kernel_asym_capacity)"
            }
        }
    }

    /// Looks a name up.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The `--set` keys of its own that it reads; every policy also takes the replay's keys
    /// and the machine model's ([`has_knob`](Self::has_knob)).
    pub const fn own_knobs(self) -> &'static [&'static str] {
        match self {
            Self::Hybridland => crate::knobs::POLICY_KEYS,
            Self::KernelDefault => crate::knobs::BASELINE_KEYS,
            Self::CapacityBlind | Self::CountCluster | Self::SummedCapacity | Self::Spread => &[],
        }
    }

    /// Whether a replay under it depends on `key`: its own knobs, the replay's
    /// ([`SIM_KEYS`](crate::knobs::SIM_KEYS)) and the machine model's
    /// ([`MODEL_KEYS`](crate::machine::MODEL_KEYS)). `sweep` runs a policy once for the values
    /// of a key it does not have.
    pub fn has_knob(self, key: &str) -> bool {
        self.own_knobs().contains(&key)
            || crate::knobs::SIM_KEYS.contains(&key)
            || crate::machine::MODEL_KEYS.contains(&key)
    }
}

/// Builds a policy from its name and the `--set` knobs. A name may carry its own knobs after
/// colons, which win over `knobs`: `hybridland:primary_domain=powersave:cluster_balance=on`.
/// Baselines ignore the hybridland knobs (so one `--set` can serve a comparison);
/// `kernel-default` reads `kernel_asym_capacity`.
pub fn policy_by_name(name: &str, knobs: &Knobs) -> Result<Box<dyn SimPolicy>, PolicyError> {
    let mut parts = name.split(':');
    let base = parts.next().unwrap_or("").trim();
    let mut knobs = knobs.clone();
    for item in parts {
        knobs.set_item(item)?;
    }
    let kind = PolicyKind::from_name(base).ok_or_else(|| PolicyError::UnknownPolicy {
        name: base.to_owned(),
        known: PolicyKind::ALL.map(PolicyKind::name).join(", "),
    })?;
    Ok(match kind {
        PolicyKind::Hybridland => Box::new(Hybridland::new(knobs.policy_config()?)),
        PolicyKind::CapacityBlind => Box::new(CapacityBlind::default()),
        PolicyKind::CountCluster => Box::new(CountCluster),
        PolicyKind::SummedCapacity => Box::new(SummedCapacity),
        PolicyKind::Spread => Box::new(Spread::default()),
        PolicyKind::KernelDefault => Box::new(KernelDefault::new(knobs.kernel_asym_capacity()?)),
    })
}
