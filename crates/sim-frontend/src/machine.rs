//! The machine model: how fast a task progresses on a CPU and what the CPUs draw.
//!
//! Work is counted in *reference nanoseconds*: the time a task would need alone on a
//! capacity-1024 CPU with no contention. On a CPU the task progresses at
//!
//! ```text
//! rate = capacity / 1024
//!      × (1 - smt_slowdown_pct / 100)                 if an SMT sibling is busy
//!      / (1 + l2_contention_pct / 100 × s × Σ s_other) with s, s_other the cache
//!                                                      sensitivities (0..=1) of the task and
//!                                                      of the other tasks running in its L2
//!                                                      cluster
//! ```
//!
//! so a CPU-bound task alone on a 494-capacity Arm A7 needs 1024/494 of its reference time
//! (seed 003's 2.09 s fast vs 4.33 s slow), and four cache-hungry copies on one Atom cluster
//! each run `1 + 3 × l2_contention_pct / 100` times slower than one copy alone (seed 002). A
//! migration adds a fixed amount of work to the task (cache refill), larger across clusters.
//!
//! Waking a task onto a CPU that has been idle costs `wakeup_irq_ns` (the interrupt that tells
//! it) plus its kind's `idle_exit_ns` (leaving its idle state; none when an SMT sibling keeps
//! the core awake) before the task runs: predicted constants, not calibrated.
//!
//! Power is per core: an idle core draws `idle_mw`, a core with one busy thread `active_mw`,
//! each further busy SMT thread `smt_extra_mw` more; the package (uncore, memory controller)
//! draws `package_mw` for the whole replay. Energy is the integral over simulated time.
//!
//! All arithmetic is integer; rates are fixed-point with [`WORK_SCALE`] units per reference
//! nanosecond, a scale at which capacity / 1024 and whole-percent factors are exact.

use hybridland_machine::{MAX_L2_CONTENTION_PCT, MAX_SMT_SLOWDOWN_PCT};
use hybridland_policy::CoreKind;
use serde::{Deserialize, Serialize};

/// Fixed-point units of work per reference nanosecond: 1024 × 100,000, so `capacity / 1024`
/// and percentages divide it exactly.
pub const WORK_SCALE: u64 = 1024 * 100_000;

pub use hybridland_machine::CorePower;

/// The model's parameters. Presets carry tuned values; [`MachineModel::default`] is the
/// i7-13800H laptop part of seed 004. Every field can be overridden from a topology file's `[model]` table or
/// with [`MachineModel::set`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineModel {
    /// Throughput lost by a thread while its SMT sibling is busy, percent. Default 40 (two
    /// busy hyperthreads deliver about 1.2× one thread alone).
    pub smt_slowdown_pct: u8,
    /// Slowdown of a fully cache-sensitive task per fully cache-sensitive co-runner in its L2
    /// cluster, percent. Default 9: four mcf-like copies on one cluster run 27% slower.
    pub l2_contention_pct: u16,
    /// Extra reference work for a migration inside one L2 cluster, ns. Default 5 µs.
    pub migration_ns: u64,
    /// Extra reference work for a migration to another L2 cluster, ns. Default 30 µs.
    pub cross_cluster_migration_ns: u64,
    /// Constant draw of the package (uncore, memory), mW. Default 800.
    pub package_mw: u32,
    /// Performance cores.
    pub performance: CorePower,
    /// Efficiency cores.
    pub efficiency: CorePower,
    /// Low-power efficiency cores.
    pub low_power_efficiency: CorePower,
    /// What the interrupt that wakes an idle CPU for a task costs the task, ns. Default 2 µs.
    /// Predicted, not calibrated.
    pub wakeup_irq_ns: u64,
    /// How long a CPU takes to leave its idle state, per kind of core, ns. Predicted, not
    /// calibrated.
    pub idle_exit_ns: IdleExitNs,
}

/// Idle-state exit latency per kind of core, ns (docs/machine-model.md, "Wake-up cost").
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdleExitNs {
    /// Performance cores. Default 10 µs.
    pub performance: u64,
    /// Efficiency cores. Default 15 µs.
    pub efficiency: u64,
    /// Low-power efficiency cores. Default 30 µs.
    pub low_power_efficiency: u64,
}

impl Default for IdleExitNs {
    fn default() -> Self {
        Self {
            performance: 10_000,
            efficiency: 15_000,
            low_power_efficiency: 30_000,
        }
    }
}

