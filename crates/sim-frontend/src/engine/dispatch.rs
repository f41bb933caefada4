//! Queues and dispatch: acting on a policy's answer (after checking it), the per-CPU and shared
//! queues, and balancing moves between CPU queues.

use super::{DecisionObserver, DecisionRecord, SimError, Simulation, Status};
use crate::options::ReplayUtil;
use crate::sim_policy::{Destination, EngineView, Reason, TaskView};
use hybridland_policy::CpuId;

impl<'a> Simulation<'a> {
    /// Asks the policy where runnable task `t` goes and puts it there. `vacated` is the CPU
    /// it just left at a slice end (already idle in the state).
    pub(super) fn place(
        &mut self,
        t: usize,
        reason: Reason,
        vacated: Option<CpuId>,
        observer: &mut dyn DecisionObserver,
    ) -> Result<(), SimError> {
        let allowed = self.allowed[self.tasks[t].spec];
        let prev = self.tasks[t].last_cpu;
        let util = match self.options.util_source {
            ReplayUtil::Estimator => self.policy.estimate(t),
            ReplayUtil::Hint => self.tasks[t].util_hint,
        };
        let view = EngineView {
            topo: self.topo,
            idle: &self.idle,
            load: &self.load,
            waiting: (self.shared.len() + self.nr_local) as u64,
            now_ns: self.now,
        };
        let task_view = TaskView {
            id: t,
            allowed: &allowed,
            prev_cpu: prev,
            util,
            from_hint: self.options.util_source == ReplayUtil::Hint,
            weight: self.tasks[t].weight,
            reason,
            waker_cpu: self.tasks[t].waker_cpu,
            sync_waker: self.tasks[t].sync_waker,
        };
        let decision = self.policy.place(&view, &task_view);
        let util = decision.util.unwrap_or(util);
        if self.record_decisions
            && let Some(state) = self.policy.decided_on()
        {
            observer.on_decision(&DecisionRecord {
                now_ns: self.now,
                task: t,
                task_name: &self.tasks[t].name,
                reason,
                topo: self.topo,
                state,
                allowed: &allowed,
                prev_cpu: prev,
                sync_waker: task_view.sync_waker,
                util,
                decision: &decision,
                core: self.policy.core(),
            });
        }
        let task = &mut self.tasks[t];
        task.placed_util = util;
        task.slice_ns = decision.slice_ns;
        task.placed_by = match decision.target {
            Destination::Run(_) => decision.placement.map(|p| p.step),
            Destination::QueueOn(_) | Destination::QueueShared | Destination::Preempt(_) => None,
        };
        let invalid = |cpu: CpuId, reason: &'static str, s: &Self| SimError::InvalidDecision {
            policy: s.policy.name().to_owned(),
            task: t,
            cpu,
            now_ns: s.now,
            reason,
        };
        match decision.target {
            Destination::Run(cpu) => {
                if self.topo.info(cpu).is_none() {
                    return Err(invalid(cpu, "no such CPU", self));
                }
                if !allowed.contains(cpu) {
                    return Err(invalid(cpu, "not allowed for the task", self));
                }
                if !self.idle.contains(cpu) {
                    return Err(invalid(cpu, "CPU is busy", self));
                }
                if vacated == Some(cpu) && reason.stopped_for_another() {
                    // Staying put while someone waits means yielding: back of the line.
                    if self.cpus[cpu.index()].local.is_empty() {
                        self.enqueue_shared(t, decision.vtime);
                    } else {
                        self.enqueue_local(t, cpu);
                    }
                    return self.dispatch(cpu);
                }
                self.start(t, cpu);
            }
            Destination::QueueOn(cpu) | Destination::Preempt(cpu) => {
                if self.topo.info(cpu).is_none() {
                    return Err(invalid(cpu, "no such CPU", self));
                }
                if !allowed.contains(cpu) {
                    return Err(invalid(cpu, "not allowed for the task", self));
                }
                let preempt = matches!(decision.target, Destination::Preempt(_));
                if preempt && Some(cpu) != vacated && !self.idle.contains(cpu) {
                    // First in line, and the task there stops now: its slice end re-places
                    // it with the CPU contended, then the CPU takes this one.
                    self.enqueue_local(t, cpu);
                    let local = &mut self.cpus[cpu.index()].local;
                    local.rotate_right(1);
                    self.slice_end(cpu, true, observer)?;
                } else {
                    self.enqueue_local(t, cpu);
                    if self.idle.contains(cpu) {
                        self.dispatch(cpu)?;
                    }
                }
            }
            Destination::QueueShared => {
                if let Some(cpu) = allowed.and(&self.idle).first()
                    && (vacated != Some(cpu) || allowed.and(&self.idle).count() > 1)
                {
                    return Err(invalid(
                        cpu,
                        "queued in the shared queue while an allowed CPU is idle",
                        self,
                    ));
                }
                self.enqueue_shared(t, decision.vtime);
            }
        }
        if let Some(cpu) = vacated
            && self.idle.contains(cpu)
        {
            self.dispatch(cpu)?;
        }
        Ok(())
    }

    pub(super) fn enqueue_local(&mut self, t: usize, cpu: CpuId) {
        // Balancing only moves tasks between CPU queues, so ticks run only while one is used.
        self.ensure_tick();
        self.tasks[t].status = Status::Queued;
        self.tasks[t].queued = true;
        self.cpus[cpu.index()].local.push_back(t);
        self.load[cpu.index()] += 1;
        self.nr_local += 1;
    }

    /// Puts `t` in the shared queue at `key` (the decision's vtime), or at the one its driver
    /// keeps (the bounded-credit vtime).
    pub(super) fn enqueue_shared(&mut self, t: usize, key: Option<u64>) {
        let slice_ns = self.options.slice_ns;
        let key = key.unwrap_or_else(|| self.policy.queue_key(t, slice_ns));
        let task = &mut self.tasks[t];
        task.status = Status::Queued;
        task.queued = true;
        self.shared.insert((key, self.shared_seq, t));
        self.shared_seq += 1;
    }

    /// An idle CPU takes the next task from its own queue, else from the shared queue.
    pub(super) fn dispatch(&mut self, cpu: CpuId) -> Result<(), SimError> {
        if !self.idle.contains(cpu) {
            return Ok(());
        }
        if let Some(t) = self.cpus[cpu.index()].local.pop_front() {
            self.load[cpu.index()] -= 1;
            self.nr_local -= 1;
            self.start(t, cpu);
            return Ok(());
        }
        let next = self
            .shared
            .iter()
            .find(|(_, _, t)| self.allowed[self.tasks[*t].spec].contains(cpu))
            .copied();
        if let Some(key) = next {
            self.shared.remove(&key);
            self.start(key.2, cpu);
        }
        Ok(())
    }

    pub(super) fn apply_move(&mut self, t: usize, to: CpuId) -> Result<(), SimError> {
        let bad = |reason: &'static str, s: &Self| SimError::InvalidDecision {
            policy: s.policy.name().to_owned(),
            task: t,
            cpu: to,
            now_ns: s.now,
            reason,
        };
        if self.topo.info(to).is_none() {
            return Err(bad("no such CPU", self));
        }
        if t >= self.tasks.len() || !self.allowed[self.tasks[t].spec].contains(to) {
            return Err(bad("balance move to a CPU the task may not use", self));
        }
        let from = self
            .cpu_ids
            .iter()
            .copied()
            .find(|c| self.cpus[c.index()].local.contains(&t));
        let Some(from) = from else {
            return Err(bad(
                "balance move of a task that is not in a CPU queue",
                self,
            ));
        };
        self.cpus[from.index()].local.retain(|x| *x != t);
        self.load[from.index()] -= 1;
        self.nr_local -= 1;
        self.enqueue_local(t, to);
        self.dispatch(to)
    }
}
