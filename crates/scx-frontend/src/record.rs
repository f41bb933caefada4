//! `--record FILE`: what the scheduler saw, written at exit as a hybrid-sim trace, and beside
//! it (`FILE.live.json` unless `--record-live` says otherwise) the scheduler's own figures over
//! the same window, which `hybrid-sim compare` sets beside a replay of the trace.
//!
//! The framework reports, for each task it hands to user space, the CPU of its last run, the
//! kernel's start and stop times of that run, and its execution time since it last woke
//! (`exec_runtime`). The loop copies that into a preallocated buffer ([`Event`], 40 bytes, at
//! most `--record-max-events`): nothing else happens on the scheduling path, and memory is
//! bounded. When the buffer is full, recording stops with one log line and scheduling goes on.
//!
//! At the end (signal, ejection, or the cap) each event becomes per-task reports to the
//! simulator's [`TimelineBuilder`], the builder its ftrace importer uses, so the recording is a
//! trace in the one format (every file written is checked with [`Trace::from_json_str`] in the
//! tests):
//! - a task back at a slice end ran `exec_runtime` minus what it had at its previous report,
//!   on the CPU reported, ending at the stop time; it stays runnable;
//! - a woken task ran its last run (start to stop) before it slept, slept from the stop time and
//!   woke when the loop dequeued it;
//! - a task still runnable at the end (`/proc/PID/stat` state `R`) that has not come back since
//!   its last dispatch ran from then on the CPU `/proc` names: scx_rustland_core refills the
//!   slice of a task nothing else wants the CPU of without telling user space, so a lone
//!   spinner is reported only when something displaces it;
//! - a wake-up by another task (the event source's `sched_waking` with a waker, [`Wake`], kept
//!   in a second buffer of the same size) is the trace's wake-up relation when it ends a sleep
//!   the events show and falls in a run of the waker they show: the builder's
//!   [`wakeup_by`](TimelineBuilder::wakeup_by), at the waking moment moved into both that sleep
//!   and that run (by at most [`WAKE_SLACK_NS`], for the clocks' offset). The sleep then waits
//!   for the waker in a replay, and the waker's run holds the `wake`. A wake-up that fits no
//!   such sleep and run is left out: that sleep keeps its recorded length. At most
//!   [`MAX_RELATIONS`] are kept.
//!
//! The reports go to the builder in time order (each task's in the order made), so a waker is
//! running there when its wake-up is reported. They are built after the scheduler detached,
//! but in the same 64 MiB arena as the buffers, so the events and wake-ups are freed once they
//! are reports (16 bytes each).
//!
//! What is lost: a task that slept or exited after its last report ran an unknown last burst;
//! when several runs separate two reports and the second is a wake-up, only the last counts;
//! a wake-up in a run that is lost so is no relation.
//!
//! Kernel times (`scx_bpf_now()`, the scheduler clock) and the loop's clock (`CLOCK_MONOTONIC`)
//! differ by an offset, taken as the smallest gap seen between a run's stop and the loop
//! dequeuing the task (the kernel's latency to user space at its best), so wake-ups and runs
//! line up to within that latency.
//!
//! Run time becomes reference work by the capacity of the CPU it ran on (work = time x
//! capacity / 1024), as the ftrace importer does.

#![forbid(unsafe_code)]

use crate::safe_file;
use crate::stats::Counters;
use anyhow::{Context, Result};
use hybridland_policy::{CpuId, CpuSet, Step, Topology};
use hybridland_trace::StepCount;
use hybridland_trace::builder::{Timeline, TimelineBuilder};
use hybridland_trace::live::{LIVE_VERSION, LiveStats, busy_by_kind_and_cluster};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use tracing::{info, warn};

/// Default `--record-max-events`: 4 MB of events, about 100 s of a busy 8-CPU machine's
/// wake-ups and slice ends.
pub(crate) const DEFAULT_MAX_EVENTS: usize = 100_000;
/// Largest `--record-max-events`. The buffer is taken up front from scx_rustland_core's
/// 64 MiB arena, the process's only heap, and so is the trace built from it at the end: with
/// [`MAX_TASKS`] tasks and [`MAX_RELATIONS`] relations, 200,000 events ran out of it (a
/// test builds this largest recording in the arena).
pub(crate) const MAX_MAX_EVENTS: usize = 150_000;

/// Most distinct tasks a recording keeps (at most `--max-tasks`); a recording that reaches it
/// stops as one that reaches `--record-max-events` does. Each task costs the built trace its
/// names and its phase list: 100,000 events among 32,767 tasks (the default `--max-tasks`)
/// ran out of the arena.
pub(crate) const MAX_TASKS: usize = 8_192;

/// How far a wake-up may lie outside the waker's run or the woken task's sleep as the events
/// show them and still be taken as in them: kernel times are converted with the smallest
/// stop-to-dequeue gap, which puts them late by the loop's latency at its best (a few
/// microseconds to tens of them), and no more than that.
pub(crate) const WAKE_SLACK_NS: u64 = 100_000;

/// Most wake-ups a recording keeps as relations; later ones stay sleeps. A relation costs
/// the trace three small allocations (the names in `wait_for` and `wake`), each a 64-byte leaf
/// of scx_rustland_core's arena, the process's only heap: at the largest
/// `--record-max-events` with every event a relation, building the trace ran out of it.
pub(crate) const MAX_RELATIONS: usize = 30_000;

/// A wake-up of `pid` by the task `waker` at `at_ns` (the loop's clock), as the task-event
/// source reported it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Wake {
    pub(crate) at_ns: u64,
    pub(crate) pid: i32,
    pub(crate) waker: i32,
}

/// One task the loop dequeued, as the framework reported it.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Event {
    /// The loop's clock when dequeued, ns.
    pub(crate) at_ns: u64,
    /// Kernel time its last run started, 0 if it never ran.
    pub(crate) start_ts: u64,
    /// Kernel time its last run stopped.
    pub(crate) stop_ts: u64,
    /// Its run time since it last woke, ns.
    pub(crate) exec_runtime: u64,
    pub(crate) pid: i32,
    /// CPU of its last run, -1 when none.
    pub(crate) cpu: i16,
    /// Woken (rather than back at a slice end).
    pub(crate) wakeup: bool,
}

/// What the recording keeps per task besides its events.
#[derive(Clone, Debug)]
struct TaskInfo {
    comm: [u8; 16],
    /// Union of the restricted affinities seen; `None` while never seen restricted.
    allowed: Option<CpuSet>,
    /// Seen allowed on every CPU at least once.
    unrestricted: bool,
    /// The loop's clock at its last event.
    last_at: u64,
    /// When it exited (the task-event source), if it did while recording.
    exited_at: Option<u64>,
}

/// A task still runnable when recording stopped: it ran from `from_ns` on `cpu` to the end.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Tail {
    pid: i32,
    cpu: u16,
    from_ns: u64,
}

/// A recorded task that had not exited when recording stopped: whether it was still running
/// is for `/proc` to say ([`read_tails`]), off the loop.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct TailCandidate {
    pid: i32,
    last_at: u64,
}

/// Which of `candidates` `proc_state` finds running, and where: the recording's tails.
pub(crate) fn read_tails(candidates: &[TailCandidate], proc_state: &ProcState) -> Vec<Tail> {
    candidates
        .iter()
        .filter_map(|c| match proc_state(c.pid) {
            Some(('R', cpu)) => Some(Tail {
                pid: c.pid,
                cpu: u16::try_from(cpu).ok()?,
                from_ns: c.last_at,
            }),
            _ => None,
        })
        .collect()
}

/// A thread of ours that reads `/proc` for the recording's tails, so the loop never does: a
/// read per recorded task (tens of thousands after a thread storm) would hold up every task
/// waiting for a CPU. Started before the scheduler is loaded, as the nudge helper is; it ends
/// when this is dropped.
pub(crate) struct TailReader {
    requests: std::sync::mpsc::Sender<Vec<TailCandidate>>,
    replies: std::sync::mpsc::Receiver<Vec<Tail>>,
}

impl TailReader {
    /// Starts the reader.
    pub(crate) fn spawn() -> Result<Self> {
        let (requests, incoming) = std::sync::mpsc::channel::<Vec<TailCandidate>>();
        let (answer, replies) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("hl-tails".into())
            .stack_size(64 * 1024)
            .spawn(move || {
                for candidates in incoming {
                    if answer.send(read_tails(&candidates, &proc_state)).is_err() {
                        break;
                    }
                }
            })?;
        Ok(Self { requests, replies })
    }

    /// Asks for the tails among `candidates`; returns whether the reader took the request.
    pub(crate) fn request(&self, candidates: Vec<TailCandidate>) -> bool {
        self.requests.send(candidates).is_ok()
    }

    /// The answer, once it is there.
    pub(crate) fn try_take(&self) -> Option<Vec<Tail>> {
        self.replies.try_recv().ok()
    }
}

/// How recording ended: when, the counters then, the tasks still running.
#[derive(Clone, Debug)]
struct Stopped {
    at_ns: u64,
    counters: Counters,
    tails: Vec<Tail>,
    capped: bool,
}

