//! The live loop: translates between scx_rustland_core and the policy crate's scheduler core
//! ([`SchedCore`]), nothing else. Every sequencing decision (the order of a batch, which CPUs
//! count as free, vtime, slice, when to nudge, when to forget a task) is the core's.
//!
//! Each iteration: send what an earlier iteration could not (the backlog); drain up to
//! [`BATCH_MAX`] queued tasks; take an idle snapshot and hand the batch and the snapshot to the
//! core; when it asks for a second look, a second snapshot; dispatch what it polls out; tell
//! the framework we are done. Between iterations: apply the task events (`src/task_events.rs`:
//! exits leave the core's storage), run the core's timer when due (with a fresh snapshot; a
//! nudge it gives wakes the helper thread), apply a knob change the control file's watcher
//! found, answer stats. The framework wakes the loop whenever tasks are queued, and at least
//! once a second.
//!
//! Error paths, none of which loses a task:
//! - a dispatch that fails (the user ring buffer is full) keeps the task and every one after it
//!   in a local backlog, sent first next iteration, to the shared queue (the CPU picked for it
//!   was picked against an old snapshot); counted as `dispatch-retries`;
//! - a failed idle snapshot is `Input::SnapshotFailed` for the core: the batch goes to the
//!   shared queue (counted as `snapshot-errors`); only a sustained run of failures ends the
//!   scheduler (`SNAPSHOT_GIVE_UP_NS`);
//! - a failed read of the queued-task ring buffer ends the batch early and is logged at most
//!   once a second with the number of failures in between ([`LogLimit`]).

#![forbid(unsafe_code)]

mod batch;
mod config;
mod control;
mod events;
mod fast_path;
mod limits;
mod nudger;
mod queues;
mod recording;
mod snapshot;
#[cfg(test)]
mod tests;

#[cfg(test)]
use config::STORAGE_BUDGET;
pub(crate) use config::{DEFAULT_MAX_TASKS, LoopConfig, MAX_MAX_TASKS, Mode};
use limits::FailureRun;
pub(crate) use limits::LogLimit;
pub(crate) use nudger::Nudger;

use crate::bpf::{DispatchedTask, QueuedTask, RL_CPU_ANY};
use crate::clock::KernelClock;
use crate::control_file::{KnobChange, Watcher};
use crate::fast_wake::FastWakeTable;
use crate::fifo::Fifo;
use crate::idle_snapshot::IdleCpus;
use crate::ops::SchedOps;
use crate::own_lock::OwnLock;
pub(crate) use crate::policy_choice::LivePolicy;
use crate::record::{Event, Recorder, TailReader};
use crate::stats::{Counters, Sample, StatsLink};
use crate::sys::{allowed_cpus, now_ns, thread_cpu_ns};
use crate::task_events::TaskEvent;
use crate::wakers::Wakers;
use anyhow::{Context, Result, bail};
use hybridland_policy::{
    Affinity, Arrival, CoreConfig, CpuId, CpuSet, Dispatch, Input, InputError, LastRun, Life,
    Output, PlacementPolicy, PolicyConfig, Queued, SchedCore, SliceEnd, SliceMode, Slot, Snapshot,
    Target, TaskId, TimeNs, Topology, UtilSource, Waiting, Waker, Why,
};
use hybridland_trace::decisions::{self, CoreSettings, DecisionLog, Entry, Header};
use std::collections::VecDeque;
use std::io::{Read, Write};
use std::path::PathBuf;
use tracing::{debug, error, info, warn};

/// Most tasks decided against one snapshot (the core's batch).
pub(crate) const BATCH_MAX: usize = hybridland_policy::BATCH_MAX;

/// Most dispatches the loop keeps back while the user ring buffer is full, reserved at start.
/// The loop dequeues only as many tasks as the backlog still has room for: the rest wait in
/// the kernel's own queue (its ring buffer, or the shared queue when that is full too), so no
/// task is lost and the backlog never grows past what was reserved.
pub(crate) const BACKLOG_MAX: usize = 4 * BATCH_MAX;

