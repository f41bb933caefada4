//! Statistics, served the scx way: the loop answers requests from an scx_stats server on the
//! standard socket ([`SOCKET`]) with a copy of its counters ([`Sample`]); the server turns two
//! samples into [`Metrics`] (a `#[derive(Stats)]` struct, described by `--help-stats`) for each
//! client: `--monitor SECS` in another process, `--stats SECS` in a thread of this one (which
//! logs it through `tracing`), or any scx_stats client. The one-line rendering:
//!
//! ```text
//! stats: placed idle-p-core=12 idle-e-core=30 busy-sibling=2 no-idle=5 | overflow=0 stale=1
//!   nudge=0 kept=40 preempt=3 | tasks=31 tasks-max=57 exit=4 exit-tracked=3 waking=118 by-task=97 refill=12 | busy
//!   performance=95% efficiency=40% | loop batches=40 empty=2 tasks=49 snapshots=47
//!   snapshot-us=800 decide-us=120 cpu-us=3900 | balance=auto | fw user=44 kernel=3 fast=21
//!   fast-asked=60 cancel=0 bounce=0 failed=0 congested=0 running=6 queued=0
//! ```
//!
//! - `placed`: wake-ups and slice-end moves per step of the idle order (`no-idle` went to the
//!   shared queue);
//! - `overflow`: placements outside the primary domain because none of it was idle;
//! - `stale`: picks whose CPU was idle in the snapshot but busy by dispatch time, sent to the
//!   shared queue instead;
//! - `nudge`: tasks made to come back for re-placement because a better CPU went idle;
//! - `kept`: slice ends where the task kept its CPU (the policy's slice-end rule);
//! - `preempt`: woken tasks that found no CPU idle and took a busy one from a task far ahead of
//!   them in vtime (the core's wake-up preemption), the task there made to end its slice;
//! - the task-event source (`src/task_events.rs`): `tasks`, the loop's task table now, and
//!   `tasks-max`, the most it held (its capacity is `--max-tasks`); `exit`,
//!   threads that exited, `exit-tracked` of them in the table (they leave it at once); `waking`,
//!   wake-ups, `by-task` of them with a task as waker (not an interrupt); `refill`, slices the
//!   framework refilled because nothing else wanted the CPU (0 where the kernel cannot report
//!   them); only when non-zero, `events-dropped` (lost to a full event ring since start),
//!   `event-errors` and `untracked` (decisions for tasks the full table did not hold);
//! - `busy`: share of each core kind's CPU time spent not idle (from `/proc/stat`);
//! - `loop`: the loop's rounds with tasks (`batches`) and without (`empty`), tasks decided,
//!   idle snapshots (one `bpf()` call each) and the time in them, the time in the core's calls,
//!   and the loop thread's CPU time: what a batch costs;
//! - only when non-zero: `dispatch-retries` (tasks kept in the local backlog because the ring
//!   buffer to the kernel was full), `backlog` (tasks in it now), `snapshot-errors` (failed idle
//!   snapshots: that batch went to the shared queue), `dequeue-errors`, `affinity-errors`;
//! - `fw`: scx_rustland_core's counters over the interval (user/kernel dispatches, cancelled,
//!   bounced to the previous CPU, failed, ring-buffer congestion) and its current gauges;
//!   among them `fast`, wake-ups the fast path kept on their previous CPU in the kernel (never
//!   seen by the loop, so not in `placed`), of `fast-asked` it was asked about.

#![forbid(unsafe_code)]

use anyhow::{Context as _, Result};
use core::fmt::Write as _;
use core::time::Duration;
use crossbeam::channel::{Receiver, Sender};
use hybridland_policy::{ClusterBalance, CoreKind, Step, Topology};
use scx_stats::prelude::*;
use scx_stats_derive::{Stats, stat_doc};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;
use tracing::info;

/// Counters kept by the loop.
/// Counts of placements by step.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct StepCounts(pub(crate) [u64; Step::ALL.len()]);

impl StepCounts {
    /// Counts one placement.
    pub(crate) fn add(&mut self, step: Step) {
        self.0[step.index()] += 1;
    }
}

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

