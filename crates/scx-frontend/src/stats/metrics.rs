//! The figures over one interval ([`Metrics`]) that the server makes of two samples, and
//! their one-line rendering.

use super::Sample;
use core::fmt::Write as _;
use hybridland_policy::{CoreKind, Step};
use scx_stats_derive::{Stats, stat_doc};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

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
    #[stat(desc = "Slice ends sent to the shared queue, behind tasks waiting for their CPU")]
    pub(crate) yielded: u64,
    #[stat(
        desc = "Woken tasks that found no CPU idle and took a busy one: from a task far ahead in vtime (--wake-preempt), or the one CPU they may use (the pinned rule)"
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
    #[stat(
        desc = "Tasks that reused a pid before the old thread's exit arrived: the old entry ended at the new thread's first wake-up"
    )]
    pub(crate) ev_renewed: u64,
    #[stat(desc = "Exits of such an old thread, arriving after the new one's wake-up: ignored")]
    pub(crate) ev_stale_exit: u64,
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
        desc = "Times the core's timer (its up-migration scan, its prune) woke the loop through the helper thread"
    )]
    pub(crate) loop_timer_wakes: u64,
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
    #[stat(desc = "Wake-ups the fast path placed in the kernel, without the loop")]
    pub(crate) fw_fast: u64,
    #[stat(
        desc = "Wake-ups the fast path was asked about (it keeps only those the policy's table covers)"
    )]
    pub(crate) fw_fast_asked: u64,
    #[stat(
        desc = "Of the wake-ups the fast path was asked about, those with no allowed CPU free (the loop decides them)"
    )]
    pub(crate) fw_fast_no_free: u64,
    #[stat(
        desc = "Of those, wake-ups of a task allowed on one CPU only that took it in the kernel, the task there ending its slice (the pinned rule)"
    )]
    pub(crate) fw_fast_pinned: u64,
    #[stat(
        desc = "Wake-ups with an allowed CPU free that the fast path placed, percent (100 when there were none)"
    )]
    pub(crate) fw_fast_cover_pct: u64,
    #[stat(
        desc = "Wake-ups with an allowed CPU free the fast path left to the loop because tasks waited in the shared queue"
    )]
    pub(crate) fw_fast_declined_shared_queue: u64,
    #[stat(
        desc = "Wake-ups with an allowed CPU free the fast path left to the loop because another CPU took the chosen one first"
    )]
    pub(crate) fw_fast_declined_race: u64,
    #[stat(
        desc = "Threads of the scheduler's own that the kernel ran from the loop's queue because the loop was blocked (perhaps on a lock one of them held)"
    )]
    pub(crate) fw_own_rescued: u64,
    #[stat(
        desc = "Threads of the scheduler's own queued to the loop that the kernel's table of them had no room to note (the kernel cannot run these while the loop is blocked)"
    )]
    pub(crate) fw_own_untracked: u64,
    #[stat(desc = "Task classes the loop wrote into the kernel for the fast path")]
    pub(crate) loop_class_writes: u64,
    #[stat(desc = "Task class writes for tasks that had exited (nothing written)")]
    pub(crate) loop_class_gone: u64,
    #[stat(
        desc = "Task class writes the kernel refused for a live task: the core gives the class again at the task's next placement"
    )]
    pub(crate) loop_class_errors: u64,
    #[stat(
        desc = "Fast-path placements that read another class than the core's (a failed write, or a task the core forgot): the core took it and gave its own again"
    )]
    pub(crate) core_class_drift: u64,
    #[stat(desc = "Placements the fast path reported that the loop handed to the core")]
    pub(crate) loop_fast_placed: u64,
    #[stat(desc = "Placements the fast path reported that the loop lost to a full ring")]
    pub(crate) loop_fast_lost: u64,
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
            yielded: d.yielded,
            preempt: d.preempts,
            dispatch_retries: d.dispatch_retries,
            backlog: now.backlog,
            snapshot_errors: d.snapshot_errors,
            dequeue_errors: d.dequeue_errors,
            affinity_errors: d.affinity_errors,
            ev_exit: d.events.exit,
            ev_exit_tracked: d.events.exit_tracked,
            ev_renewed: d.events.renewed,
            ev_stale_exit: d.events.stale_exit,
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
            loop_timer_wakes: d.rounds.timer_wakes,
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
            fw_fast_no_free: f.fast_no_free.saturating_sub(p.fast_no_free),
            fw_fast_pinned: f.fast_pinned.saturating_sub(p.fast_pinned),
            fw_fast_cover_pct: {
                let placed = f
                    .fast
                    .iter()
                    .sum::<u64>()
                    .saturating_sub(p.fast.iter().sum());
                let free = f
                    .fast_asked
                    .saturating_sub(p.fast_asked)
                    .saturating_sub(f.fast_no_free.saturating_sub(p.fast_no_free));
                (placed * 100).checked_div(free).unwrap_or(100)
            },
            fw_fast_declined_shared_queue: f.fast_declined[0].saturating_sub(p.fast_declined[0]),
            fw_fast_declined_race: f.fast_declined[1].saturating_sub(p.fast_declined[1]),
            fw_own_rescued: f.own_rescued.saturating_sub(p.own_rescued),
            fw_own_untracked: f.own_untracked.saturating_sub(p.own_untracked),
            loop_class_writes: d.fast_path.class_writes,
            loop_class_gone: d.fast_path.class_gone,
            loop_class_errors: d.fast_path.class_errors,
            core_class_drift: now.class_drift.saturating_sub(prev.class_drift),
            loop_fast_placed: d.fast_path.placed,
            loop_fast_lost: d.fast_path.lost,
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
            " | overflow={} stale={} nudge={} kept={} yielded={} preempt={}",
            self.overflow, self.stale, self.nudge, self.kept, self.yielded, self.preempt
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
            " | tasks={} tasks-max={} exit={} exit-tracked={} renewed={} stale-exit={} waking={} by-task={} to-core={} refill={}",
            self.tasks_tracked,
            self.tasks_max,
            self.ev_exit,
            self.ev_exit_tracked,
            self.ev_renewed,
            self.ev_stale_exit,
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
            " | loop batches={} empty={} tasks={} snapshots={} snapshot-us={} decide-us={} timer-wakes={} cpu-us={}",
            self.loop_batches,
            self.loop_empty,
            self.loop_tasks,
            self.loop_snapshots,
            self.loop_snapshot_us,
            self.loop_decide_us,
            self.loop_timer_wakes,
            self.loop_cpu_us
        );
        let _ = write!(
            s,
            " | balance={} | fw user={} kernel={} fast={} fast-asked={} fast-no-free={} fast-pinned={} fast-cover={}% fast-shared-queue={} fast-race={} class-writes={} class-gone={} class-errors={} class-drift={} fast-placed={} fast-lost={} cancel={} bounce={} failed={} congested={} running={} queued={}",
            self.cluster_balance,
            self.fw_user,
            self.fw_kernel,
            self.fw_fast,
            self.fw_fast_asked,
            self.fw_fast_no_free,
            self.fw_fast_pinned,
            self.fw_fast_cover_pct,
            self.fw_fast_declined_shared_queue,
            self.fw_fast_declined_race,
            self.loop_class_writes,
            self.loop_class_gone,
            self.loop_class_errors,
            self.core_class_drift,
            self.loop_fast_placed,
            self.loop_fast_lost,
            self.fw_cancel,
            self.fw_bounce,
            self.fw_failed,
            self.fw_congested,
            self.fw_running,
            self.fw_queued,
        );
        if self.fw_own_rescued > 0 || self.fw_own_untracked > 0 {
            let _ = write!(
                s,
                " own-rescued={} own-untracked={}",
                self.fw_own_rescued, self.fw_own_untracked
            );
        }
        s
    }
}
