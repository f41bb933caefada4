//! Between batches: the up-migration scan and the age prune.

use super::{Nudge, PlacedTask, SchedCore, Slot, TaskKey};
use crate::NICE_0_WEIGHT;
use crate::cpu_set::CpuId;
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
            let (util, weight) = self.running_now(&placed, cpu, now_ns);
            let (key, value) = self.task_value(placed.task).unwrap_or((
                TaskKey {
                    id: placed.task,
                    generation: 0,
                },
                0,
            ));
            // `ask_about`, field by field: `allowed` borrows another field.
            self.memo.set(value);
            self.memo_key = Some(key);
            let view = View {
                topo: &self.topo,
                state: &self.state,
                allowed,
                prev_cpu: Some(cpu),
                util,
                weight,
                waker_cpu: None,
                sync_waker: None,
                now_ns,
                contended: false,
                task: key,
                memo: &self.memo,
            };
            let better = self
                .policy
                .up_migration(&view)
                .filter(|p| p.cpu.is_some_and(|to| to != cpu && allowed.contains(to)));
            self.keep_memo();
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

    /// The utilisation and weight up-migration is asked with for `placed`, running on `cpu`
    /// at `now_ns`: the core's estimate from the task's slot brought up to `now_ns`, and the
    /// weight it was last handed over with.
    ///
    /// The projection: the task waited from the estimate's last update until the core sent
    /// it (the estimate decays), and has run on `cpu` since (it rises towards `cpu`'s
    /// capacity). The core counts the task on `cpu` until the CPU is seen idle, so a task
    /// that ran there briefly and slept while the CPU stayed busy with others reads as having
    /// run all along; the slice-end rule that carries out a nudge reads the task's real runs.
    /// Runs the core is told of meanwhile move the estimate's time on and shorten the
    /// projected stretch. A task decided on the caller's hint keeps the hint; a task the full
    /// storage does not hold is asked with what its last decision read, at nice 0.
    fn running_now(&self, placed: &PlacedTask, cpu: CpuId, now_ns: u64) -> (u16, u32) {
        let rec = self.slots.get(placed.task);
        let weight = rec.map_or(NICE_0_WEIGHT, |r| r.weight);
        let util = match rec {
            Some(rec) if !placed.hinted => {
                let mut estimate = *rec.state.util_estimate();
                let capacity = self.topo.info(cpu).map_or(0, |i| i.capacity);
                estimate.advance(placed.sent_ns, 0);
                estimate.advance(now_ns, capacity);
                estimate.util()
            }
            _ => placed.util,
        };
        (util, weight)
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