/// Busy and total jiffies of each CPU, from `/proc/stat`.
fn cpu_times(text: &str) -> Vec<(u16, u64, u64)> {
    text.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let cpu: u16 = it.next()?.strip_prefix("cpu")?.parse().ok()?;
            let v: Vec<u64> = it.filter_map(|x| x.parse().ok()).collect();
            // user nice system idle iowait irq softirq steal (guest time is inside user).
            let idle = v.get(3).copied().unwrap_or(0) + v.get(4).copied().unwrap_or(0);
            let total: u64 = v.iter().take(8).sum();
            Some((cpu, total - idle.min(total), total))
        })
        .collect()
}

/// Each CPU's core kind: all the busy shares need of the topology, which is a large fixed-size
/// value (megabytes at 1024 CPUs; scx_rustland_core's allocator cannot box one).
#[derive(Clone, Debug, Default)]
pub(crate) struct Kinds {
    of_cpu: Vec<Option<CoreKind>>,
    present: Vec<CoreKind>,
}

impl Kinds {
    pub(crate) fn new(topo: &Topology) -> Self {
        let of_cpu = topo
            .cpus()
            .iter()
            .fold(Vec::new(), |mut v: Vec<Option<CoreKind>>, c| {
                let i = usize::from(c.0);
                if v.len() <= i {
                    v.resize(i + 1, None);
                }
                v[i] = topo.info(c).map(|info| info.kind);
                v
            });
        let present = CoreKind::ALL
            .iter()
            .copied()
            .filter(|k| !topo.kind_mask(*k).is_empty())
            .collect();
        Self { of_cpu, present }
    }

    fn of(&self, cpu: u16) -> Option<CoreKind> {
        self.of_cpu.get(usize::from(cpu)).copied().flatten()
    }
}

/// Per-kind busy share over an interval.
pub(crate) struct KindBusy {
    last: Vec<(u16, u64, u64)>,
}

impl KindBusy {
    pub(crate) fn new() -> Self {
        Self {
            last: cpu_times(&std::fs::read_to_string("/proc/stat").unwrap_or_default()),
        }
    }

    /// Busy percentage of each kind present since the last call.
    pub(crate) fn sample(&mut self, kinds: &Kinds) -> Vec<(CoreKind, u64)> {
        let now = cpu_times(&std::fs::read_to_string("/proc/stat").unwrap_or_default());
        let out = busy_share(kinds, &self.last, &now);
        self.last = now;
        out
    }
}

fn busy_share(
    kinds: &Kinds,
    before: &[(u16, u64, u64)],
    after: &[(u16, u64, u64)],
) -> Vec<(CoreKind, u64)> {
    let mut acc = [(0u64, 0u64); 3];
    for &(cpu, busy, total) in after {
        let Some(kind) = kinds.of(cpu) else {
            continue;
        };
        let (b0, t0) = before
            .iter()
            .find(|x| x.0 == cpu)
            .map_or((0, 0), |x| (x.1, x.2));
        let a = &mut acc[kind.index()];
        a.0 += busy.saturating_sub(b0);
        a.1 += total.saturating_sub(t0);
    }
    kinds
        .present
        .iter()
        .map(|k| {
            let (b, t) = acc[k.index()];
            (*k, (b * 100).checked_div(t).unwrap_or(0))
        })
        .collect()
}

/// What the loop hands the stats server on request: its counters as they stand. Copied, so
/// answering costs the loop a channel send and no allocation; the server side turns two
/// samples into a [`Metrics`].
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

