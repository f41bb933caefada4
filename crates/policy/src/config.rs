//! The policy's knobs and how they are named on command lines and in files.

use crate::cpu_list::{CpuListError, parse_cpu_list, parse_cpu_mask};
use crate::cpu_set::{CpuId, CpuSet};
use crate::topology::{CoreKind, Topology};
use core::{fmt, str::FromStr};

/// Where tasks go first (scx_bpfland's `--primary-domain`): the policy only looks outside it
/// when no allowed CPU inside it is idle.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub enum PrimaryDomain {
    /// Every CPU: no preference.
    #[default]
    All,
    /// The performance cores.
    Performance,
    /// The efficiency and low-power efficiency cores.
    Powersave,
    /// The CPUs of the highest capacity, and among them the highest rank (the favoured cores
    /// of Intel's Turbo Boost Max 3.0).
    Turbo,
    /// An explicit set.
    Cpus(CpuSet),
}

impl PrimaryDomain {
    /// The CPUs this names on `topo`.
    pub fn resolve(&self, topo: &Topology) -> Result<CpuSet, ConfigError> {
        let set = match self {
            Self::All => *topo.cpus(),
            Self::Performance => *topo.kind_mask(CoreKind::Performance),
            Self::Powersave => topo
                .kind_mask(CoreKind::Efficiency)
                .or(topo.kind_mask(CoreKind::LowPowerEfficiency)),
            Self::Turbo => {
                let best = topo
                    .cpus()
                    .iter()
                    .filter_map(|c| topo.info(c).map(|i| (i.capacity, i.rank)))
                    .max();
                topo.cpus()
                    .iter()
                    .filter(|c| topo.info(*c).map(|i| (i.capacity, i.rank)) == best)
                    .collect()
            }
            Self::Cpus(set) => {
                if let Some(cpu) = set.and_not(topo.cpus()).first() {
                    return Err(ConfigError::PrimaryCpuMissing { cpu });
                }
                *set
            }
        };
        if set.is_empty() {
            return Err(ConfigError::EmptyPrimaryDomain {
                domain: self.kind_name(),
            });
        }
        Ok(set)
    }
}

impl PrimaryDomain {
    /// The domain power-profiles-daemon's profile asks for (`--primary-domain auto`):
    /// `performance` the P-cores, `power-saver` the E-cores, anything else (`balanced`, no
    /// daemon) no preference.
    pub fn for_power_profile(profile: Option<&str>) -> Self {
        match profile {
            Some("performance") => Self::Performance,
            Some("power-saver") => Self::Powersave,
            _ => Self::All,
        }
    }

    /// The domain's name, or `cpus` for an explicit set.
    pub const fn kind_name(&self) -> &'static str {
        match self {
            Self::All => "all",
            Self::Performance => "performance",
            Self::Powersave => "powersave",
            Self::Turbo => "turbo",
            Self::Cpus(_) => "cpus",
        }
    }
}

impl fmt::Display for PrimaryDomain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::All => f.write_str("all"),
            Self::Performance => f.write_str("performance"),
            Self::Powersave => f.write_str("powersave"),
            Self::Turbo => f.write_str("turbo"),
            Self::Cpus(set) => write!(f, "{set}"),
        }
    }
}

/// Parses `all` (or `none`), `performance`, `powersave`, `turbo`, a hex mask (`0xff000`) or a
/// CPU list (`0-5,12`);
/// a mask of zeros (`0x0`) is [`CpuListError::Empty`].
impl FromStr for PrimaryDomain {
    type Err = CpuListError;
    fn from_str(s: &str) -> Result<Self, CpuListError> {
        match s.trim() {
            "all" | "none" => Ok(Self::All),
            "turbo" => Ok(Self::Turbo),
            "performance" => Ok(Self::Performance),
            "powersave" => Ok(Self::Powersave),
            // A mask of zeros names no CPU; refused here, as a list cannot be empty, so every
            // domain that parses prints back to text that parses.
            t if t.starts_with("0x") || t.starts_with("0X") => match parse_cpu_mask(s)? {
                set if set.is_empty() => Err(CpuListError::Empty),
                set => Ok(Self::Cpus(set)),
            },
            _ => parse_cpu_list(s).map(Self::Cpus),
        }
    }
}

