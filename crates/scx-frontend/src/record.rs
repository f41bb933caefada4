//! `--record FILE`: what the scheduler saw, written at exit as a hybrid-sim trace, and beside
//! it (`FILE.live.json` unless `--record-live` says otherwise) the scheduler's own figures over
//! the same window, which `hybrid-sim compare` sets beside a replay of the trace.
//!
//! The framework reports, for each task it hands to user space, the CPU of its last run, the
//! kernel's start and stop times of that run, and its execution time since it last woke
//! (`exec_runtime`). The loop copies that into a preallocated buffer ([`Event`], 40 bytes, at
//! most `--record-max-events`): nothing else happens on the scheduling path, and memory is
//! bounded. Wake-ups by a task ([`Wake`]) go into a second buffer of the same size. When a
//! buffer is full, recording stops with one log line and scheduling goes on.
//!
//! At the end (signal, ejection, or the cap) [`hybridland_trace::recording`] makes the
//! recording a trace in the one format and the live figures (its documentation says how; every
//! file written is checked with [`hybridland_trace::Trace::from_json_str`] in the tests). Here
//! is the live side: the [`Recorder`] the loop feeds, the thread that reads `/proc` for the
//! tasks still running when recording stops (`proc`), and the files written (`files`).

#![forbid(unsafe_code)]

mod files;
mod proc;
#[cfg(test)]
mod tests;

use crate::stats::Counters;
use anyhow::Result;
use hybridland_policy::{CpuSet, Step, Topology};
use hybridland_trace::Trace;
use hybridland_trace::live::LiveStats;
use hybridland_trace::recording::{self, Figures, Recording, Tail, TaskInfo};
pub(crate) use hybridland_trace::recording::{Event, Wake};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use tracing::warn;

pub(crate) use files::write_decisions;
use proc::TailCandidate;
#[cfg(test)]
use proc::{ProcState, read_tails};
pub(crate) use proc::{TailReader, own_threads};

/// Default `--record-max-events`: 4 MB of events, about 100 s of a busy 8-CPU machine's
/// wake-ups and slice ends.
pub(crate) const DEFAULT_MAX_EVENTS: usize = 100_000;
/// Largest `--record-max-events`. The buffer is taken up front from scx_rustland_core's
/// 64 MiB arena, the process's only heap, and so is the trace built from it at the end: with
/// [`MAX_TASKS`] tasks and [`MAX_RELATIONS`](hybridland_trace::recording::MAX_RELATIONS)
/// relations, 200,000 events ran out of it (a test builds this largest recording in the
/// arena).
pub(crate) const MAX_MAX_EVENTS: usize = 150_000;

/// Most distinct tasks a recording keeps (at most `--max-tasks`); a recording that reaches it
/// stops as one that reaches `--record-max-events` does. Each task costs the built trace its
/// names and its phase list: 100,000 events among 32,767 tasks (the default `--max-tasks`)
/// ran out of the arena.
pub(crate) const MAX_TASKS: usize = 8_192;

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
    /// Where the decision log goes: beside the trace.
    pub(crate) fn decisions_path(trace: &Path) -> PathBuf {
        let mut name = trace.as_os_str().to_owned();
        name.push(".decisions.jsonl");
        PathBuf::from(name)
    }

    /// `--record-live`, or `FILE.live.json` beside the trace.
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
        self.observe_with(ev, Some(comm))
    }

    /// Records a run the kernel's fast path reported (the task never reached the loop: its
    /// name stays what the loop last saw, if anything). As [`observe`](Self::observe).
    pub(crate) fn observe_run(&mut self, ev: Event) -> bool {
        self.observe_with(ev, None)
    }

    fn observe_with(&mut self, ev: Event, comm: Option<&[u8]>) -> bool {
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
        if let Some(comm) = comm {
            let n = comm.len().min(16);
            info.comm = [0; 16];
            info.comm[..n].copy_from_slice(&comm[..n]);
        }
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
    /// exited: which of them still run is for [`read_tails`](proc::read_tails) to find, off the loop, and
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

    /// The tasks still running when recording stopped, as [`read_tails`](proc::read_tails) found them. A task
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

    /// [`stop`](Self::stop), [`read_tails`](proc::read_tails) and [`set_tails`](Self::set_tails) in one go.
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

    /// The trace and the live figures (of a copy: building takes the events).
    #[cfg(test)]
    pub(crate) fn build(&self, topo: &Topology) -> Result<(Trace, LiveStats)> {
        self.clone()
            .built(topo)
            .map(|(trace, live, _)| (trace, live))
    }

    /// The trace, the live figures and the wake-up relations the trace holds. Takes the
    /// events and wake-ups.
    fn built(&mut self, topo: &Topology) -> Result<(Trace, LiveStats, u64)> {
        let stopped = self.stopped.as_ref();
        let counters = stopped
            .map_or(self.counters_at_start, |s| s.counters)
            .delta(&self.counters_at_start);
        let seen = Recording {
            start_ns: self.start_ns,
            stop_ns: stopped.map(|s| s.at_ns),
            events: core::mem::take(&mut self.events),
            wakes: core::mem::take(&mut self.wakes),
            tasks: &self.tasks,
            tails: stopped.map_or(&[], |s| &s.tails),
            trace: &self.cfg.trace,
            machine_source: &self.cfg.machine_source,
        };
        let figures = Figures {
            version: env!("CARGO_PKG_VERSION"),
            policy: &self.cfg.policy,
            policy_seed: self.cfg.policy_seed,
            settings: &self.cfg.settings,
            steps: self.steps,
            fast: counters.fast,
            kept: self.kept,
            stale: counters.stale,
            nudges: counters.nudges,
            capped: stopped.is_some_and(|s| s.capped),
        };
        Ok(recording::build(seen, &figures, topo)?)
    }
}
