//! Work progress: how fast a running task advances, given its CPU and its neighbours, and
//! when its current piece of work will be done.

use super::{Event, Simulation, work_done_key};
use hybridland_policy::CpuId;

#[derive(Clone, Debug)]
pub(super) struct RunInfo {
    pub(super) since_ns: u64,
    pub(super) settled_ns: u64,
    pub(super) rate: u64,
}

impl<'a> Simulation<'a> {
    /// Brings a running task's remaining work up to now at its current rate.
    pub(super) fn settle(&mut self, t: usize) {
        let now = self.now;
        if let Some(task) = self.tasks.get_mut(t)
            && let Some(run) = &mut task.run
        {
            // Before `settled_ns` (a wake-up cost still being paid) nothing is done.
            let done = u128::from(run.rate) * u128::from(now.saturating_sub(run.settled_ns));
            task.remaining = task.remaining.saturating_sub(done);
            run.settled_ns = run.settled_ns.max(now);
        }
    }

    /// Re-rates the running tasks whose speed can have changed because a task of
    /// `sensitivity` started or stopped on `cpu`, and re-issues their completion events:
    /// `cpu` itself, its SMT siblings (one more or one fewer busy sibling), and, when the
    /// task is cache-sensitive and the model has L2 contention, the cluster's running
    /// cache-sensitive tasks (their co-runners' sum changed). No other task's rate depends on
    /// this change: an insensitive task feels no contention and a task of sensitivity 0 adds
    /// nothing to anyone's. So the work per event is O(SMT width) plus, for a sensitive task,
    /// O(k log k) for the k sensitive tasks running in its cluster, never O(cluster size).
    /// Those k re-ratings are inherent to the model: each of them gets a new completion time.
    pub(super) fn refresh_around(&mut self, cpu: CpuId, sensitivity: u8) {
        let topo = self.topo;
        let cluster = self.cpus[cpu.index()].cluster;
        let members = topo.cluster_cpus(cluster);
        // Visited in cluster order, as the full walk over the cluster did: equal-time
        // completions keep their queue order and the replay its bytes.
        let mut visit = core::mem::take(&mut self.rerate_scratch);
        visit.clear();
        if sensitivity > 0 && self.model.l2_contention_pct > 0 {
            visit.extend(self.contention[cluster].sensitive.iter().copied());
        }
        let siblings = self.siblings[cpu.index()];
        for &s in siblings {
            if self.cpus[s.index()].cluster == cluster {
                visit.push(self.cpus[s.index()].cluster_pos);
            }
        }
        visit.sort_unstable();
        visit.dedup();
        for &pos in &visit {
            if let Some(&c) = members.get(usize::from(pos)) {
                self.refresh(c);
            }
        }
        self.rerate_scratch = visit;
        for &s in siblings {
            if self.cpus[s.index()].cluster != cluster {
                self.refresh(s);
            }
        }
    }

    pub(super) fn refresh(&mut self, cpu: CpuId) {
        let i = cpu.index();
        let Some(t) = self.cpus[i].running else {
            return;
        };
        self.rate_refreshes += 1;
        self.settle(t);
        let sibling_busy = self.siblings[i]
            .iter()
            .any(|s| *s != cpu && self.cpus[s.index()].running.is_some());
        // The cluster's sum counts this task too (it is running).
        let others = self.contention[self.cpus[i].cluster].sensitivity_sum
            - u32::from(self.tasks[t].sensitivity);
        let task = &self.tasks[t];
        let rate = self.model.rate(
            self.cpus[i].capacity,
            sibling_busy,
            task.sensitivity,
            others,
        );
        let remaining = task.remaining;
        let from = task.run.as_ref().map_or(self.now, |r| r.settled_ns);
        if let Some(run) = &mut self.tasks[t].run {
            // Same speed as before: the pending completion event is still exact.
            if run.rate == rate {
                return;
            }
            run.rate = rate;
        }
        let wait = remaining.div_ceil(u128::from(rate));
        let due = from.saturating_add(u64::try_from(wait).unwrap_or(u64::MAX));
        self.events
            .push_keyed(work_done_key(cpu), due, Event::WorkDone(cpu));
    }
}
