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
//!   spinner is reported only when something displaces it.
//!
//! What is lost: a task that slept or exited after its last report ran an unknown last burst;
//! when several runs separate two reports and the second is a wake-up, only the last counts.
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
/// Largest `--record-max-events`: the buffer is taken up front from scx_rustland_core's
/// 64 MiB arena, the process's only heap.
pub(crate) const MAX_MAX_EVENTS: usize = 250_000;

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
}

/// Reads a task's state letter and last CPU (`/proc/PID/stat`), `None` when it is gone.
pub(crate) type ProcState = dyn Fn(i32) -> Option<(char, i32)>;

/// The recording; see the module documentation.
pub(crate) struct Recorder {
    cfg: RecordConfig,
    start_ns: u64,
    events: Vec<Event>,
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
        let tasks = HashMap::with_capacity(cfg.max_tasks.min(cfg.max_events));
        Self {
            cfg,
            start_ns: now_ns,
            events,
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

    /// No room for an event of `pid`: the events are all used, or it is a new task and the
    /// tasks are.
    fn is_full(&self, pid: i32) -> bool {
        self.events.len() >= self.cfg.max_events
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
        let capped =
            self.events.len() >= self.cfg.max_events || self.tasks.len() >= self.cfg.max_tasks;
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
                "record: {} events recorded in {secs:.1} s, the most --record-max-events \
                 allows: recording stopped, scheduling goes on; {} is written at exit",
                self.events.len(),
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

    /// The recording as a timeline on `topo`, and the end of the window (loop clock).
    fn timeline(&self, topo: &Topology) -> Result<(Timeline, u64)> {
        let end = self.stopped.as_ref().map_or_else(
            || self.events.last().map_or(self.start_ns, |e| e.at_ns),
            |s| s.at_ns,
        );
        let offset = self.offset();
        let loop_time = |k: u64| u64::try_from((i128::from(k) + offset).max(0)).unwrap_or(0);
        let comm_of = |pid: i32| -> String {
            self.tasks.get(&pid).map_or_else(String::new, |t| {
                let n = t.comm.iter().position(|&b| b == 0).unwrap_or(16);
                String::from_utf8_lossy(&t.comm[..n]).into_owned()
            })
        };
        let mut b = TimelineBuilder::new(topo);
        b.mark(self.start_ns);
        // Per task: exec_runtime and run start at its previous report.
        let mut prev: HashMap<i32, (u64, u64)> = HashMap::new();
        for ev in &self.events {
            let Ok(pid) = u32::try_from(ev.pid) else {
                continue;
            };
            let comm = comm_of(ev.pid);
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
                            b.switch_in(pid, &comm, from, cpu);
                        }
                    }
                    if b.knows(pid) && ev.stop_ts != 0 {
                        b.switch_out(pid, &comm, stop.max(self.start_ns), false);
                    }
                    b.wakeup(pid, &comm, ev.at_ns);
                }
                (Some((exec_before, start_before)), false) => {
                    let ran = if ev.exec_runtime >= exec_before {
                        ev.exec_runtime - exec_before
                    } else {
                        ev.stop_ts.saturating_sub(ev.start_ts.max(start_before))
                    };
                    if let (Some(cpu), true) = (cpu, ran > 0) {
                        b.switch_in(pid, &comm, stop.saturating_sub(ran), cpu);
                        b.switch_out(pid, &comm, stop, true);
                    } else {
                        b.wakeup(pid, &comm, ev.at_ns);
                    }
                }
                (None, false) => {
                    // First seen at a slice end: it was running when recording began.
                    let from = loop_time(ev.start_ts).max(self.start_ns);
                    if let (Some(cpu), true) = (cpu, ev.start_ts != 0 && from < stop) {
                        b.switch_in(pid, &comm, from, cpu);
                        b.switch_out(pid, &comm, stop, true);
                    } else {
                        b.wakeup(pid, &comm, ev.at_ns);
                    }
                }
            }
        }
        if let Some(s) = &self.stopped {
            for t in &s.tails {
                if let (Ok(pid), true) = (u32::try_from(t.pid), topo.info(CpuId(t.cpu)).is_some()) {
                    b.switch_in(pid, &comm_of(t.pid), t.from_ns, t.cpu);
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
            b.exit(pid, at);
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
            self.cfg.machine_source,
            self.events.len()
        );
        let timeline = b
            .finish(&source, &name, false)
            .context("the recording makes no trace")?;
        Ok((timeline, end))
    }

    /// The trace and the live figures.
    pub(crate) fn build(&self, topo: &Topology) -> Result<(hybridland_trace::Trace, LiveStats)> {
        let (timeline, end) = self.timeline(topo)?;
        let counters = self
            .stopped
            .as_ref()
            .map_or(self.counters_at_start, |s| s.counters)
            .delta(&self.counters_at_start);
        let (kinds, clusters) = busy_by_kind_and_cluster(topo, &timeline.busy_ns);
        let steps = Step::ALL
            .iter()
            .map(|s| StepCount {
                step: s.name().to_owned(),
                count: self.steps[s.index()].0,
                overflow: self.steps[s.index()].1,
            })
            .collect();
        let live = LiveStats {
            version: LIVE_VERSION,
            scheduler: format!("scx_hybridland {}", env!("CARGO_PKG_VERSION")),
            settings: self.cfg.settings.clone(),
            window_ns: end.saturating_sub(self.start_ns).max(1),
            events: self.events.len() as u64,
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
        Ok((timeline.trace, live))
    }

    /// Writes the trace and the live figures (after [`stop`](Self::stop)).
    pub(crate) fn write(&self, topo: &Topology) -> Result<()> {
        let (trace, live) = self.build(topo)?;
        write_json(&self.cfg.trace, &trace)?;
        write_json(&self.cfg.live, &live)?;
        info!(
            "record: wrote {} ({} tasks, {} events over {:.2} s) and {}",
            self.cfg.trace.display(),
            trace.tasks.len(),
            self.events.len(),
            live.window_ns as f64 / 1e9,
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
        r.stop_and_read(70 * MS, &Counters::default(), &nothing_running);
        r.write(&topo).unwrap();
        let text = std::fs::read_to_string(&r.cfg.trace).unwrap();
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
        let live = LiveStats::from_json_str(&std::fs::read_to_string(&r.cfg.live).unwrap(), "live")
            .unwrap();
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
        assert_eq!(steps, [(2, 1), (1, 0), (0, 0), (0, 0)]);
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
            let e = format!("{:#}", r.write(&topo).unwrap_err());
            assert!(e.contains("it is a symbolic link"), "{which}: {e}");
            assert_link_untouched(target, &victim);

            let r = recording(&format!("plant-fifo-{which}"));
            let target = if which == "trace" {
                &r.cfg.trace
            } else {
                &r.cfg.live
            };
            plant_fifo(target);
            let e = format!("{:#}", r.write(&topo).unwrap_err());
            assert!(e.contains("it is a FIFO"), "{which}: {e}");
            assert_fifo_untouched(target);
            std::fs::remove_dir_all(target.parent().unwrap()).unwrap();
            std::fs::remove_dir_all(victim.parent().unwrap()).unwrap();
        }
    }
}