/// The kernel's enqueue flag that asks for the CPU's current task to be preempted (from the
/// kernel's BTF, as the BPF side sees it).
const ENQ_PREEMPT: u64 = crate::bpf_skel::types::scx_enq_flags::SCX_ENQ_PREEMPT.0;

/// What is left of the scheduler when its loop is over.
pub(crate) struct Parts<O> {
    /// The framework, for the final report.
    pub(crate) ops: O,
    /// The recording and the topology it needs to be written.
    pub(crate) recording: Option<(Recorder, Topology)>,
    /// The decision log, if one was kept, and where to write it.
    pub(crate) decisions: Option<(PathBuf, DecisionLog)>,
    /// The control file's watcher. Drop it only once the scheduler is detached: the drop
    /// waits for the watcher thread, which nothing would run while the loop is over and the
    /// scheduler still loaded.
    pub(crate) control: Option<Watcher>,
}

/// Shortest gap between two log lines about dequeue errors.
const DEQUEUE_LOG_GAP_NS: u64 = 1_000_000_000;

/// `SCX_ENQ_WAKEUP`: the enqueue is a wake-up, not a slice end.
const SCX_ENQ_WAKEUP: u64 = 1;

/// The running scheduler, over the framework operations `O` ([`crate::ops::Live`] when live).
pub(crate) struct Scheduler<O: SchedOps> {
    ops: O,
    /// The policy crate's scheduler core, with its task storage (boxed: a few hundred KiB).
    /// Inputs reach it only through [`feed`](Self::feed), which logs them.
    core: Box<SchedCore<Vec<Slot>, LivePolicy>>,
    /// `--record`'s decision log and where it is to be written: every input the core is
    /// handed and every output the loop carries out, in order.
    decisions: Option<(PathBuf, DecisionLog)>,
    cfg: LoopConfig,
    control: Option<Watcher>,
    counters: Counters,
    /// The stats server's requests, answered between iterations.
    stats: Option<StatsLink>,
    /// Who woke each recently woken task (event source), until the task is handed over.
    wakers: Wakers,
    /// Exits drained with the task events, handed over after the fast path's runs.
    exits: Vec<(u64, i32, Life)>,
    nudger: Option<Nudger>,
    queued: Vec<QueuedTask>,
    /// Set in `--fifo` mode: batches skip the policy path.
    fifo: Option<Fifo>,
    /// This batch's dispatches.
    outgoing: Vec<DispatchedTask>,
    /// Tasks a failed dispatch left with us, oldest first: sent before anything else.
    backlog: VecDeque<DispatchedTask>,
    snapshot_failures: FailureRun,
    dequeue_log: LogLimit,
    /// `--record`: what the loop sees, kept for the trace written at exit.
    recorder: Option<Recorder>,
    /// Reads `/proc` for the recording's tails off the loop.
    tail_reader: Option<TailReader>,
    /// The recording stopped and its tails are being read.
    tails_pending: bool,
    /// The wake-up fast path's table, built at start and refilled in place on a knob change.
    fast_table: Option<FastWakeTable>,
    /// `--test-own-lock`: taken at the start of each round.
    own_lock: Option<OwnLock>,
    /// The framework's clock, which every time handed to the core is on.
    clock: KernelClock,
}

