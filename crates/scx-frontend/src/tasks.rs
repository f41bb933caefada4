//! Storage for the policy crate's per-task state, keyed by pid: the framework keeps none of
//! it. This module only feeds the kernel's reports in ([`TaskState::on_run`] with the last
//! run's kernel timestamps, [`TaskState::on_wakeup`]) and reads the values out; the estimator,
//! the vtime rule and the credit bound live in `hybridland_policy`.

#![forbid(unsafe_code)]

use hybridland_policy::{CpuId, CpuState, Run, TaskState, Topology, VtimeClock};
use std::collections::HashMap;

/// What the loop needs from a queued task (a copy of the framework's fields).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Seen {
    pub(crate) pid: i32,
    /// The CPU of its last run.
    pub(crate) cpu: Option<CpuId>,
    /// Start of the task's last run (kernel time), 0 if it never ran.
    pub(crate) start_ts: u64,
    /// End of the task's last run.
    pub(crate) stop_ts: u64,
    /// Whether it was woken (rather than preempted at a slice end).
    pub(crate) wakeup: bool,
    /// Its weight (100 = nice 0).
    pub(crate) weight: u64,
}

#[derive(Copy, Clone, Debug, Default)]
struct Record {
    state: TaskState,
    seen_ns: u64,
    /// The CPU whose core is its home in `TaskTable::homes`.
    home: Option<CpuId>,
}

/// Default `--max-tasks`: the kernel's default `pid_max`, so a machine that keeps the default
/// never fills it.
pub(crate) const DEFAULT_MAX_TASKS: usize = 32_768;

/// Every task's policy state, the shared queue's vtime clock, and the tasks' homes (the
/// cores they last ran on) in the form the policy reads them.
///
/// The table holds at most `capacity` tasks, reserved at start (about 90 bytes each in the
/// framework's fixed 64 MiB arena), so it never allocates while the loop runs. Tasks leave it
/// when they exit (the task-event source) or go unseen for 30 s. When it is full a task it
/// does not hold is decided from a fresh state each time (no utilisation history, no vtime
/// credit, no home) and counted in [`untracked`](Self::untracked): the answer stays correct
/// for placement rules that need no history, and the table cannot be grown by a thread storm.
pub(crate) struct TaskTable {
    tasks: HashMap<i32, Record>,
    capacity: usize,
    /// The record used for a task the full table does not hold; reset before each use.
    scratch: Record,
    untracked: u64,
    high_water: usize,
    clock: VtimeClock,
    /// Only its homes are used; created with the first task seen.
    homes: Option<CpuState>,
}

impl Default for TaskTable {
    fn default() -> Self {
        Self::with_capacity(DEFAULT_MAX_TASKS)
    }
}

