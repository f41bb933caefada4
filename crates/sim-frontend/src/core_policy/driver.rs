//! The core-driven policy as the engine drives it ([`PolicyDriver`]): the live framework's
//! part, telling the core every start, stop and exit, running its timer, and reading back what
//! the engine reports (final utilisations, step counts).

use super::CoreDriven;
use super::fast::settle;
use crate::sim_policy::{
    Decision, EngineView, Move, PolicyDriver, PolicyError, QueuedTask, SimPolicy, TaskView,
};
use hybridland_policy::{
    CpuId, CpuState, Input, LastRun, Life, Nudge, Policy, Step, TaskId, TimeNs, Topology,
};

/// The life of the simulator's task `task` (its index) under the id it holds: the core tells a
/// task from an earlier one that held the same id by it ([`Life`]), as it does live.
pub(super) fn life_of(task: usize) -> Life {
    Life(task as u64 + 1)
}

impl PolicyDriver for CoreDriven {
    fn name(&self) -> &str {
        SimPolicy::name(self)
    }

    fn describe(&self) -> String {
        SimPolicy::describe(self)
    }

    fn core(&self) -> Option<&Policy> {
        SimPolicy::core(self)
    }

    fn prepare(&mut self, topo: &Topology, seed: u64) -> Result<(), PolicyError> {
        SimPolicy::prepare(self, topo, seed)
    }

    fn reserve(&mut self, nr_tasks: usize, slice_ns: u64) -> Result<(), PolicyError> {
        SimPolicy::reserve(self, nr_tasks, slice_ns)
    }

    fn watch_decisions(&mut self, on: bool) {
        self.seen = self
            .core
            .as_deref()
            .filter(|_| on)
            .map(|c| c.state().clone());
    }

    fn place(&mut self, machine: &EngineView<'_>, task: &TaskView<'_>) -> Decision {
        let decision = self.decide(machine, task);
        if let Some(p) = decision.placement {
            let i = p.step.index();
            self.steps[i][0] += 1;
            self.steps[i][1] += u64::from(p.is_overflow());
        }
        decision
    }

    fn decided_on(&self) -> Option<&CpuState> {
        self.seen.as_ref()
    }

    fn balance(&mut self, _machine: &EngineView<'_>, _queued: &[QueuedTask<'_>]) -> Vec<Move> {
        // Nothing of a core-driven policy waits in a CPU's own queue.
        Vec::new()
    }

    fn woke(&mut self, _now_ns: u64, _task: usize) {
        // The core learns of a wake-up with the task's placement.
    }

    fn estimate(&self, _task: usize) -> u16 {
        // The core estimates it itself (and reports it in its decision).
        0
    }

    fn started(&mut self, now_ns: u64, task: usize, cpu: CpuId) {
        if let Some(core) = self.core.as_deref_mut() {
            let task = self.pids.id(task);
            let _ = core.handle(TimeNs(now_ns), Input::Started { task, cpu });
        }
    }

    fn stopped(&mut self, now_ns: u64, task: usize, cpu: CpuId, run: LastRun, weight: u32) {
        if let Some(core) = self.core.as_deref_mut() {
            let task = self.pids.id(task);
            let input = Input::Stopped {
                task,
                cpu,
                run,
                weight,
            };
            let _ = core.handle(TimeNs(now_ns), input);
            let _ = settle(core, &mut self.classed);
        }
    }

    fn exited(&mut self, now_ns: u64, task: usize) {
        if let Some(core) = self.core.as_deref_mut() {
            let Some(id) = self.pids.release(task) else {
                return;
            };
            if let Some(slot) = self.final_util.get_mut(task) {
                *slot = core.task(id).map(|s| s.util());
            }
            let _ = core.handle(
                TimeNs(now_ns),
                Input::Exit {
                    task: id,
                    life: life_of(task),
                },
            );
        }
    }

    fn queue_key(&mut self, _task: usize, _slice_ns: u64) -> u64 {
        // Its decisions carry the core's vtime; one that does not (no dispatch came out) has
        // no vtime to wait under.
        0
    }

    fn timeout(&self) -> Option<u64> {
        self.core
            .as_deref()
            .and_then(|c| c.poll_timeout())
            .map(|t| t.ns())
    }

    fn tick(&mut self, now_ns: u64) -> Option<Nudge> {
        let core = self.core.as_deref_mut()?;
        let _ = core.handle(TimeNs(now_ns), Input::Tick);
        let nudge = settle(core, &mut self.classed)?;
        // The engine knows the task by its index.
        let task = self.pids.task_of(nudge.task)?;
        Some(Nudge {
            task: TaskId(u32::try_from(task).ok()?),
            ..nudge
        })
    }

    fn refills_uncontended_slices(&self) -> bool {
        true
    }

    fn final_util(&self, task: usize) -> u16 {
        let core = self.core.as_deref();
        self.final_util
            .get(task)
            .copied()
            .flatten()
            .or_else(|| {
                core.zip(self.pids.held(task))
                    .and_then(|(c, id)| c.task(id))
                    .map(|s| s.util())
            })
            .unwrap_or(0)
    }

    fn step_counts(&self) -> Option<[[u64; 2]; Step::ALL.len()]> {
        Some(self.steps)
    }
}