impl Default for MachineModel {
    fn default() -> Self {
        Self {
            smt_slowdown_pct: 40,
            l2_contention_pct: 9,
            migration_ns: 5_000,
            cross_cluster_migration_ns: 30_000,
            package_mw: 800,
            performance: CorePower {
                active_mw: 2_000,
                smt_extra_mw: 400,
                idle_mw: 40,
            },
            efficiency: CorePower {
                active_mw: 700,
                smt_extra_mw: 0,
                idle_mw: 15,
            },
            low_power_efficiency: CorePower {
                active_mw: 350,
                smt_extra_mw: 0,
                idle_mw: 8,
            },
            wakeup_irq_ns: 2_000,
            idle_exit_ns: IdleExitNs::default(),
        }
    }
}

/// A model override that names no parameter or carries a bad value.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// The key is not a model parameter.
    #[error("unknown machine-model parameter `{key}` (known: {known})")]
    UnknownKey {
        /// The key given.
        key: String,
        /// The keys accepted.
        known: String,
    },
    /// The value does not parse or is out of range.
    #[error("bad value `{value}` for machine-model parameter `{key}`: {reason}")]
    BadValue {
        /// The key.
        key: String,
        /// The value given.
        value: String,
        /// What is wrong.
        reason: &'static str,
    },
}

/// Keys accepted by [`MachineModel::set`].
pub const MODEL_KEYS: &[&str] = &[
    "smt_slowdown_pct",
    "l2_contention_pct",
    "migration_ns",
    "cross_cluster_migration_ns",
    "package_mw",
    "performance.active_mw",
    "performance.smt_extra_mw",
    "performance.idle_mw",
    "efficiency.active_mw",
    "efficiency.smt_extra_mw",
    "efficiency.idle_mw",
    "low_power_efficiency.active_mw",
    "low_power_efficiency.smt_extra_mw",
    "low_power_efficiency.idle_mw",
    "wakeup_irq_ns",
    "idle_exit_ns.performance",
    "idle_exit_ns.efficiency",
    "idle_exit_ns.low_power_efficiency",
];

fn parse_num<T: core::str::FromStr>(key: &str, value: &str) -> Result<T, ModelError> {
    value.trim().parse().map_err(|_| ModelError::BadValue {
        key: key.to_owned(),
        value: value.to_owned(),
        reason: "not a non-negative integer in range",
    })
}