impl TaskTable {
    /// A table for at most `capacity` tasks, reserved now.
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        Self {
            tasks: HashMap::with_capacity(capacity),
            capacity,
            scratch: Record::default(),
            untracked: 0,
            high_water: 0,
            clock: VtimeClock::default(),
            homes: None,
        }
    }

    /// Whether `pid` gets the scratch record (the table is full and does not hold it); counts
    /// it, resets the scratch record, and keeps the high-water mark.
    fn admit(&mut self, pid: i32) -> bool {
        if !self.has_room(pid) {
            self.untracked += 1;
            self.scratch = Record::default();
            return false;
        }
        let new = usize::from(!self.tasks.contains_key(&pid));
        self.high_water = self.high_water.max(self.tasks.len() + new);
        true
    }

    /// Whether `pid` has an entry, or could get one.
    fn has_room(&self, pid: i32) -> bool {
        self.tasks.len() < self.capacity || self.tasks.contains_key(&pid)
    }

    /// Hands the policy what the kernel reports for a dequeued task at `now_ns` (kernel
    /// time): its last run, then, for a wake-up, the wake-up itself. Returns the state.
    pub(crate) fn observe(&mut self, topo: &Topology, t: &Seen, now_ns: u64) -> &TaskState {
        let rec = if self.admit(t.pid) {
            self.tasks.entry(t.pid).or_default()
        } else {
            &mut self.scratch
        };
        rec.seen_ns = rec.seen_ns.max(t.stop_ts).max(t.start_ts).max(now_ns);
        if let Some(cpu) = t.cpu.filter(|_| t.start_ts != 0) {
            if rec.home != Some(cpu) {
                let homes = self.homes.get_or_insert_with(|| CpuState::all_idle(topo));
                homes.move_home(topo, rec.home, cpu);
                rec.home = Some(cpu);
            }
            let capacity = topo.info(cpu).map_or(0, |i| i.capacity);
            let _counted = rec.state.on_run(&Run {
                cpu,
                capacity,
                start_ns: t.start_ts,
                stop_ns: t.stop_ts,
                weight: u32::try_from(t.weight).unwrap_or(u32::MAX),
            });
        }
        if t.wakeup {
            rec.state.on_wakeup(now_ns);
        }
        &rec.state
    }

    /// The vtime to dispatch `pid` with (the policy's bounded credit); the clock follows it,
    /// as the task is about to run.
    pub(crate) fn dispatch_vtime(&mut self, pid: i32, slice_ns: u64) -> u64 {
        let rec = if self.has_room(pid) {
            self.tasks.entry(pid).or_default()
        } else {
            // Not counted again: `observe` counted this task when it was dequeued.
            self.scratch = Record::default();
            &mut self.scratch
        };
        let key = self.clock.queue(&mut rec.state, slice_ns);
        self.clock.on_start(key);
        key
    }

    /// The current state of `pid`, if known.
    #[cfg(test)]
    pub(crate) fn get(&self, pid: i32) -> Option<&TaskState> {
        self.tasks.get(&pid).map(|r| &r.state)
    }

    /// The vtime clock.
    #[cfg(test)]
    pub(crate) fn clock(&self) -> &VtimeClock {
        &self.clock
    }

    /// Forgets `pid` and its home (it exited). Returns whether it was tracked.
    pub(crate) fn forget(&mut self, topo: &Topology, pid: i32) -> bool {
        let Some(rec) = self.tasks.remove(&pid) else {
            return false;
        };
        if let (Some(home), Some(homes)) = (rec.home, self.homes.as_mut()) {
            homes.leave_home(topo, home);
        }
        true
    }

    /// Forgets tasks not seen since `before_ns` (kernel time), and their homes: the fallback
    /// for tasks whose exit was not reported (the event ring was full).
    pub(crate) fn prune(&mut self, topo: &Topology, before_ns: u64) {
        let homes = &mut self.homes;
        self.tasks.retain(|_, r| {
            let keep = r.seen_ns >= before_ns;
            if let (false, Some(home), Some(homes)) = (keep, r.home, homes.as_mut()) {
                homes.leave_home(topo, home);
            }
            keep
        });
    }

    /// The tasks' homes, for [`Batch::with_homes`](crate::adapter::Batch::with_homes).
    pub(crate) fn homes(&self) -> Option<&CpuState> {
        self.homes.as_ref()
    }

    /// Latest kernel timestamp seen.
    pub(crate) fn latest_ns(&self) -> u64 {
        self.tasks.values().map(|r| r.seen_ns).max().unwrap_or(0)
    }

    /// Tasks tracked.
    pub(crate) fn len(&self) -> usize {
        self.tasks.len()
    }

    /// Most tasks tracked at once.
    pub(crate) const fn high_water(&self) -> usize {
        self.high_water
    }

    /// Decisions for tasks the full table did not hold.
    pub(crate) const fn untracked(&self) -> u64 {
        self.untracked
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use hybridland_policy::testkit;
    use hybridland_policy::{CoreKind, TopologyBuilder, UtilEstimate};
    use proptest::prelude::*;

    /// CPU 0 a P-core (1024), CPU 1 an E-core (600).
    fn machine() -> Topology {
        let mut b = TopologyBuilder::new();
        b.add_cpu(CpuId(0), CoreKind::Performance, 1024, 0).unwrap();
        b.add_cpu(CpuId(1), CoreKind::Efficiency, 600, 0).unwrap();
        b.build().unwrap()
    }

    /// Feeds a periodic task's dequeues through the table as the live loop sees them: each
    /// wake-up reports the run before it.
    fn periodic(table: &mut TaskTable, topo: &Topology, cpu: u16, run: u64, sleep: u64) -> u16 {
        let span = (UtilEstimate::SETTLE_HALF_LIVES + 1) * UtilEstimate::HALF_LIFE_NS;
        let mut at = 1_000;
        let mut util = 0;
        while at < span {
            let seen = Seen {
                pid: 7,
                cpu: Some(CpuId(cpu)),
                start_ts: at,
                stop_ts: at + run,
                wakeup: true,
                weight: 100,
            };
            util = table.observe(topo, &seen, at + run + sleep).util();
            // The same report again (a re-queue without a run) changes nothing.
            assert_eq!(
                table
                    .observe(
                        topo,
                        &Seen {
                            wakeup: false,
                            ..seen
                        },
                        at + run + sleep
                    )
                    .util(),
                util
            );
            at += run + sleep;
        }
        util
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]

        /// The estimate the live loop hands the policy converges on the duty cycle times the
        /// capacity of the CPU the task ran on.
        #[test]
        fn live_estimate_converges(period in 20_000u64..=UtilEstimate::HALF_LIFE_NS / 8,
                                   duty_pct in 25u64..=100, on_e in any::<bool>()) {
            let topo = machine();
            // Generated without rejections: the period stays within an eighth of the
            // half-life, so the ripple stays inside the tolerance.
            let run = period * duty_pct / 100;
            let sleep = period - run;
            let mut table = TaskTable::default();
            let cpu = u16::from(on_e);
            let util = periodic(&mut table, &topo, cpu, run, sleep);
            let capacity = topo.info(CpuId(cpu)).unwrap().capacity;
            // Read at a wake-up, after the sleep: the low point of the ripple.
            testkit::check_util_near(util, run, sleep, capacity)
                .map_err(|v| TestCaseError::fail(v.to_string()))?;
        }

        /// Dispatch vtimes keep the bounded credit whatever the order of tasks and runs.
        #[test]
        fn dispatch_vtime_keeps_bounded_credit(ops in proptest::collection::vec((0i32..4, 0u64..20_000_000, 1u64..1000), 1..40),
                                              slice in 1u64..20_000_000) {
            let topo = machine();
            let mut table = TaskTable::default();
            let mut at = 1u64;
            for (pid, ran, weight) in ops {
                let seen = Seen { pid, cpu: Some(CpuId(0)), start_ts: at, stop_ts: at + ran, wakeup: false, weight };
                let before = *table.observe(&topo, &seen, at + ran);
                let clock = table.clock().now();
                let key = table.dispatch_vtime(pid, slice);
                testkit::check_vtime_queue(clock, slice, &before, key, table.get(pid).unwrap())
                    .map_err(|v| TestCaseError::fail(v.to_string()))?;
                at += ran + 1;
            }
        }
    }

    #[test]
    fn a_full_table_decides_new_tasks_from_a_fresh_state_and_never_grows() {
        let topo = machine();
        let mut t = TaskTable::with_capacity(2);
        let seen = |pid| Seen {
            pid,
            cpu: Some(CpuId(0)),
            start_ts: 1_000,
            stop_ts: 2_000_000,
            wakeup: true,
            weight: 100,
        };
        for pid in 1..=2 {
            let _ = t.observe(&topo, &seen(pid), 3_000_000);
        }
        // A third task: decided, not stored; and again, from scratch each time.
        for _ in 0..3 {
            let s = *t.observe(&topo, &seen(3), 3_000_000);
            let fresh = *TaskTable::with_capacity(1).observe(&topo, &seen(3), 3_000_000);
            assert_eq!(s, fresh);
            let _ = t.dispatch_vtime(3, 5_000_000);
        }
        assert_eq!((t.len(), t.high_water(), t.untracked()), (2, 2, 3));
        assert!(t.get(3).is_none());
        // The tasks it holds go on as before.
        let _ = t.observe(&topo, &seen(1), 4_000_000);
        assert_eq!(t.untracked(), 3);
        assert_ne!(*t.get(1).unwrap(), TaskState::new());
        // An exit makes room.
        assert!(t.forget(&topo, 2));
        let _ = t.observe(&topo, &seen(3), 5_000_000);
        assert!(t.get(3).is_some());
        assert_eq!(t.untracked(), 3);
    }

    #[test]
    fn forgets_tasks_not_seen_for_a_while() {
        let topo = machine();
        let mut t = TaskTable::default();
        let a = Seen {
            pid: 1,
            cpu: Some(CpuId(0)),
            start_ts: 1_000,
            stop_ts: 2_000,
            weight: 100,
            ..Default::default()
        };
        let _ = t.observe(&topo, &a, 2_000);
        let _ = t.observe(&topo, &Seen { pid: 2, ..a }, 50_000);
        let homes = |t: &TaskTable| t.homes().unwrap().home_count(&topo, CpuId(0));
        assert_eq!(homes(&t), 2);
        t.prune(&topo, 40_000);
        assert_eq!(t.len(), 1);
        assert!(t.get(2).is_some());
        assert_eq!(homes(&t), 1, "the forgotten task's home is released");
    }

    /// A task's home follows the CPU it last ran on, as the kernel reports it.
    #[test]
    fn homes_follow_the_last_run() {
        let topo = machine();
        let mut t = TaskTable::default();
        let ran = |cpu: u16, at: u64| Seen {
            pid: 9,
            cpu: Some(CpuId(cpu)),
            start_ts: at,
            stop_ts: at + 1_000,
            weight: 100,
            wakeup: true,
        };
        let _ = t.observe(&topo, &ran(0, 1_000), 3_000);
        let count = |t: &TaskTable, cpu: u16| t.homes().unwrap().home_count(&topo, CpuId(cpu));
        assert_eq!((count(&t, 0), count(&t, 1)), (1, 0));
        let _ = t.observe(&topo, &ran(1, 5_000), 7_000);
        assert_eq!((count(&t, 0), count(&t, 1)), (0, 1));
        // A dequeue that reports no run (never ran) leaves the home alone.
        let _ = t.observe(
            &topo,
            &Seen {
                start_ts: 0,
                ..ran(0, 0)
            },
            9_000,
        );
        assert_eq!((count(&t, 0), count(&t, 1)), (0, 1));
    }
}
