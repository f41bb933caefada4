//! What the engine-driven baselines (`kernel-default`, `summed-capacity`) know of their tasks:
//! each task's utilisation estimate and vtime, and the shared queue's vtime clock, kept with
//! the policy crate's estimator and clock as the kernel's PELT and vruntime would be. A
//! core-driven policy keeps these in its scheduler core; the engine calls these hooks only
//! for the policies it drives itself, at the machine's events (a wake-up, a start, a run's
//! end, a queueing).

use hybridland_policy::{Run, TaskState, VtimeClock};

/// One task's estimate and vtime.
#[derive(Clone, Debug)]
pub(crate) struct TaskAccount(TaskState);

impl TaskAccount {
    /// A task with no history.
    pub(crate) const fn new() -> Self {
        Self(TaskState::new())
    }

    /// The task became runnable.
    pub(crate) fn woke(&mut self, now_ns: u64) {
        self.0.on_wakeup(now_ns);
    }

    /// The task ran `run` (a run counted once: a repeat changes nothing).
    pub(crate) fn ran(&mut self, run: &Run) {
        let _counted = self.0.on_run(run);
    }

    /// Its utilisation estimate.
    pub(crate) fn util(&self) -> u16 {
        self.0.util()
    }
}

/// The shared queue's vtime clock.
#[derive(Clone, Debug)]
pub(crate) struct QueueClock(VtimeClock);

impl QueueClock {
    /// A clock at 0.
    pub(crate) const fn new() -> Self {
        Self(VtimeClock::new())
    }

    /// The key `task` waits under in the shared queue (its vtime, with bounded sleeper credit).
    pub(crate) fn queue(&mut self, task: &mut TaskAccount, slice_ns: u64) -> u64 {
        self.0.queue(&mut task.0, slice_ns)
    }

    /// `task` started running: the clock advances to its vtime.
    pub(crate) fn started(&mut self, task: &TaskAccount) {
        self.0.on_start(task.0.vtime());
    }
}