/// scx_hybridland's figures over one interval, as `--monitor`, `--stats` and any scx_stats
/// client see them.
#[stat_doc]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, Stats)]
#[stat(
    top,
    desc = "scx_hybridland: counts over the interval since this client's previous request; gauges as they are now"
)]
pub(crate) struct Metrics {
    #[stat(
        desc = "Wake-ups and slice-end moves placed, by step of the idle order: idle-p-core, idle-e-core, busy-sibling; no-idle went to the shared queue"
    )]
    pub(crate) placed: BTreeMap<String, u64>,
    #[stat(desc = "Placements outside the primary domain because none of it was idle")]
    pub(crate) overflow: u64,
    #[stat(
        desc = "Picks whose CPU was idle in the snapshot but busy by dispatch time, sent to the shared queue instead"
    )]
    pub(crate) stale: u64,
    #[stat(
        desc = "Tasks left on an E-core or SMT sibling made to come back for re-placement because a better CPU went idle"
    )]
    pub(crate) nudge: u64,
    #[stat(desc = "Slice ends where the task kept its CPU (nothing strictly better idle)")]
    pub(crate) kept: u64,
    #[stat(
        desc = "Woken tasks that found no CPU idle and took a busy one from a task far ahead in vtime"
    )]
    pub(crate) preempt: u64,
    #[stat(
        desc = "Tasks a full ring buffer to the kernel left in the local backlog, to be sent again"
    )]
    pub(crate) dispatch_retries: u64,
    #[stat(desc = "Tasks in the local backlog now (gauge)")]
    pub(crate) backlog: u64,
    #[stat(desc = "Failed idle snapshots (that batch went to the shared queue)")]
    pub(crate) snapshot_errors: u64,
    #[stat(desc = "Failed reads of the ring buffer of queued tasks")]
    pub(crate) dequeue_errors: u64,
    #[stat(desc = "Affinity look-ups that failed (the task was gone)")]
    pub(crate) affinity_errors: u64,
    #[stat(desc = "Threads that exited (task-event source)")]
    pub(crate) ev_exit: u64,
    #[stat(desc = "Exits of tasks the loop tracked: their entries left the task table at once")]
    pub(crate) ev_exit_tracked: u64,
    #[stat(desc = "Wake-ups seen (task-event source)")]
    pub(crate) ev_waking: u64,
    #[stat(desc = "Wake-ups whose waker was a task (its pid and CPU known), not an interrupt")]
    pub(crate) ev_woken_by_task: u64,
    #[stat(desc = "Wake-ups handed to the scheduler core with their waker's CPU")]
    pub(crate) ev_waker_to_core: u64,
    #[stat(
        desc = "Slices the framework refilled because nothing else wanted the CPU (0 where the kernel cannot report them)"
    )]
    pub(crate) ev_refill: u64,
    #[stat(desc = "Task events lost to a full event ring since start (gauge)")]
    pub(crate) ev_dropped: u64,
    #[stat(desc = "Task-event records that did not parse, or failed reads of the event ring")]
    pub(crate) ev_errors: u64,
    #[stat(desc = "Tasks in the loop's task table now (gauge)")]
    pub(crate) tasks_tracked: u64,
    #[stat(
        desc = "Most tasks the table held at once since start (gauge; its capacity is --max-tasks)"
    )]
    pub(crate) tasks_max: u64,
    #[stat(
        desc = "Decisions for tasks the full table did not hold: placed from a fresh state (no history)"
    )]
    pub(crate) untracked: u64,
    #[stat(
        desc = "Per core kind present (performance, efficiency, low-power-efficiency): percentage of its CPU time spent not idle, from /proc/stat"
    )]
    pub(crate) busy_pct: BTreeMap<String, u64>,
    #[stat(
        desc = "Cluster balance in force: off, on or auto; - when the policy is not hybridland (gauge)"
    )]
    pub(crate) cluster_balance: String,
    #[stat(desc = "Loop rounds that had tasks to decide (batches)")]
    pub(crate) loop_batches: u64,
    #[stat(desc = "Loop rounds with nothing queued")]
    pub(crate) loop_empty: u64,
    #[stat(desc = "Tasks the loop decided")]
    pub(crate) loop_tasks: u64,
    #[stat(desc = "Idle snapshots the loop took (--fifo: idle picks): one bpf() call each")]
    pub(crate) loop_snapshots: u64,
    #[stat(desc = "Microseconds the loop spent in idle snapshots (monotonic clock)")]
    pub(crate) loop_snapshot_us: u64,
    #[stat(
        desc = "Microseconds the loop spent in the core's calls for its batches, snapshots excluded (monotonic clock)"
    )]
    pub(crate) loop_decide_us: u64,
    #[stat(
        desc = "Microseconds of CPU time the loop's thread used (its system calls included: the framework's dispatch runs in its sched_yield)"
    )]
    pub(crate) loop_cpu_us: u64,
    #[stat(desc = "scx_rustland_core: tasks dispatched from user space")]
    pub(crate) fw_user: u64,
    #[stat(desc = "scx_rustland_core: tasks dispatched by the kernel directly")]
    pub(crate) fw_kernel: u64,
    #[stat(
        desc = "Wake-ups the fast path kept on their previous CPU in the kernel, without the loop"
    )]
    pub(crate) fw_fast: u64,
    #[stat(
        desc = "Wake-ups the fast path was asked about (it keeps only those the policy's table covers)"
    )]
    pub(crate) fw_fast_asked: u64,
    #[stat(desc = "scx_rustland_core: dispatches cancelled")]
    pub(crate) fw_cancel: u64,
    #[stat(desc = "scx_rustland_core: dispatches bounced to the task's previous CPU")]
    pub(crate) fw_bounce: u64,
    #[stat(desc = "scx_rustland_core: dispatches that failed")]
    pub(crate) fw_failed: u64,
    #[stat(desc = "scx_rustland_core: times the ring buffer to user space was congested")]
    pub(crate) fw_congested: u64,
    #[stat(desc = "scx_rustland_core: tasks running now (gauge)")]
    pub(crate) fw_running: u64,
    #[stat(desc = "scx_rustland_core: tasks queued for user space now (gauge)")]
    pub(crate) fw_queued: u64,
}

