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
    /// Slice ends sent to the shared queue, behind the tasks waiting for their CPU.
    pub(crate) yielded: u64,
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
    /// What the loop did for the kernel's fast path.
    pub(crate) fast_path: FastPathCounts,
    /// Wake-ups the kernel's fast path kept, by step ([`Framework::fast`] as last read: the
    /// loop refreshes it when a recording starts or stops, for the recording's step counts).
    pub(crate) fast: [u64; Step::ALL.len()],
}

/// A struct of counts that only grow, with `delta`: each count's growth since `prev`.
macro_rules! growing_counts {
    ($(#[$meta:meta])* $name:ident { $($(#[$field_meta:meta])* $field:ident,)* }) => {
        $(#[$meta])*
        #[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
        pub(crate) struct $name {
            $($(#[$field_meta])* pub(crate) $field: u64,)*
        }

        impl $name {
            fn delta(&self, prev: &Self) -> Self {
                Self {
                    $($field: self.$field - prev.$field,)*
                }
            }
        }
    };
}

growing_counts! {
    /// The loop's rounds (one `schedule_batch`: dequeue, decide, dispatch, `notify_complete`)
    /// and where their time goes, so the cost of a batch can be read off a running scheduler.
    RoundCounts {
        /// Rounds that had tasks to decide: batches.
        batches,
        /// Rounds with nothing queued (the framework woke the loop for nothing to dispatch).
        empty,
        /// Tasks decided.
        tasks,
        /// Idle snapshots taken (`--fifo`: idle picks): one `bpf()` call (`BPF_PROG_TEST_RUN`)
        /// each.
        snapshots,
        /// Time inside those calls, ns (monotonic clock).
        snapshot_ns,
        /// Time in the core's calls for a batch (handing it over, deciding, polling the
        /// dispatches), snapshots excluded, ns (monotonic clock).
        decide_ns,
        /// Times the core's timer woke the loop (through the helper) for its scan or prune.
        timer_wakes,
    }
}

growing_counts! {
    /// Task events the loop took from the event source (`src/task_events.rs`).
    EventCounts {
        /// Threads that exited.
        exit,
        /// Exits of tasks the loop was tracking: their entries left the task table then.
        exit_tracked,
        /// Tasks that reused a pid before the old thread's exit arrived: the old entry ended
        /// at the new thread's first hand-over (`hybridland_policy::Life`).
        renewed,
        /// Exits that came after that, of the old thread: ignored.
        stale_exit,
        /// Wake-ups seen.
        waking,
        /// Of those, woken by a task (its pid and CPU known), not by an interrupt.
        woken_by_task,
        /// Wake-ups handed to the core with their waker (`src/wakers.rs`).
        waker_to_core,
        /// Slices the framework refilled because nothing else waited.
        refill,
        /// Records that did not parse (a BPF object out of step with this build).
        bad,
        /// Failed reads of the event ring.
        read_errors,
    }
}

growing_counts! {
    /// The loop's side of the kernel's fast path (`src/bpf/fast_wake.bpf.h`).
    FastPathCounts {
        /// Placements the fast path reported, handed to the core.
        placed,
        /// Reported placements lost to a full ring.
        lost,
        /// Task classes written into the kernel's table by pid (one store each, through the
        /// mmap).
        class_writes,
        /// Class writes for an id no task can have (negative): nothing written.
        class_gone,
        /// Class writes with no table to write (the fast path's data not mapped).
        class_errors,
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
            yielded: self.yielded - prev.yielded,
            preempts: self.preempts - prev.preempts,
            dispatch_retries: self.dispatch_retries - prev.dispatch_retries,
            snapshot_errors: self.snapshot_errors - prev.snapshot_errors,
            dequeue_errors: self.dequeue_errors - prev.dequeue_errors,
            affinity_errors: self.affinity_errors - prev.affinity_errors,
            events: self.events.delta(&prev.events),
            rounds: self.rounds.delta(&prev.rounds),
            fast_path: self.fast_path.delta(&prev.fast_path),
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
    /// Of those asked, wake-ups with nothing allowed free (the loop decides them, as it must).
    pub(crate) fast_no_free: u64,
    /// Of those, wake-ups the pinned rule placed on the one CPU the task may use.
    pub(crate) fast_pinned: u64,
    /// Of the rest, wake-ups it left to the loop, by reason
    /// ([`DECLINES`](crate::fast_wake::DECLINES)).
    pub(crate) fast_declined: [u64; 2],
    /// Threads of the scheduler's own the kernel took from the loop's queue because the loop
    /// was blocked (src/bpf/own_threads.bpf.h), and those its full table could not note.
    pub(crate) own_rescued: u64,
    pub(crate) own_untracked: u64,
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
    /// Fast-path placements that read another class than the core's (a lost write, or a
    /// forgotten task), since start: the core took it and gave its own again.
    pub(crate) class_drift: u64,
    /// Events the task-event source lost to a full ring, all kinds (a BPF global).
    pub(crate) events_dropped: u64,
    /// CPU time of the loop's thread since it started, ns.
    pub(crate) loop_cpu_ns: u64,
}
