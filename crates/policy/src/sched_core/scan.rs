//! Between batches: the up-migration scan and the age prune.

use super::{Nudge, SchedCore, Slot};
use crate::placement_policy::{PlacementPolicy, View};

impl<S: AsRef<[Slot]> + AsMut<[Slot]>, P: PlacementPolicy> SchedCore<S, P> {
    /// Looks for a CPU running a task the core sent there that the up-migration rule would
    /// now move (a P-core idled while it sits on an E-core or an SMT sibling), against the
    /// state as the core knows it. At most one nudge per `gap_ns`.
    pub(super) fn scan(&mut self, now_ns: u64, gap_ns: u64) {
        if self
            .last_nudge_ns
            .is_some_and(|at| now_ns.saturating_sub(at) < gap_ns)
        {
            return;
        }
        let mut found = None;
        let placed_cpus = self.placed_cpus;
        for cpu in placed_cpus.iter() {
            let Some(placed) = self.placed[cpu.index()] else {
                continue;
            };
            if self.state.is_idle(cpu) {
                // The task left.
                self.clear_placed(cpu);
                continue;
            }
            if self.queued_cpus.contains(cpu) {
                continue;
            }
            let allowed = if placed.restricted {
                &self.placed_allowed[cpu.index()]
            } else {
                self.topo.cpus()
            };
            let view = View {
                topo: &self.topo,
                state: &self.state,
                allowed,
                prev_cpu: Some(cpu),
                util: placed.util,
                weight: crate::NICE_0_WEIGHT,
                waker_cpu: None,
                now_ns,
                contended: false,
            };
            let better = self
                .policy
                .up_migration(&view)
                .filter(|p| p.cpu.is_some_and(|to| to != cpu && allowed.contains(to)));
            if let Some(better) = better {
                found = Some(Nudge {
                    cpu,
                    task: placed.task,
                    better,
                });
                break;
            }
        }
        let Some(nudge) = found else { return };
        // One nudge outstanding at most: a newer one replaces an unpolled older one.
        let _ = self.nudges.pop();
        let _ = self.nudges.push(nudge);
        self.helper_target = Some(nudge.cpu);
        self.last_nudge_ns = Some(now_ns);
        self.clear_placed(nudge.cpu);
        self.stats.nudges += 1;
    }

    /// Forgets tasks not heard of for [`CoreConfig::forget_after_ns`](super::CoreConfig),
    /// with their homes: the fallback for exits nobody reported.
    pub(super) fn prune(&mut self, now_ns: u64) {
        let after = self.config.forget_after_ns;
        if after == 0 {
            return;
        }
        let cut = now_ns.saturating_sub(after);
        let Self {
            slots,
            state,
            topo,
            stats,
            ..
        } = self;
        slots.retain(
            |r| r.seen_ns >= cut,
            |r| {
                stats.forgotten += 1;
                if let Some(home) = r.home {
                    state.leave_home(topo, home);
                }
            },
        );
    }
}