impl Metrics {
    /// The figures between two samples; `busy` is each core kind's busy share over the same
    /// interval.
    pub(crate) fn between(prev: &Sample, now: &Sample, busy: &[(CoreKind, u64)]) -> Self {
        let d = now.counters.delta(&prev.counters);
        let (f, p) = (&now.fw, &prev.fw);
        Self {
            placed: Step::ALL
                .iter()
                .map(|s| (s.name().to_owned(), d.steps.0[s.index()]))
                .collect(),
            overflow: d.overflow,
            stale: d.stale,
            nudge: d.nudges,
            kept: d.kept,
            preempt: d.preempts,
            dispatch_retries: d.dispatch_retries,
            backlog: now.backlog,
            snapshot_errors: d.snapshot_errors,
            dequeue_errors: d.dequeue_errors,
            affinity_errors: d.affinity_errors,
            ev_exit: d.events.exit,
            ev_exit_tracked: d.events.exit_tracked,
            ev_waking: d.events.waking,
            ev_woken_by_task: d.events.woken_by_task,
            ev_waker_to_core: d.events.waker_to_core,
            ev_refill: d.events.refill,
            ev_dropped: now.events_dropped,
            ev_errors: d.events.bad + d.events.read_errors,
            tasks_tracked: now.tasks_tracked,
            tasks_max: now.tasks_high_water,
            untracked: now.tasks_untracked.saturating_sub(prev.tasks_untracked),
            busy_pct: busy.iter().map(|(k, pct)| (k.to_string(), *pct)).collect(),
            cluster_balance: now.balance.map_or_else(|| "-".into(), |b| b.to_string()),
            // The framework's counters are its BPF globals, which start again at zero when it
            // reloads: never a negative interval.
            loop_batches: d.rounds.batches,
            loop_empty: d.rounds.empty,
            loop_tasks: d.rounds.tasks,
            loop_snapshots: d.rounds.snapshots,
            loop_snapshot_us: d.rounds.snapshot_ns / 1_000,
            loop_decide_us: d.rounds.decide_ns / 1_000,
            loop_cpu_us: now.loop_cpu_ns.saturating_sub(prev.loop_cpu_ns) / 1_000,
            fw_user: f.user.saturating_sub(p.user),
            fw_kernel: f.kernel.saturating_sub(p.kernel),
            fw_fast: f
                .fast
                .iter()
                .sum::<u64>()
                .saturating_sub(p.fast.iter().sum()),
            fw_fast_asked: f.fast_asked.saturating_sub(p.fast_asked),
            fw_cancel: f.cancel.saturating_sub(p.cancel),
            fw_bounce: f.bounce.saturating_sub(p.bounce),
            fw_failed: f.failed.saturating_sub(p.failed),
            fw_congested: f.congested.saturating_sub(p.congested),
            fw_running: f.running,
            fw_queued: f.queued,
        }
    }

