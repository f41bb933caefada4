//! What the loop counts ([`Counters`]), scx_rustland_core's counters beside them
//! ([`Framework`]), and the copy of both the loop hands the stats server ([`Sample`]).

use hybridland_policy::{ClusterBalance, Step};

/// Counts of placements by step.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct StepCounts(pub(crate) [u64; Step::ALL.len()]);

impl StepCounts {
    /// Counts one placement.
    pub(crate) fn add(&mut self, step: Step) {
        self.0[step.index()] += 1;
    }
}

/// Counters kept by the loop.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Counters {
    /// Placements by step.
    pub(crate) steps: StepCounts,
    /// Primary-domain overflows.
    pub(crate) overflow: u64,
    /// Dispatches whose CPU was no longer idle when dispatched.
    pub(crate) stale: u64,
    /// Nudges: a task left on an E-core or SMT sibling while a better CPU idled was made to
    /// come back for re-placement.
    pub(crate) nudges: u64,
    /// Slice ends that kept their CPU (nothing strictly better idle, nobody waiting).
    pub(crate) kept: u64,
    /// Woken tasks sent to preempt a busy CPU.
    pub(crate) preempts: u64,
    /// Tasks a failed dispatch (user ring buffer full) put in the backlog, to be sent again.
    pub(crate) dispatch_retries: u64,
    /// Idle snapshots that failed (that batch went to the shared queue).
    pub(crate) snapshot_errors: u64,
    /// Failed reads of the queued-task ring buffer.
    pub(crate) dequeue_errors: u64,
    /// Affinity look-ups that failed (task gone).
    pub(crate) affinity_errors: u64,
    /// Events from the task-event source, as the loop applied them.
    pub(crate) events: EventCounts,
    /// What the loop's own rounds cost.
    pub(crate) rounds: RoundCounts,
    /// Wake-ups the kernel's fast path kept, by step ([`Framework::fast`] as last read: the
    /// loop refreshes it when a recording starts or stops, for the recording's step counts).
    pub(crate) fast: [u64; Step::ALL.len()],
}

/// The loop's rounds (one `schedule_batch`: dequeue, decide, dispatch, `notify_complete`) and
/// where their time goes, so the cost of a batch can be read off a running scheduler.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct RoundCounts {
    /// Rounds that had tasks to decide: batches.
    pub(crate) batches: u64,
    /// Rounds with nothing queued (the framework woke the loop for nothing to dispatch).
    pub(crate) empty: u64,
    /// Tasks decided.
    pub(crate) tasks: u64,
    /// Idle snapshots taken (`--fifo`: idle picks): one `bpf()` call (`BPF_PROG_TEST_RUN`)
    /// each.
    pub(crate) snapshots: u64,
    /// Time inside those calls, ns (monotonic clock).
    pub(crate) snapshot_ns: u64,
    /// Time in the core's calls for a batch (handing it over, deciding, polling the
    /// dispatches), snapshots excluded, ns (monotonic clock).
    pub(crate) decide_ns: u64,
}

impl RoundCounts {
    fn delta(&self, prev: &Self) -> Self {
        Self {
            batches: self.batches - prev.batches,
            empty: self.empty - prev.empty,
            tasks: self.tasks - prev.tasks,
            snapshots: self.snapshots - prev.snapshots,
            snapshot_ns: self.snapshot_ns - prev.snapshot_ns,
            decide_ns: self.decide_ns - prev.decide_ns,
        }
    }
}

/// Task events the loop took from the event source (`src/task_events.rs`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct EventCounts {
    /// Threads that exited.
    pub(crate) exit: u64,
    /// Exits of tasks the loop was tracking: their entries left the task table then.
    pub(crate) exit_tracked: u64,
    /// Wake-ups seen.
    pub(crate) waking: u64,
    /// Of those, woken by a task (its pid and CPU known), not by an interrupt.
    pub(crate) woken_by_task: u64,
    /// Wake-ups handed to the core with their waker (`src/wakers.rs`).
    pub(crate) waker_to_core: u64,
    /// Slices the framework refilled because nothing else waited.
    pub(crate) refill: u64,
    /// Records that did not parse (a BPF object out of step with this build).
    pub(crate) bad: u64,
    /// Failed reads of the event ring.
    pub(crate) read_errors: u64,
}

impl EventCounts {
    fn delta(&self, prev: &Self) -> Self {
        Self {
            exit: self.exit - prev.exit,
            exit_tracked: self.exit_tracked - prev.exit_tracked,
            waking: self.waking - prev.waking,
            woken_by_task: self.woken_by_task - prev.woken_by_task,
            waker_to_core: self.waker_to_core - prev.waker_to_core,
            refill: self.refill - prev.refill,
            bad: self.bad - prev.bad,
            read_errors: self.read_errors - prev.read_errors,
        }
    }
}

impl Counters {
    /// The counts since `prev` was taken.
    pub(crate) fn delta(&self, prev: &Self) -> Self {
        let mut steps = StepCounts::default();
        for i in 0..Step::ALL.len() {
            steps.0[i] = self.steps.0[i] - prev.steps.0[i];
        }
        Self {
            steps,
            overflow: self.overflow - prev.overflow,
            stale: self.stale - prev.stale,
            nudges: self.nudges - prev.nudges,
            kept: self.kept - prev.kept,
            preempts: self.preempts - prev.preempts,
            dispatch_retries: self.dispatch_retries - prev.dispatch_retries,
            snapshot_errors: self.snapshot_errors - prev.snapshot_errors,
            dequeue_errors: self.dequeue_errors - prev.dequeue_errors,
            affinity_errors: self.affinity_errors - prev.affinity_errors,
            events: self.events.delta(&prev.events),
            rounds: self.rounds.delta(&prev.rounds),
            fast: core::array::from_fn(|i| self.fast[i].saturating_sub(prev.fast[i])),
        }
    }
}

/// scx_rustland_core's counters, read from its BPF globals.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Framework {
    pub(crate) user: u64,
    pub(crate) kernel: u64,
    pub(crate) cancel: u64,
    pub(crate) bounce: u64,
    pub(crate) failed: u64,
    pub(crate) congested: u64,
    pub(crate) running: u64,
    pub(crate) queued: u64,
    /// Wake-ups the fast path (src/bpf/fast_wake.bpf.h) dispatched in the kernel, by step of
    /// the idle order, and those it was asked about.
    pub(crate) fast: [u64; Step::ALL.len()],
    pub(crate) fast_asked: u64,
}

/// answering costs the loop a channel send and no allocation; the server side turns two
/// samples into a [`Metrics`](super::metrics::Metrics).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Sample {
    pub(crate) counters: Counters,
    pub(crate) fw: Framework,
    /// `None` when the policy has no cluster balance (it is not hybridland).
    pub(crate) balance: Option<ClusterBalance>,
    /// Tasks in the local backlog now.
    pub(crate) backlog: u64,
    /// Tasks in the loop's task table now.
    pub(crate) tasks_tracked: u64,
    /// Most tasks it held at once.
    pub(crate) tasks_high_water: u64,
    /// Decisions for tasks the full table did not hold, since start.
    pub(crate) tasks_untracked: u64,
    /// Events the task-event source lost to a full ring, all kinds (a BPF global).
    pub(crate) events_dropped: u64,
    /// CPU time of the loop's thread since it started, ns.
    pub(crate) loop_cpu_ns: u64,
}