/// Where to write and what to say about the scheduler.
#[derive(Clone, Debug)]
pub(crate) struct RecordConfig {
    pub(crate) trace: PathBuf,
    pub(crate) live: PathBuf,
    pub(crate) max_events: usize,
    /// Most distinct tasks recorded (reserved up front, as the events are): a recording that
    /// reaches it stops as one that reaches `max_events` does.
    pub(crate) max_tasks: usize,
    /// The placement policy (`--policy`).
    pub(crate) policy: String,
    /// The seed of the policy's draws (`--seed`).
    pub(crate) policy_seed: u64,
    /// `hybrid-sim --set` items for the knobs in force.
    pub(crate) settings: Vec<String>,
    /// Where the machine came from (a topology file or sysfs), for the trace's description.
    pub(crate) machine_source: String,
}

impl RecordConfig {
    /// `--record-live`, or `FILE.live.json` beside the trace.
    /// Where the decision log goes: beside the trace.
    pub(crate) fn decisions_path(trace: &Path) -> PathBuf {
        let mut name = trace.as_os_str().to_owned();
        name.push(".decisions.jsonl");
        PathBuf::from(name)
    }

    pub(crate) fn live_path(trace: &Path, live: Option<&Path>) -> PathBuf {
        live.map_or_else(
            || {
                let mut name = trace.as_os_str().to_owned();
                name.push(".live.json");
                PathBuf::from(name)
            },
            Path::to_path_buf,
        )
    }

    /// The recording's task capacity under `--max-tasks max_tasks`: [`MAX_TASKS`] at most.
    pub(crate) fn tasks_for(max_tasks: usize) -> usize {
        max_tasks.min(MAX_TASKS)
    }
}

/// Reads a task's state letter and last CPU (`/proc/PID/stat`), `None` when it is gone.
pub(crate) type ProcState = dyn Fn(i32) -> Option<(char, i32)>;

/// The recording; see the module documentation.
#[derive(Clone)]
pub(crate) struct Recorder {
    cfg: RecordConfig,
    start_ns: u64,
    events: Vec<Event>,
    /// Wake-ups by a task, as many as events at most.
    wakes: Vec<Wake>,
    tasks: HashMap<i32, TaskInfo>,
    /// The scheduler's own threads: not part of the workload.
    own: Vec<i32>,
    /// Placements of recorded tasks by step, and of those outside the primary domain.
    steps: [(u64, u64); Step::ALL.len()],
    kept: u64,
    counters_at_start: Counters,
    stopped: Option<Stopped>,
}

impl Recorder {
    /// Starts recording at `now_ns` (the loop's clock); `own` are the scheduler's threads.
    pub(crate) fn new(cfg: RecordConfig, now_ns: u64, counters: Counters, own: Vec<i32>) -> Self {
        let events = Vec::with_capacity(cfg.max_events);
        let wakes = Vec::with_capacity(cfg.max_events);
        let tasks = HashMap::with_capacity(cfg.max_tasks.min(cfg.max_events));
        Self {
            cfg,
            start_ns: now_ns,
            events,
            wakes,
            tasks,
            own,
            steps: [(0, 0); Step::ALL.len()],
            kept: 0,
            counters_at_start: counters,
            stopped: None,
        }
    }

    /// Whether events are still being recorded.
    pub(crate) fn recording(&self) -> bool {
        self.stopped.is_none()
    }

    fn wants(&self, pid: i32) -> bool {
        self.stopped.is_none() && !self.own.contains(&pid)
    }

    /// Records a dequeued task. Returns `true` when this event filled the buffer: the caller
    /// then calls [`stop`](Self::stop).
    pub(crate) fn observe(&mut self, ev: Event, comm: &[u8]) -> bool {
        if !self.wants(ev.pid) {
            return false;
        }
        if self.is_full(ev.pid) {
            return true;
        }
        self.events.push(ev);
        let info = self.tasks.entry(ev.pid).or_insert(TaskInfo {
            comm: [0; 16],
            allowed: None,
            unrestricted: false,
            last_at: ev.at_ns,
            exited_at: None,
        });
        let n = comm.len().min(16);
        info.comm = [0; 16];
        info.comm[..n].copy_from_slice(&comm[..n]);
        info.last_at = ev.at_ns;
        self.events.len() >= self.cfg.max_events
    }

    /// Records a wake-up of `pid` by the task `waker` at `at_ns` (the loop's clock). Returns
    /// `true` when this one filled the buffer: the caller then calls [`stop`](Self::stop).
    pub(crate) fn woken(&mut self, at_ns: u64, pid: i32, waker: i32) -> bool {
        if !self.wants(pid) || self.own.contains(&waker) || waker == pid {
            return false;
        }
        if self.wakes.len() >= self.cfg.max_events {
            return true;
        }
        self.wakes.push(Wake { at_ns, pid, waker });
        self.wakes.len() >= self.cfg.max_events
    }

    /// The wake-ups by a task recorded so far.
    #[cfg(test)]
    pub(crate) fn wakes(&self) -> &[Wake] {
        &self.wakes
    }

    /// No room for an event of `pid`: the events are all used, or it is a new task and the
    /// tasks are.
    fn is_full(&self, pid: i32) -> bool {
        self.events.len() >= self.cfg.max_events
            || self.wakes.len() >= self.cfg.max_events
            || (self.tasks.len() >= self.cfg.max_tasks && !self.tasks.contains_key(&pid))
    }

    /// `pid` exited at `at_ns` (the loop's clock): the trace ends it there, and it is no tail
    /// when recording stops (its pid may already be another task's). Tasks never recorded are
    /// ignored, so this keeps nothing new.
    pub(crate) fn exited(&mut self, pid: i32, at_ns: u64) {
        if !self.wants(pid) {
            return;
        }
        if let Some(info) = self.tasks.get_mut(&pid) {
            info.exited_at = Some(at_ns.max(info.last_at));
        }
    }

    /// The CPUs `pid` may use, as the loop looked them up: `restricted` when fewer than all.
    pub(crate) fn allowed(&mut self, pid: i32, cpus: &CpuSet, restricted: bool) {
        if !self.wants(pid) {
            return;
        }
        if let Some(info) = self.tasks.get_mut(&pid) {
            if restricted {
                info.allowed = Some(info.allowed.map_or(*cpus, |a| a.or(cpus)));
            } else {
                info.unrestricted = true;
            }
        }
    }

    /// A policy decision for `pid`: a placement by `step` (outside the primary domain when
    /// `overflow`), or a slice end that kept its CPU.
    pub(crate) fn decision(&mut self, pid: i32, step: Option<Step>, overflow: bool, kept: bool) {
        if !self.wants(pid) {
            return;
        }
        if let Some(step) = step {
            let s = &mut self.steps[step.index()];
            s.0 += 1;
            s.1 += u64::from(overflow);
        }
        self.kept += u64::from(kept);
    }

    /// Ends recording at `now_ns` with the counters in force. Returns the tasks that had not
    /// exited: which of them still run is for [`read_tails`] to find, off the loop, and
    /// [`set_tails`](Self::set_tails) to record. Returns nothing the second time.
    pub(crate) fn stop(&mut self, now_ns: u64, counters: &Counters) -> Vec<TailCandidate> {
        if self.stopped.is_some() {
            return Vec::new();
        }
        let capped = self.events.len() >= self.cfg.max_events
            || self.wakes.len() >= self.cfg.max_events
            || self.tasks.len() >= self.cfg.max_tasks;
        let candidates: Vec<TailCandidate> = self
            .tasks
            .iter()
            .filter(|(_, info)| info.exited_at.is_none())
            .map(|(&pid, info)| TailCandidate {
                pid,
                last_at: info.last_at,
            })
            .collect();
        let secs = now_ns.saturating_sub(self.start_ns) as f64 / 1e9;
        if capped {
            warn!(
                "record: {} events and {} wake-ups by a task recorded in {secs:.1} s, the most \
                 --record-max-events allows: recording stopped, scheduling goes on; {} is \
                 written at exit",
                self.events.len(),
                self.wakes.len(),
                self.cfg.trace.display()
            );
        }
        self.stopped = Some(Stopped {
            at_ns: now_ns,
            counters: *counters,
            tails: Vec::new(),
            capped,
        });
        candidates
    }

    /// The tasks still running when recording stopped, as [`read_tails`] found them. A task
    /// that exited since is left out: its pid may be another task's by now.
    pub(crate) fn set_tails(&mut self, mut tails: Vec<Tail>) {
        let Some(stopped) = self.stopped.as_mut() else {
            return;
        };
        tails.retain(|t| {
            self.tasks
                .get(&t.pid)
                .is_some_and(|info| info.exited_at.is_none())
        });
        tails.sort_unstable_by_key(|t| t.pid);
        stopped.tails = tails;
    }

    /// [`stop`](Self::stop), [`read_tails`] and [`set_tails`](Self::set_tails) in one go.
    #[cfg(test)]
    pub(crate) fn stop_and_read(
        &mut self,
        now_ns: u64,
        counters: &Counters,
        proc_state: &ProcState,
    ) {
        let candidates = self.stop(now_ns, counters);
        let tails = read_tails(&candidates, proc_state);
        self.set_tails(tails);
    }