/// Whether wake-up placement spreads work across L2 clusters.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
pub enum ClusterBalance {
    /// Never: among equal CPUs the previous one, then the lowest-numbered, wins (packs).
    Off,
    /// Always prefer a CPU in the least-busy cluster.
    On,
    /// Balance while the share of busy CPUs is within the auto thresholds; near full load it
    /// buys nothing (every cluster is busy anyway) and only costs migrations.
    #[default]
    Auto,
}

impl ClusterBalance {
    /// The knob's name on command lines and in files.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::On => "on",
            Self::Auto => "auto",
        }
    }
}

impl fmt::Display for ClusterBalance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A string that is not `off`, `on` or `auto`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct UnknownClusterBalance;

impl fmt::Display for UnknownClusterBalance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("cluster balance must be off, on or auto")
    }
}

impl core::error::Error for UnknownClusterBalance {}

impl FromStr for ClusterBalance {
    type Err = UnknownClusterBalance;
    fn from_str(s: &str) -> Result<Self, UnknownClusterBalance> {
        match s.trim() {
            "off" | "0" => Ok(Self::Off),
            "on" | "1" => Ok(Self::On),
            "auto" => Ok(Self::Auto),
            _ => Err(UnknownClusterBalance),
        }
    }
}

/// Every knob of the policy. [`Default`] gives the documented defaults.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PolicyConfig {
    /// Where tasks go first. Default: all CPUs.
    pub primary_domain: PrimaryDomain,
    /// Cluster balance mode. Default: auto.
    pub cluster_balance: ClusterBalance,
    /// `auto` balances only when at least this percentage of CPUs is busy. Default 0.
    pub auto_low_busy_pct: u8,
    /// `auto` stops balancing once this percentage of CPUs is busy. Default 75, so on the
    /// seed's 24-CPU Atom server 12 copies are spread and the last quarter are placed packed.
    pub auto_high_busy_pct: u8,
    /// A task fits a CPU when its utilisation is at most this percentage of the CPU's capacity
    /// (the kernel's `fits_capacity` uses 80). Default 80.
    pub fit_margin_pct: u8,
    /// Wake-affine: a task woken synchronously (its waker sleeps right after the wake-up, as
    /// a pipe or socket writer that then reads does) goes to the waker's CPU when that CPU
    /// fits it, is in the primary domain and has nothing else waiting, and an allowed CPU is
    /// idle (the machine has room). The pair then takes turns on one CPU instead of waking an
    /// idle one each time. Default on.
    pub wake_affine: bool,
}

impl Default for PolicyConfig {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl PolicyConfig {
    /// The knobs' defaults: both frontends' options and help texts take them from here.
    pub const DEFAULT: Self = Self {
        primary_domain: PrimaryDomain::All,
        cluster_balance: ClusterBalance::Auto,
        auto_low_busy_pct: 0,
        auto_high_busy_pct: 75,
        fit_margin_pct: 80,
        wake_affine: true,
    };

    /// Checks the numeric knobs against each other.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.auto_high_busy_pct > 100 || self.auto_low_busy_pct > self.auto_high_busy_pct {
            return Err(ConfigError::AutoThresholds {
                low: self.auto_low_busy_pct,
                high: self.auto_high_busy_pct,
            });
        }
        if self.fit_margin_pct == 0 || self.fit_margin_pct > 100 {
            return Err(ConfigError::FitMargin {
                pct: self.fit_margin_pct,
            });
        }
        Ok(())
    }
}

