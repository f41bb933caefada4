//! Work progress: how fast a running task advances, given its CPU and its neighbours, and
//! when its current piece of work will be done.

use super::{Event, Simulation, work_done_key};
use crate::event_queue::TimeNs;
use hybridland_policy::CpuId;

#[derive(Clone, Debug)]
pub(super) struct RunInfo {
    pub(super) since_ns: TimeNs,
    pub(super) settled_ns: TimeNs,
    pub(super) rate: u64,
}

impl<'a> Simulation<'a> {
    /// Brings a running task's remaining work up to now at its current rate.
    pub(super) fn settle(&mut self, t: usize) {
        let now = self.now;
        if let Some(task) = self.tasks.get_mut(t) {
            if let Some(run) = &mut task.run {
                let done = u128::from(run.rate) * u128::from(now - run.settled_ns);
                task.remaining = task.remaining.saturating_sub(done);
                run.settled_ns = now;
            }
        }
    }

    /// Recomputes the rates of the tasks running beside `cpu` (its core and its L2 cluster)
    /// and re-issues their completion events.
    pub(super) fn refresh_around(&mut self, cpu: CpuId) {
        let topo = self.topo;
        let cluster = topo.info(cpu).map_or(0, |i| usize::from(i.cluster));
        let members = topo.cluster_cpus(cluster);
        for &c in members {
            self.refresh(c);
        }
        for &s in topo.siblings(cpu) {
            if !members.contains(&s) {
                self.refresh(s);
            }
        }
    }

    pub(super) fn refresh(&mut self, cpu: CpuId) {
        let i = cpu.index();
        let Some(t) = self.cpus[i].running else {
            return;
        };
        self.settle(t);
        let topo = self.topo;
        let sibling_busy = topo
            .siblings(cpu)
            .iter()
            .any(|s| *s != cpu && self.cpus[s.index()].running.is_some());
        let cluster = self.cpus[i].cluster;
        let others: u32 = topo
            .cluster_cpus(cluster)
            .iter()
            .filter(|c| **c != cpu)
            .filter_map(|c| self.cpus[c.index()].running)
            .map(|o| u32::from(self.tasks[o].sensitivity))
            .sum();
        let task = &self.tasks[t];
        let rate = self.model.rate(
            self.cpus[i].capacity,
            sibling_busy,
            task.sensitivity,
            others,
        );
        let remaining = task.remaining;
        if let Some(run) = &mut self.tasks[t].run {
            // Same speed as before: the pending completion event is still exact.
            if run.rate == rate {
                return;
            }
            run.rate = rate;
        }
        let wait = remaining.div_ceil(u128::from(rate));
        let due = self
            .now
            .saturating_add(u64::try_from(wait).unwrap_or(u64::MAX));
        self.events
            .push_keyed(work_done_key(cpu), due, Event::WorkDone(cpu));
    }
}