    /// The one-line rendering (`--stats`, `--monitor`); the module documentation explains it.
    pub(crate) fn line(&self) -> String {
        let mut s = String::from("stats: placed");
        for step in Step::ALL {
            let n = self.placed.get(step.name()).copied().unwrap_or(0);
            let _ = write!(s, " {}={n}", step.name());
        }
        let _ = write!(
            s,
            " | overflow={} stale={} nudge={} kept={} preempt={}",
            self.overflow, self.stale, self.nudge, self.kept, self.preempt
        );
        let errors = self.dispatch_retries
            + self.snapshot_errors
            + self.dequeue_errors
            + self.affinity_errors;
        if errors > 0 || self.backlog > 0 {
            let _ = write!(
                s,
                " dispatch-retries={} backlog={} snapshot-errors={} dequeue-errors={} affinity-errors={}",
                self.dispatch_retries,
                self.backlog,
                self.snapshot_errors,
                self.dequeue_errors,
                self.affinity_errors
            );
        }
        let _ = write!(
            s,
            " | tasks={} tasks-max={} exit={} exit-tracked={} waking={} by-task={} to-core={} refill={}",
            self.tasks_tracked,
            self.tasks_max,
            self.ev_exit,
            self.ev_exit_tracked,
            self.ev_waking,
            self.ev_woken_by_task,
            self.ev_waker_to_core,
            self.ev_refill
        );
        if self.ev_dropped > 0 || self.ev_errors > 0 || self.untracked > 0 {
            let _ = write!(
                s,
                " events-dropped={} event-errors={} untracked={}",
                self.ev_dropped, self.ev_errors, self.untracked
            );
        }
        s.push_str(" | busy");
        for kind in CoreKind::ALL {
            if let Some(pct) = self.busy_pct.get(&kind.to_string()) {
                let _ = write!(s, " {kind}={pct}%");
            }
        }
        let _ = write!(
            s,
            " | loop batches={} empty={} tasks={} snapshots={} snapshot-us={} decide-us={} cpu-us={}",
            self.loop_batches,
            self.loop_empty,
            self.loop_tasks,
            self.loop_snapshots,
            self.loop_snapshot_us,
            self.loop_decide_us,
            self.loop_cpu_us
        );
        let _ = write!(
            s,
            " | balance={} | fw user={} kernel={} fast={} fast-asked={} cancel={} bounce={} failed={} congested={} running={} queued={}",
            self.cluster_balance,
            self.fw_user,
            self.fw_kernel,
            self.fw_fast,
            self.fw_fast_asked,
            self.fw_cancel,
            self.fw_bounce,
            self.fw_failed,
            self.fw_congested,
            self.fw_running,
            self.fw_queued,
        );
        s
    }
}

/// The standard scx_stats socket, where every scx scheduler serves its statistics (one
/// sched_ext scheduler runs at a time).
pub(crate) const SOCKET: &str = "/var/run/scx/root/stats";

/// The loop's end of the stats server: requests in, samples out.
pub(crate) struct StatsLink {
    pub(crate) samples: Sender<Sample>,
    pub(crate) requests: Receiver<()>,
}

/// The server's description: one `top` target whose reader keeps, per client, the previous
/// sample and `/proc/stat` reading, so each client sees its own intervals.
pub(crate) fn server_data(kinds: Kinds) -> StatsServerData<(), Sample> {
    let open: Box<dyn StatsOpener<(), Sample>> = Box::new(move |(req, res)| {
        req.send(())?;
        let mut prev = res.recv()?;
        let mut busy = KindBusy::new();
        let kinds = kinds.clone();
        let read: Box<dyn StatsReader<(), Sample>> = Box::new(move |_args, (req, res)| {
            req.send(())?;
            let now = res.recv()?;
            let metrics = Metrics::between(&prev, &now, &busy.sample(&kinds));
            prev = now;
            metrics.to_json()
        });
        Ok(read)
    });
    StatsServerData::new()
        .add_meta(Metrics::meta())
        .add_ops("top", StatsOps { open, close: None })
}

/// `--help-stats`: every figure and what it means.
pub(crate) fn describe() -> Result<String> {
    let mut out = Vec::new();
    // The description does not depend on the machine.
    server_data(Kinds::default()).describe_meta(&mut out, None)?;
    Ok(String::from_utf8(out)?)
}

/// Mode of the stats socket: only its owner (root, when scheduling) may connect. scx_stats
/// 1.1.4 reads a request line with no size limit and starts a thread per connection, so
/// whoever can connect can make the scheduler allocate and spawn; that is kept to root.
pub(crate) const SOCKET_MODE: u32 = 0o600;

