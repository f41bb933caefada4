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
//! - a failed idle snapshot is [`SchedCore::handle_snapshot_failed`]: the batch goes to the
//!   shared queue (counted as `snapshot-errors`); only a sustained run of failures ends the
//!   scheduler ([`SNAPSHOT_GIVE_UP_NS`]);
//! - a failed read of the queued-task ring buffer ends the batch early and is logged at most
//!   once a second with the number of failures in between ([`LogLimit`]).

#![forbid(unsafe_code)]

use crate::bpf::{DispatchedTask, QueuedTask, RL_CPU_ANY};
use crate::fast_wake::FastWakeTable;
use crate::fifo::Fifo;
use crate::idle_snapshot::Snapshot;
use crate::knobs::{KnobChange, Watcher};
use crate::ops::SchedOps;
pub(crate) use crate::policy_choice::LivePolicy;
use crate::record::{Event, Recorder, TailReader};
use crate::stats::{Counters, Sample, StatsLink};
use crate::sys::{allowed_cpus, now_ns, thread_cpu_ns};
use crate::task_events::TaskEvent;
use crate::wakers::Wakers;
use anyhow::{Context, Result, bail};
use hybridland_policy::{
    Affinity, Arrival, CoreConfig, CpuId, CpuSet, Dispatch, Input, InputError, LastRun, Nudging,
    Output, PlacementPolicy, PolicyConfig, Queued, SchedCore, SliceEnd, SliceMode, Slot,
    Snapshot as CoreSnapshot, Target, TimeNs, Topology, UtilSource, Waiting, WakePreempt, Waker,
    Why,
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

/// Default `--max-tasks`: the kernel's default `pid_max`, so a machine that keeps the default
/// never fills the core's task storage.
pub(crate) const DEFAULT_MAX_TASKS: usize = 32_768;

/// Highest `--max-tasks`. The core's storage for it (its slots, rounded up to a power of two)
/// comes from the framework's fixed 64 MiB heap, the process's only one, which the recorder
/// and the decision log share; this keeps it within [`STORAGE_BUDGET`]. More threads than this
/// are placed from a fresh state (`untracked`), which costs placement quality, never the heap.
pub(crate) const MAX_MAX_TASKS: usize = 65_536;

/// Most bytes the core's task storage may take of the 64 MiB heap (see [`MAX_MAX_TASKS`]).
pub(crate) const STORAGE_BUDGET: usize = 16 << 20;
const _: () = assert!(
    Slot::count_for(MAX_MAX_TASKS) * size_of::<Slot>() <= STORAGE_BUDGET,
    "--max-tasks at its highest outgrows the task storage's share of the heap"
);

/// The scheduler gives up when every idle snapshot has failed for this long, and at least
/// [`SNAPSHOT_GIVE_UP_MIN`] in a row. Transient causes (`EINTR`, `ENOMEM` or `EAGAIN` under
/// memory pressure) clear within milliseconds, and meanwhile each batch goes to the shared
/// queue, which is correct, only not hybrid-aware. A run of failures lasting 2 s (hundreds of
/// batches on a busy machine, and at least 10 attempts on an idle one, where the framework
/// wakes the loop once a second) means the program is gone or broken for good: the
/// scheduler would run blind, and the kernel's own scheduler serves the machine better, so
/// it exits with an error (a service manager restarts it: `Restart=on-failure`).
const SNAPSHOT_GIVE_UP_NS: u64 = 2_000_000_000;
/// See [`SNAPSHOT_GIVE_UP_NS`].
const SNAPSHOT_GIVE_UP_MIN: u64 = 10;

/// Longest the loop goes on after its end for the tail reader's answer.
const TAILS_WAIT_NS: u64 = 2_000_000_000;

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

/// What decides where tasks go.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// The policy, through the scheduler core.
    Policy,
    /// `--fifo`: every task to the shared queue in arrival order, no policy ([`Fifo`]).
    Fifo,
}

/// Loop settings.
pub(crate) struct LoopConfig {
    pub(crate) slice_ns: u64,
    pub(crate) mode: Mode,
    /// `--fixed-slice`: the full slice for every task, not divided by the queue depth.
    pub(crate) slice: SliceMode,
    /// Possible CPUs: a task allowed on that many may run anywhere.
    pub(crate) nr_possible: u64,
    /// `--max-tasks`: the core's task storage, reserved at start.
    pub(crate) max_tasks: usize,
    /// The wake-up fast path (not `--no-fast-wake`); it applies to hybridland's policy only.
    pub(crate) fast_wake: bool,
    /// Wake-up preemption (`--wake-preempt`).
    pub(crate) wake_preempt: bool,
}

impl LoopConfig {
    /// The core's settings for this loop: the defaults, with the loop's slice, and no
    /// up-migration scan without a helper to carry the nudges out.
    fn core(&self, helper: bool) -> CoreConfig {
        CoreConfig {
            slice_ns: self.slice_ns,
            slice: self.slice,
            nudging: if helper {
                CoreConfig::DEFAULT.nudging
            } else {
                Nudging::Off
            },
            wake_preempt: if self.wake_preempt {
                WakePreempt::SliceAhead
            } else {
                WakePreempt::Off
            },
            ..CoreConfig::DEFAULT
        }
    }
}

/// Rate limit for a repeated log line: the first occurrence, then at most one per gap, each
/// saying how many were left out.
#[derive(Debug)]
pub(crate) struct LogLimit {
    gap_ns: u64,
    last_ns: Option<u64>,
    suppressed: u64,
}

impl LogLimit {
    pub(crate) const fn new(gap_ns: u64) -> Self {
        Self {
            gap_ns,
            last_ns: None,
            suppressed: 0,
        }
    }

    /// Whether to log an occurrence at `now`; if so, how many were suppressed before it.
    pub(crate) fn allow(&mut self, now: u64) -> Option<u64> {
        if self
            .last_ns
            .is_some_and(|at| now.saturating_sub(at) < self.gap_ns)
        {
            self.suppressed += 1;
            return None;
        }
        self.last_ns = Some(now);
        Some(core::mem::take(&mut self.suppressed))
    }
}

/// Consecutive snapshot failures.
#[derive(Copy, Clone, Debug, Default)]
struct FailureRun {
    count: u64,
    since_ns: u64,
}

