//! What the policy remembers about a task between decisions, stored by the caller: its
//! utilisation estimate, its virtual time, where and when it last ran. The frontends feed it
//! what the task did, with time passed in, and read the values the decisions need.
//!
//! Call order for one task, in either frontend:
//! 1. [`TaskState::on_wakeup`] when it becomes runnable after a sleep (or first arrives);
//! 2. [`VtimeClock::queue`] when it is put in the shared queue (fair order, bounded credit);
//! 3. [`VtimeClock::on_start`] when it starts running (the live scheduler: when dispatched);
//! 4. [`TaskState::on_run`] once for each finished run (at a slice end, a sleep, an exit);
//!    a run reported twice counts once, so the live loop may pass the kernel's last run on
//!    every dequeue.

use crate::cpu_set::CpuId;
use crate::util_estimate::UtilEstimate;

/// The weight of a nice-0 task, the unit vtime is charged in.
pub const NICE_0_WEIGHT: u32 = 100;

/// One finished stretch of running.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Run {
    /// The CPU it ran on.
    pub cpu: CpuId,
    /// That CPU's capacity, 0..=1024.
    pub capacity: u16,
    /// When it started.
    pub start_ns: u64,
    /// When it stopped.
    pub stop_ns: u64,
    /// Its weight ([`NICE_0_WEIGHT`] for nice 0; higher runs more).
    pub weight: u32,
}

/// A task's policy state. `Default` is a task with no history.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskState {
    util: UtilEstimate,
    vtime: u64,
    last_cpu: Option<CpuId>,
    /// The last counted run: (start, stop).
    last_run_ns: Option<(u64, u64)>,
}

impl TaskState {
    /// A task with no history.
    pub const fn new() -> Self {
        Self {
            util: UtilEstimate::new(),
            vtime: 0,
            last_cpu: None,
            last_run_ns: None,
        }
    }

    /// Utilisation estimate, 0..=1024 (see [`UtilEstimate`]).
    pub fn util(&self) -> u16 {
        self.util.util()
    }

    /// The estimator itself.
    pub fn util_estimate(&self) -> &UtilEstimate {
        &self.util
    }

    /// Virtual time: weighted CPU time received, the shared queue's order.
    pub fn vtime(&self) -> u64 {
        self.vtime
    }

    /// The CPU it last ran on.
    pub fn last_cpu(&self) -> Option<CpuId> {
        self.last_cpu
    }

    /// When its last counted run started.
    pub fn last_start_ns(&self) -> Option<u64> {
        self.last_run_ns.map(|(start, _)| start)
    }

    /// The task became runnable at `now_ns` after not running: the estimate decays over the
    /// gap.
    pub fn on_wakeup(&mut self, now_ns: u64) {
        self.util.advance(now_ns, 0);
    }

    /// The task ran `run`: the estimate decays over the gap before it and rises over the run
    /// by the capacity of its CPU; vtime is charged the run's length scaled by weight.
    /// [`RunAccount::Ignored`] (changing nothing) for the run counted last, one that starts
    /// before that run stopped, or one that ends before it starts.
    pub fn on_run(&mut self, run: &Run) -> RunAccount {
        let seen = self.last_run_ns.is_some_and(|(start, stop)| {
            (run.start_ns, run.stop_ns) == (start, stop) || run.start_ns < stop
        });
        if run.stop_ns < run.start_ns || seen {
            return RunAccount::Ignored;
        }
        self.util.advance(run.start_ns, 0);
        self.util.advance(run.stop_ns, run.capacity);
        let ran = run.stop_ns - run.start_ns;
        self.vtime = self.vtime.saturating_add(
            ran.saturating_mul(u64::from(NICE_0_WEIGHT)) / u64::from(run.weight.max(1)),
        );
        self.last_cpu = Some(run.cpu);
        self.last_run_ns = Some((run.start_ns, run.stop_ns));
        RunAccount::Counted
    }
}

/// What [`TaskState::on_run`] made of a run.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RunAccount {
    /// Charged to the estimate and vtime.
    Counted,
    /// Already counted, overlapping the last counted run, or ending before it starts.
    Ignored,
}