/// Starts the stats server on `path` (replacing a stale socket there); the loop answers
/// through the returned link. Its threads must start before the framework's seccomp filter
/// (they need `mmap` for their stacks), so this runs before the scheduler loads.
///
/// scx_stats creates the socket with a plain `bind`, whose mode comes from the umask, and
/// starts accepting at once. So the umask is 077 around the launch: the socket is born
/// `srwx------` and nobody but its owner can connect at any moment; the `chmod` after it only
/// drops the meaningless execute bit. Directories scx_stats creates on the way (`/var/run/scx`,
/// `/var/run/scx/root` when missing) are 0700 for the same reason. The umask is per process:
/// this runs before the scheduler's other threads that create files exist.
pub(crate) fn serve(kinds: Kinds, path: &Path) -> Result<(StatsServer<(), Sample>, StatsLink)> {
    use rustix::fs::Mode;
    let old = rustix::process::umask(Mode::from_raw_mode(0o077));
    let server = StatsServer::new(server_data(kinds)).set_path(path).launch();
    rustix::process::umask(old);
    let server = server?;
    rustix::fs::chmod(path, Mode::from_raw_mode(SOCKET_MODE))
        .with_context(|| format!("{}: setting the stats socket's mode", path.display()))?;
    let (samples, requests) = server.channels();
    Ok((server, StatsLink { samples, requests }))
}

/// Why [`monitor`] stopped.
#[derive(Debug)]
pub(crate) enum MonitorError {
    /// The socket answers with something that is not scx_hybridland's figures.
    NotOurs(String),
    /// Printing failed.
    Output(anyhow::Error),
}

impl core::fmt::Display for MonitorError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::NotOurs(why) => write!(
                f,
                "the stats socket does not serve scx_hybridland's figures (is another sched_ext scheduler loaded?): {why}"
            ),
            Self::Output(e) => write!(f, "writing the figures: {e:#}"),
        }
    }
}

impl core::error::Error for MonitorError {}

/// The client behind `--monitor` and `--stats`: asks the server at `path` for the figures every
/// `every`, hands each set to `out`, until `should_exit`. While there is no server (not started
/// yet, restarting, gone) it says so once and keeps trying, as the scx schedulers' monitors do.
pub(crate) fn monitor(
    path: &Path,
    every: Duration,
    mut should_exit: impl FnMut() -> bool,
    mut out: impl FnMut(&Metrics) -> Result<()>,
) -> Result<(), MonitorError> {
    let mut said_waiting = false;
    while !should_exit() {
        let mut client = match StatsClient::new().set_path(path).connect(None) {
            Ok(c) => c,
            Err(e) => {
                if !said_waiting {
                    info!(
                        "no scx_hybridland stats at {} ({e}): is it running? Trying again every second",
                        path.display()
                    );
                    said_waiting = true;
                }
                std::thread::sleep(
                    Duration::from_secs(1).min(every.max(Duration::from_millis(100))),
                );
                continue;
            }
        };
        said_waiting = false;
        while !should_exit() {
            match client.request::<Metrics>("stats", vec![]) {
                Ok(m) => out(&m).map_err(MonitorError::Output)?,
                Err(e) if e.downcast_ref::<serde_json::Error>().is_some() => {
                    return Err(MonitorError::NotOurs(format!("{e:#}")));
                }
                Err(e) => {
                    info!("the stats connection ended ({e:#}); reconnecting");
                    break;
                }
            }
            std::thread::sleep(every);
        }
    }
    Ok(())
}

#[cfg(test)]
mod test {
    use super::*;
    use hybridland_policy::{CpuId, TopologyBuilder};

    #[test]
    fn busy_share_is_per_kind() {
        let mut b = TopologyBuilder::new();
        b.add_cpu(CpuId(0), CoreKind::Performance, 1024, 0).unwrap();
        b.add_cpu(CpuId(1), CoreKind::Efficiency, 512, 0).unwrap();
        let topo = b.build().unwrap();
        let before =
            cpu_times("cpu  9 9 9 9\ncpu0 10 0 0 90 0 0 0 0 0 0\ncpu1 0 0 0 100 0 0 0 0 0 0\n");
        let after = cpu_times("cpu0 60 0 10 120 0 0 0 0 0 0\ncpu1 10 0 0 190 0 0 0 0 0 0\n");
        // cpu0: busy 60 of 90 more jiffies; cpu1: 10 of 100.
        assert_eq!(
            busy_share(&Kinds::new(&topo), &before, &after),
            vec![(CoreKind::Performance, 66), (CoreKind::Efficiency, 10)]
        );
    }