impl<O: SchedOps> Scheduler<O> {
    pub(crate) fn new(
        ops: O,
        topo: Topology,
        policy: LivePolicy,
        cfg: LoopConfig,
        control: Option<Watcher>,
        nudger: Option<Nudger>,
    ) -> Result<Self> {
        let fifo = (cfg.mode == Mode::Fifo).then(|| Fifo::new(cfg.slice_ns));
        // No nudges in FIFO mode: there is no policy to re-place a task.
        let nudger = nudger.filter(|_| cfg.mode == Mode::Policy);
        let storage = vec![Slot::EMPTY; Slot::count_for(cfg.max_tasks)];
        let mut core = Box::new(
            SchedCore::with_policy(topo, policy, cfg.core(nudger.is_some()), storage)
                .context("the task storage")?,
        );
        core.set_helper(nudger.as_ref().and_then(Nudger::task_id));
        let mut sched = Self {
            ops,
            core,
            decisions: None,
            cfg,
            control,
            counters: Counters::default(),
            stats: None,
            wakers: Wakers::new(),
            exits: Vec::new(),
            nudger,
            queued: Vec::with_capacity(BATCH_MAX),
            fifo,
            outgoing: Vec::with_capacity(BATCH_MAX),
            backlog: VecDeque::with_capacity(BACKLOG_MAX),
            snapshot_failures: FailureRun::default(),
            dequeue_log: LogLimit::new(DEQUEUE_LOG_GAP_NS),
            recorder: None,
            tail_reader: None,
            tails_pending: false,
            fast_table: None,
            own_lock: None,
            clock: KernelClock::new(),
        };
        let before = now_ns();
        if let Some(kernel_ns) = sched.ops.kernel_clock() {
            sched.clock_reading(before, now_ns(), kernel_ns);
        }
        sched.install_fast_wake(true);
        Ok(sched)
    }

    /// The framework's clock now (see [`crate::clock`]).
    pub(crate) fn now(&mut self) -> u64 {
        self.clock.at(now_ns())
    }

    /// Takes a reading of the framework's clock between `CLOCK_MONOTONIC` reads `before` and
    /// `after`, logging the offset the first time and when it moves by a millisecond or more.
    fn clock_reading(&mut self, before: u64, after: u64, kernel_ns: u64) {
        let old = self.clock.offset_ns();
        let Some(new) = self.clock.reading(before, after, kernel_ns) else {
            return;
        };
        match old {
            None => info!(
                "clock: the framework's task timestamps run {:.3} ms {} CLOCK_MONOTONIC; the loop uses theirs",
                new.unsigned_abs() as f64 / 1e6,
                if new >= 0 { "ahead of" } else { "behind" }
            ),
            Some(old) if old.abs_diff(new) >= 1_000_000 => {
                debug!(from_ns = old, to_ns = new, "clock offset moved");
            }
            Some(_) => {}
        }
    }

    /// Hands `input` to the core at `now`, logging it first when a decision log is kept.
    fn feed(&mut self, now: u64, input: Input<'_>) -> Result<(), InputError> {
        feed(&mut self.core, &mut self.decisions, now, input)
    }

    /// Logs an output the loop carried out.
    fn carried_out(&mut self, out: &Output) {
        if let Some((_, log)) = self.decisions.as_mut() {
            log.push(Entry::output(out));
        }
    }

    /// Runs until a signal or the kernel ends it, or the idle snapshot fails for good.
    pub(crate) fn run(&mut self) -> Result<()> {
        let mut audit = None;
        while !self.ops.exited() {
            if let Some(lock) = &self.own_lock {
                lock.touch();
            }
            self.schedule_batch()?;
            if let Some(policy) = self.core.policy().hybridland() {
                audit = self
                    .ops
                    .audit_fast_wakes(self.core.topology(), policy)
                    .or(audit);
            }
            self.collect_tails();
            // The clock only when a timer is set: under `--fifo` and before the first
            // placement none is, and a round then reads no clock at all.
            if let Some(at) = self.core.poll_timeout() {
                let now = self.now();
                if now >= at.ns() {
                    self.tick(now)?;
                }
            }
            self.poll_knob();
            self.answer_stats();
        }
        if let Some(a) = audit {
            info!(
                "fast-path audit: {} placed wake-ups checked against the policy ({} on another CPU than the previous one, {} of tasks allowed on one CPU, {} on a busy CPU by the pinned rule, {} on a synchronous waker's CPU), {} disagreed, {} lost, at classes {}",
                a.checked,
                a.moved,
                a.pinned,
                a.busy_pinned,
                a.affine,
                a.disagreed,
                a.lost,
                a.class_list()
            );
        }
        Ok(())
    }

