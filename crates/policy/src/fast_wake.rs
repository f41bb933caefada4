//! The wake-ups whose answer is known without the task's history: what an in-kernel fast path
//! may decide alone.
//!
//! A live scheduler in user space pays a round trip per wake-up. For some wake-ups the idle
//! order's answer does not depend on anything the kernel cannot see at that moment: a task
//! whose previous CPU `c` is idle with its whole core, in the primary domain, stays on `c`
//! whatever its utilisation, the other tasks' homes or the ranks, as long as no CPU that could
//! beat `c` is idle and (where `c` wins only on cluster load) cluster balance is inactive.
//! [`Policy::fast_wake`] describes that condition per CPU as sets of CPUs and a range of busy
//! counts, so the kernel side only tests bits: it holds no placement rule. [`FastWake::keeps`]
//! is the same test in Rust, for the simulator's model of the fast path and for the test that
//! holds it to [`Policy::select_cpu`](crate::Policy).
//!
//! The condition is deliberately narrower than the idle order: a wake-up it does not cover goes
//! the usual way, so the fast path can only agree with the core, never overrule it.

use crate::cluster_balance;
use crate::cpu_set::{CpuId, CpuSet};
use crate::cpu_state::CpuState;
use crate::idle_order::{Policy, Step};
use crate::topology::{CoreKind, Topology};

/// When a task that last ran on one CPU may be woken there without asking the core.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct FastWake {
    /// Whether the CPU can be kept at all (it is in the primary domain).
    pub keep: bool,
    /// Its core as the policy sees it: every CPU of it must be idle.
    pub core: CpuSet,
    /// CPUs that could serve the task better (a higher capacity it may need, or a whole idle
    /// P-core): if any is idle, ask the core.
    pub beaten_if_idle: CpuSet,
    /// Whether the CPU wins only on cluster load when several tie, so that it may be kept only
    /// while cluster balance is inactive.
    pub balance_matters: bool,
    /// The step of the idle order that keeps it (for counting kept wake-ups by step).
    pub step: Step,
}

/// The busy-CPU counts at which cluster balance is active: `from..until` (empty when never).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct BalanceRange {
    /// The least busy count at which it is active.
    pub from: u32,
    /// The least busy count above `from` at which it is inactive again.
    pub until: u32,
}

impl BalanceRange {
    /// Whether balance is active with `busy` CPUs busy.
    #[inline]
    pub fn contains(&self, busy: u32) -> bool {
        busy >= self.from && busy < self.until
    }
}

impl FastWake {
    /// Never keep: the entry for a CPU outside the machine or the primary domain.
    pub const NEVER: Self = Self {
        keep: false,
        core: CpuSet::EMPTY,
        beaten_if_idle: CpuSet::EMPTY,
        balance_matters: false,
        step: Step::NoIdle,
    };

    /// Whether a task allowed on `allowed`, woken with `idle` CPUs idle, is kept on `prev`
    /// (whose entry this is). The kernel side tests the same bits; the allowed set is only
    /// asked about `prev` (an idle CPU the task may not use makes the test decline, never
    /// accept).
    #[inline]
    pub fn keeps(
        &self,
        topo: &Topology,
        idle: &CpuSet,
        allowed: &CpuSet,
        prev: CpuId,
        balance: BalanceRange,
    ) -> bool {
        if !self.keep || !allowed.contains(prev) || !self.core.is_subset(idle) {
            return false;
        }
        if self.beaten_if_idle.intersects(idle) {
            return false;
        }
        let busy = (topo.nr_cpus() - idle.and(topo.cpus()).count()) as u32;
        !(self.balance_matters && balance.contains(busy))
    }
}

impl Policy {
    /// The fast-path condition for tasks whose previous CPU is `cpu`.
    pub fn fast_wake(&self, topo: &Topology, cpu: CpuId) -> FastWake {
        let Some(info) = topo.info(cpu) else {
            return FastWake::NEVER;
        };
        if !self.primary().contains(cpu) {
            return FastWake::NEVER;
        }
        // A CPU of higher capacity is in the fitting pool when the task does not fit `cpu`,
        // and wins on capacity when it does: either way it may beat `cpu`.
        let mut beaten = topo
            .at_least_capacity(info.capacity.saturating_add(1))
            .and(self.primary());
        let p_core = info.kind == CoreKind::Performance;
        if !p_core {
            // A whole idle P-core comes first in the idle order.
            beaten = beaten.or(&topo.kind_mask(CoreKind::Performance).and(self.primary()));
        }
        FastWake {
            keep: true,
            core: topo.core_mask(usize::from(info.core)),
            beaten_if_idle: beaten,
            // On a whole idle P-core the previous CPU comes before any tie-break; elsewhere
            // cluster load comes before it.
            balance_matters: !p_core,
            step: if p_core {
                Step::IdlePCore
            } else {
                Step::IdleECore
            },
        }
    }

