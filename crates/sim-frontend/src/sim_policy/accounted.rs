//! The driver of a policy with no scheduler core (`kernel-default`, `summed-capacity`, a
//! user's [`SimPolicy`]): [`Accounted`] keeps what such a policy knows of its tasks and the
//! machine, each task's utilisation estimate and vtime, the shared queue's vtime clock and the
//! machine's [`CpuState`] (idle CPUs, homes, cluster loads), kept with the policy crate's
//! estimator, clock and state as the kernel's PELT and vruntime would be, at the machine's
//! events (a wake-up, a start, a run's end, a queueing, an exit). A core-driven policy keeps
//! the same in its scheduler core.

use super::{
    Decision, Destination, EngineView, Move, PolicyDriver, PolicyError, QueuedTask, SimPolicy,
    TaskView,
};
use hybridland_policy::{
    CpuId, CpuState, LastRun, Nudge, Policy, Run, TaskState, Topology, VtimeClock,
};

/// A policy with no scheduler core, and the bookkeeping it reads.
pub struct Accounted<P: ?Sized> {
    /// The machine and its state, from [`prepare`](PolicyDriver::prepare) on.
    machine: Option<(Topology, CpuState)>,
    /// Per task: its estimate and vtime, and where it last ran.
    tasks: Vec<(TaskAccount, Option<CpuId>)>,
    clock: QueueClock,
    policy: Box<P>,
}

impl<P: SimPolicy + ?Sized> Accounted<P> {
    /// `policy`, with no history.
    pub fn new(policy: Box<P>) -> Self {
        Self {
            machine: None,
            tasks: Vec::new(),
            clock: QueueClock::new(),
            policy,
        }
    }

    fn task(&mut self, task: usize) -> &mut (TaskAccount, Option<CpuId>) {
        booked(&mut self.tasks, task)
    }
}

fn booked(
    tasks: &mut Vec<(TaskAccount, Option<CpuId>)>,
    task: usize,
) -> &mut (TaskAccount, Option<CpuId>) {
    if tasks.len() <= task {
        tasks.resize(task + 1, (TaskAccount::new(), None));
    }
    &mut tasks[task]
}

impl<P: SimPolicy + ?Sized> PolicyDriver for Accounted<P> {
    fn name(&self) -> &str {
        self.policy.name()
    }

    fn describe(&self) -> String {
        self.policy.describe()
    }

    fn core(&self) -> Option<&Policy> {
        self.policy.core()
    }

    fn prepare(&mut self, topo: &Topology, seed: u64) -> Result<(), PolicyError> {
        self.machine = Some((topo.clone(), CpuState::all_idle(topo)));
        self.policy.prepare(topo, seed)
    }

    fn reserve(&mut self, nr_tasks: usize, slice_ns: u64) -> Result<(), PolicyError> {
        self.tasks = vec![(TaskAccount::new(), None); nr_tasks];
        self.policy.reserve(nr_tasks, slice_ns)
    }

    fn place(&mut self, machine: &EngineView<'_>, task: &TaskView<'_>) -> Decision {
        match &self.machine {
            Some((_, state)) => self.policy.place(&machine.with_state(state), task),
            None => Decision::plain(Destination::QueueShared),
        }
    }

    fn decided_on(&self) -> Option<&CpuState> {
        self.machine.as_ref().map(|(_, state)| state)
    }

    fn balance(&mut self, machine: &EngineView<'_>, queued: &[QueuedTask<'_>]) -> Vec<Move> {
        match &self.machine {
            Some((_, state)) => self.policy.balance(&machine.with_state(state), queued),
            None => Vec::new(),
        }
    }

    fn woke(&mut self, now_ns: u64, task: usize) {
        self.task(task).0.woke(now_ns);
    }

    fn estimate(&self, task: usize) -> u16 {
        self.tasks.get(task).map_or(0, |t| t.0.util())
    }

    fn started(&mut self, _now_ns: u64, task: usize, cpu: CpuId) {
        let (account, last) = booked(&mut self.tasks, task);
        // Its home moves with it: the policy keeps other tasks off it while it sleeps.
        let from = last.replace(cpu);
        self.clock.started(account);
        if let Some((topo, state)) = &mut self.machine {
            state.move_home(topo, from, cpu);
            state.occupy(topo, cpu);
        }
    }

    fn stopped(&mut self, now_ns: u64, task: usize, cpu: CpuId, run: LastRun, weight: u32) {
        let capacity = match &mut self.machine {
            Some((topo, state)) => {
                state.release(topo, cpu);
                topo.info(cpu).map_or(1, |i| i.capacity)
            }
            None => 1,
        };
        self.task(task).0.ran(&Run {
            cpu,
            capacity,
            // Stopped before the wake-up cost was paid: it ran nothing.
            start_ns: run.start_ns.min(now_ns),
            stop_ns: now_ns,
            weight,
        });
    }

    fn exited(&mut self, _now_ns: u64, task: usize) {
        let home = self.task(task).1;
        if let (Some(home), Some((topo, state))) = (home, &mut self.machine) {
            state.leave_home(topo, home);
        }
    }

    fn queue_key(&mut self, task: usize, slice_ns: u64) -> u64 {
        self.clock
            .queue(&mut booked(&mut self.tasks, task).0, slice_ns)
    }

    fn timeout(&self) -> Option<u64> {
        None
    }

    fn tick(&mut self, _now_ns: u64) -> Option<Nudge> {
        None
    }

    fn refills_uncontended_slices(&self) -> bool {
        false
    }

    fn final_util(&self, task: usize) -> u16 {
        self.estimate(task)
    }

    fn step_counts(&self) -> Option<[[u64; 2]; hybridland_policy::Step::ALL.len()]> {
        None
    }
}

/// One task's estimate and vtime.
#[derive(Clone, Debug)]
pub(super) struct TaskAccount(TaskState);

impl TaskAccount {
    /// A task with no history.
    pub(super) const fn new() -> Self {
        Self(TaskState::new())
    }

    /// The task became runnable.
    pub(super) fn woke(&mut self, now_ns: u64) {
        self.0.on_wakeup(now_ns);
    }

    /// The task ran `run` (a run counted once: a repeat changes nothing).
    pub(super) fn ran(&mut self, run: &Run) {
        let _counted = self.0.on_run(run);
    }

    /// Its utilisation estimate.
    pub(super) fn util(&self) -> u16 {
        self.0.util()
    }
}

/// The shared queue's vtime clock.
#[derive(Clone, Debug)]
pub(super) struct QueueClock(VtimeClock);

impl QueueClock {
    /// A clock at 0.
    pub(super) const fn new() -> Self {
        Self(VtimeClock::new())
    }

    /// The key `task` waits under in the shared queue (its vtime, with bounded sleeper credit).
    pub(super) fn queue(&mut self, task: &mut TaskAccount, slice_ns: u64) -> u64 {
        self.0.queue(&mut task.0, slice_ns)
    }

    /// `task` started running: the clock advances to its vtime.
    pub(super) fn started(&mut self, task: &TaskAccount) {
        self.0.on_start(task.0.vtime());
    }
}
