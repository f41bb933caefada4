//! `kernel_asym_capacity`: which wake-up path the `kernel-default` baseline takes. A module of
//! its own because both the knobs (which parse it) and the baseline (which takes it) need it,
//! and the baselines already depend on the knobs through the policy trait's errors.

use hybridland_policy::Topology;

/// Whether the kernel's asymmetric-capacity wake-up path is taken.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub enum AsymCapacity {
    /// When the machine has CPUs of different capacities.
    #[default]
    Auto,
    /// Always.
    On,
    /// Never: the symmetric path, capacity unknown at wake-up.
    Off,
}

impl AsymCapacity {
    /// Parses `auto`, `on` or `off`.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "auto" => Some(Self::Auto),
            "on" => Some(Self::On),
            "off" => Some(Self::Off),
            _ => None,
        }
    }

    /// Whether the path is active on `topo`.
    pub fn active(self, topo: &Topology) -> bool {
        match self {
            Self::Auto => topo.capacity_levels().len() > 1,
            Self::On => true,
            Self::Off => false,
        }
    }

    /// The name `kernel_asym_capacity=` takes.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::On => "on",
            Self::Off => "off",
        }
    }
}