    /// The kernel-to-loop clock offset: the smallest gap between a run's stop and the loop
    /// seeing the task.
    fn offset(&self) -> i128 {
        self.events
            .iter()
            .filter(|e| e.stop_ts != 0)
            .map(|e| i128::from(e.at_ns) - i128::from(e.stop_ts))
            .min()
            .unwrap_or(0)
    }

    /// The command name last seen for `pid`.
    fn comm_of(&self, pid: i32) -> String {
        self.tasks.get(&pid).map_or_else(String::new, |t| {
            let n = t.comm.iter().position(|&b| b == 0).unwrap_or(16);
            String::from_utf8_lossy(&t.comm[..n]).into_owned()
        })
    }

    /// Makes each wake-up by a task a relation where it fits: it ends a sleep of the reports
    /// (a switch-out asleep and the wake-up right after it; it is the woken task's last
    /// before the loop saw it awake, later than its previous one and at most
    /// [`WAKE_SLACK_NS`] before the sleep began) and falls in a run of the waker (within the
    /// slack). It is reported at its moment moved into both, strictly inside the waker's run,
    /// so the builder finds the waker running and the woken task asleep.
    fn relate(wakes: Vec<Wake>, reports: &mut Reports, end: u64) {
        if wakes.is_empty() {
            return;
        }
        // Per task: its runs (from, to) as the builder will see them, in time order.
        let mut runs: HashMap<u32, Vec<(u64, u64)>> = HashMap::new();
        let mut open: HashMap<u32, u64> = HashMap::new();
        for r in &reports.list {
            if r.act == Act::Woken {
                continue;
            }
            if let Some(from) = open.remove(&r.pid) {
                runs.entry(r.pid).or_default().push((from, r.key));
            }
            if let Act::In(_) = r.act {
                open.insert(r.pid, r.key);
            }
        }
        for (pid, from) in open {
            runs.entry(pid).or_default().push((from, end.max(from)));
        }
        // Per woken task: its wake-ups by a task (time, waker), in time order.
        let mut by_pid: HashMap<u32, Vec<(u64, u32)>> = HashMap::new();
        for w in &wakes {
            if let (Ok(pid), Ok(waker)) = (u32::try_from(w.pid), u32::try_from(w.waker)) {
                by_pid.entry(pid).or_default().push((w.at_ns, waker));
            }
        }
        drop(wakes);
        for list in by_pid.values_mut() {
            list.sort_unstable();
        }
        let mut previous: HashMap<u32, u64> = HashMap::new();
        for woken in 1..reports.list.len() {
            let (out, r) = (reports.list[woken - 1], reports.list[woken]);
            if r.act != Act::Woken || out.pid != r.pid || out.act != Act::Out(false) {
                continue;
            }
            let (pid, slept_at, until) = (r.pid, out.key, r.key);
            let after = previous.insert(pid, until);
            let Some(list) = by_pid.get(&pid) else {
                continue;
            };
            let n = list.partition_point(|&(at, _)| at <= until);
            let Some(&(at, waker)) = n.checked_sub(1).and_then(|i| list.get(i)) else {
                continue;
            };
            if after.is_some_and(|p| at <= p) || at.saturating_add(WAKE_SLACK_NS) < slept_at {
                continue;
            }
            let Some((from, to)) = runs.get(&waker).and_then(|r| run_near(r, at)) else {
                continue;
            };
            let lo = from.saturating_add(1).max(slept_at);
            let hi = to.saturating_sub(1).min(until);
            if lo > hi {
                continue;
            }
            let Ok(index) = u32::try_from(woken) else {
                continue;
            };
            if reports.wakers.len() >= MAX_RELATIONS {
                break;
            }
            reports.list[woken].key = at.clamp(lo, hi);
            reports.wakers.push((index, waker));
        }
    }

    /// The recording as a timeline on `topo`, and the end of the window (loop clock).
    ///
    /// The events become reports to the builder, each task's in the order made; wake-ups by
    /// a task that fit a sleep and a run of the waker become relations; then all go to the
    /// builder in time order, so a waker is running, as the builder needs, when the wake-up
    /// it sent is reported.
    ///
    /// The events and wake-ups are freed once they are reports: the reports and the builder
    /// take their room in the arena.
    fn timeline(&mut self, topo: &Topology) -> Result<(Timeline, u64)> {
        let end = self.stopped.as_ref().map_or_else(
            || self.events.last().map_or(self.start_ns, |e| e.at_ns),
            |s| s.at_ns,
        );
        let offset = self.offset();
        let events = core::mem::take(&mut self.events);
        let nr_events = events.len();
        let loop_time = |k: u64| u64::try_from((i128::from(k) + offset).max(0)).unwrap_or(0);
        let tails = self.stopped.as_ref().map_or(0, |s| s.tails.len());
        let most: usize = events.iter().map(|e| if e.wakeup { 3 } else { 2 }).sum();
        let mut reports = Reports::with_capacity(most + tails + self.tasks.len());
        // Per task: exec_runtime and run start at its previous report.
        let mut prev: HashMap<i32, (u64, u64)> = HashMap::new();
        for ev in &events {
            let Ok(pid) = u32::try_from(ev.pid) else {
                continue;
            };
            let cpu = u16::try_from(ev.cpu)
                .ok()
                .filter(|c| topo.info(CpuId(*c)).is_some());
            let stop = loop_time(ev.stop_ts);
            let before = prev.insert(ev.pid, (ev.exec_runtime, ev.start_ts));
            match (before, ev.wakeup) {
                (before, true) => {
                    // Its last run before the sleep, if it ran since its previous report (or
                    // within the window, for a task seen the first time).
                    let ran_since = before.is_none_or(|(_, start)| start < ev.start_ts);
                    if let (Some(cpu), true) = (cpu, ev.start_ts != 0 && ran_since) {
                        let from = loop_time(ev.start_ts).max(self.start_ns);
                        if from < stop {
                            reports.push(pid, from, Act::In(cpu));
                        }
                    }
                    // A sleep a wake-up by a task may end: this switch-out and the wake-up
                    // right after it.
                    if reports.knows(pid) && ev.stop_ts != 0 {
                        reports.push(pid, stop.max(self.start_ns), Act::Out(false));
                    }
                    reports.push(pid, ev.at_ns, Act::Woken);
                }
                (Some((exec_before, start_before)), false) => {
                    let ran = if ev.exec_runtime >= exec_before {
                        ev.exec_runtime - exec_before
                    } else {
                        ev.stop_ts.saturating_sub(ev.start_ts.max(start_before))
                    };
                    if let (Some(cpu), true) = (cpu, ran > 0) {
                        reports.push(pid, stop.saturating_sub(ran), Act::In(cpu));
                        reports.push(pid, stop, Act::Out(true));
                    } else {
                        reports.push(pid, ev.at_ns, Act::Woken);
                    }
                }
                (None, false) => {
                    // First seen at a slice end: it was running when recording began.
                    let from = loop_time(ev.start_ts).max(self.start_ns);
                    if let (Some(cpu), true) = (cpu, ev.start_ts != 0 && from < stop) {
                        reports.push(pid, from, Act::In(cpu));
                        reports.push(pid, stop, Act::Out(true));
                    } else {
                        reports.push(pid, ev.at_ns, Act::Woken);
                    }
                }
            }
        }
        if let Some(s) = &self.stopped {
            for t in &s.tails {
                if let (Ok(pid), true) = (u32::try_from(t.pid), topo.info(CpuId(t.cpu)).is_some()) {
                    reports.push(pid, t.from_ns, Act::In(t.cpu));
                }
            }
        }
        let mut exits: Vec<(u64, u32)> = self
            .tasks
            .iter()
            .filter_map(|(&pid, info)| Some((info.exited_at?, u32::try_from(pid).ok()?)))
            .filter(|&(at, _)| at <= end)
            .collect();
        exits.sort_unstable();
        for (at, pid) in exits {
            reports.push(pid, at, Act::Exit);
        }
        drop(events);
        let wakes = core::mem::take(&mut self.wakes);
        Self::relate(wakes, &mut reports, end);
        let mut b = TimelineBuilder::new(topo);
        b.mark(self.start_ns);
        let mut comms: HashMap<u32, String> = HashMap::new();
        // In time order, and a task's reports at one time in the order made. Sorting
        // indices needs no scratch space (a stable sort of the reports would).
        let mut order: Vec<u32> = (0..u32::try_from(reports.list.len())?).collect();
        order.sort_unstable_by_key(|&i| (reports.list[i as usize].key, i));
        for index in order {
            let r = reports.list[index as usize];
            let comm = comms.entry(r.pid).or_insert_with(|| {
                i32::try_from(r.pid).map_or_else(|_| String::new(), |pid| self.comm_of(pid))
            });
            match r.act {
                Act::In(cpu) => b.switch_in(r.pid, comm, r.key, cpu),
                Act::Out(runnable) => b.switch_out(r.pid, comm, r.key, runnable),
                Act::Woken => {
                    let by = reports
                        .wakers
                        .binary_search_by_key(&index, |&(at, _)| at)
                        .ok()
                        .map(|k| reports.wakers[k].1);
                    b.wakeup_by(r.pid, comm, r.key, by);
                }
                Act::Exit => b.exit(r.pid, r.key),
            }
        }
        for (&pid, info) in &self.tasks {
            let (Ok(pid), Some(set), false) = (u32::try_from(pid), info.allowed, info.unrestricted)
            else {
                continue;
            };
            b.restrict(pid, set.to_string());
        }
        b.mark(end);
        let name = self.cfg.trace.file_stem().map_or_else(
            || "recording".to_owned(),
            |s| s.to_string_lossy().into_owned(),
        );
        let source = format!(
            "scx_hybridland --record on {} ({} events)",
            self.cfg.machine_source, nr_events
        );
        let timeline = b
            .finish(&source, &name, false)
            .context("the recording makes no trace")?;
        Ok((timeline, end))
    }