/// A helper thread of ours that sleeps on a pipe. scx_rustland_core refills the slice of a
/// task nothing else competes with, so a task placed on an E-core (or an SMT sibling) while
/// every P-core was busy would stay there after a P-core idles. To re-place it, the loop wakes
/// this thread and sends it to that CPU's queue: at the task's next slice end the CPU has
/// other work, the task comes back to user space and the policy places it again.
///
/// Not started in `--fifo` mode. Dropping it closes the pipe's writing end; the thread reads
/// end-of-file, closes the reading end and ends as soon as it next runs.
pub(crate) struct Nudger {
    tid: i32,
    pipe: std::io::PipeWriter,
    #[cfg_attr(not(test), expect(dead_code, reason = "joined only by tests"))]
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Nudger {
    /// Starts the helper. Call before `BpfScheduler::init` (a thread stack needs `mmap`).
    pub(crate) fn spawn() -> Result<Self> {
        let (mut reader, writer) = std::io::pipe()?;
        // The loop must never block on it: a full pipe means the helper has enough to read.
        rustix::io::ioctl_fionbio(&writer, true)?;
        let (tx, rx) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("hl-nudge".into())
            .stack_size(64 * 1024)
            .spawn(move || {
                let _ = tx.send(crate::sys::gettid());
                let mut buf = [0u8; 64];
                loop {
                    match reader.read(&mut buf) {
                        Ok(0) => break,
                        Ok(_) => {}
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(_) => break,
                    }
                }
            })?;
        let tid = rx.recv()?;
        Ok(Self {
            tid,
            pipe: writer,
            thread: Some(thread),
        })
    }

    /// Wakes the helper; the core sends it to the nudged CPU when it is queued.
    fn wake(&mut self) {
        // A full pipe (WouldBlock) wakes the helper just as well.
        let _ = self.pipe.write(&[1]);
    }

    /// Closes the pipe and waits for the helper to end (only once nothing needs this
    /// scheduler to run it: tests, or after the scheduler is detached).
    #[cfg(test)]
    fn close_and_join(mut self) {
        let thread = self.thread.take();
        drop(self);
        if let Some(t) = thread {
            t.join().unwrap();
        }
    }
}

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
        core.set_helper(nudger.as_ref().and_then(|n| u32::try_from(n.tid).ok()));
        let mut sched = Self {
            ops,
            core,
            decisions: None,
            cfg,
            control,
            counters: Counters::default(),
            stats: None,
            wakers: Wakers::new(),
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
        };
        sched.install_fast_wake(true);
        Ok(sched)
    }

    /// Writes the wake-up fast path's table for the policy and knobs in force (after a knob
    /// change too: the table depends on cluster balance), or switches it off where it does not
    /// apply. `announce`: say so in the log.
    fn install_fast_wake(&mut self, announce: bool) {
        let policy = match self.core.policy().hybridland() {
            Some(policy) if self.cfg.fast_wake && self.cfg.mode == Mode::Policy => policy,
            _ => {
                self.ops.set_fast_wake(None);
                if announce {
                    info!("wake-up fast path: off");
                }
                return;
            }
        };
        let topo = self.core.topology();
        let table = match &mut self.fast_table {
            Some(table) => {
                table.refill(topo, policy);
                table
            }
            None => self.fast_table.insert(FastWakeTable::new(
                topo,
                policy,
                self.cfg.slice_ns,
                self.nudger.as_ref().and_then(|n| u32::try_from(n.tid).ok()),
            )),
        };
        self.ops.set_fast_wake(Some(table));
        if announce {
            info!(
                "wake-up fast path: a task woken with its previous CPU's core idle may stay there in the kernel on {} of {} CPUs (--no-fast-wake: off)",
                table.nr_keep(),
                topo.nr_cpus()
            );
        }
    }

    /// Keeps a decision log (`--record`): the core's inputs and what the loop sent, for
    /// `hybrid-sim decisions`. `machine` is the machine file's text; the log takes at most
    /// `max_bytes` of memory.
    pub(crate) fn with_decision_log(
        mut self,
        path: PathBuf,
        machine: String,
        seed: u64,
        knobs: &PolicyConfig,
        max_bytes: usize,
    ) -> Self {
        let header = Header {
            format: decisions::FORMAT.to_owned(),
            version: decisions::VERSION,
            machine,
            policy: self.core.policy().name().to_owned(),
            seed,
            knobs: *knobs,
            core: CoreSettings::from(self.core.config()),
            max_tasks: self.cfg.max_tasks,
            helper: self.nudger.as_ref().and_then(|n| u32::try_from(n.tid).ok()),
            max_bytes,
            truncated: false,
        };
        self.decisions = Some((path, DecisionLog::new(header)));
        self
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

    /// Records what the loop sees (`--record`); `tails` reads `/proc` for the tasks still
    /// running when the recording stops, off the loop.
    pub(crate) fn with_recorder(mut self, recorder: Recorder, tails: Option<TailReader>) -> Self {
        self.recorder = Some(recorder);
        self.tail_reader = tails;
        self
    }

    /// Ends the recording, if it still records: the counters now, and a request to the tail
    /// reader for which recorded tasks still run. Without a reader the recording ends
    /// without them: the loop never reads `/proc` (one file per task, with tasks waiting).
    fn stop_recording(&mut self) {
        let Some(r) = self.recorder.as_mut().filter(|r| r.recording()) else {
            return;
        };
        self.counters.fast = self.ops.counters().fast;
        let candidates = r.stop(now_ns(), &self.counters);
        match &self.tail_reader {
            Some(reader) => {
                self.tails_pending = reader.request(candidates);
                if !self.tails_pending {
                    warn!(
                        "record: the /proc reader is gone: the recording ends without the tasks still running"
                    );
                }
            }
            None => r.set_tails(Vec::new()),
        }
    }

    /// Takes the tail reader's answer, if it is there.
    fn collect_tails(&mut self) {
        if !self.tails_pending {
            return;
        }
        if let (Some(reader), Some(r)) = (self.tail_reader.as_ref(), self.recorder.as_mut())
            && let Some(tails) = reader.try_take()
        {
            r.set_tails(tails);
            self.tails_pending = false;
        }
    }

    /// Ends the recording when the loop has ended, before the scheduler detaches (so the
    /// tasks still running are where this scheduler put them): it stops, and the loop keeps
    /// scheduling, the reader thread included, until the reader has answered, for at most
    /// [`TAILS_WAIT_NS`].
    pub(crate) fn finish_recording(&mut self) {
        self.stop_recording();
        let deadline = now_ns().saturating_add(TAILS_WAIT_NS);
        while self.tails_pending && now_ns() < deadline {
            // Errors only end the wait early: the loop is over either way.
            if self.schedule_batch().is_err() {
                break;
            }
            self.apply_events();
            self.collect_tails();
            if self.tails_pending {
                std::thread::sleep(core::time::Duration::from_micros(200));
            }
        }
        if self.tails_pending {
            warn!(
                "record: the running tasks were not read within {} ms: the recording ends without them",
                TAILS_WAIT_NS / 1_000_000
            );
        }
    }

    /// Answers the stats server's requests through `link`.
    pub(crate) fn with_stats(mut self, link: StatsLink) -> Self {
        self.stats = Some(link);
        self
    }

    /// Runs until a signal or the kernel ends it, or the idle snapshot fails for good.
    pub(crate) fn run(&mut self) -> Result<()> {
        let mut audit = None;
        while !self.ops.exited() {
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
                let now = now_ns();
                if now >= at.ns() {
                    self.tick(now)?;
                }
            }
            self.poll_knob();
            self.answer_stats();
        }
        if let Some(a) = audit {
            info!(
                "fast-path audit: {} kept wake-ups checked against the policy, {} disagreed, {} lost",
                a.checked, a.disagreed, a.lost
            );
        }
        Ok(())
    }

    /// Answers each pending stats request with the counters as they stand (a copy and a
    /// channel send; the server side does the arithmetic and the formatting). A server that
    /// went away is not the loop's concern.
    fn answer_stats(&mut self) {
        let Some(link) = &self.stats else { return };
        while link.requests.try_recv().is_ok() {
            let core = self.core.stats();
            let sample = Sample {
                counters: self.counters,
                fw: self.ops.counters(),
                balance: self.core.policy_config().map(|c| c.cluster_balance),
                backlog: self.backlog.len() as u64,
                tasks_tracked: core.tracked,
                tasks_high_water: core.high_water,
                tasks_untracked: core.untracked,
                events_dropped: self.ops.event_counters().dropped.iter().sum(),
                loop_cpu_ns: thread_cpu_ns(),
            };
            let _ = link.samples.send(sample);
        }
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

    /// Applies a change of the control file, if the watcher found one.
    fn poll_knob(&mut self) {
        let Some(control) = self.control.as_ref() else {
            return;
        };
        let Some(current) = self.core.policy_config().map(|c| c.cluster_balance) else {
            return;
        };
        match control.try_change() {
            None | Some(KnobChange::None) => {}
            Some(KnobChange::Set(mode)) => {
                control.applied(mode);
                info!(
                    "cluster balance: {current} -> {mode} (from {})",
                    control.path().display()
                );
                // Only hybridland has the knob, and only then is there a current mode.
                let _ = self.feed(now_ns(), Input::ClusterBalance { mode });
                self.install_fast_wake(false);
            }
            Some(KnobChange::Rejected) => {
                warn!(
                    "{}: expected off, on or auto; keeping {current}",
                    control.path().display()
                );
            }
        }
    }

    /// An idle snapshot, or `None` if this one failed (counted). Fails only when every
    /// snapshot has failed for [`SNAPSHOT_GIVE_UP_NS`] and at least [`SNAPSHOT_GIVE_UP_MIN`]
    /// times in a row.
    fn snapshot(&mut self, now: u64) -> Result<Option<Snapshot>> {
        let t0 = now_ns();
        let taken = self.ops.snapshot();
        let rounds = &mut self.counters.rounds;
        rounds.snapshots += 1;
        rounds.snapshot_ns += now_ns().saturating_sub(t0);
        match taken {
            Ok(s) => {
                self.snapshot_failures = FailureRun::default();
                Ok(Some(s))
            }
            Err(e) => {
                self.counters.snapshot_errors += 1;
                let run = &mut self.snapshot_failures;
                if run.count == 0 {
                    run.since_ns = now;
                    warn!("{e:#}: this batch goes to the shared queue");
                }
                run.count += 1;
                if run.count >= SNAPSHOT_GIVE_UP_MIN
                    && now.saturating_sub(run.since_ns) >= SNAPSHOT_GIVE_UP_NS
                {
                    error!(
                        "{} idle snapshots in a row failed over {} ms",
                        run.count,
                        (now - run.since_ns) / 1_000_000
                    );
                    bail!("the idle snapshot keeps failing: {e:#}");
                }
                Ok(None)
            }
        }
    }

    /// The core's timer: a fresh snapshot for its up-migration scan, the tick, and a nudge
    /// it gives carried out by waking the helper.
    fn tick(&mut self, now: u64) -> Result<()> {
        if let Some(snap) = self.snapshot(now)? {
            let snap = CoreSnapshot {
                idle: &snap.idle,
                queued: snap.queued.as_ref(),
                caller_cpu: None,
            };
            // A batch was polled empty before: nothing pending, nothing refused.
            let _ = self.feed(now, Input::Snapshot(snap));
        }
        let _ = self.feed(now, Input::Tick);
        // Between batches the core has only a nudge to give.
        if let Some(out @ Output::Nudge(n)) = self.core.poll()
            && let Some(nudger) = self.nudger.as_mut()
        {
            debug!(cpu = n.cpu.0, pid = n.task, better = %n.better.step, "nudge");
            nudger.wake();
            self.counters.nudges += 1;
            self.carried_out(&out);
        }
        Ok(())
    }

    /// Sends the backlog, oldest first, until the ring buffer refuses one. Returns whether it
    /// is empty now.
    fn flush_backlog(&mut self) -> bool {
        while let Some(task) = self.backlog.front() {
            if self.ops.dispatch(task).is_err() {
                return false;
            }
            let _sent = self.backlog.pop_front();
        }
        true
    }

    /// Dispatches this batch's decisions. Once one fails (the ring buffer is full) it and every
    /// later one go to the backlog, to the shared queue: the CPU was picked against this
    /// snapshot, and by the time the ring buffer has room it is stale.
    fn send_outgoing(&mut self) {
        let mut full = !self.backlog.is_empty();
        let mut outgoing = core::mem::take(&mut self.outgoing);
        for task in outgoing.drain(..) {
            if !full {
                match self.ops.dispatch(&task) {
                    Ok(()) => continue,
                    Err(e) => {
                        full = true;
                        debug!("dispatching pid {} failed: {e:#}; kept for later", task.pid);
                    }
                }
            }
            let mut later = task;
            later.cpu = RL_CPU_ANY;
            self.backlog.push_back(later);
            self.counters.dispatch_retries += 1;
        }
        self.outgoing = outgoing;
    }

    /// Applies the task events that arrived since the last call: an exit takes the task out of
    /// the task table at once (and ends it in the recording); wake-ups and refills are counted,
    /// and a wake-up by a task goes into the recording. (`--fifo` loads no event source:
    /// nothing to drain there.)
    fn apply_events(&mut self) {
        let (core, decisions, counters, recorder, wakers) = (
            &mut self.core,
            &mut self.decisions,
            &mut self.counters,
            &mut self.recorder,
            &mut self.wakers,
        );
        let mut full = false;
        let drained = self.ops.drain_events(&mut |ev| match ev {
            Ok(TaskEvent::Exit { at_ns, pid, .. }) => {
                counters.events.exit += 1;
                if let Ok(task) = u32::try_from(pid) {
                    let held = core.stats().exits_tracked;
                    // Any core takes an exit.
                    let _ = feed(core, decisions, at_ns, Input::Exit { task });
                    counters.events.exit_tracked += core.stats().exits_tracked - held;
                }
                if let Some(r) = recorder.as_mut() {
                    r.exited(pid, at_ns);
                }
            }
            Ok(TaskEvent::Waking { at_ns, pid, waker }) => {
                counters.events.waking += 1;
                counters.events.woken_by_task += u64::from(waker.is_some());
                if let Some(w) = waker {
                    wakers.note(pid, w.pid, w.cpu, at_ns);
                }
                if let (Some(r), Some(w)) = (recorder.as_mut(), waker) {
                    full |= r.woken(at_ns, pid, w.pid);
                }
            }
            Ok(TaskEvent::Refill { .. }) => counters.events.refill += 1,
            Err(e) => {
                counters.events.bad += 1;
                debug!("task-event record skipped: {e}");
            }
        });
        if let Err(e) = drained {
            self.counters.events.read_errors += 1;
            debug!("reading task events: {e:#}");
        }
        if full {
            self.stop_recording();
        }
    }

    /// Drains up to [`BATCH_MAX`] queued tasks into `self.queued`, fewer when the backlog is
    /// near [`BACKLOG_MAX`] (none when it is past it: the rest stay queued in the kernel).
    fn dequeue_batch(&mut self) {
        self.queued.clear();
        let room = BACKLOG_MAX
            .saturating_sub(self.backlog.len())
            .min(BATCH_MAX);
        while self.queued.len() < room {
            match self.ops.dequeue() {
                Ok(Some(task)) => self.queued.push(task),
                Ok(None) => break,
                Err(code) => {
                    self.counters.dequeue_errors += 1;
                    if let Some(skipped) = self.dequeue_log.allow(now_ns()) {
                        warn!(
                            "reading the queued-task ring buffer failed: {code} \
                             ({skipped} more since the last report)"
                        );
                    }
                    break;
                }
            }
        }
    }

    fn schedule_batch(&mut self) -> Result<()> {
        // Events first: a wake-up's waker reaches its ring before the woken task reaches the
        // framework's, and the core takes it with the task (`Wakers`).
        self.apply_events();
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
                None => self.decide_batch(now_ns())?,
            }
            self.send_outgoing();
        }
        self.ops.notify_complete(self.backlog.len() as u64);
        Ok(())
    }

    /// Copies the batch into the recording, if any (with the clock read after the dequeue, so
    /// no run the batch reports ends after it).
    fn record_batch(&mut self) {
        let Some(r) = self.recorder.as_mut().filter(|r| r.recording()) else {
            return;
        };
        if self.queued.is_empty() {
            return;
        }
        let at_ns = now_ns();
        let mut full = false;
        for t in &self.queued {
            let ev = Event {
                at_ns,
                start_ts: t.start_ts,
                stop_ts: t.stop_ts,
                exec_runtime: t.exec_runtime,
                pid: t.pid,
                cpu: i16::try_from(t.cpu).unwrap_or(-1),
                wakeup: t.flags & SCX_ENQ_WAKEUP != 0,
            };
            let mut comm = [0u8; 16];
            for (to, &from) in comm.iter_mut().zip(t.comm.iter()) {
                // A C char: the name's bytes.
                *to = from as u8;
            }
            full |= r.observe(ev, &comm);
        }
        if full {
            self.stop_recording();
        }
    }

    /// Hands the batch and an idle snapshot to the core and turns what it polls out into
    /// dispatches, in `self.outgoing`.
    fn decide_batch(&mut self, now: u64) -> Result<()> {
        let snapshot_ns = self.counters.rounds.snapshot_ns;
        let snap = self.snapshot(now)?;
        let queued_cpus = snap.as_ref().and_then(|s| s.queued);
        let waiting = self.ops.nr_queued();
        let _ = self.feed(now, Input::Backlog { waiting });
        let batch = core::mem::take(&mut self.queued);
        for (token, task) in (0u32..).zip(&batch) {
            let helper = self.nudger.as_ref().is_some_and(|n| n.tid == task.pid);
            let allowed = if helper {
                None
            } else {
                allowed_cpus(
                    task.pid,
                    task.nr_cpus_allowed,
                    self.cfg.nr_possible,
                    self.core.topology(),
                )
            };
            if let (Some(r), Some(allowed)) = (self.recorder.as_mut(), allowed.as_ref()) {
                r.allowed(
                    task.pid,
                    allowed,
                    task.nr_cpus_allowed < self.cfg.nr_possible,
                );
            }
            let waker = if task.flags & SCX_ENQ_WAKEUP != 0 {
                self.wakers.take(task.pid, now)
            } else {
                None
            };
            self.counters.events.waker_to_core += u64::from(waker.is_some());
            let queued = Queued {
                token,
                ..queued_input(task, allowed.as_ref(), queued_cpus.as_ref(), waker)
            };
            // Cannot fail: a batch holds at most BATCH_MAX tasks and was polled empty.
            let _ = self.feed(now, Input::Queued(queued));
        }
        // Neither can these: the core reads idle snapshots.
        match &snap {
            Some(snap) => {
                let caller_cpu = self.ops.current_cpu();
                let _ = self.feed(
                    now,
                    Input::Snapshot(CoreSnapshot {
                        idle: &snap.idle,
                        queued: snap.queued.as_ref(),
                        caller_cpu,
                    }),
                );
                // The second look earns its cost (one `bpf()` call) only for a batch with a
                // pick from the snapshot; a failed one keeps the picks as they are.
                if self.core.wants_recheck()
                    && let Some(again) = self.snapshot(now)?
                {
                    let _ = self.feed(
                        now,
                        Input::Recheck(CoreSnapshot {
                            idle: &again.idle,
                            queued: again.queued.as_ref(),
                            caller_cpu: None,
                        }),
                    );
                }
            }
            None => {
                let _ = self.feed(now, Input::SnapshotFailed);
            }
        }
        // Dispatches come in the core's order (slice ends first), each with its task's place
        // in the batch as its token. A batch decided here gives no nudge (those come at ticks).
        while let Some(out @ Output::Dispatch(d)) = self.core.poll() {
            let Some(task) = batch.get(d.token as usize) else {
                // The core gives back the tokens it was handed, so this is a core defect.
                error!(
                    token = d.token,
                    pid = d.task,
                    "a dispatch for no task of the batch"
                );
                continue;
            };
            self.count(task, &d);
            self.carried_out(&out);
            let mut out = DispatchedTask::new(task);
            out.slice_ns = d.slice_ns;
            out.vtime = d.vtime;
            out.cpu = d.target.cpu().map_or(RL_CPU_ANY, |c| i32::from(c.0));
            // The bit is the kernel's "preempt the current task"; the kernel honours it only
            // for a local queue, so the patched dispatch reads it and kicks the CPU itself.
            out.flags &= !ENQ_PREEMPT;
            if matches!(d.target, Target::Preempt(_)) {
                out.flags |= ENQ_PREEMPT;
            }
            debug!(
                pid = task.pid,
                prev = task.cpu,
                util = d.util,
                why = ?d.why,
                target = out.cpu,
                "placed"
            );
            self.outgoing.push(out);
        }
        self.queued = batch;
        let rounds = &mut self.counters.rounds;
        let in_snapshots = rounds.snapshot_ns - snapshot_ns;
        rounds.decide_ns += now_ns().saturating_sub(now).saturating_sub(in_snapshots);
        Ok(())
    }

    /// Counts a dispatch by why it goes where it goes, and records the decision.
    fn count(&mut self, task: &QueuedTask, d: &Dispatch) {
        let c = &mut self.counters;
        match d.why {
            Why::Stale(_) => c.stale += 1,
            Why::AffinityUnknown => c.affinity_errors += 1,
            _ => {}
        }
        if let Some(step) = d.why.step() {
            c.steps.add(step);
        }
        let overflow = d.why.placement().is_some_and(|p| p.is_overflow());
        c.overflow += u64::from(overflow);
        let kept = d.why.slice_end() == Some(SliceEnd::Keep);
        c.kept += u64::from(kept);
        c.preempts += u64::from(matches!(d.target, Target::Preempt(_)));
        if let Some(r) = self.recorder.as_mut()
            && !matches!(d.why, Why::Helper | Why::Blind | Why::AffinityUnknown)
        {
            r.decision(task.pid, d.why.step(), overflow, kept);
        }
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

/// A queued task in the core's terms (token 0: the caller sets its own). At a slice end, who
/// waits is what the snapshot shows: tasks in the CPU's own queue, or nobody the loop can see.
/// The shared queue's tasks are not counted as waiting, though the snapshot can read them: the
/// loop cannot tell which CPUs those tasks may use, so counting them makes tasks leave CPUs
/// nobody else can take (vm-check's knob-runtime check fails), and it moves no VM figure.
fn queued_input<'a>(
    task: &QueuedTask,
    allowed: Option<&'a CpuSet>,
    queued_cpus: Option<&CpuSet>,
    waker: Option<Waker>,
) -> Queued<'a> {
    let ran = task.start_ts != 0;
    let cpu = u16::try_from(task.cpu).ok().map(CpuId).filter(|_| ran);
    let arrival = if task.flags & SCX_ENQ_WAKEUP != 0 {
        Arrival::Wakeup { waker }
    } else {
        let own = cpu.is_some_and(|c| queued_cpus.is_some_and(|q| q.contains(c)));
        Arrival::SliceEnd {
            waiting: if own {
                Waiting::OwnQueue
            } else {
                Waiting::Nobody
            },
        }
    };
    Queued {
        // Pids are positive; a negative one cannot be stored, and is decided untracked.
        task: u32::try_from(task.pid).unwrap_or(u32::MAX),
        token: 0,
        arrival,
        cpu,
        last_run: ran.then_some(LastRun {
            start_ns: task.start_ts,
            stop_ns: task.stop_ts,
        }),
        weight: u32::try_from(task.weight).unwrap_or(u32::MAX),
        affinity: allowed.map_or(Affinity::Unknown, Affinity::Cpus),
        util: UtilSource::Estimate,
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::task_events::{RawEventError, SourceCounters, Waker};
    use hybridland_policy::{Policy, PolicyConfig};

    fn hybridland(topo: &Topology) -> LivePolicy {
        Box::new(Policy::new(topo, &PolicyConfig::default()).unwrap())
    }

    /// A framework with a user ring buffer of `ring_cap` slots (the kernel empties it when the
    /// test says), scripted dequeue errors and scripted snapshots (all idle when none left).
    struct FakeOps {
        incoming: VecDeque<Result<QueuedTask, i32>>,
        ring: Vec<DispatchedTask>,
        ring_cap: usize,
        delivered: Vec<DispatchedTask>,
        snapshots: VecDeque<Result<CpuSet, ()>>,
        all: CpuSet,
        pending: Vec<u64>,
        nr_snapshots: usize,
        /// The CPU the loop runs on.
        own: Option<CpuId>,
        /// Task events to hand over at the next drain.
        events: Vec<Result<TaskEvent, RawEventError>>,
        /// CPUs whose own queue holds tasks, in every snapshot.
        queued_cpus: CpuSet,
        /// `--fifo`'s idle picks, in order (none idle when none left).
        picks: VecDeque<Option<i32>>,
        /// Every fast-path table installed (`None`: switched off), in order.
        fast_wake: Vec<Option<FastWakeTable>>,
    }

    impl FakeOps {
        fn new(topo: &Topology, ring_cap: usize) -> Self {
            Self {
                incoming: VecDeque::new(),
                ring: Vec::new(),
                ring_cap,
                delivered: Vec::new(),
                snapshots: VecDeque::new(),
                all: *topo.cpus(),
                pending: Vec::new(),
                nr_snapshots: 0,
                own: None,
                events: Vec::new(),
                queued_cpus: CpuSet::EMPTY,
                picks: VecDeque::new(),
                fast_wake: Vec::new(),
            }
        }

        /// The kernel takes everything in the ring buffer.
        fn consume(&mut self) {
            self.delivered.append(&mut self.ring);
        }
    }

    impl SchedOps for FakeOps {
        fn dequeue(&mut self) -> Result<Option<QueuedTask>, i32> {
            self.incoming.pop_front().transpose()
        }
        fn dispatch(&mut self, task: &DispatchedTask) -> Result<()> {
            if self.ring.len() >= self.ring_cap {
                bail!("ring buffer full");
            }
            self.ring.push(task.clone());
            Ok(())
        }
        fn notify_complete(&mut self, nr_pending: u64) {
            self.pending.push(nr_pending);
        }
        fn snapshot(&mut self) -> Result<Snapshot> {
            self.nr_snapshots += 1;
            match self.snapshots.pop_front().unwrap_or(Ok(self.all)) {
                Ok(idle) => Ok(Snapshot {
                    idle,
                    queued: Some(self.queued_cpus),
                }),
                Err(()) => bail!("snapshot failed"),
            }
        }
        fn pick_idle(&mut self, _pid: i32, _prev: i32) -> Option<i32> {
            self.picks.pop_front().flatten()
        }
        fn nr_queued(&mut self) -> u64 {
            // As the framework counts: queued for user space, not yet dequeued.
            self.incoming.len() as u64
        }
        fn counters(&mut self) -> crate::stats::Framework {
            crate::stats::Framework::default()
        }
        fn set_fast_wake(&mut self, table: Option<&FastWakeTable>) {
            self.fast_wake.push(table.cloned());
        }
        fn exited(&mut self) -> bool {
            false
        }
        fn current_cpu(&mut self) -> Option<CpuId> {
            self.own
        }
        fn drain_events(
            &mut self,
            each: &mut dyn FnMut(Result<TaskEvent, RawEventError>),
        ) -> Result<usize> {
            let n = self.events.len();
            self.events.drain(..).for_each(each);
            Ok(n)
        }
        fn event_counters(&mut self) -> SourceCounters {
            SourceCounters::default()
        }
    }

    fn machine() -> Topology {
        crate::test_machines::vm()
    }

    fn wakeup(pid: i32) -> QueuedTask {
        QueuedTask {
            pid,
            cpu: 0,
            nr_cpus_allowed: 1024,
            flags: SCX_ENQ_WAKEUP,
            start_ts: 0,
            stop_ts: 0,
            exec_runtime: 0,
            weight: 100,
            vtime: 0,
            enq_cnt: 1,
            comm: [0; 16],
        }
    }

    fn config(mode: Mode, slice: SliceMode) -> LoopConfig {
        LoopConfig {
            slice_ns: 5_000_000,
            mode,
            slice,
            nr_possible: 8,
            max_tasks: DEFAULT_MAX_TASKS,
            fast_wake: true,
            wake_preempt: true,
        }
    }

    fn sched_with(ring_cap: usize, cfg: LoopConfig) -> Scheduler<FakeOps> {
        let topo = machine();
        let ops = FakeOps::new(&topo, ring_cap);
        Scheduler::new(ops, topo.clone(), hybridland(&topo), cfg, None, None).unwrap()
    }

    fn sched(ring_cap: usize, fifo: bool) -> Scheduler<FakeOps> {
        let mode = if fifo { Mode::Fifo } else { Mode::Policy };
        sched_with(ring_cap, config(mode, SliceMode::Scaled))
    }

    /// A scheduler with room for 256 tasks: the test binary's heap is the framework's fixed
    /// 64 MiB arena, which tests running in parallel with the default storage can exhaust.
    fn small(fifo: bool) -> Scheduler<FakeOps> {
        let mode = if fifo { Mode::Fifo } else { Mode::Policy };
        sched_with(
            64,
            LoopConfig {
                max_tasks: 256,
                ..config(mode, SliceMode::Scaled)
            },
        )
    }

    fn pids(tasks: &[DispatchedTask]) -> Vec<i32> {
        tasks.iter().map(|t| t.pid).collect()
    }

    #[test]
    fn the_fast_path_gets_the_policys_table_and_a_new_one_when_the_knob_changes() {
        let mut s = small(false);
        let first = s
            .ops
            .fast_wake
            .last()
            .cloned()
            .flatten()
            .expect("a table at start");
        assert!(first.nr_keep() > 0);
        let before = first.balance();
        assert_ne!(
            before,
            hybridland_policy::BalanceRange { from: 0, until: 0 }
        );
        let mode = hybridland_policy::ClusterBalance::Off;
        s.feed(1, Input::ClusterBalance { mode }).unwrap();
        s.install_fast_wake(false);
        let after = s
            .ops
            .fast_wake
            .last()
            .cloned()
            .flatten()
            .expect("a table after the change");
        assert_eq!(
            after.balance(),
            hybridland_policy::BalanceRange { from: 0, until: 0 }
        );
    }

    #[test]
    fn no_fast_path_under_fifo_or_no_fast_wake() {
        let s = small(true);
        assert!(matches!(s.ops.fast_wake.as_slice(), [None]));
        let s = sched_with(
            64,
            LoopConfig {
                max_tasks: 256,
                fast_wake: false,
                ..config(Mode::Policy, SliceMode::Scaled)
            },
        );
        assert!(matches!(s.ops.fast_wake.as_slice(), [None]));
    }

    #[test]
    fn the_loops_own_cpu_is_idle_for_a_wakeup_unless_a_task_was_preempted_there() {
        // A spinner holds CPU 4 (P-core 4-5); the loop runs on CPU 6 (P-core 6-7), which the
        // kernel's mask shows busy. A woken task gets the P-core the loop sits on.
        let mut busy = CpuSet::EMPTY;
        busy.insert(CpuId(4));
        busy.insert(CpuId(6));
        let mut s = sched(64, false);
        s.ops.own = Some(CpuId(6));
        let idle = s.ops.all.and_not(&busy);
        s.ops.snapshots.extend([Ok(idle), Ok(idle)]);
        s.ops.incoming.push_back(Ok(wakeup(1)));
        s.schedule_batch().unwrap();
        assert!([6, 7].contains(&s.ops.ring[0].cpu), "{:?}", s.ops.ring[0]);
        assert_eq!(
            s.counters.steps.0[hybridland_policy::Step::IdlePCore.index()],
            1
        );
        // The loop preempted a task on CPU 6 at its slice end: that task keeps CPU 6 and the
        // woken one goes elsewhere, not to CPU 6's core.
        let mut s = sched(64, false);
        s.ops.own = Some(CpuId(6));
        s.ops.snapshots.extend([Ok(idle), Ok(idle)]);
        let mut back = wakeup(2);
        back.flags = 0;
        back.cpu = 6;
        back.start_ts = 1;
        back.stop_ts = 2;
        s.ops.incoming.extend([Ok(back), Ok(wakeup(3))]);
        s.schedule_batch().unwrap();
        let by_pid = |pid| s.ops.ring.iter().find(|t| t.pid == pid).unwrap().cpu;
        assert_eq!(by_pid(2), 6);
        assert!(![6, 7].contains(&by_pid(3)), "{}", by_pid(3));
    }

    #[test]
    fn the_loop_records_each_dequeued_task_and_each_decision() {
        let dir = std::env::temp_dir().join(format!("hl-loop-record-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cfg = crate::record::RecordConfig {
            trace: dir.join("t.json"),
            live: dir.join("t.live.json"),
            max_events: 100,
            max_tasks: 100,
            policy: "hybridland".into(),
            policy_seed: 0,
            settings: Vec::new(),
            machine_source: "test".into(),
        };
        let now = now_ns();
        let mut s = sched(64, false).with_recorder(
            Recorder::new(cfg, now - 10_000_000, Counters::default(), Vec::new()),
            Some(TailReader::spawn().unwrap()),
        );
        // Two wake-ups, and a task back from a 3 ms run on E-core 1 that ended 1 ms ago.
        let mut back = wakeup(3);
        back.flags = 0;
        back.cpu = 1;
        back.start_ts = now - 4_000_000;
        back.stop_ts = now - 1_000_000;
        back.exec_runtime = 3_000_000;
        s.ops
            .incoming
            .extend([Ok(wakeup(1)), Ok(wakeup(2)), Ok(back)]);
        s.schedule_batch().unwrap();
        // The recording stops; /proc is read by the reader thread while the loop goes on.
        s.finish_recording();
        assert!(!s.tails_pending, "the reader answered");
        let counters = s.counters;
        let recording = s.into_parts().recording;
        let (recorder, topo) = recording.unwrap();
        let (trace, live) = recorder.build(&topo).unwrap();
        assert_eq!(live.events, 3);
        // Each decision counted once: a placement by a step or a kept CPU.
        let placed: u64 = live.steps.iter().map(|s| s.count).sum();
        assert_eq!(placed + live.kept, 3);
        assert_eq!(placed, counters.steps.0.iter().sum::<u64>());
        // Only the task that ran is in the trace: 3 ms on a 640 E-core, 1.875 ms of work.
        assert_eq!(trace.tasks.len(), 1);
        assert_eq!(
            trace.tasks[0].phases,
            [hybridland_trace::format::Phase::RunNs(1_875_000)]
        );
    }

    /// The event source's wake-ups by a task go into the recording (not those from an
    /// interrupt), and one that fills its buffer stops the recording.
    #[test]
    fn wakeups_by_a_task_go_into_the_recording_until_it_is_full() {
        let dir = std::env::temp_dir().join(format!("hl-loop-wakes-{}", std::process::id()));
        let cfg = crate::record::RecordConfig {
            trace: dir.join("t.json"),
            live: dir.join("t.live.json"),
            max_events: 2,
            max_tasks: 100,
            policy: "hybridland".into(),
            policy_seed: 0,
            settings: Vec::new(),
            machine_source: "test".into(),
        };
        let now = now_ns();
        let mut s = sched(64, false).with_recorder(
            Recorder::new(cfg, now, Counters::default(), Vec::new()),
            None,
        );
        let waking = |pid, waker: Option<i32>| {
            Ok(TaskEvent::Waking {
                at_ns: now + 1_000,
                pid,
                waker: waker.map(|pid| Waker { pid, cpu: CpuId(4) }),
            })
        };
        s.ops.events.extend([waking(1, Some(3)), waking(2, None)]);
        s.apply_events();
        let r = s.recorder.as_ref().unwrap();
        assert!(r.recording());
        assert_eq!(
            r.wakes(),
            [crate::record::Wake {
                at_ns: now + 1_000,
                pid: 1,
                waker: 3
            }]
        );
        s.ops
            .events
            .extend([waking(2, Some(3)), waking(5, Some(3))]);
        s.apply_events();
        let r = s.recorder.as_ref().unwrap();
        assert!(!r.recording(), "a full buffer stops the recording");
        assert_eq!(r.wakes().len(), 2);
    }

    #[test]
    fn a_wake_up_reaches_the_core_with_its_waker_from_the_same_round() {
        let mut s = sched(64, false);
        let waking = |pid| {
            Ok(TaskEvent::Waking {
                at_ns: now_ns(),
                pid,
                waker: Some(Waker {
                    pid: 9,
                    cpu: CpuId(4),
                }),
            })
        };
        // The event and the woken task arrive before the same round: the event is applied
        // first, so the task is handed over with its waker.
        s.ops.events.push(waking(1));
        s.ops.incoming.extend([Ok(wakeup(1)), Ok(wakeup(2))]);
        s.schedule_batch().unwrap();
        assert_eq!(
            s.counters.events.waker_to_core, 1,
            "task 2 had no waking event"
        );
        // Taken with that wake-up: the next one, with no event of its own, has none.
        s.ops.incoming.push_back(Ok(wakeup(1)));
        s.schedule_batch().unwrap();
        assert_eq!(s.counters.events.waker_to_core, 1);
    }

    #[test]
    fn an_exit_event_takes_the_task_out_of_the_table_at_once() {
        let mut s = sched(64, false);
        s.ops
            .incoming
            .extend([Ok(wakeup(1)), Ok(wakeup(2)), Ok(wakeup(3))]);
        s.schedule_batch().unwrap();
        assert_eq!(s.core.stats().tracked, 3);
        let at_ns = now_ns();
        s.ops.events.extend([
            Ok(TaskEvent::Exit {
                at_ns,
                pid: 2,
                tgid: 2,
            }),
            // Not a task the loop saw: counted, nothing to forget.
            Ok(TaskEvent::Exit {
                at_ns,
                pid: 99,
                tgid: 99,
            }),
            Ok(TaskEvent::Waking {
                at_ns,
                pid: 1,
                waker: Some(Waker {
                    pid: 3,
                    cpu: CpuId(4),
                }),
            }),
            Ok(TaskEvent::Waking {
                at_ns,
                pid: 3,
                waker: None,
            }),
            Ok(TaskEvent::Refill {
                at_ns,
                pid: 1,
                cpu: CpuId(0),
                slice_us: 20_000,
            }),
            Err(RawEventError::Kind(7)),
        ]);
        s.apply_events();
        assert_eq!(s.core.stats().tracked, 2);
        assert!(s.core.task(2).is_none() && s.core.task(1).is_some());
        let e = s.counters.events;
        assert_eq!(
            (
                e.exit,
                e.exit_tracked,
                e.waking,
                e.woken_by_task,
                e.refill,
                e.bad
            ),
            (2, 1, 2, 1, 1, 1)
        );
        // Drained: a second call applies nothing again.
        s.apply_events();
        assert_eq!(s.counters.events, e);
    }

    /// Task 1 placed on an idle machine and taken by the kernel, then back from its CPU at a
    /// slice end after running `ran_ns` (until 1 ms ago): the scheduler and that slice end.
    fn placed_then_slice_end(ran_ns: u64) -> (Scheduler<FakeOps>, QueuedTask) {
        let mut s = small(false);
        let now = now_ns();
        s.ops.snapshots.push_back(Ok(s.ops.all));
        s.ops.incoming.push_back(Ok(wakeup(1)));
        s.schedule_batch().unwrap();
        let cpu = s.ops.ring[0].cpu;
        s.ops.consume();
        let mut back = wakeup(1);
        back.flags = 0;
        back.cpu = cpu;
        back.start_ts = now - ran_ns - 1_000_000;
        back.stop_ts = now - 1_000_000;
        back.exec_runtime = ran_ns;
        (s, back)
    }

    /// Beside hogs no CPU is idle: the shared queue, which the framework keeps in vtime order
    /// (`scx_bpf_dsq_insert_vtime`), gets each task with the core's vtime, so a task that
    /// slept goes ahead of a hog back from a 20 ms run.
    #[test]
    fn the_shared_queue_gets_the_cores_vtime_a_sleeper_before_a_hog() {
        // It ran 20 ms; others wait on its CPU and nothing is idle.
        let (mut s, back) = placed_then_slice_end(20_000_000);
        s.ops.queued_cpus = s.ops.all;
        s.ops
            .snapshots
            .extend([Ok(CpuSet::EMPTY), Ok(CpuSet::EMPTY)]);
        s.ops.incoming.extend([Ok(back), Ok(wakeup(2))]);
        s.schedule_batch().unwrap();
        let by_pid = |pid| s.ops.ring.iter().find(|t| t.pid == pid).unwrap().clone();
        let (hog, sleeper) = (by_pid(1), by_pid(2));
        assert_eq!((hog.cpu, sleeper.cpu), (RL_CPU_ANY, RL_CPU_ANY));
        assert!(
            sleeper.vtime < hog.vtime && hog.vtime > 0,
            "sleeper {} hog {}",
            sleeper.vtime,
            hog.vtime
        );
    }

    /// `--fifo`: a task goes to the idle CPU the framework claims for it, else to the shared
    /// queue.
    #[test]
    fn fifo_sends_a_task_to_the_idle_cpu_claimed_for_it() {
        let mut s = small(true);
        s.ops.picks.extend([Some(6), None]);
        s.ops.incoming.extend([Ok(wakeup(1)), Ok(wakeup(2))]);
        s.schedule_batch().unwrap();
        let cpus: Vec<_> = s.ops.ring.iter().map(|t| (t.pid, t.cpu)).collect();
        assert_eq!(cpus, [(1, 6), (2, RL_CPU_ANY)]);
    }

    /// `--fifo`: once no CPU is idle for a task that may run anywhere, the rest of the batch
    /// goes to the shared queue unasked; a task that may not run anywhere is still asked for.
    #[test]
    fn fifo_stops_asking_for_idle_cpus_once_none_is_left() {
        let mut s = small(true);
        s.ops.picks.extend([None, Some(3), Some(6)]);
        let mut pinned = wakeup(3);
        pinned.nr_cpus_allowed = 1;
        s.ops
            .incoming
            .extend([Ok(wakeup(1)), Ok(wakeup(2)), Ok(pinned), Ok(wakeup(4))]);
        s.schedule_batch().unwrap();
        let cpus: Vec<_> = s.ops.ring.iter().map(|t| (t.pid, t.cpu)).collect();
        assert_eq!(
            cpus,
            [(1, RL_CPU_ANY), (2, RL_CPU_ANY), (3, 3), (4, RL_CPU_ANY)]
        );
        // Asked for tasks 1 and 3 only; the third answer was never asked for.
        assert_eq!(s.counters.rounds.snapshots, 2);
        assert_eq!(s.ops.picks.len(), 1);
    }

    /// The loop counts its rounds and snapshots: what `--stats` shows as the cost of a batch.
    #[test]
    fn rounds_and_snapshots_are_counted() {
        for fifo in [false, true] {
            let mut s = small(fifo);
            s.ops.incoming.extend((1..=3).map(|p| Ok(wakeup(p))));
            s.schedule_batch().unwrap();
            s.schedule_batch().unwrap();
            let r = s.counters.rounds;
            assert_eq!((r.batches, r.empty, r.tasks), (1, 1, 3));
            if fifo {
                // One idle pick (a bpf() call) until one finds none, no snapshot.
                assert_eq!((r.snapshots, r.snapshot_ns, r.decide_ns), (1, 0, 0));
                assert_eq!(s.ops.nr_snapshots, 0);
            } else {
                assert!(r.snapshots >= 1, "{r:?}");
                assert_eq!(r.snapshots, s.ops.nr_snapshots as u64);
            }
        }
    }

    #[test]
    fn fixed_slice_gives_the_full_slice_where_policy_mode_divides_it() {
        // Six tasks in one batch: the default rule divides the slice by the six waiting.
        let slices = |slice| {
            let mut s = sched_with(64, config(Mode::Policy, slice));
            s.ops.incoming.extend((1..=6).map(|p| Ok(wakeup(p))));
            s.schedule_batch().unwrap();
            s.ops.ring.iter().map(|t| t.slice_ns).collect::<Vec<_>>()
        };
        let divided = 5_000_000 / 6;
        assert_eq!(slices(SliceMode::Scaled), [divided; 6]);
        assert_eq!(slices(SliceMode::Fixed), [5_000_000; 6]);
    }

    #[test]
    fn a_full_ring_buffer_keeps_every_task_and_sends_the_backlog_first() {
        for fifo in [false, true] {
            let mut s = sched(3, fifo);
            s.ops.incoming.extend((1..=10).map(|p| Ok(wakeup(p))));
            s.schedule_batch().unwrap();
            // Three fit; seven wait with us, to the shared queue; the framework is told.
            assert_eq!(pids(&s.ops.ring), [1, 2, 3]);
            assert_eq!(s.backlog.len(), 7);
            assert!(s.backlog.iter().all(|t| t.cpu == RL_CPU_ANY));
            assert_eq!(s.counters.dispatch_retries, 7);
            assert_eq!(s.ops.pending.last(), Some(&7));
            // New tasks arrive while the ring buffer is still full: they queue behind.
            s.ops.incoming.extend((11..=12).map(|p| Ok(wakeup(p))));
            s.schedule_batch().unwrap();
            assert_eq!(s.backlog.len(), 9);
            // The kernel drains it a few times: the backlog goes first, oldest first.
            let mut rounds = 0;
            while !s.backlog.is_empty() || !s.ops.ring.is_empty() {
                s.ops.consume();
                s.schedule_batch().unwrap();
                rounds += 1;
                assert!(rounds < 10);
            }
            assert_eq!(pids(&s.ops.delivered), (1..=12).collect::<Vec<_>>());
            assert_eq!(s.ops.pending.last(), Some(&0));
        }
    }

    #[test]
    fn the_largest_task_storage_fits_its_share_of_the_frameworks_heap() {
        let bytes = |tasks| Slot::count_for(tasks) * size_of::<Slot>();
        assert!(
            bytes(MAX_MAX_TASKS) <= STORAGE_BUDGET,
            "{} bytes",
            bytes(MAX_MAX_TASKS)
        );
        // The budget is not slack: twice the maximum would not fit.
        assert!(bytes(2 * MAX_MAX_TASKS) > STORAGE_BUDGET);
    }

    #[test]
    fn the_backlog_stays_within_what_was_reserved_and_the_rest_waits_in_the_kernel() {
        for fifo in [false, true] {
            let mut s = sched(0, fifo);
            let reserved = s.backlog.capacity();
            let n = 3 * BACKLOG_MAX as i32;
            s.ops.incoming.extend((1..=n).map(|p| Ok(wakeup(p))));
            for _ in 0..20 {
                s.schedule_batch().unwrap();
                assert!(s.backlog.len() <= BACKLOG_MAX);
            }
            // Full: nothing more is taken from the kernel, and nothing was reallocated.
            assert_eq!(s.backlog.len(), BACKLOG_MAX);
            assert_eq!(s.ops.incoming.len(), n as usize - BACKLOG_MAX);
            assert_eq!(s.backlog.capacity(), reserved);
            // The ring buffer opens: everything arrives, the backlog first, each task once.
            s.ops.ring_cap = 64;
            let mut rounds = 0;
            while !s.backlog.is_empty() || !s.ops.incoming.is_empty() || !s.ops.ring.is_empty() {
                s.ops.consume();
                s.schedule_batch().unwrap();
                rounds += 1;
                assert!(rounds < 100);
            }
            assert_eq!(pids(&s.ops.delivered), (1..=n).collect::<Vec<_>>());
        }
    }

    #[test]
    fn no_task_is_lost_whatever_fails() {
        // Ring buffers of 1 to 5 slots drained every other round, every third snapshot failing,
        // every fifth dequeue failing: each task arrives exactly once.
        for cap in 1..=5 {
            let mut s = sched(cap, false);
            let mut next_pid = 1;
            for round in 0..60 {
                if round % 5 == 0 {
                    s.ops.incoming.push_back(Err(-4));
                }
                for _ in 0..(round % 4) {
                    s.ops.incoming.push_back(Ok(wakeup(next_pid)));
                    next_pid += 1;
                }
                s.ops.snapshots.push_back(if round % 3 == 0 {
                    Err(())
                } else {
                    Ok(s.ops.all)
                });
                s.schedule_batch().unwrap();
                if round % 2 == 0 {
                    s.ops.consume();
                }
            }
            for _ in 0..200 {
                s.schedule_batch().unwrap();
                s.ops.consume();
            }
            let mut got = pids(&s.ops.delivered);
            got.sort_unstable();
            assert_eq!(got, (1..next_pid).collect::<Vec<_>>(), "ring of {cap}");
            assert!(s.backlog.is_empty());
            assert!(s.counters.dequeue_errors > 0 && s.counters.snapshot_errors > 0);
        }
    }

    #[test]
    fn a_failed_snapshot_sends_the_batch_to_the_shared_queue() {
        let mut s = sched(64, false);
        s.ops.snapshots.push_back(Err(()));
        s.ops.incoming.extend((1..=3).map(|p| Ok(wakeup(p))));
        s.schedule_batch().unwrap();
        assert_eq!(pids(&s.ops.ring), [1, 2, 3]);
        assert!(s.ops.ring.iter().all(|t| t.cpu == RL_CPU_ANY));
        assert!(s.ops.ring.iter().all(|t| t.slice_ns > 0));
        assert_eq!(s.counters.snapshot_errors, 1);
        // The next batch has a snapshot again: a lone waking task gets a P-core.
        s.ops.consume();
        s.ops.incoming.push_back(Ok(wakeup(4)));
        s.schedule_batch().unwrap();
        assert!((4..8).contains(&s.ops.ring[0].cpu), "{:?}", s.ops.ring[0]);
    }

    #[test]
    fn only_a_sustained_run_of_snapshot_failures_ends_the_scheduler() {
        let mut s = sched(64, false);
        let ms = 1_000_000;
        // Many failures within 2 s: each batch goes blind, the scheduler goes on.
        for i in 0..50 {
            s.ops.snapshots.push_back(Err(()));
            assert!(s.snapshot(1_000 * ms + i * 30 * ms).unwrap().is_none());
        }
        // One success clears the run.
        assert!(s.snapshot(2_600 * ms).unwrap().is_some());
        // Failures spread over more than 2 s but fewer than ten: still going.
        for i in 0..9 {
            s.ops.snapshots.push_back(Err(()));
            assert!(s.snapshot(3_000 * ms + i * 400 * ms).unwrap().is_none());
        }
        // The tenth, 3.6 s after the first: it gives up.
        s.ops.snapshots.push_back(Err(()));
        let e = s.snapshot(6_600 * ms).unwrap_err();
        assert!(e.to_string().contains("keeps failing"), "{e:#}");
        assert_eq!(s.counters.snapshot_errors, 60);
    }

    #[test]
    fn a_pick_whose_cpu_turned_busy_goes_to_the_shared_queue() {
        let mut s = sched(64, false);
        // First snapshot: all idle, so the two wake-ups get the two P-cores (4 and 6). By the
        // second, CPU 4 is busy.
        let all = s.ops.all;
        let mut later = all;
        s.ops.snapshots.push_back(Ok(all));
        s.ops.incoming.extend((1..=2).map(|p| Ok(wakeup(p))));
        let first = {
            let mut probe = sched(64, false);
            probe.ops.incoming.extend((1..=2).map(|p| Ok(wakeup(p))));
            probe.schedule_batch().unwrap();
            probe.ops.ring.iter().map(|t| t.cpu).collect::<Vec<_>>()
        };
        let busy = CpuId(u16::try_from(first[0]).unwrap());
        later.remove(busy);
        s.ops.snapshots.push_back(Ok(later));
        s.schedule_batch().unwrap();
        assert_eq!(s.ops.nr_snapshots, 2);
        assert_eq!(s.ops.ring[0].cpu, RL_CPU_ANY);
        assert_eq!(s.ops.ring[1].cpu, first[1]);
        assert_eq!(s.counters.stale, 1);
    }

    /// A task left on an E-core while the P-cores were busy: once a P-core idles, the core's
    /// timer gives a nudge, the loop wakes the helper, and the core sends the helper to that
    /// E-core with the helper's short slice.
    #[test]
    fn a_nudge_wakes_the_helper_and_the_core_sends_it_to_the_cpu() {
        let topo = machine();
        let helper = Nudger::spawn().unwrap();
        let tid = helper.tid;
        let mut s = Scheduler::new(
            FakeOps::new(&topo, 64),
            topo.clone(),
            hybridland(&topo),
            config(Mode::Policy, SliceMode::Scaled),
            None,
            Some(helper),
        )
        .unwrap();
        let e_cores: CpuSet = (0..4).map(CpuId).collect();
        s.ops.snapshots.push_back(Ok(e_cores));
        s.ops.incoming.push_back(Ok(wakeup(1)));
        s.schedule_batch().unwrap();
        let on = s.ops.ring[0].cpu;
        assert!((0..4).contains(&on), "on an E-core: {on}");
        // The P-cores idle; the task still runs on its E-core.
        let mut idle = *topo.cpus();
        idle.remove(CpuId(u16::try_from(on).unwrap()));
        s.ops.snapshots.push_back(Ok(idle));
        let now = now_ns();
        assert!(s.core.poll_timeout().is_some_and(|at| at.ns() <= now));
        s.tick(now).unwrap();
        assert_eq!(s.counters.nudges, 1);
        s.ops.incoming.push_back(Ok(wakeup(tid)));
        s.schedule_batch().unwrap();
        let sent = s.ops.ring.last().unwrap();
        assert_eq!((sent.pid, sent.cpu), (tid, on));
        assert_eq!(sent.slice_ns, CoreConfig::DEFAULT.helper_slice_ns);
        s.nudger.take().unwrap().close_and_join();
    }

    #[test]
    fn dequeue_errors_are_counted_and_logged_at_most_once_a_second() {
        let mut limit = LogLimit::new(1_000);
        assert_eq!(limit.allow(10), Some(0));
        assert_eq!(limit.allow(500), None);
        assert_eq!(limit.allow(1_009), None);
        assert_eq!(limit.allow(1_010), Some(2));
        assert_eq!(limit.allow(1_011), None);
        let mut s = sched(64, false);
        for _ in 0..5 {
            s.ops.incoming.push_back(Err(-22));
            s.ops.incoming.push_back(Ok(wakeup(1)));
            s.schedule_batch().unwrap();
        }
        // Each error ends that batch's drain; the task behind it comes in the next round.
        assert_eq!(s.counters.dequeue_errors, 5);
        s.schedule_batch().unwrap();
        assert_eq!(s.ops.ring.len(), 5);
    }

    #[test]
    fn no_nudge_helper_in_fifo_mode_and_its_pipe_closes() {
        let topo = machine();
        let cfg = |mode| config(mode, SliceMode::Scaled);
        let mut n = Nudger::spawn().unwrap();
        n.wake();
        let s = Scheduler::new(
            FakeOps::new(&topo, 8),
            topo.clone(),
            hybridland(&topo),
            cfg(Mode::Fifo),
            None,
            Some(n),
        )
        .unwrap();
        assert!(s.nudger.is_none());
        assert_eq!(s.core.config().nudging, Nudging::Off, "no helper, no scan");
        let s = Scheduler::new(
            FakeOps::new(&topo, 8),
            topo.clone(),
            hybridland(&topo),
            cfg(Mode::Policy),
            None,
            Some(Nudger::spawn().unwrap()),
        )
        .unwrap();
        assert_ne!(s.core.config().nudging, Nudging::Off);
        // Closing the pipe ends the helper thread (join returns).
        let mut s = s;
        s.nudger.take().unwrap().close_and_join();
    }

    /// One round as the framework hands it over: the idle CPUs and the CPUs with tasks in
    /// their own queue (bit masks over the VM's 8 CPUs), the loop's own CPU, and tasks back:
    /// `(pid, slice end)`, a slice end only for a task running from an earlier round.
    #[derive(Clone, Debug)]
    struct Round {
        idle: u8,
        queued: u8,
        own: Option<u16>,
        tasks: Vec<(i32, bool)>,
    }

    fn random_rounds(rng: &mut hybridland_policy::rng::Pcg32) -> Vec<Round> {
        (0..1 + rng.below(30))
            .map(|_| Round {
                idle: rng.below(256) as u8,
                queued: if rng.below(4) == 0 {
                    rng.below(256) as u8
                } else {
                    0
                },
                own: (rng.below(2) == 0).then(|| rng.below(8) as u16),
                tasks: (0..1 + rng.below(5))
                    .map(|_| (1 + rng.below(12) as i32, rng.below(2) == 0))
                    .collect(),
            })
            .collect()
    }

    fn mask(bits: u8) -> CpuSet {
        let mut set = CpuSet::EMPTY;
        for cpu in (0..8u16).filter(|c| bits & (1 << c) != 0) {
            set.insert(CpuId(cpu));
        }
        set
    }

    /// The shared invariants over the live loop's own sequence: generated rounds go through
    /// the loop as the framework hands them over (dequeue, snapshot and recheck, the core,
    /// dispatch), and every hybridland decision the core makes on them, with the state it had
    /// at that point of the batch, passes the policy crate's checkers. One scheduler takes
    /// every round, checked after each: seeded draws, not proptest, whose shrinking builds
    /// thousands of schedulers (a few MiB each) in the framework's 64 MiB heap arena this test
    /// binary runs in, which then fails an allocation and hangs instead of reporting.
    #[test]
    fn every_decision_the_live_loop_asks_for_obeys_the_invariants() {
        let mut s = small(false);
        s.core.start_audit();
        // Where each task was sent, and since when.
        let mut placed: std::collections::BTreeMap<i32, (i32, u64)> = Default::default();
        let mut handed = 0u64;
        for seed in 0..256 {
            let mut rng = hybridland_policy::rng::Pcg32::new(seed, 7);
            for (i, r) in random_rounds(&mut rng).iter().enumerate() {
                let idle = mask(r.idle);
                // The snapshot and the recheck the batch may take.
                s.ops.snapshots.extend([Ok(idle), Ok(idle)]);
                s.ops.queued_cpus = mask(r.queued);
                s.ops.own = r.own.map(CpuId);
                let now = now_ns();
                let mut seen = Vec::new();
                for &(pid, slice_end) in &r.tasks {
                    if seen.contains(&pid) {
                        continue; // a task is in the framework's queue once
                    }
                    seen.push(pid);
                    let mut t = wakeup(pid);
                    if let Some(&(cpu, since)) = placed.get(&pid).filter(|(c, _)| *c >= 0) {
                        t.cpu = cpu;
                        t.start_ts = since;
                        t.stop_ts = now.max(since + 1);
                        if slice_end {
                            t.flags = 0;
                        }
                    }
                    handed += 1;
                    s.ops.incoming.push_back(Ok(t));
                }
                s.schedule_batch().unwrap();
                s.ops.snapshots.clear();
                for d in s.ops.ring.drain(..) {
                    placed.insert(d.pid, (d.cpu, now));
                }
                let audit = s.core.audit().unwrap();
                if let Some((task, v)) = &audit.first_violation {
                    panic!("seed {seed}, round {i} ({r:?}): task {task}: {v}");
                }
                // Every task handed over was checked: every snapshot succeeds here and every
                // affinity is known, so the core decided each one on its state.
                assert_eq!(
                    audit.wakeups + audit.slice_ends,
                    handed,
                    "seed {seed} round {i}"
                );
            }
        }
    }
}