    /// [`fast_wake`](Self::fast_wake) for every CPU id up to the machine's highest, in id order:
    /// the table a fast path walks (entry `i` for CPU `i`).
    pub fn fast_wake_table<'a>(
        &'a self,
        topo: &'a Topology,
    ) -> impl Iterator<Item = FastWake> + 'a {
        (0..topo.cpus().span()).map(move |c| self.fast_wake(topo, CpuId(c as u16)))
    }

    /// Checks a wake-up a fast path kept on `prev` against the idle order, as the core would
    /// decide it with `idle` CPUs idle: for every utilisation that changes which CPUs fit, with
    /// no homes and with every core a home. `Err` holds the first answer that is not `prev`.
    /// For a live audit of the kernel side (`scx_hybridland --audit-fast-wake`).
    pub fn check_fast_wake(
        &self,
        topo: &Topology,
        idle: &CpuSet,
        allowed: &CpuSet,
        prev: CpuId,
    ) -> Result<(), crate::Placement> {
        let bare = CpuState::from_idle(topo, idle);
        let mut homed = bare.clone();
        for cpu in topo.cpus().iter() {
            homed.move_home(topo, None, cpu);
        }
        // Which CPUs fit changes only where a level's capacity times the margin is crossed:
        // the last utilisation that fits it and the first that does not cover every case.
        let margin = u32::from(self.config().fit_margin_pct);
        let utils = topo
            .capacity_levels()
            .iter()
            .flat_map(|&l| {
                let last = (u32::from(l) * margin / 100) as u16;
                [last, last.saturating_add(1)]
            })
            .chain([0, 1024]);
        for util in utils {
            for state in [&bare, &homed] {
                let task = crate::TaskHints {
                    allowed,
                    prev_cpu: Some(prev),
                    util,
                };
                let answer = self.select_cpu(topo, state, &task);
                if answer.cpu != Some(prev) {
                    return Err(answer);
                }
            }
        }
        Ok(())
    }

    /// The busy counts at which cluster balance is active on `topo`, as the kernel side tests
    /// them.
    pub fn balance_range(&self, topo: &Topology) -> BalanceRange {
        // The rule's verdict at each busy count, occupying one CPU more each time.
        let mut state = CpuState::all_idle(topo);
        let mut cpus = topo.cpus().iter();
        let mut from = None;
        for busy in 0..=topo.nr_cpus() as u32 {
            if busy > 0
                && let Some(cpu) = cpus.next()
            {
                state.occupy(topo, cpu);
            }
            let active = cluster_balance::active(self.config(), topo, &state);
            match (from, active) {
                (None, true) => from = Some(busy),
                (Some(from), false) => return BalanceRange { from, until: busy },
                _ => {}
            }
        }
        match from {
            Some(from) => BalanceRange {
                from,
                until: topo.nr_cpus() as u32 + 1,
            },
            None => BalanceRange { from: 0, until: 0 },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ClusterBalance, PolicyConfig};
    use crate::idle_order::TaskHints;
    use crate::testkit::arb_scenario;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        /// Whenever the fast path keeps a task on its previous CPU, the idle order chooses
        /// that CPU too, whatever the task's utilisation and the other tasks' homes.
        #[test]
        fn a_kept_wakeup_is_the_idle_orders_answer(s in arb_scenario()) {
            let Some(prev) = s.prev_cpu else { return Ok(()) };
            let policy = s.policy();
            let entry = policy.fast_wake(&s.topology, prev);
            let range = policy.balance_range(&s.topology);
            if entry.keeps(&s.topology, &s.idle, &s.allowed, prev, range) {
                let state = s.state();
                let task = TaskHints { allowed: &s.allowed, prev_cpu: Some(prev), util: s.util };
                let answer = policy.select_cpu(&s.topology, &state, &task);
                prop_assert_eq!(answer.cpu, Some(prev), "{:?} kept, the idle order says {:?}", entry, answer);
                prop_assert_eq!(answer.step, entry.step);
                prop_assert!(!answer.is_overflow());
            }
        }

        /// The live audit accepts every wake-up the table keeps.
        #[test]
        fn the_audit_accepts_what_the_table_keeps(s in arb_scenario()) {
            let Some(prev) = s.prev_cpu else { return Ok(()) };
            let policy = s.policy();
            let range = policy.balance_range(&s.topology);
            if policy.fast_wake(&s.topology, prev).keeps(&s.topology, &s.idle, &s.allowed, prev, range) {
                prop_assert!(policy.check_fast_wake(&s.topology, &s.idle, &s.allowed, prev).is_ok());
            }
        }

        /// The busy range is the balance rule's own verdict at every busy count.
        #[test]
        fn the_balance_range_is_the_rules_verdict(s in arb_scenario()) {
            let policy = s.policy();
            let range = policy.balance_range(&s.topology);
            let state = s.state();
            let busy = state.nr_busy() as u32;
            prop_assert_eq!(range.contains(busy), policy.balance_active(&s.topology, &state));
        }
    }

    /// scripts/vm/topology-2p-smt-4e.toml: E-cores 0-3 in clusters {0,2} and {1,3}, P-cores
    /// 4-5 and 6-7.
    fn vm_machine() -> Topology {
        let mut b = crate::TopologyBuilder::new();
        for c in 0..8u16 {
            let (k, cap) = if c < 4 {
                (CoreKind::Efficiency, 640)
            } else {
                (CoreKind::Performance, 1024)
            };
            b.add_cpu(CpuId(c), k, cap, 0).unwrap();
        }
        b.add_core(&[CpuId(4), CpuId(5)]).unwrap();
        b.add_core(&[CpuId(6), CpuId(7)]).unwrap();
        b.add_cluster(&[CpuId(0), CpuId(2)]).unwrap();
        b.add_cluster(&[CpuId(1), CpuId(3)]).unwrap();
        b.build().unwrap()
    }

    /// The fast path is not vacuous: on the VM's machine it keeps a task on its idle P-core
    /// beside a busy one, and on an idle E-core when every P-CPU is busy and balance is off,
    /// and declines when an idle P-core would serve better.
    #[test]
    fn the_vm_machine_keeps_what_it_should() {
        let topo = vm_machine();
        let cpus = |ids: &[u16]| ids.iter().map(|&c| CpuId(c)).collect::<CpuSet>();
        let all = *topo.cpus();
        let balance_off = PolicyConfig {
            cluster_balance: ClusterBalance::Off,
            ..PolicyConfig::default()
        };
        let policy = Policy::new(&topo, &balance_off).unwrap();
        let range = policy.balance_range(&topo);
        assert_eq!(range, BalanceRange { from: 0, until: 0 });
        let p = policy.fast_wake(&topo, CpuId(6));
        assert!(p.keeps(&topo, &cpus(&[0, 1, 6, 7]), &all, CpuId(6), range));
        // Its sibling busy: the core is not whole.
        assert!(!p.keeps(&topo, &cpus(&[0, 1, 6]), &all, CpuId(6), range));
        // Not allowed there.
        assert!(!p.keeps(&topo, &cpus(&[6, 7]), &cpus(&[4, 5]), CpuId(6), range));
        let e = policy.fast_wake(&topo, CpuId(2));
        assert!(e.keeps(&topo, &cpus(&[1, 2]), &all, CpuId(2), range));
        // An idle P-CPU: the task may not fit the E-core.
        assert!(!e.keeps(&topo, &cpus(&[2, 5]), &all, CpuId(2), range));
        // Cluster balance `auto` (the default) is active below 75% busy: an E-core wins only
        // on load there, so the core decides; at 6 of 8 busy it is inactive again.
        let auto = Policy::new(&topo, &PolicyConfig::default()).unwrap();
        let range = auto.balance_range(&topo);
        assert_eq!(range, BalanceRange { from: 0, until: 6 });
        let e = auto.fast_wake(&topo, CpuId(2));
        assert!(!e.keeps(&topo, &cpus(&[1, 2, 3]), &all, CpuId(2), range));
        assert!(e.keeps(&topo, &cpus(&[1, 2]), &all, CpuId(2), range));
        assert!(auto.fast_wake(&topo, CpuId(6)).keeps(
            &topo,
            &cpus(&[6, 7]),
            &all,
            CpuId(6),
            range
        ));
        // The audit is not vacuous: an E-core beside an idle P-core is not the idle order's
        // answer for every task.
        assert!(
            auto.check_fast_wake(&topo, &cpus(&[2, 4, 5]), &all, CpuId(2))
                .is_err()
        );
        assert!(
            auto.check_fast_wake(&topo, &cpus(&[6, 7]), &all, CpuId(6))
                .is_ok()
        );
    }
}