    /// The trace and the live figures (of a copy: building takes the events).
    #[cfg(test)]
    pub(crate) fn build(&self, topo: &Topology) -> Result<(hybridland_trace::Trace, LiveStats)> {
        self.clone()
            .built(topo)
            .map(|(trace, live, _)| (trace, live))
    }

    /// The trace, the live figures and the wake-up relations the trace holds. Takes the
    /// events and wake-ups.
    fn built(&mut self, topo: &Topology) -> Result<(hybridland_trace::Trace, LiveStats, u64)> {
        let events = self.events.len() as u64;
        let (timeline, end) = self.timeline(topo)?;
        let counters = self
            .stopped
            .as_ref()
            .map_or(self.counters_at_start, |s| s.counters)
            .delta(&self.counters_at_start);
        let (kinds, clusters) = busy_by_kind_and_cluster(topo, &timeline.busy_ns);
        // The kernel's fast path placed wake-ups too, by the same steps (never outside the
        // primary domain); the simulator counts them with the others.
        let steps = Step::ALL
            .iter()
            .map(|s| StepCount {
                step: s.name().to_owned(),
                count: self.steps[s.index()].0 + counters.fast[s.index()],
                overflow: self.steps[s.index()].1,
            })
            .collect();
        let live = LiveStats {
            version: LIVE_VERSION,
            scheduler: format!("scx_hybridland {}", env!("CARGO_PKG_VERSION")),
            policy: Some(self.cfg.policy.clone()),
            policy_seed: Some(self.cfg.policy_seed),
            settings: self.cfg.settings.clone(),
            window_ns: end.saturating_sub(self.start_ns).max(1),
            events,
            capped: self.stopped.as_ref().is_some_and(|s| s.capped),
            tasks: timeline.trace.tasks.len() as u64,
            kinds,
            clusters,
            steps,
            kept: self.kept,
            stale: counters.stale,
            nudges: counters.nudges,
            migrations: timeline.migrations,
        };
        Ok((timeline.trace, live, timeline.relations))
    }

    /// Writes the trace and the live figures (after [`stop`](Self::stop)).
    pub(crate) fn write(mut self, topo: &Topology) -> Result<()> {
        if let Some(path) = std::env::var_os(RAW_ENV) {
            let path = PathBuf::from(path);
            match safe_file::replace(
                &path,
                safe_file::OUTPUT_MODE,
                safe_file::Sync::Durable,
                |out| self.write_raw(out),
            ) {
                Ok(()) => info!("record: wrote the raw recording to {}", path.display()),
                Err(e) => warn!("record: {RAW_ENV}: {e}"),
            }
        }
        let wakes = self.wakes.len();
        let (trace, live, relations) = self.built(topo)?;
        write_json(&self.cfg.trace, &trace)?;
        write_json(&self.cfg.live, &live)?;
        info!(
            "record: wrote {} ({} tasks, {} events over {:.2} s, {relations} of {} wake-ups by \
             a task kept as relations) and {}",
            self.cfg.trace.display(),
            trace.tasks.len(),
            live.events,
            live.window_ns as f64 / 1e9,
            wakes,
            self.cfg.live.display()
        );
        Ok(())
    }
}

/// Writes `--record`'s decision log (as [`write_json`] writes).
pub(crate) fn write_decisions(
    path: &Path,
    log: &hybridland_trace::decisions::DecisionLog,
) -> Result<()> {
    safe_file::replace(
        path,
        safe_file::OUTPUT_MODE,
        safe_file::Sync::Durable,
        |out| log.write_to(std::io::BufWriter::new(out)),
    )
    .context("writing the decision log")
}

/// Names a file for the recording's raw input (what [`Recorder::write_raw`] writes), for
/// reading what the recorder made of a run and for test vectors (`src/testdata/`).
const RAW_ENV: &str = "HYBRIDLAND_RECORD_RAW";

impl Recorder {
    /// The recording's input as JSON, written line by line (no document is built in the
    /// arena): the window, each task's name and exit, the events and wake-ups in the order
    /// seen (arrays in the fields' order), and the tails.
    fn write_raw(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        let stop = self.stopped.as_ref();
        let opt = |v: Option<u64>| v.map_or_else(|| "null".to_owned(), |v| v.to_string());
        writeln!(out, "{{\"version\": 1,")?;
        writeln!(
            out,
            "\"start_ns\": {}, \"stop_ns\": {},",
            self.start_ns,
            opt(stop.map(|s| s.at_ns))
        )?;
        writeln!(out, "\"tasks\": [")?;
        let mut pids: Vec<&i32> = self.tasks.keys().collect();
        pids.sort_unstable();
        for (i, pid) in pids.iter().enumerate() {
            let name = serde_json::to_string(&self.comm_of(**pid)).unwrap_or_default();
            let exited = opt(self.tasks[*pid].exited_at);
            let sep = if i + 1 < pids.len() { "," } else { "" };
            writeln!(out, "[{pid}, {name}, {exited}]{sep}")?;
        }
        writeln!(
            out,
            "], \"events_are\": [\"at_ns\", \"start_ts\", \"stop_ts\", \"exec_runtime\", \"pid\", \"cpu\", \"wakeup\"], \"events\": ["
        )?;
        for (i, e) in self.events.iter().enumerate() {
            let sep = if i + 1 < self.events.len() { "," } else { "" };
            writeln!(
                out,
                "[{}, {}, {}, {}, {}, {}, {}]{sep}",
                e.at_ns, e.start_ts, e.stop_ts, e.exec_runtime, e.pid, e.cpu, e.wakeup
            )?;
        }
        writeln!(
            out,
            "], \"wakes_are\": [\"at_ns\", \"pid\", \"waker\"], \"wakes\": ["
        )?;
        for (i, w) in self.wakes.iter().enumerate() {
            let sep = if i + 1 < self.wakes.len() { "," } else { "" };
            writeln!(out, "[{}, {}, {}]{sep}", w.at_ns, w.pid, w.waker)?;
        }
        writeln!(
            out,
            "], \"tails_are\": [\"pid\", \"cpu\", \"from_ns\"], \"tails\": ["
        )?;
        let tails = stop.map_or(&[][..], |s| &s.tails[..]);
        for (i, t) in tails.iter().enumerate() {
            let sep = if i + 1 < tails.len() { "," } else { "" };
            writeln!(out, "[{}, {}, {}]{sep}", t.pid, t.cpu, t.from_ns)?;
        }
        writeln!(out, "]}}")
    }
}

/// What a recorded event tells the builder about a task.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Act {
    /// On this CPU from then.
    In(u16),
    /// Off its CPU: still runnable when `true`, else asleep.
    Out(bool),
    /// Woken (by the task [`Reports::wakers`] names for it, if any).
    Woken,
    Exit,
}

/// One report to the builder: 16 bytes, as many as three per event, built after the
/// scheduler has detached but still from its arena.
#[derive(Copy, Clone, Debug)]
struct Report {
    /// Its time, raised to the task's latest report so far as the builder raises it: the
    /// reports go to the builder in this order, which keeps each task's own order.
    key: u64,
    pid: u32,
    act: Act,
}

/// The reports of a recording, each task's in the order made.
#[derive(Default)]
struct Reports {
    list: Vec<Report>,
    latest: HashMap<u32, u64>,
    /// The waker of each wake-up that is a relation: (its report's index, the waker), in
    /// index order (8 bytes each: a hash map's table would double that at the largest).
    wakers: Vec<(u32, u32)>,
}

impl Reports {
    fn with_capacity(n: usize) -> Self {
        Self {
            list: Vec::with_capacity(n),
            ..Self::default()
        }
    }

    /// Adds a report; returns its index.
    fn push(&mut self, pid: u32, at: u64, act: Act) -> usize {
        let latest = self.latest.entry(pid).or_insert(at);
        let key = at.max(*latest);
        *latest = key;
        self.list.push(Report { key, pid, act });
        self.list.len() - 1
    }

    /// Whether `pid` has a report yet.
    fn knows(&self, pid: u32) -> bool {
        self.latest.contains_key(&pid)
    }
}