    fn sample(steps: &[Step], stale: u64, user: u64) -> Sample {
        let mut counters = Counters::default();
        for s in steps {
            counters.steps.add(*s);
        }
        counters.stale = stale;
        Sample {
            counters,
            fw: Framework {
                user,
                running: 1,
                ..Default::default()
            },
            balance: Some(ClusterBalance::On),
            backlog: 0,
            tasks_tracked: 7,
            tasks_high_water: 9,
            tasks_untracked: 0,
            events_dropped: 0,
            loop_cpu_ns: 0,
        }
    }

    #[test]
    fn metrics_are_the_deltas_between_samples_and_render_as_the_log_line() {
        let prev = sample(&[Step::IdlePCore], 0, 5);
        let mut now = sample(&[Step::IdlePCore, Step::IdlePCore, Step::IdlePCore], 1, 12);
        now.counters.rounds = RoundCounts {
            batches: 4,
            empty: 1,
            tasks: 6,
            snapshots: 5,
            snapshot_ns: 2_500_000,
            decide_ns: 40_000,
        };
        now.loop_cpu_ns = 3_000_000;
        now.counters.preempts = 2;
        let m = Metrics::between(
            &prev,
            &now,
            &[(CoreKind::Performance, 66), (CoreKind::Efficiency, 10)],
        );
        assert_eq!(m.placed["idle-p-core"], 2);
        assert_eq!((m.stale, m.fw_user, m.fw_running), (1, 7, 1));
        assert_eq!(
            m.line(),
            "stats: placed idle-p-core=2 idle-e-core=0 busy-sibling=0 no-idle=0 | overflow=0 stale=1 \
             nudge=0 kept=0 preempt=2 | tasks=7 tasks-max=9 exit=0 exit-tracked=0 waking=0 by-task=0 to-core=0 refill=0 | \
             busy \
             performance=66% efficiency=10% | loop batches=4 empty=1 tasks=6 snapshots=5 \
             snapshot-us=2500 decide-us=40 cpu-us=3000 | balance=on | fw user=7 kernel=0 \
             fast=0 fast-asked=0 cancel=0 bounce=0 failed=0 congested=0 running=1 queued=0"
        );
        // The error figures appear only when there is something to say.
        let mut errs = now;
        errs.counters.snapshot_errors = 3;
        errs.backlog = 4;
        let line = Metrics::between(&prev, &errs, &[]).line();
        assert!(
            line.contains(" kept=0 preempt=2 dispatch-retries=0 backlog=4 snapshot-errors=3 dequeue-errors=0 affinity-errors=0 | tasks=7 "),
            "{line}"
        );
        let mut lost = now;
        lost.events_dropped = 5;
        let line = Metrics::between(&prev, &lost, &[]).line();
        assert!(
            line.contains(" refill=0 events-dropped=5 event-errors=0 untracked=0 | busy"),
            "{line}"
        );
        // A framework reload restarts its counters: the interval shows zero, not a wrap.
        let mut reloaded = now;
        reloaded.fw.user = 2;
        assert_eq!(Metrics::between(&now, &reloaded, &[]).fw_user, 0);
    }

    #[test]
    fn help_stats_describes_every_figure() {
        let text = describe().unwrap();
        let meta = Metrics::meta();
        assert!(
            text.starts_with("[Metrics] scx_hybridland: counts over the interval"),
            "{text}"
        );
        for (name, field) in &meta.fields {
            let desc = field.attrs.desc.as_deref().unwrap_or_default();
            assert!(!desc.is_empty(), "{name} has no description");
            assert!(
                text.lines()
                    .any(|l| l.trim_start().starts_with(name.as_str()) && l.ends_with(desc)),
                "{name}: {text}"
            );
        }
        assert!(
            text.contains("placed") && text.contains("{string:u64}"),
            "{text}"
        );
        assert_eq!(meta.fields.len(), 41);
    }