    /// Gives back the framework (for the final report), the recording with the topology it
    /// needs to be written, and the control file's watcher. Closes the nudge helper's pipe.
    pub(crate) fn into_parts(mut self) -> Parts<O> {
        let topo = self.core.topology().clone();
        Parts {
            decisions: self.decisions.take(),
            ops: self.ops,
            recording: self.recorder.map(|r| (r, topo)),
            control: self.control,
        }
    }

    /// Arms the helper's timer at the core's next time, so that the loop ticks it then even
    /// if nothing else wakes the loop (called at the end of each round, before the loop
    /// sleeps). A timer that cannot be set is reported once; the loop
    /// then ticks when the framework wakes it.
    fn arm_timer(&mut self) {
        // The core's time is the framework's clock; the timer runs on `CLOCK_MONOTONIC`.
        let at = self
            .core
            .poll_timeout()
            .map(|at| self.clock.to_mono(at.ns()));
        if let Some(n) = self.nudger.as_mut()
            && let Err(e) = n.arm(at)
        {
            warn!("the core's timer cannot be armed ({e:#}): it is ticked only when the loop runs");
        }
    }

    /// The core's timer: a fresh snapshot for its up-migration scan, the tick, and a nudge
    /// it gives carried out by waking the helper. The snapshot names the loop's own CPU, as a
    /// batch's does: it shows busy, but only the loop runs there, so a task placed there has
    /// left it.
    fn tick(&mut self, now: u64) -> Result<()> {
        if let Some(snap) = self.snapshot(now)? {
            let snap = Snapshot {
                idle: &snap.idle,
                queued: snap.queued.as_ref(),
                caller_cpu: self.ops.current_cpu(),
            };
            // A batch was polled empty before: nothing pending, nothing refused.
            let _ = self.feed(now, Input::Snapshot(snap));
        }
        let _ = self.feed(now, Input::Tick);
        // Between batches the core has a nudge or classes to give.
        while let Some(out) = self.core.poll() {
            self.carry_out(out);
        }
        Ok(())
    }

    fn schedule_batch(&mut self) -> Result<()> {
        // Events first, then the fast path's placements, then the exits among the events: a
        // placement is reported when it is made, before the task can exit, so every placement
        // of a task whose exit was drained is in those drained after it, and goes to the core
        // before the exit (after it, it would give the exited task a new record). A wake-up's
        // waker reaches its ring before the woken task reaches the framework's, and the core
        // takes it with the task (`Wakers`).
        self.apply_events();
        self.apply_fast_placements();
        self.apply_exits();
        self.flush_backlog();
        self.dequeue_batch();
        self.record_batch();
        if self.queued.is_empty() {
            self.counters.rounds.empty += 1;
        } else {
            self.counters.rounds.batches += 1;
            self.counters.rounds.tasks += self.queued.len() as u64;
            match self.fifo.as_ref() {
                Some(fifo) => {
                    let ops = &mut self.ops;
                    self.counters.rounds.snapshots += fifo.dispatch_batch(
                        &self.queued,
                        self.cfg.nr_possible,
                        |t| ops.pick_idle(t.pid, t.cpu),
                        &mut self.outgoing,
                    );
                }
                // The clock after the dequeue, and only for a batch the core decides.
                None => {
                    let now = self.now();
                    self.decide_batch(now)?;
                }
            }
            self.send_outgoing();
        }
        // Before the loop yields its CPU: it sleeps in `notify_complete` until the framework
        // wakes it, and the timer is what wakes it when the core's time comes first.
        self.arm_timer();
        self.ops.notify_complete(self.backlog.len() as u64);
        Ok(())
    }
}

/// Hands `input` to `core` at `now`, logging it first into `decisions` when one is kept: the
/// only way an input reaches the live core.
fn feed(
    core: &mut SchedCore<Vec<Slot>, LivePolicy>,
    decisions: &mut Option<(PathBuf, DecisionLog)>,
    now: u64,
    input: Input<'_>,
) -> Result<(), InputError> {
    let now = TimeNs(now);
    if let Some((_, log)) = decisions.as_mut() {
        log.push(Entry::input(now, &input));
    }
    core.handle(now, input)
}