/// The run of `runs` (in time order) that holds `at`, or failing one the nearest within
/// [`WAKE_SLACK_NS`].
fn run_near(runs: &[(u64, u64)], at: u64) -> Option<(u64, u64)> {
    let i = runs.partition_point(|&(from, _)| from <= at);
    let gap = |r: &(u64, u64)| {
        if at < r.0 {
            r.0 - at
        } else {
            at.saturating_sub(r.1)
        }
    };
    [i.checked_sub(1).map(|j| runs[j]), runs.get(i).copied()]
        .into_iter()
        .flatten()
        .filter(|r| gap(r) <= WAKE_SLACK_NS)
        .min_by_key(gap)
}

/// Written as root: never through a link or into a FIFO or device (see [`safe_file`]).
fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> Result<()> {
    safe_file::replace(
        path,
        safe_file::OUTPUT_MODE,
        safe_file::Sync::Durable,
        |out| {
            serde_json::to_writer_pretty(&mut *out, value)?;
            out.write_all(b"\n")
        },
    )
    .context("writing the recording")
}

/// `/proc/PID/stat`'s state letter and last CPU (field 39).
pub(crate) fn proc_state(pid: i32) -> Option<(char, i32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text)
}

fn parse_stat(text: &str) -> Option<(char, i32)> {
    // The command name may hold spaces and parentheses: fields resume after the last `)`.
    let rest = &text[text.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    // State is field 3; the CPU is field 39.
    let cpu = fields.nth(35)?.parse().ok()?;
    Some((state, cpu))
}

/// The thread ids of this process.
pub(crate) fn own_threads() -> Vec<i32> {
    std::fs::read_dir("/proc/self/task")
        .map(|dir| {
            dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_else(|e| {
            warn!("record: cannot list this process's threads ({e}): they may be recorded too");
            Vec::new()
        })
}

#[cfg(test)]
mod test {
    use super::*;
    use hybridland_trace::Trace;
    use hybridland_trace::format::Phase;

    const MS: u64 = 1_000_000;
    /// The kernel clock runs this far behind the loop's in these tests.
    const SKEW: u64 = 7 * MS;

    fn machine() -> Topology {
        crate::test_machines::vm()
    }

    fn config(max_events: usize, dir: &str) -> RecordConfig {
        let dir = std::env::temp_dir().join(format!("hl-record-{}-{dir}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let trace = dir.join("rec.json");
        RecordConfig {
            live: RecordConfig::live_path(&trace, None),
            trace,
            max_events,
            max_tasks: 16,
            policy: "hybridland".into(),
            policy_seed: 0,
            settings: vec!["cluster_balance=auto".into()],
            machine_source: "test".into(),
        }
    }

    /// A dequeue at loop time `at` (ms) of a task whose last run was `run` (kernel ms).
    fn ev(pid: i32, at: u64, cpu: i16, wakeup: bool, run: (u64, u64), exec: u64) -> Event {
        let k = |ms: u64| if ms == 0 { 0 } else { ms * MS - SKEW };
        Event {
            at_ns: at * MS,
            start_ts: k(run.0),
            stop_ts: k(run.1),
            exec_runtime: exec * MS,
            pid,
            cpu,
            wakeup,
        }
    }

    fn nothing_running(_: i32) -> Option<(char, i32)> {
        Some(('S', 0))
    }

    /// A task woken at 10 ms that runs 10 ms on E-core 1, is preempted, runs 8 ms on P-core
    /// 4 and sleeps until 40 ms; then runs 5 ms on P-core 4 and sleeps again.
    fn periodic(r: &mut Recorder) {
        r.observe(ev(50, 10, -1, true, (0, 0), 0), b"worker");
        r.observe(ev(50, 20, 1, false, (10, 20), 10), b"worker");
        r.observe(ev(50, 40, 4, true, (21, 29), 0), b"worker");
        r.observe(ev(50, 60, 4, true, (41, 46), 0), b"worker");
    }

    #[test]
    fn runs_become_reference_work_by_capacity_and_the_files_read_back() {
        let topo = machine();
        let mut r = Recorder::new(config(100, "basic"), 0, Counters::default(), vec![99]);
        periodic(&mut r);
        // The scheduler's own thread is not recorded.
        r.observe(ev(99, 30, 6, true, (25, 29), 0), b"hl-nudge");
        r.decision(50, Some(Step::IdleECore), false, false);
        r.decision(50, Some(Step::IdlePCore), false, false);
        r.decision(50, Some(Step::IdlePCore), true, false);
        r.decision(99, Some(Step::IdlePCore), false, false);
        // The kernel's fast path kept 5 wake-ups on idle P-cores and 2 on E-cores meanwhile.
        let at_stop = Counters {
            fast: [5, 2, 0, 0],
            ..Counters::default()
        };
        r.stop_and_read(70 * MS, &at_stop, &nothing_running);
        let cfg = r.cfg.clone();
        r.clone().write(&topo).unwrap();
        let text = std::fs::read_to_string(&cfg.trace).unwrap();
        let trace = Trace::from_json_str(&text, "rec.json").unwrap();
        trace.validate_for(&topo, "rec.json").unwrap();
        assert_eq!(trace.tasks.len(), 1);
        let t = &trace.tasks[0];
        assert_eq!(t.name, "worker-50");
        assert_eq!(t.start_ns, 10 * MS);
        // 10 ms on a 640 E-core is 6.25 ms of reference work, plus 8 ms on the P-core; the
        // sleeps run from each run's stop to the dequeue of the wake-up.
        assert_eq!(
            t.phases,
            [
                Phase::RunNs(6_250_000 + 8 * MS),
                Phase::SleepNs(11 * MS),
                Phase::RunNs(5 * MS),
            ]
        );
        assert_eq!(trace.duration_ns, Some(70 * MS));
        let live =
            LiveStats::from_json_str(&std::fs::read_to_string(&cfg.live).unwrap(), "live").unwrap();
        assert_eq!(live.window_ns, 70 * MS);
        assert_eq!(live.tasks, 1);
        assert_eq!(live.events, 4);
        assert!(!live.capped);
        let busy: Vec<(&str, u64)> = live
            .kinds
            .iter()
            .map(|k| (k.kind.as_str(), k.busy_ns))
            .collect();
        assert_eq!(busy, [("performance", 13 * MS), ("efficiency", 10 * MS)]);
        let cluster = live.clusters.iter().find(|c| c.cpus == "1,3").unwrap();
        assert_eq!(
            (cluster.kind.as_str(), cluster.busy_ns),
            ("efficiency", 10 * MS)
        );
        assert_eq!(live.migrations, 1);
        let steps: Vec<(u64, u64)> = live.steps.iter().map(|s| (s.count, s.overflow)).collect();
        assert_eq!(steps, [(7, 1), (3, 0), (0, 0), (0, 0)]);
        assert_eq!(live.settings, ["cluster_balance=auto"]);
    }

    #[test]
    fn the_cap_stops_recording_and_the_window_ends_there() {
        let topo = machine();
        let mut r = Recorder::new(config(3, "cap"), 0, Counters::default(), Vec::new());
        assert!(!r.observe(ev(50, 10, -1, true, (0, 0), 0), b"worker"));
        assert!(!r.observe(ev(50, 20, 1, false, (10, 20), 10), b"worker"));
        assert!(r.observe(ev(50, 40, 4, true, (21, 29), 0), b"worker"));
        r.stop_and_read(41 * MS, &Counters::default(), &nothing_running);
        assert!(!r.recording());
        // Later events and decisions are not recorded.
        assert!(!r.observe(ev(50, 60, 4, true, (41, 46), 0), b"worker"));
        r.decision(50, Some(Step::IdlePCore), false, false);
        let (trace, live) = r.build(&topo).unwrap();
        assert_eq!(r.events.len(), 3);
        assert!(live.capped);
        assert_eq!(live.events, 3);
        assert_eq!(live.window_ns, 41 * MS);
        assert_eq!(trace.duration_ns, Some(41 * MS));
        assert_eq!(live.steps.iter().map(|s| s.count).sum::<u64>(), 0);
        Trace::from_json_str(&trace.to_json_string(), "capped").unwrap();
    }

    #[test]
    fn the_task_cap_stops_recording_and_known_tasks_fill_no_room() {
        let mut cfg = config(100, "task-cap");
        cfg.max_tasks = 2;
        let mut r = Recorder::new(cfg, 0, Counters::default(), Vec::new());
        assert!(!r.observe(ev(1, 10, -1, true, (0, 0), 0), b"a"));
        assert!(!r.observe(ev(2, 11, -1, true, (0, 0), 0), b"b"));
        // Tasks it holds are still recorded; a third is not, and says the recording is full.
        assert!(!r.observe(ev(1, 20, 1, false, (10, 20), 10), b"a"));
        assert!(r.observe(ev(3, 21, -1, true, (0, 0), 0), b"c"));
        r.stop_and_read(22 * MS, &Counters::default(), &nothing_running);
        let (_, live) = r.build(&machine()).unwrap();
        assert_eq!((r.events.len(), r.tasks.len()), (3, 2));
        assert!(live.capped);
    }

    #[test]
    fn an_exited_task_is_no_tail_and_ends_where_it_exited() {
        let topo = machine();
        let mut r = Recorder::new(config(100, "exit"), 0, Counters::default(), Vec::new());
        assert!(!r.observe(ev(7, 10, -1, true, (0, 0), 0), b"short"));
        assert!(!r.observe(ev(7, 20, 1, false, (10, 20), 10), b"short"));
        r.exited(7, 25 * MS);
        // /proc says running: its pid is another task's by now, so no tail is added.
        r.stop_and_read(40 * MS, &Counters::default(), &|_| Some(('R', 1)));
        let (trace, _) = r.build(&topo).unwrap();
        assert_eq!(trace.tasks.len(), 1);
        let stopped = r.stopped.as_ref().unwrap();
        assert!(stopped.tails.is_empty());
    }

    #[test]
    fn a_task_running_when_recording_stops_ran_from_its_last_dispatch() {
        let topo = machine();
        let mut r = Recorder::new(config(100, "tail"), 0, Counters::default(), Vec::new());
        // A spinner woken at 5 ms, never back: the framework kept refilling its slice.
        r.observe(ev(60, 5, -1, true, (0, 0), 0), b"spin");
        periodic(&mut r);
        let running = |pid: i32| (pid == 60).then_some(('R', 6));
        r.stop_and_read(105 * MS, &Counters::default(), &running);
        let (trace, live) = r.build(&topo).unwrap();
        let spin = trace.tasks.iter().find(|t| t.name == "spin-60").unwrap();
        assert_eq!(spin.phases, [Phase::RunNs(100 * MS)]);
        assert_eq!(spin.start_ns, 5 * MS);
        assert_eq!(live.kinds[0].busy_ns, 113 * MS);
    }

    #[test]
    fn a_restricted_task_keeps_its_cpus_and_an_unrestricted_one_none() {
        let topo = machine();
        let mut r = Recorder::new(config(100, "allowed"), 0, Counters::default(), Vec::new());
        periodic(&mut r);
        let pinned: CpuSet = [CpuId(1), CpuId(4)].into_iter().collect();
        r.allowed(50, &pinned, true);
        let (trace, _) = r.build(&topo).unwrap();
        assert_eq!(trace.tasks[0].allowed_cpus.as_deref(), Some("1,4"));
        r.allowed(50, topo.cpus(), false);
        let (trace, _) = r.build(&topo).unwrap();
        assert_eq!(trace.tasks[0].allowed_cpus, None);
    }

    #[test]
    fn the_clock_offset_is_the_smallest_stop_to_dequeue_gap() {
        let mut r = Recorder::new(config(100, "offset"), 0, Counters::default(), Vec::new());
        periodic(&mut r);
        // The slice end dequeued at 20 ms right after its run stopped at 20 ms: the gap is the
        // skew alone; every wake-up's gap also holds a sleep.
        assert_eq!(r.offset(), i128::from(SKEW));
    }

    #[test]
    fn proc_stat_gives_state_and_cpu_whatever_the_name() {
        // The state is field 3, the CPU field 39: the 37th after the name.
        let mut v: Vec<String> = vec!["R".into()];
        for i in 1..37 {
            v.push(if i == 36 { "5".into() } else { i.to_string() });
        }
        let text = format!("123 (a) (b c) {}", v.join(" "));
        assert_eq!(parse_stat(&text), Some(('R', 5)));
        assert_eq!(parse_stat("garbage"), None);
        assert!(proc_state(i32::try_from(std::process::id()).unwrap()).is_some());
    }

    /// A producer on P-core 4 (28 to 48 ms) wakes a consumer on E-core 1 twice (33 and 43 ms,
    /// the event source's waker); an interrupt wakes it a third time (no waker reported).
    fn producer_and_consumer(r: &mut Recorder) {
        r.observe(ev(20, 20, -1, true, (0, 0), 0), b"cons");
        r.observe(ev(10, 28, -1, true, (0, 0), 0), b"prod");
        assert!(!r.woken(33 * MS, 20, 10));
        r.observe(ev(20, 34, 1, true, (20, 24), 0), b"cons");
        assert!(!r.woken(43 * MS, 20, 10));
        r.observe(ev(20, 44, 1, true, (34, 36), 0), b"cons");
        // Back at a slice end right where its run stopped: the clock offset is the skew.
        r.observe(ev(10, 48, 4, false, (28, 48), 20), b"prod");
        r.observe(ev(20, 50, 1, true, (44, 45), 0), b"cons");
        r.observe(ev(20, 55, 1, true, (50, 51), 0), b"cons");
    }

    /// The wake-ups by the producer become the trace's relation: the consumer's sleeps wait for
    /// it (whatever their recorded length), and its run holds a `wake` where each happened;
    /// the interrupt's wake-up stays a sleep of its recorded length.
    #[test]
    fn a_wakeup_by_a_running_task_is_a_wait_and_a_wake_in_the_trace() {
        let topo = machine();
        let mut r = Recorder::new(config(100, "wakes"), 0, Counters::default(), Vec::new());
        producer_and_consumer(&mut r);
        r.stop_and_read(60 * MS, &Counters::default(), &nothing_running);
        let cfg = r.cfg.clone();
        r.clone().write(&topo).unwrap();
        let text = std::fs::read_to_string(&cfg.trace).unwrap();
        let trace = Trace::from_json_str(&text, "rec.json").unwrap();
        trace.validate_for(&topo, "rec.json").unwrap();
        assert_eq!(trace.version, 2);
        let task = |name: &str| &trace.tasks.iter().find(|t| t.name == name).unwrap().phases;
        assert_eq!(
            *task("prod-10"),
            [
                Phase::RunNs(5 * MS),
                Phase::Wake("cons-20".into()),
                Phase::RunNs(10 * MS),
                Phase::Wake("cons-20".into()),
                Phase::RunNs(5 * MS),
            ]
        );
        // On the 640 E-core: 4 ms is 2.5 ms of work, 2 ms 1.25 ms, 1 ms 0.625 ms.
        let waits = || Phase::WaitFor(vec!["prod-10".into()]);
        assert_eq!(
            *task("cons-20"),
            [
                Phase::RunNs(2_500_000),
                waits(),
                Phase::RunNs(1_250_000),
                waits(),
                Phase::RunNs(625_000),
                Phase::SleepNs(5 * MS),
                Phase::RunNs(625_000),
            ]
        );
        let (_, _, relations) = r.built(&topo).unwrap();
        assert_eq!(relations, 2);
    }

    /// A wake-up is a relation only where the events show the waker running and the woken
    /// task asleep: one by a task that never ran in the recording, or by one whose run had
    /// ended, or one before the sleep began (it woke an earlier sleep, or none), leaves the
    /// sleep as recorded; the scheduler's own threads and interrupts are not kept at all.
    #[test]
    fn a_wakeup_the_events_do_not_place_leaves_the_sleep_as_recorded() {
        let topo = machine();
        let mut r = Recorder::new(config(100, "misplaced"), 0, Counters::default(), vec![99]);
        r.observe(ev(20, 20, -1, true, (0, 0), 0), b"cons");
        r.observe(ev(10, 28, -1, true, (0, 0), 0), b"prod");
        // The producer runs 28 to 30 ms only.
        r.observe(ev(10, 30, 4, false, (28, 30), 2), b"prod");
        // Woken at 33 ms by the producer (3 ms after its run), at 40 ms by pid 77 (never ran)
        // and at 44 ms by the scheduler's own thread; and at 22 ms by the producer, before the
        // consumer's sleep began at 24 ms.
        assert!(!r.woken(33 * MS, 20, 10));
        assert!(!r.woken(22 * MS, 20, 10));
        r.observe(ev(20, 34, 1, true, (20, 24), 0), b"cons");
        assert!(!r.woken(40 * MS, 20, 77));
        r.observe(ev(20, 41, 1, true, (34, 36), 0), b"cons");
        assert!(!r.woken(44 * MS, 20, 99));
        assert!(!r.woken(45 * MS, 20, 20));
        r.observe(ev(20, 46, 1, true, (41, 42), 0), b"cons");
        r.observe(ev(20, 50, 1, true, (46, 47), 0), b"cons");
        assert_eq!(
            r.wakes.len(),
            3,
            "the own thread's and the self wake-up are not kept"
        );
        r.stop_and_read(60 * MS, &Counters::default(), &nothing_running);
        let (trace, _, relations) = r.built(&topo).unwrap();
        assert_eq!(relations, 0);
        let cons = &trace.tasks.iter().find(|t| t.name == "cons-20").unwrap();
        assert!(
            cons.phases
                .iter()
                .all(|p| matches!(p, Phase::RunNs(_) | Phase::SleepNs(_))),
            "{:?}",
            cons.phases
        );
        // The sleeps end where the loop saw the task: 24 to 34, 36 to 41, 42 to 46 ms.
        let sleeps: Vec<u64> = cons
            .phases
            .iter()
            .filter_map(|p| match p {
                Phase::SleepNs(n) => Some(*n),
                _ => None,
            })
            .collect();
        assert_eq!(sleeps, [10 * MS, 5 * MS, 4 * MS]);
    }

    /// Kernel times are converted with the smallest stop-to-dequeue gap, which holds the
    /// loop's latency (40 us here): a waker's run starts that much late in the loop's clock.
    /// A wake-up 10 us into the run is moved to just inside it; one 200 us before the run,
    /// beyond [`WAKE_SLACK_NS`], is no relation.
    #[test]
    fn a_wakeup_within_the_slack_of_the_wakers_run_is_moved_into_it() {
        const US: u64 = 1_000;
        const LATENCY: u64 = 40 * US;
        let topo = machine();
        for (woken_at, related) in [(28 * MS + 10 * US, true), (28 * MS - 200 * US, false)] {
            let mut r = Recorder::new(config(100, "slack"), 0, Counters::default(), Vec::new());
            // Kernel time of a loop-clock moment: behind by the skew.
            let k = |ns: u64| ns - SKEW;
            let event = |pid, at, cpu, wakeup, run: (u64, u64), exec| Event {
                at_ns: at,
                start_ts: if run.0 == 0 { 0 } else { k(run.0) },
                stop_ts: if run.1 == 0 { 0 } else { k(run.1) },
                exec_runtime: exec,
                pid,
                cpu,
                wakeup,
            };
            r.observe(event(20, 20 * MS, -1, true, (0, 0), 0), b"cons");
            r.observe(event(10, 27 * MS, -1, true, (0, 0), 0), b"prod");
            // The consumer slept at 24 ms; its wake-up is seen 5 ms after the waking.
            r.woken(woken_at, 20, 10);
            r.observe(
                event(20, woken_at + 5 * MS, 1, true, (20 * MS, 24 * MS), 0),
                b"cons",
            );
            // The producer ran 28 to 38 ms; the loop saw it LATENCY after.
            r.observe(
                event(10, 38 * MS + LATENCY, 4, false, (28 * MS, 38 * MS), 10 * MS),
                b"prod",
            );
            r.observe(event(20, 45 * MS, 1, true, (40 * MS, 41 * MS), 0), b"cons");
            assert_eq!(r.offset(), i128::from(SKEW + LATENCY));
            r.stop_and_read(50 * MS, &Counters::default(), &nothing_running);
            let (trace, _, relations) = r.built(&topo).unwrap();
            assert_eq!(relations, u64::from(related), "woken at {woken_at}");
            let prod = &trace.tasks.iter().find(|t| t.name == "prod-10").unwrap();
            if related {
                // At the run's start as converted, plus the nanosecond that puts it inside.
                assert_eq!(prod.phases[0], Phase::RunNs(1));
                assert_eq!(prod.phases[1], Phase::Wake("cons-20".into()));
            } else {
                assert_eq!(prod.phases, [Phase::RunNs(10 * MS)]);
            }
        }
    }

    /// Wake-ups have a buffer of their own, as large as the events': when it is full the
    /// recording stops as at a full event buffer.
    #[test]
    fn a_full_wakeup_buffer_stops_the_recording() {
        let mut r = Recorder::new(config(2, "wake-cap"), 0, Counters::default(), Vec::new());
        assert!(!r.observe(ev(20, 20, -1, true, (0, 0), 0), b"cons"));
        assert!(!r.woken(21 * MS, 20, 10));
        assert!(r.woken(22 * MS, 20, 10));
        // An event for a new task finds the recording full too.
        assert!(r.observe(ev(21, 23, -1, true, (0, 0), 0), b"other"));
        r.stop_and_read(24 * MS, &Counters::default(), &nothing_running);
        assert!(!r.woken(23 * MS, 20, 10));
        assert_eq!(r.wakes.len(), 2);
        assert!(r.stopped.as_ref().unwrap().capped);
    }

    /// `--max-tasks` above what a recording keeps (the default among them) records
    /// [`MAX_TASKS`] tasks; below it, as many as the loop keeps.
    #[test]
    fn a_recording_keeps_at_most_max_tasks_tasks() {
        let default = crate::scheduler::DEFAULT_MAX_TASKS;
        assert_eq!(RecordConfig::tasks_for(default), MAX_TASKS);
        assert_eq!(RecordConfig::tasks_for(1_048_576), MAX_TASKS);
        assert_eq!(RecordConfig::tasks_for(64), 64);
    }

    /// The process's heap is scx_rustland_core's 64 MiB arena (its allocator is this
    /// binary's, tests included): the largest recording, every event a wake-up by a task that
    /// fits a relation, among as many tasks as a recording keeps, each with a name of the
    /// kernel's longest, builds and writes within it beside 2 MiB held elsewhere (the live
    /// process still holds its logging, the stats server and the topology), keeping
    /// [`MAX_RELATIONS`] relations (keeping them all, it ran out). It needs the arena to
    /// itself: tests running beside it take their share, so scripts/test.sh runs it alone.
    #[test]
    #[ignore = "needs the arena to itself: scripts/test.sh runs it alone"]
    fn the_largest_recording_of_relations_is_written_within_the_arena() {
        const US: u64 = 1_000;
        const LARGEST: usize = MAX_MAX_EVENTS;
        // The ring and the first task fill the recording's task table.
        const RING: u64 = MAX_TASKS as u64 - 1;
        let elsewhere = vec![1u8; 2 << 20];
        let topo = machine();
        let mut cfg = config(LARGEST, "largest");
        cfg.max_tasks = MAX_TASKS;
        let mut r = Recorder::new(cfg, 0, Counters::default(), Vec::new());
        // RING tasks in a ring, 10 us apart: each runs 5 us, sleeps, and is woken by the
        // next one, in that one's run. One slice end seen as it ended sets the clock offset.
        r.observe(ev(99, 9, 0, false, (8, 9), 1), b"first");
        for i in 0..LARGEST as u64 - 1 {
            let pid = 100 + (i % RING) as i32;
            let at = 10 * MS + i * 10 * US;
            r.observe(
                Event {
                    at_ns: at,
                    start_ts: at - 30 * US - SKEW,
                    stop_ts: at - 25 * US - SKEW,
                    exec_runtime: 5 * US,
                    pid,
                    cpu: (i % 8) as i16,
                    wakeup: true,
                },
                b"fifteen-chars-x",
            );
            r.woken(at - 18 * US, pid, 100 + ((i + 1) % RING) as i32);
        }
        assert_eq!(r.events.len(), LARGEST);
        r.stop_and_read(3 * 1_000 * MS, &Counters::default(), &nothing_running);
        let cfg = r.cfg.clone();
        r.write(&topo).unwrap();
        let text = std::fs::read_to_string(&cfg.trace).unwrap();
        let trace = Trace::from_json_str(&text, "largest").unwrap();
        let waits = trace
            .tasks
            .iter()
            .flat_map(|t| &t.phases)
            .filter(|p| matches!(p, Phase::WaitFor(_)))
            .count();
        assert_eq!(waits, MAX_RELATIONS);
        assert_eq!(elsewhere.len(), 2 << 20);
        std::fs::remove_dir_all(cfg.trace.parent().unwrap()).unwrap();
    }

    /// A recording read back from what [`Recorder::write_raw`] wrote, stopped where it was.
    fn from_raw(text: &str) -> Recorder {
        let v: serde_json::Value = serde_json::from_str(text).unwrap();
        let n = |v: &serde_json::Value| v.as_u64().unwrap();
        let events = v["events"].as_array().unwrap();
        let wakes = v["wakes"].as_array().unwrap();
        let mut cfg = config(events.len().max(wakes.len()) + 1, "raw");
        cfg.max_tasks = v["tasks"].as_array().unwrap().len() + 1;
        let mut r = Recorder::new(cfg, n(&v["start_ns"]), Counters::default(), Vec::new());
        let names: HashMap<i64, String> = v["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| (t[0].as_i64().unwrap(), t[1].as_str().unwrap().to_owned()))
            .collect();
        for e in events {
            let pid = e[4].as_i64().unwrap();
            let ev = Event {
                at_ns: n(&e[0]),
                start_ts: n(&e[1]),
                stop_ts: n(&e[2]),
                exec_runtime: n(&e[3]),
                pid: pid as i32,
                cpu: e[5].as_i64().unwrap() as i16,
                wakeup: e[6].as_bool().unwrap(),
            };
            r.observe(ev, names[&pid].as_bytes());
        }
        for w in wakes {
            let pid = |i: usize| w[i].as_i64().unwrap() as i32;
            r.woken(n(&w[0]), pid(1), pid(2));
        }
        for t in v["tasks"].as_array().unwrap() {
            if let Some(at) = t[2].as_u64() {
                r.exited(t[0].as_i64().unwrap() as i32, at);
            }
        }
        r.stop(n(&v["stop_ns"]), &Counters::default());
        let tails = v["tails"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| Tail {
                pid: t[0].as_i64().unwrap() as i32,
                cpu: t[1].as_u64().unwrap() as u16,
                from_ns: n(&t[2]),
            })
            .collect();
        r.set_tails(tails);
        r
    }

    /// The raw recording reads back into the same trace.
    #[test]
    fn the_raw_recording_reads_back_into_the_same_trace() {
        let topo = machine();
        let mut r = Recorder::new(config(100, "raw-out"), 0, Counters::default(), Vec::new());
        producer_and_consumer(&mut r);
        r.exited(10, 58 * MS);
        let running = |pid: i32| (pid == 20).then_some(('R', 1));
        r.stop_and_read(60 * MS, &Counters::default(), &running);
        let mut raw = Vec::new();
        r.write_raw(&mut raw).unwrap();
        let again = from_raw(core::str::from_utf8(&raw).unwrap());
        let (trace, _) = r.build(&topo).unwrap();
        let (read, _) = again.build(&topo).unwrap();
        assert_eq!(read.tasks, trace.tasks);
        assert_eq!(read.duration_ns, trace.duration_ns);
    }

    /// A recording made in the project's VM (`src/testdata/README.md`: hackbench's senders
    /// waking its receivers through sockets): the trace keeps the 467 relations the scheduler
    /// wrote there, each `wait_for` answered by a `wake` of the task it names, and the
    /// hackbench tasks' waits by other hackbench tasks.
    #[test]
    fn the_vm_recording_keeps_its_wake_chains() {
        let topo = machine();
        let r = from_raw(include_str!("testdata/vm-hackbench.raw.json"));
        assert_eq!((r.events.len(), r.wakes.len()), (983, 732));
        let (trace, _, relations) = r.clone().built(&topo).unwrap();
        trace.validate_for(&topo, "vm").unwrap();
        assert_eq!(relations, 467);
        // Per (waker, woken): as many wakes as waits.
        let mut links: HashMap<(String, String), (u32, u32)> = HashMap::new();
        for t in &trace.tasks {
            for p in &t.phases {
                match p {
                    Phase::WaitFor(w) => {
                        links.entry((w[0].clone(), t.name.clone())).or_default().1 += 1
                    }
                    Phase::Wake(w) => links.entry((t.name.clone(), w.clone())).or_default().0 += 1,
                    _ => {}
                }
            }
        }
        assert_eq!(links.values().map(|l| u64::from(l.1)).sum::<u64>(), 467);
        assert!(
            links.values().all(|(wakes, waits)| wakes == waits),
            "{links:?}"
        );
        let hackbench = links
            .iter()
            .filter(|((w, t), _)| w.starts_with("hackbench-") && t.starts_with("hackbench-"))
            .map(|(_, l)| l.1)
            .sum::<u32>();
        assert!(
            hackbench > 400,
            "{hackbench} of the relations between hackbench tasks"
        );
    }

    /// Root writes both files: a link or FIFO planted at either is refused, left as it is, and
    /// never written through.
    #[test]
    fn planted_links_and_fifos_at_the_trace_or_live_file_are_refused() {
        use crate::safe_file::testing::*;
        let topo = machine();
        let recording = |tag: &str| {
            let mut r = Recorder::new(config(100, tag), 0, Counters::default(), vec![]);
            periodic(&mut r);
            r.stop_and_read(70 * MS, &Counters::default(), &nothing_running);
            r
        };
        for which in ["trace", "live"] {
            let r = recording(&format!("plant-link-{which}"));
            let target = if which == "trace" {
                &r.cfg.trace
            } else {
                &r.cfg.live
            };
            let victim = target.with_file_name("victim");
            plant_link(target, &victim);
            let e = format!("{:#}", r.clone().write(&topo).unwrap_err());
            assert!(e.contains("it is a symbolic link"), "{which}: {e}");
            assert_link_untouched(target, &victim);

            let r = recording(&format!("plant-fifo-{which}"));
            let target = if which == "trace" {
                &r.cfg.trace
            } else {
                &r.cfg.live
            };
            plant_fifo(target);
            let e = format!("{:#}", r.clone().write(&topo).unwrap_err());
            assert!(e.contains("it is a FIFO"), "{which}: {e}");
            assert_fifo_untouched(target);
            std::fs::remove_dir_all(target.parent().unwrap()).unwrap();
            std::fs::remove_dir_all(victim.parent().unwrap()).unwrap();
        }
    }

    /// The decision log is root's too: the same refusal, with the link's target and the FIFO
    /// left as they were.
    #[test]
    fn planted_links_and_fifos_at_the_decision_log_are_refused() {
        use crate::safe_file::testing::*;
        use hybridland_trace::decisions::{self, CoreSettings, DecisionLog, Header};
        let log = DecisionLog::new(Header {
            format: decisions::FORMAT.to_owned(),
            version: decisions::VERSION,
            machine: String::new(),
            policy: "hybridland".to_owned(),
            seed: 0,
            knobs: hybridland_policy::PolicyConfig::default(),
            core: CoreSettings::from(&hybridland_policy::CoreConfig::DEFAULT),
            max_tasks: 64,
            helper: None,
            max_bytes: 1 << 10,
            truncated: false,
        });
        let dir = Scratch::new("plant-decisions");
        let target = dir.0.join("run.decisions.jsonl");
        let victim = dir.0.join("victim");
        plant_link(&target, &victim);
        let e = format!("{:#}", write_decisions(&target, &log).unwrap_err());
        assert!(e.contains("it is a symbolic link"), "{e}");
        assert_link_untouched(&target, &victim);
        std::fs::remove_file(&target).unwrap();
        plant_fifo(&target);
        let e = format!("{:#}", write_decisions(&target, &log).unwrap_err());
        assert!(e.contains("it is a FIFO"), "{e}");
        assert_fifo_untouched(&target);
        // And a plain file there is replaced by the log.
        std::fs::remove_file(&target).unwrap();
        std::fs::write(&target, "old\n").unwrap();
        write_decisions(&target, &log).unwrap();
        assert!(
            std::fs::read_to_string(&target)
                .unwrap()
                .contains(decisions::FORMAT)
        );
    }

    /// One call the loop makes into the recorder, as the property below draws them.
    #[derive(Clone, Debug)]
    enum Call {
        Observe(Event),
        Woken { at_ns: u64, pid: i32, waker: i32 },
        Exited { pid: i32, at_ns: u64 },
        Allowed { pid: i32, lo: u8, len: u8 },
    }

    fn arb_call() -> impl proptest::strategy::Strategy<Value = Call> {
        use proptest::prelude::*;
        // Few pids and CPUs past the machine's 8, times near each other or anywhere: the loop's
        // clock and the kernel's disagree, events arrive late, runs are reported twice.
        let pid = 1i32..12;
        let time = prop_oneof![0u64..200 * MS, any::<u64>()];
        prop_oneof![
            6 => (time.clone(), time.clone(), time.clone(), 0u64..300 * MS, pid.clone(), -1i16..10, any::<bool>())
                .prop_map(|(at_ns, start_ts, stop_ts, exec_runtime, pid, cpu, wakeup)| {
                    Call::Observe(Event { at_ns, start_ts, stop_ts, exec_runtime, pid, cpu, wakeup })
                }),
            2 => (time.clone(), pid.clone(), pid.clone())
                .prop_map(|(at_ns, pid, waker)| Call::Woken { at_ns, pid, waker }),
            1 => (pid.clone(), time).prop_map(|(pid, at_ns)| Call::Exited { pid, at_ns }),
            1 => (pid, any::<u8>(), any::<u8>()).prop_map(|(pid, lo, len)| Call::Allowed { pid, lo, len }),
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 256, ..Default::default() })]

        /// The recorder's path from what the loop saw to a trace, on any sequence of calls:
        /// a trace the simulator accepts for this machine, of tasks that were observed, or a
        /// typed error; never a panic.
        #[test]
        fn any_sequence_of_loop_calls_gives_a_valid_trace_or_an_error(
            calls in proptest::collection::vec(arb_call(), 0..120),
            stop_at in 0u64..400 * MS,
            max_events in 1usize..80,
        ) {
            let topo = machine();
            let mut r = Recorder::new(config(max_events, "prop"), 0, Counters::default(), vec![11]);
            let mut observed = std::collections::BTreeSet::new();
            for call in calls {
                match call {
                    Call::Observe(ev) => {
                        if r.observe(ev, b"t") {
                            r.stop_and_read(ev.at_ns, &Counters::default(), &nothing_running);
                        }
                        observed.insert(ev.pid);
                    }
                    Call::Woken { at_ns, pid, waker } => {
                        let _ = r.woken(at_ns, pid, waker);
                    }
                    Call::Exited { pid, at_ns } => r.exited(pid, at_ns),
                    Call::Allowed { pid, lo, len } => {
                        let cpus: CpuSet = (lo..lo.saturating_add(len % 9))
                            .map(|c| CpuId(u16::from(c)))
                            .collect();
                        r.allowed(pid, &cpus, len % 9 < 8);
                    }
                }
            }
            r.stop_and_read(stop_at, &Counters::default(), &|pid| Some((if pid % 2 == 0 { 'R' } else { 'S' }, pid % 10)));
            if let Ok((trace, live)) = r.build(&topo) {
                let text = serde_json::to_string(&trace).unwrap();
                let back = Trace::from_json_str(&text, "prop.json").unwrap();
                back.validate_for(&topo, "prop.json").unwrap();
                for t in &trace.tasks {
                    let pid: i32 = t.name.rsplit('-').next().unwrap().parse().unwrap();
                    proptest::prop_assert!(observed.contains(&pid) && pid != 11, "{}", t.name);
                }
                proptest::prop_assert_eq!(live.tasks, trace.tasks.len() as u64);
            }
        }
    }
}