    /// A server on a socket in a temporary directory, a fake loop answering its requests, and
    /// the `--monitor` client reading it: each client request gives the deltas since the
    /// previous one.
    #[test]
    fn the_monitor_reads_the_loops_figures_through_the_socket() {
        let dir = std::env::temp_dir().join(format!("hl-stats-{}", std::process::id()));
        let path = dir.join("root/stats");
        let mut b = TopologyBuilder::new();
        b.add_cpu(CpuId(0), CoreKind::Performance, 1024, 0).unwrap();
        // serve() changes the umask for a moment: not while another test looks at it.
        let guard = crate::safe_file::testing::UMASK
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (server, link) = serve(Kinds::new(&b.build().unwrap()), &path).unwrap();
        drop(guard);
        // The loop: every request gets a sample two placements and three dispatches further.
        // Left running at the end: the server's threads keep its channel open.
        std::thread::spawn(move || {
            let mut n = 0u64;
            while link.requests.recv().is_ok() {
                n += 1;
                let steps = vec![Step::IdleECore; 2 * n as usize];
                if link.samples.send(sample(&steps, n, 3 * n)).is_err() {
                    break;
                }
            }
        });
        let seen = core::cell::RefCell::new(Vec::new());
        monitor(
            &path,
            Duration::ZERO,
            || seen.borrow().len() >= 3,
            |m| {
                seen.borrow_mut().push(m.clone());
                Ok(())
            },
        )
        .unwrap_or_else(|e| panic!("{e}"));
        drop(server);
        let seen = seen.into_inner();
        assert_eq!(seen.len(), 3);
        for m in &seen {
            assert_eq!(m.placed["idle-e-core"], 2, "{m:?}");
            assert_eq!((m.stale, m.fw_user), (1, 3), "{m:?}");
            assert_eq!(m.cluster_balance, "on");
            assert!(m.busy_pct.contains_key("performance"), "{m:?}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Even under a loose umask the socket is the owner's only, from the moment it exists.
    #[test]
    fn the_socket_is_owner_only_whatever_the_umask() {
        use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _};
        let dir = std::env::temp_dir().join(format!("hl-sockmode-{}", std::process::id()));
        let path = dir.join("scx/root/stats");
        let mut b = TopologyBuilder::new();
        b.add_cpu(CpuId(0), CoreKind::Performance, 1024, 0).unwrap();
        let guard = crate::safe_file::testing::UMASK
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let old = rustix::process::umask(rustix::fs::Mode::empty());
        let served = serve(Kinds::new(&b.build().unwrap()), &path);
        let after = rustix::process::umask(old);
        drop(guard);
        let (server, link) = served.unwrap();
        let meta = std::fs::symlink_metadata(&path).unwrap();
        let dir_modes: Vec<u32> = [dir.join("scx"), dir.join("scx/root")]
            .iter()
            .map(|d| std::fs::metadata(d).unwrap().mode() & 0o777)
            .collect();
        // Stopped before anything is asserted: a server dropped while a failed assertion
        // unwinds waits for ever on its own wake-up connection.
        drop(server);
        drop(link);
        // The umask is given back.
        assert_eq!(after, rustix::fs::Mode::empty());
        assert!(meta.file_type().is_socket());
        assert_eq!(meta.mode() & 0o7777, SOCKET_MODE);
        assert_eq!(meta.uid(), rustix::process::geteuid().as_raw());
        // The directories scx_stats made on the way are closed too.
        assert_eq!(dir_modes, [0o700, 0o700]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_monitor_reports_nothing_without_a_server_and_refuses_another_schedulers_figures() {
        let dir = std::env::temp_dir().join(format!("hl-nostats-{}", std::process::id()));
        let path = dir.join("stats");
        let mut tries = 0;
        let mut printed = 0;
        monitor(
            &path,
            Duration::ZERO,
            || {
                tries += 1;
                tries > 3
            },
            |_| {
                printed += 1;
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(printed, 0);

        // A server whose figures are some other scheduler's.
        #[stat_doc]
        #[derive(Clone, Debug, Default, Serialize, Deserialize, Stats)]
        #[stat(top)]
        struct Other {
            #[stat(desc = "Number of running tasks")]
            nr_running: u64,
        }
        let data = StatsServerData::<(), ()>::new()
            .add_meta(Other::meta())
            .add_stats("top", Box::new(|_, _| Other { nr_running: 3 }.to_json()));
        let server = StatsServer::new(data).set_path(&path).launch().unwrap();
        let err = monitor(&path, Duration::ZERO, || false, |_| Ok(())).unwrap_err();
        assert!(matches!(err, MonitorError::NotOurs(_)), "{err}");
        assert!(
            err.to_string().contains("another sched_ext scheduler"),
            "{err}"
        );
        drop(server);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