impl MachineModel {
    /// Overrides one parameter by its key in [`MODEL_KEYS`] (the field name, with
    /// `kind.field` for per-kind power), e.g. `set("smt_slowdown_pct", "30")`.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), ModelError> {
        match key {
            "smt_slowdown_pct" => {
                let v: u8 = parse_num(key, value)?;
                if v > MAX_SMT_SLOWDOWN_PCT {
                    return Err(ModelError::BadValue {
                        key: key.to_owned(),
                        value: value.to_owned(),
                        reason: "must be at most 90",
                    });
                }
                self.smt_slowdown_pct = v;
            }
            "l2_contention_pct" => self.l2_contention_pct = parse_num(key, value)?,
            "migration_ns" => self.migration_ns = parse_num(key, value)?,
            "cross_cluster_migration_ns" => {
                self.cross_cluster_migration_ns = parse_num(key, value)?;
            }
            "package_mw" => self.package_mw = parse_num(key, value)?,
            "wakeup_irq_ns" => self.wakeup_irq_ns = parse_num(key, value)?,
            "idle_exit_ns.performance" => self.idle_exit_ns.performance = parse_num(key, value)?,
            "idle_exit_ns.efficiency" => self.idle_exit_ns.efficiency = parse_num(key, value)?,
            "idle_exit_ns.low_power_efficiency" => {
                self.idle_exit_ns.low_power_efficiency = parse_num(key, value)?;
            }
            _ => {
                let unknown = || ModelError::UnknownKey {
                    key: key.to_owned(),
                    known: MODEL_KEYS.join(", "),
                };
                let (kind, field) = key.split_once('.').ok_or_else(unknown)?;
                let power = match kind {
                    "performance" => &mut self.performance,
                    "efficiency" => &mut self.efficiency,
                    "low_power_efficiency" => &mut self.low_power_efficiency,
                    _ => return Err(unknown()),
                };
                let slot = match field {
                    "active_mw" => &mut power.active_mw,
                    "smt_extra_mw" => &mut power.smt_extra_mw,
                    "idle_mw" => &mut power.idle_mw,
                    _ => return Err(unknown()),
                };
                *slot = parse_num(key, value)?;
            }
        }
        Ok(())
    }

    /// Checks the values against each other; [`set`](Self::set) and file loading call it.
    pub fn validate(&self) -> Result<(), ModelError> {
        if self.smt_slowdown_pct > MAX_SMT_SLOWDOWN_PCT {
            return Err(ModelError::BadValue {
                key: "smt_slowdown_pct".into(),
                value: self.smt_slowdown_pct.to_string(),
                reason: "must be at most 90",
            });
        }
        if self.l2_contention_pct > MAX_L2_CONTENTION_PCT {
            return Err(ModelError::BadValue {
                key: "l2_contention_pct".into(),
                value: self.l2_contention_pct.to_string(),
                reason: "must be at most 1000",
            });
        }
        Ok(())
    }

    /// The power figures of one kind of core.
    pub fn power(&self, kind: CoreKind) -> &CorePower {
        match kind {
            CoreKind::Performance => &self.performance,
            CoreKind::Efficiency => &self.efficiency,
            CoreKind::LowPowerEfficiency => &self.low_power_efficiency,
        }
    }

    /// What a task woken onto an idle CPU of `kind` waits before it runs, ns: the wake-up
    /// interrupt, plus the idle-state exit unless `core_awake` (an SMT sibling is busy, so the
    /// core never left C0).
    pub fn wakeup_cost_ns(&self, kind: CoreKind, core_awake: bool) -> u64 {
        let exit = if core_awake {
            0
        } else {
            match kind {
                CoreKind::Performance => self.idle_exit_ns.performance,
                CoreKind::Efficiency => self.idle_exit_ns.efficiency,
                CoreKind::LowPowerEfficiency => self.idle_exit_ns.low_power_efficiency,
            }
        };
        self.wakeup_irq_ns.saturating_add(exit)
    }

    /// Draw of a core of `kind` with `busy_threads` busy logical CPUs, mW.
    pub fn core_power_mw(&self, kind: CoreKind, busy_threads: u32) -> u64 {
        let p = self.power(kind);
        match busy_threads {
            0 => u64::from(p.idle_mw),
            n => u64::from(p.active_mw) + u64::from(n - 1) * u64::from(p.smt_extra_mw),
        }
    }

    /// Work units per nanosecond for a task on a CPU of `capacity`, with `sibling_busy` when
    /// another thread of its core runs, `sensitivity_pct` its own cache sensitivity and
    /// `others_sensitivity_pct` the summed sensitivities of the other tasks running in its
    /// cluster. Never 0.
    pub fn rate(
        &self,
        capacity: u16,
        sibling_busy: bool,
        sensitivity_pct: u8,
        others_sensitivity_pct: u32,
    ) -> u64 {
        let smt_keep = if sibling_busy {
            100 - u128::from(self.smt_slowdown_pct.min(MAX_SMT_SLOWDOWN_PCT))
        } else {
            100
        };
        // Contention in units of 1e-6: pct × pct × pct.
        let contention = u128::from(self.l2_contention_pct)
            * u128::from(sensitivity_pct)
            * u128::from(others_sensitivity_pct);
        let num = u128::from(WORK_SCALE) * u128::from(capacity) * smt_keep * 1_000_000;
        let den = 1024 * 100 * (1_000_000 + contention);
        ((num / den) as u64).max(1)
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn rate_follows_capacity_smt_and_contention() {
        let m = MachineModel::default();
        assert_eq!(m.rate(1024, false, 0, 0), WORK_SCALE);
        assert_eq!(m.rate(512, false, 100, 0), WORK_SCALE / 2);
        assert_eq!(m.rate(1024, true, 0, 0), WORK_SCALE * 60 / 100);
        // Three fully sensitive co-runners at 9% each: 1.27× slower.
        let r = m.rate(1024, false, 100, 300);
        assert_eq!(r, (u128::from(WORK_SCALE) * 100 / 127) as u64);
        // Capacity and SMT factors are exact at this scale.
        assert_eq!(m.rate(494, true, 0, 0) * 1024 * 100, WORK_SCALE * 494 * 60);
        // Insensitive tasks feel nothing.
        assert_eq!(m.rate(1024, false, 0, 300), WORK_SCALE);
    }

    #[test]
    fn set_overrides_and_rejects() {
        let mut m = MachineModel::default();
        m.set("smt_slowdown_pct", "25").unwrap();
        m.set("efficiency.active_mw", "900").unwrap();
        assert_eq!(m.smt_slowdown_pct, 25);
        assert_eq!(m.efficiency.active_mw, 900);
        assert!(matches!(
            m.set("efficiency.turbo", "1"),
            Err(ModelError::UnknownKey { .. })
        ));
        assert!(matches!(
            m.set("package_mw", "-3"),
            Err(ModelError::BadValue { .. })
        ));
        assert!(m.set("smt_slowdown_pct", "95").is_err());
    }

    #[test]
    fn core_power_counts_smt_threads() {
        let m = MachineModel::default();
        assert_eq!(m.core_power_mw(CoreKind::Performance, 0), 40);
        assert_eq!(m.core_power_mw(CoreKind::Performance, 1), 2000);
        assert_eq!(m.core_power_mw(CoreKind::Performance, 2), 2400);
    }
}
