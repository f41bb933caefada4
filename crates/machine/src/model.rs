//! The optional `[model]` table: the simulator's machine-model constants (speeds, L2
//! contention, power). The live scheduler reads the table's syntax and ignores its values.

use serde::{Deserialize, Serialize};

use crate::error::Problem;

/// Most throughput a thread may lose to a busy SMT sibling, percent: a sibling that stopped
/// its neighbour entirely would make the sibling's work never finish.
pub const MAX_SMT_SLOWDOWN_PCT: u8 = 90;

/// Largest L2 contention per co-runner, percent: ten times a thrashing mcf-like copy's.
pub const MAX_L2_CONTENTION_PCT: u16 = 1000;

/// What one kind of core draws, in milliwatts.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CorePower {
    /// A core with one busy thread.
    pub active_mw: u32,
    /// Each further busy SMT thread on the same core.
    pub smt_extra_mw: u32,
    /// A core with no busy thread.
    pub idle_mw: u32,
}

/// Per kind of core, how long a CPU takes to leave its idle state, ns; a kind left out keeps
/// the simulator's default.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdleExitTable {
    /// Performance cores.
    pub performance: Option<u64>,
    /// Efficiency cores.
    pub efficiency: Option<u64>,
    /// Low-power efficiency cores.
    pub low_power_efficiency: Option<u64>,
}

/// The `[model]` table; a field left out keeps the simulator's default (docs/machine-model.md
/// says what each means and its default).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelTable {
    /// Throughput a thread loses while its SMT sibling is busy, percent, at most
    /// [`MAX_SMT_SLOWDOWN_PCT`].
    pub smt_slowdown_pct: Option<u8>,
    /// Slowdown per cache-sensitive co-runner in an L2 cluster, percent, at most
    /// [`MAX_L2_CONTENTION_PCT`].
    pub l2_contention_pct: Option<u16>,
    /// Reference work a migration inside a cluster costs, ns (a file holds at most
    /// `i64::MAX`, as every TOML integer).
    pub migration_ns: Option<u64>,
    /// Reference work a migration to another cluster costs, ns.
    pub cross_cluster_migration_ns: Option<u64>,
    /// Constant package draw, mW.
    pub package_mw: Option<u32>,
    /// Performance cores' power.
    pub performance: Option<CorePower>,
    /// Efficiency cores' power.
    pub efficiency: Option<CorePower>,
    /// Low-power efficiency cores' power.
    pub low_power_efficiency: Option<CorePower>,
    /// The wake-up interrupt's cost to a task woken onto an idle CPU, ns.
    pub wakeup_irq_ns: Option<u64>,
    /// Idle-state exit latency per kind of core, ns.
    pub idle_exit_ns: Option<IdleExitTable>,
}

impl ModelTable {
    pub(crate) fn check(&self) -> Result<(), Problem> {
        if let Some(v) = self.smt_slowdown_pct.filter(|v| *v > MAX_SMT_SLOWDOWN_PCT) {
            return Err(Problem::ModelValue {
                field: "smt_slowdown_pct",
                value: u64::from(v),
                max: u64::from(MAX_SMT_SLOWDOWN_PCT),
            });
        }
        if let Some(v) = self
            .l2_contention_pct
            .filter(|v| *v > MAX_L2_CONTENTION_PCT)
        {
            return Err(Problem::ModelValue {
                field: "l2_contention_pct",
                value: u64::from(v),
                max: u64::from(MAX_L2_CONTENTION_PCT),
            });
        }
        Ok(())
    }

    /// The fields set, each as `key = value` in file order.
    pub(crate) fn lines(&self) -> Vec<String> {
        let power = |p: &CorePower| {
            format!(
                "{{ active_mw = {}, smt_extra_mw = {}, idle_mw = {} }}",
                p.active_mw, p.smt_extra_mw, p.idle_mw
            )
        };
        let mut out = Vec::new();
        let mut num = |key: &str, v: Option<u64>| {
            if let Some(v) = v {
                out.push(format!("{key} = {v}"));
            }
        };
        num("smt_slowdown_pct", self.smt_slowdown_pct.map(u64::from));
        num("l2_contention_pct", self.l2_contention_pct.map(u64::from));
        num("migration_ns", self.migration_ns);
        num(
            "cross_cluster_migration_ns",
            self.cross_cluster_migration_ns,
        );
        num("package_mw", self.package_mw.map(u64::from));
        num("wakeup_irq_ns", self.wakeup_irq_ns);
        for (key, p) in [
            ("performance", &self.performance),
            ("efficiency", &self.efficiency),
            ("low_power_efficiency", &self.low_power_efficiency),
        ] {
            if let Some(p) = p {
                out.push(format!("{key} = {}", power(p)));
            }
        }
        if let Some(x) = &self.idle_exit_ns {
            let set: Vec<String> = [
                ("performance", x.performance),
                ("efficiency", x.efficiency),
                ("low_power_efficiency", x.low_power_efficiency),
            ]
            .iter()
            .filter_map(|(k, v)| v.map(|v| format!("{k} = {v}")))
            .collect();
            out.push(format!("idle_exit_ns = {{ {} }}", set.join(", ")));
        }
        out
    }
}