/// The shared queue's clock: the highest vtime that has started running. A task queued with a
/// vtime far behind it (it slept) is raised to one slice behind, so a sleeper gets at most one
/// slice of credit and cannot starve the tasks that kept running.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct VtimeClock {
    now: u64,
}

impl VtimeClock {
    /// A clock at 0.
    pub const fn new() -> Self {
        Self { now: 0 }
    }

    /// The clock.
    pub fn now(&self) -> u64 {
        self.now
    }

    /// The key to queue `task` with: its vtime, raised to at most `slice_ns` behind the clock
    /// (the task keeps the raised value).
    #[must_use]
    pub fn queue(&self, task: &mut TaskState, slice_ns: u64) -> u64 {
        task.vtime = task.vtime.max(self.now.saturating_sub(slice_ns));
        task.vtime
    }

    /// A task with vtime `vtime` starts running: the clock follows it forward.
    pub fn on_start(&mut self, vtime: u64) {
        self.now = self.now.max(vtime);
    }
}

/// Slices shrink as the queue grows, so everyone waiting gets a turn within about one base
/// slice, but never below `1 / MIN_SLICE_DIVISOR` of it (switching costs).
pub const MIN_SLICE_DIVISOR: u64 = 8;

/// The slice for a task started while `nr_waiting` tasks wait: `base_ns / nr_waiting`, within
/// `[base_ns / MIN_SLICE_DIVISOR, base_ns]`.
#[must_use]
pub fn slice_ns(base_ns: u64, nr_waiting: u64) -> u64 {
    (base_ns / nr_waiting.max(1)).max(base_ns / MIN_SLICE_DIVISOR)
}

#[cfg(test)]
mod test {
    use super::*;

    fn run(start_ns: u64, stop_ns: u64, capacity: u16, weight: u32) -> Run {
        Run {
            cpu: CpuId(3),
            capacity,
            start_ns,
            stop_ns,
            weight,
        }
    }

    #[test]
    fn runs_count_once_and_charge_by_weight() {
        let mut t = TaskState::new();
        assert_eq!(t.on_run(&run(1_000, 5_000, 1024, 100)), RunAccount::Counted);
        assert_eq!(t.vtime(), 4_000);
        for (start, stop, account, what) in [
            (1_000, 5_000, RunAccount::Ignored, "the same run again"),
            (9_000, 8_000, RunAccount::Ignored, "ends before it starts"),
            (4_000, 6_000, RunAccount::Ignored, "overlaps the last run"),
            (
                5_000,
                5_000,
                RunAccount::Counted,
                "an empty run right after",
            ),
            (
                5_000,
                6_000,
                RunAccount::Counted,
                "and a real one at the same start",
            ),
        ] {
            assert_eq!(t.on_run(&run(start, stop, 1024, 100)), account, "{what}");
        }
        assert_eq!(t.vtime(), 5_000);
        assert_eq!(
            t.on_run(&run(6_000, 10_000, 1024, 200)),
            RunAccount::Counted
        );
        assert_eq!(t.vtime(), 7_000);
        assert_eq!(t.last_cpu(), Some(CpuId(3)));
    }

    #[test]
    fn a_sleeper_gets_one_slice_of_credit() {
        let mut clock = VtimeClock::new();
        clock.on_start(1_000_000);
        let mut sleeper = TaskState::new();
        assert_eq!(clock.queue(&mut sleeper, 5_000), 995_000);
        let mut ahead = TaskState::new();
        ahead.on_run(&run(0, 2_000_000, 1024, 100));
        assert_eq!(clock.queue(&mut ahead, 5_000), 2_000_000);
        clock.on_start(10);
        assert_eq!(clock.now(), 1_000_000, "the clock never goes back");
    }

    #[test]
    fn slices_shrink_with_the_queue_down_to_an_eighth() {
        assert_eq!(slice_ns(8_000, 0), 8_000);
        assert_eq!(slice_ns(8_000, 1), 8_000);
        assert_eq!(slice_ns(8_000, 2), 4_000);
        assert_eq!(slice_ns(8_000, 100), 1_000);
    }
}
