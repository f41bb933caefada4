//! `scx_hybridland --record`'s conversion of what the live scheduler saw into a trace and the
//! live figures beside it. The scheduler collects (the tasks its loop dequeued, [`Event`]; the
//! wake-ups by a task, [`Wake`]; the tasks still running at the end, [`Tail`]); [`build`]
//! turns that into a [`Trace`] in the one format and a [`LiveStats`].
//!
//! Each event becomes per-task reports to the [`TimelineBuilder`], the builder the ftrace
//! importer uses, so the recording is a trace in the one format:
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

mod reports;

use crate::builder::{Timeline, TimelineBuilder, TimelineError};
use crate::live::{LIVE_VERSION, LiveStats, busy_by_kind_and_cluster};
use crate::{StepCount, Trace};
use hybridland_policy::{CpuId, CpuSet, Step, Topology};
use reports::{Act, Reports, relate};
use std::collections::HashMap;
use std::path::Path;

/// How far a wake-up may lie outside the waker's run or the woken task's sleep as the events
/// show them and still be taken as in them: kernel times are converted with the smallest
/// stop-to-dequeue gap, which puts them late by the loop's latency at its best (a few
/// microseconds to tens of them), and no more than that.
pub const WAKE_SLACK_NS: u64 = 100_000;

/// Most wake-ups a recording keeps as relations; later ones stay sleeps. A relation costs
/// the trace three small allocations (the names in `wait_for` and `wake`), each a 64-byte leaf
/// of scx_rustland_core's arena, the process's only heap: at the largest
/// `--record-max-events` with every event a relation, building the trace ran out of it.
pub const MAX_RELATIONS: usize = 30_000;

/// A wake-up of `pid` by the task `waker` at `at_ns` (the loop's clock), as the task-event
/// source reported it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Wake {
    /// The loop's clock at the waking, ns.
    pub at_ns: u64,
    /// The woken task.
    pub pid: i32,
    /// The task that woke it.
    pub waker: i32,
}

/// One task the loop dequeued, as the framework reported it.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Event {
    /// The loop's clock when dequeued, ns.
    pub at_ns: u64,
    /// Kernel time its last run started, 0 if it never ran.
    pub start_ts: u64,
    /// Kernel time its last run stopped.
    pub stop_ts: u64,
    /// Its run time since it last woke, ns.
    pub exec_runtime: u64,
    /// The task.
    pub pid: i32,
    /// CPU of its last run, -1 when none.
    pub cpu: i16,
    /// Woken (rather than back at a slice end).
    pub wakeup: bool,
}

/// What the recording keeps per task besides its events.
#[derive(Clone, Debug)]
pub struct TaskInfo {
    /// Its command name as the kernel gives it, NUL-padded.
    pub comm: [u8; 16],
    /// Union of the restricted affinities seen; `None` while never seen restricted.
    pub allowed: Option<CpuSet>,
    /// Seen allowed on every CPU at least once.
    pub unrestricted: bool,
    /// The loop's clock at its last event.
    pub last_at: u64,
    /// When it exited (the task-event source), if it did while recording.
    pub exited_at: Option<u64>,
}

impl TaskInfo {
    /// Its command name, up to the first NUL.
    pub fn command(&self) -> String {
        let n = self.comm.iter().position(|&b| b == 0).unwrap_or(16);
        String::from_utf8_lossy(&self.comm[..n]).into_owned()
    }
}

/// A task still runnable when recording stopped: it ran from `from_ns` on `cpu` to the end.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Tail {
    /// The task.
    pub pid: i32,
    /// The CPU it runs on.
    pub cpu: u16,
    /// The loop's clock at its last event, ns.
    pub from_ns: u64,
}

/// The kernel-to-loop clock offset: the smallest gap between a run's stop and the loop
/// seeing the task.
pub fn clock_offset(events: &[Event]) -> i128 {
    events
        .iter()
        .filter(|e| e.stop_ts != 0)
        .map(|e| i128::from(e.at_ns) - i128::from(e.stop_ts))
        .min()
        .unwrap_or(0)
}

/// What a recording saw, for [`build`]: the events and wake-ups are taken (and freed once they
/// are reports), the rest is borrowed.
#[derive(Debug)]
pub struct Recording<'a> {
    /// The loop's clock when recording began, ns.
    pub start_ns: u64,
    /// The loop's clock when recording stopped, `None` while it has not: the window then ends
    /// at the last event.
    pub stop_ns: Option<u64>,
    /// The tasks the loop dequeued, in the order seen.
    pub events: Vec<Event>,
    /// The wake-ups by a task, in the order seen.
    pub wakes: Vec<Wake>,
    /// Each recorded task's name, affinity and exit.
    pub tasks: &'a HashMap<i32, TaskInfo>,
    /// The tasks still running when recording stopped.
    pub tails: &'a [Tail],
    /// The trace's file: its stem names the trace.
    pub trace: &'a Path,
    /// Where the machine came from (a topology file or sysfs), for the trace's description.
    pub machine_source: &'a str,
}

/// What the scheduler counted over the recorded window, for the live figures.
#[derive(Clone, Debug)]
pub struct Figures<'a> {
    /// The scheduler's version.
    pub version: &'a str,
    /// The placement policy (`--policy`).
    pub policy: &'a str,
    /// The seed of the policy's draws (`--seed`).
    pub policy_seed: u64,
    /// `hybrid-sim --set` items for the knobs in force.
    pub settings: &'a [String],
    /// The policy's placements of recorded tasks by step (in [`Step::ALL`]'s order): all of
    /// them, and those outside the primary domain.
    pub steps: [(u64, u64); Step::ALL.len()],
    /// Wake-ups the kernel's fast path placed over the window, by step.
    pub fast: [u64; Step::ALL.len()],
    /// Slice ends of recorded tasks that kept their CPU.
    pub kept: u64,
    /// Picks sent to the shared queue because their CPU turned busy before dispatch.
    pub stale: u64,
    /// Tasks made to come back for re-placement.
    pub nudges: u64,
    /// Whether recording stopped at a cap before the scheduler did.
    pub capped: bool,
}