/// A configuration that cannot apply to the machine.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ConfigError {
    /// The primary domain names no CPU of this machine (e.g. `powersave` without E-cores).
    EmptyPrimaryDomain {
        /// The domain's name (`performance`, `powersave`, `cpus`...).
        domain: &'static str,
    },
    /// The primary domain names a CPU the machine does not have.
    PrimaryCpuMissing {
        /// The CPU.
        cpu: CpuId,
    },
    /// `auto_low_busy_pct` above `auto_high_busy_pct`, or either above 100.
    AutoThresholds {
        /// Low threshold given.
        low: u8,
        /// High threshold given.
        high: u8,
    },
    /// A fit margin outside 1..=100.
    FitMargin {
        /// Margin given.
        pct: u8,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::EmptyPrimaryDomain { domain } => {
                write!(f, "primary domain `{domain}` has no CPUs on this machine")
            }
            Self::PrimaryCpuMissing { cpu } => {
                write!(
                    f,
                    "primary domain names cpu {cpu}, which this machine does not have"
                )
            }
            Self::AutoThresholds { low, high } => write!(
                f,
                "cluster-balance auto thresholds must satisfy low <= high <= 100 (got {low} and {high})"
            ),
            Self::FitMargin { pct } => write!(f, "fit margin must be 1..=100 percent (got {pct})"),
        }
    }
}

impl core::error::Error for ConfigError {}

#[cfg(feature = "serde")]
mod serde_impls {
    use super::{PolicyConfig, PrimaryDomain};
    use core::fmt;
    use serde::de::{self, Deserializer, Visitor};
    use serde::ser::Serializer;

    impl serde::Serialize for PrimaryDomain {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.collect_str(self)
        }
    }

    impl<'de> serde::Deserialize<'de> for PrimaryDomain {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl Visitor<'_> for V {
                type Value = PrimaryDomain;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("all, performance, powersave, a CPU list or a hex mask")
                }
                fn visit_str<E: de::Error>(self, v: &str) -> Result<PrimaryDomain, E> {
                    v.parse().map_err(E::custom)
                }
            }
            d.deserialize_str(V)
        }
    }

    /// The serialised form: every field optional, defaults filled in, unknown fields refused.
    #[derive(serde::Serialize, serde::Deserialize)]
    #[serde(default, deny_unknown_fields)]
    struct Repr {
        primary_domain: PrimaryDomain,
        cluster_balance: super::ClusterBalance,
        auto_low_busy_pct: u8,
        auto_high_busy_pct: u8,
        fit_margin_pct: u8,
        wake_affine: bool,
    }

    impl Default for Repr {
        fn default() -> Self {
            let c = PolicyConfig::default();
            Self {
                primary_domain: c.primary_domain,
                cluster_balance: c.cluster_balance,
                auto_low_busy_pct: c.auto_low_busy_pct,
                auto_high_busy_pct: c.auto_high_busy_pct,
                fit_margin_pct: c.fit_margin_pct,
                wake_affine: c.wake_affine,
            }
        }
    }

    impl serde::Serialize for PolicyConfig {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            Repr {
                primary_domain: self.primary_domain,
                cluster_balance: self.cluster_balance,
                auto_low_busy_pct: self.auto_low_busy_pct,
                auto_high_busy_pct: self.auto_high_busy_pct,
                fit_margin_pct: self.fit_margin_pct,
                wake_affine: self.wake_affine,
            }
            .serialize(s)
        }
    }

    impl<'de> serde::Deserialize<'de> for PolicyConfig {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            let r = Repr::deserialize(d)?;
            let c = Self {
                primary_domain: r.primary_domain,
                cluster_balance: r.cluster_balance,
                auto_low_busy_pct: r.auto_low_busy_pct,
                auto_high_busy_pct: r.auto_high_busy_pct,
                fit_margin_pct: r.fit_margin_pct,
                wake_affine: r.wake_affine,
            };
            c.validate().map_err(de::Error::custom)?;
            Ok(c)
        }
    }
}
