//! The policies by name: what a command line's `--policy` turns into. The one module that
//! knows every concrete policy, so adding one touches nothing the engine depends on.

use crate::baselines::{KernelDefault, SummedCapacity};
use crate::core_policy::{CoreDriven, CustomPolicy};
pub use crate::custom::custom_policies;
use crate::knobs::Knobs;
use crate::sim_policy::{PolicyError, SimPolicy};
use hybridland_policy::Builtin;

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
            Self::SummedCapacity => {
                "balance task counts across clusters by summed capacity with per-CPU queues (seed 003: 3 tasks on 2 fast CPUs beside an idle slow one)"
            }
            Self::KernelDefault => {
                "the default scheduler's wake-up path: previous CPU if idle, wake-affine, idle core then idle CPU in the LLC, idle SMT sibling; capacity-aware only with asymmetric capacity (kernel_asym_capacity)"
            }
            Self::Hybridland => Builtin::Hybridland.description(),
            Self::CapacityBlind => Builtin::CapacityBlind.description(),
            Self::CountCluster => Builtin::CountCluster.description(),
            Self::Spread => Builtin::Spread.description(),
        }
    }

    /// The policy crate's built-in policy it is, when the scheduler core runs it (here and
    /// live); `None` for the baselines with per-CPU queues and pull balancing, which the
    /// engine drives and which cannot run live.
    pub const fn builtin(self) -> Option<Builtin> {
        match self {
            Self::Hybridland => Some(Builtin::Hybridland),
            Self::CapacityBlind => Some(Builtin::CapacityBlind),
            Self::CountCluster => Some(Builtin::CountCluster),
            Self::Spread => Some(Builtin::Spread),
            Self::SummedCapacity | Self::KernelDefault => None,
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

/// Whether a replay under the policy named `name` (built-in or registered) depends on `key`:
/// [`PolicyKind::has_knob`] for a built-in one; a registered one's own knobs and the replay's
/// and the model's keys. `true` for a name that is no policy (building it will say so).
pub fn reads_knob(name: &str, key: &str) -> bool {
    if let Some(kind) = PolicyKind::from_name(name) {
        return kind.has_knob(key);
    }
    match custom_policies().iter().find(|c| c.name == name) {
        Some(c) => {
            c.knobs.iter().any(|k| k.name == key)
                || crate::knobs::SIM_KEYS.contains(&key)
                || crate::machine::MODEL_KEYS.contains(&key)
        }
        None => true,
    }
}

/// Registers policies written outside this crate under their names, so every command that
/// takes `--policy` takes them. Once per process, before any lookup; a name that is already a
/// policy's is refused.
pub fn register(policies: Vec<CustomPolicy>) -> Result<(), PolicyError> {
    for (i, p) in policies.iter().enumerate() {
        let taken = PolicyKind::from_name(p.name).is_some()
            || policies[..i].iter().any(|q| q.name == p.name);
        if taken || p.name.is_empty() || p.name.contains(':') {
            return Err(PolicyError::Config {
                policy: p.name.to_owned(),
                reason: "the name is empty, holds a colon or is already a policy's".into(),
            });
        }
        // Its own knobs must be well declared and must not shadow a built-in key.
        p.default_knobs().map_err(|e| PolicyError::Config {
            policy: p.name.to_owned(),
            reason: e.to_string(),
        })?;
        let builtin = [
            crate::knobs::POLICY_KEYS,
            crate::knobs::BASELINE_KEYS,
            crate::knobs::SIM_KEYS,
            crate::machine::MODEL_KEYS,
        ];
        if let Some(k) = p
            .knobs
            .iter()
            .find(|k| builtin.iter().any(|keys| keys.contains(&k.name)))
        {
            return Err(PolicyError::Config {
                policy: p.name.to_owned(),
                reason: format!("its knob `{}` is a built-in --set key", k.name),
            });
        }
    }
    crate::custom::CUSTOM
        .set(policies)
        .map_err(|_| PolicyError::Config {
            policy: "custom policies".into(),
            reason: "registered twice".into(),
        })
}

/// Every policy name `policy_by_name` takes: the built-in ones, then the registered ones.
pub fn known_names() -> Vec<&'static str> {
    PolicyKind::ALL
        .map(PolicyKind::name)
        .into_iter()
        .chain(custom_policies().iter().map(|c| c.name))
        .collect()
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
    let preempt = knobs.wake_preempt()?;
    let up_scan = knobs.up_scan()?;
    let Some(kind) = PolicyKind::from_name(base) else {
        return match custom_policies().iter().find(|c| c.name == base) {
            Some(c) => Ok(Box::new(
                CoreDriven::custom_with(*c, knobs.custom_values(c)?)
                    .with_wake_preempt(preempt)
                    .with_up_scan(up_scan),
            )),
            None => Err(PolicyError::UnknownPolicy {
                name: base.to_owned(),
                known: known_names().join(", "),
            }),
        };
    };
    let core = |kind| {
        CoreDriven::builtin(kind, Default::default())
            .with_wake_preempt(preempt)
            .with_up_scan(up_scan)
    };
    Ok(match kind {
        PolicyKind::KernelDefault => Box::new(KernelDefault::new(knobs.kernel_asym_capacity()?)),
        PolicyKind::SummedCapacity => Box::new(SummedCapacity),
        PolicyKind::Hybridland => Box::new(
            CoreDriven::hybridland(knobs.policy_config()?)
                .with_fast_wake(knobs.fast_wake()?)
                .with_wake_preempt(preempt)
                .with_up_scan(up_scan),
        ),
        PolicyKind::CapacityBlind => Box::new(core(Builtin::CapacityBlind)),
        PolicyKind::CountCluster => Box::new(core(Builtin::CountCluster)),
        PolicyKind::Spread => Box::new(core(Builtin::Spread)),
    })
}