/// Why a recording gives no trace.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RecordingError {
    /// The builder made no trace of it.
    #[error("the recording makes no trace")]
    NoTrace(#[source] TimelineError),
    /// More reports than a `u32` counts.
    #[error(transparent)]
    TooManyReports(#[from] core::num::TryFromIntError),
}

/// The trace, the live figures and the wake-up relations the trace holds.
pub fn build(
    recording: Recording<'_>,
    figures: &Figures<'_>,
    topo: &Topology,
) -> Result<(Trace, LiveStats, u64), RecordingError> {
    let start_ns = recording.start_ns;
    let events = recording.events.len() as u64;
    let (timeline, end) = timeline(recording, topo)?;
    let (kinds, clusters) = busy_by_kind_and_cluster(topo, &timeline.busy_ns);
    // The kernel's fast path placed wake-ups too, by the same steps (never outside the
    // primary domain); the simulator counts them with the others.
    let steps = Step::ALL
        .iter()
        .map(|s| StepCount {
            step: s.name().to_owned(),
            count: figures.steps[s.index()].0 + figures.fast[s.index()],
            overflow: figures.steps[s.index()].1,
        })
        .collect();
    let live = LiveStats {
        version: LIVE_VERSION,
        scheduler: format!("scx_hybridland {}", figures.version),
        policy: Some(figures.policy.to_owned()),
        policy_seed: Some(figures.policy_seed),
        settings: figures.settings.to_vec(),
        window_ns: end.saturating_sub(start_ns).max(1),
        events,
        capped: figures.capped,
        tasks: timeline.trace.tasks.len() as u64,
        kinds,
        clusters,
        steps,
        kept: figures.kept,
        stale: figures.stale,
        nudges: figures.nudges,
        migrations: timeline.migrations,
    };
    Ok((timeline.trace, live, timeline.relations))
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
fn timeline(recording: Recording<'_>, topo: &Topology) -> Result<(Timeline, u64), RecordingError> {
    let Recording {
        start_ns,
        stop_ns,
        events,
        wakes,
        tasks,
        tails,
        trace,
        machine_source,
    } = recording;
    let end = stop_ns.unwrap_or_else(|| events.last().map_or(start_ns, |e| e.at_ns));
    let offset = clock_offset(&events);
    let nr_events = events.len();
    let loop_time = |k: u64| u64::try_from((i128::from(k) + offset).max(0)).unwrap_or(0);
    let most: usize = events.iter().map(|e| if e.wakeup { 3 } else { 2 }).sum();
    let mut reports = Reports::with_capacity(most + tails.len() + tasks.len());
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
                    let from = loop_time(ev.start_ts).max(start_ns);
                    if from < stop {
                        reports.push(pid, from, Act::In(cpu));
                    }
                }
                // A sleep a wake-up by a task may end: this switch-out and the wake-up
                // right after it.
                if reports.knows(pid) && ev.stop_ts != 0 {
                    reports.push(pid, stop.max(start_ns), Act::Out(false));
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
                let from = loop_time(ev.start_ts).max(start_ns);
                if let (Some(cpu), true) = (cpu, ev.start_ts != 0 && from < stop) {
                    reports.push(pid, from, Act::In(cpu));
                    reports.push(pid, stop, Act::Out(true));
                } else {
                    reports.push(pid, ev.at_ns, Act::Woken);
                }
            }
        }
    }
    for t in tails {
        if let (Ok(pid), true) = (u32::try_from(t.pid), topo.info(CpuId(t.cpu)).is_some()) {
            reports.push(pid, t.from_ns, Act::In(t.cpu));
        }
    }
    let mut exits: Vec<(u64, u32)> = tasks
        .iter()
        .filter_map(|(&pid, info)| Some((info.exited_at?, u32::try_from(pid).ok()?)))
        .filter(|&(at, _)| at <= end)
        .collect();
    exits.sort_unstable();
    for (at, pid) in exits {
        reports.push(pid, at, Act::Exit);
    }
    drop(events);
    relate(wakes, &mut reports, end);
    let mut b = TimelineBuilder::new(topo);
    b.mark(start_ns);
    let mut comms: HashMap<u32, String> = HashMap::new();
    // In time order, and a task's reports at one time in the order made. Sorting
    // indices needs no scratch space (a stable sort of the reports would).
    let mut order: Vec<u32> = (0..u32::try_from(reports.list.len())?).collect();
    order.sort_unstable_by_key(|&i| (reports.list[i as usize].key, i));
    for index in order {
        let r = reports.list[index as usize];
        let comm = comms.entry(r.pid).or_insert_with(|| {
            i32::try_from(r.pid).map_or_else(
                |_| String::new(),
                |pid| tasks.get(&pid).map_or_else(String::new, TaskInfo::command),
            )
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
    for (&pid, info) in tasks {
        let (Ok(pid), Some(set), false) = (u32::try_from(pid), info.allowed, info.unrestricted)
        else {
            continue;
        };
        b.restrict(pid, set.to_string());
    }
    b.mark(end);
    let name = trace.file_stem().map_or_else(
        || "recording".to_owned(),
        |s| s.to_string_lossy().into_owned(),
    );
    let source = format!("scx_hybridland --record on {machine_source} ({nr_events} events)");
    let timeline = b
        .finish(&source, &name, false)
        .map_err(RecordingError::NoTrace)?;
    Ok((timeline, end))
}
