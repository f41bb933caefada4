//! A task onto and off a CPU: migration cost, wake-up cost and latency, the slice timer, busy
//! time and the run handed to the task's utilisation estimate.

use super::progress::RunInfo;
use super::{Event, OccupancyRecord, Pending, Simulation, Status, slice_end_key, work_done_key};
use crate::machine::WORK_SCALE;
use hybridland_policy::{CpuId, LastRun, slice_ns as sized_slice};

impl<'a> Simulation<'a> {
    /// Puts task `t` on idle `cpu`.
    pub(super) fn start(&mut self, t: usize, cpu: CpuId) {
        let now = self.now;
        let i = cpu.index();
        let (same_cluster, moved) = match self.tasks[t].last_cpu {
            Some(last) if last != cpu => (
                self.cpus[last.index()].cluster == self.cpus[i].cluster,
                true,
            ),
            _ => (true, false),
        };
        let task = &mut self.tasks[t];
        if moved {
            task.migrations += 1;
            self.migrations += 1;
            let cost = if same_cluster {
                self.model.migration_ns
            } else {
                self.model.cross_cluster_migration_ns
            };
            task.remaining = task
                .remaining
                .saturating_add(u128::from(cost) * u128::from(WORK_SCALE));
        }
        // A CPU idle since before now has to be woken (the interrupt) and leave its idle
        // state (unless a busy sibling keeps its core awake): the task runs that much later.
        let from_idle = self.cpus[i].idle_since.is_some_and(|since| since < now);
        let wake_cost = if from_idle {
            let core_awake = self.siblings[i]
                .iter()
                .any(|s| *s != cpu && self.cpus[s.index()].running.is_some());
            self.model.wakeup_cost_ns(self.cpus[i].kind, core_awake)
        } else {
            0
        };
        let task = &mut self.tasks[t];
        let runs_from = now.saturating_add(wake_cost);
        task.run_latency = task.runnable_since.take().map(|since| runs_from - since);
        task.run_queued = core::mem::take(&mut task.queued);
        task.run_woken_by = task.woken_by.take();
        if let Some(waited) = task.run_latency {
            self.latency.record(waited);
        }
        task.status = Status::Running;
        task.last_cpu = Some(cpu);
        // Rate 0: no completion event issued yet; `refresh_around` issues it.
        task.run = Some(RunInfo {
            since_ns: runs_from,
            settled_ns: runs_from,
            rate: 0,
        });
        let nr_waiting = (self.shared.len() + self.nr_local) as u64;
        let slice = task
            .slice_ns
            .take()
            .unwrap_or_else(|| sized_slice(self.options.slice_ns, nr_waiting));
        // The driver moves the task's home with it and marks the CPU busy.
        self.policy.started(now, t, cpu);

        self.idle.remove(cpu);
        self.load[i] += 1;
        let sensitivity = self.tasks[t].sensitivity;
        let c = &mut self.cpus[i];
        c.running = Some(t);
        // Busy from when the task runs: the wake-up cost is time the CPU runs nothing.
        c.busy_since = Some(runs_from);
        c.idle_since = None;
        let (core, cluster, pos) = (c.core, c.cluster, c.cluster_pos);
        self.contention[cluster].start(pos, sensitivity);
        self.meter(core, 1);
        self.events.push_keyed(
            slice_end_key(cpu),
            now.saturating_add(slice),
            Event::SliceEnd(cpu),
        );
        self.refresh_around(cpu, sensitivity);
        if self.record_runs {
            self.record_occupancy(cluster);
        }
    }

    /// Queues the occupancy of `cluster` and the machine's power for the observer.
    fn record_occupancy(&mut self, cluster: usize) {
        let busy_cpus = self
            .topo
            .cluster_cpus(cluster)
            .iter()
            .filter(|c| self.cpus[c.index()].running.is_some())
            .count() as u32;
        let model = self.model;
        let power_mw = self
            .cores
            .iter()
            .map(|m| model.core_power_mw(m.kind, m.busy_threads))
            .sum::<u64>()
            + u64::from(model.package_mw);
        self.pending.push(Pending::Occupancy(OccupancyRecord {
            now_ns: self.now,
            cluster,
            busy_cpus,
            power_mw,
        }));
    }

    /// Takes the running task off `cpu`; returns it.
    pub(super) fn stop(&mut self, cpu: CpuId) -> usize {
        let now = self.now;
        let i = cpu.index();
        let t = self.cpus[i].running.take().unwrap_or(usize::MAX);
        let sensitivity = self.tasks.get(t).map_or(0, |task| task.sensitivity);
        let (cluster, pos) = (self.cpus[i].cluster, self.cpus[i].cluster_pos);
        self.contention[cluster].stop(pos, sensitivity);
        self.settle(t);
        self.events.cancel(work_done_key(cpu));
        self.events.cancel(slice_end_key(cpu));
        let c = &mut self.cpus[i];
        if let Some(since) = c.busy_since.take() {
            c.busy_ns += now.saturating_sub(since);
        }
        c.idle_since = Some(now);
        c.nudged = false;
        let (kind, core) = (c.kind, c.core);
        self.meter(core, -1);
        self.idle.insert(cpu);
        self.load[i] -= 1;
        if let Some(task) = self.tasks.get_mut(t) {
            let frame_done = core::mem::take(&mut task.frame_done);
            if let Some(run) = task.run.take() {
                // Stopped before the wake-up cost was paid: it ran nothing.
                let started = run.since_ns.min(now);
                if self.record_runs {
                    self.pending.push(Pending::Run {
                        start_ns: started,
                        cpu,
                        task: t,
                        step: task.placed_by,
                        util: task.placed_util,
                        queued: task.run_queued,
                        latency_ns: task.run_latency,
                        frame_done,
                        woken_by: task.run_woken_by.take(),
                    });
                }
                task.ran_by_kind[kind.index()] += now - started;
                let ran = LastRun {
                    start_ns: run.since_ns,
                    stop_ns: now,
                };
                // The driver releases the CPU and counts the run in the task's estimate.
                self.policy.stopped(now, t, cpu, ran, task.weight);
            }
        }
        self.refresh_around(cpu, sensitivity);
        if self.record_runs {
            self.record_occupancy(cluster);
        }
        t
    }
}
