//! Replays as Chrome trace-event JSON (the Trace Event Format's JSON object form), which
//! Perfetto (ui.perfetto.dev, "Open trace file") and chrome://tracing open; `hybrid-sim
//! replay --timeline FILE.json` writes one.
//!
//! Layout: one process per policy, in `--policy` order, so several policies sit one above
//! the other in one file. In each:
//!
//! - one thread (track) per CPU, named `cpu N <kind> cluster C` and sorted by core kind, then
//!   cluster, then CPU, so a kind's clusters stay together. Each run of a task is one complete
//!   (`X`) slice there, named after the task; its category and `placed` argument say how it
//!   got the CPU: the idle-order step that chose it (`idle-p-core`, ...), `queued` when it
//!   waited in a queue first, `placed` when a policy that names no steps put it straight on
//!   an idle CPU. Its arguments also hold the utilisation the policy was given and, after a
//!   wake-up, the wait (`wait_us`).
//! - one track per task below the CPUs, named `task NAME`, with the same runs as slices named
//!   after the CPU (`cpu N`): where a task ran, and when it did not.
//! - a flow arrow (`s`/`f` events, id unique in the file, name and category `wake-up`) to the
//!   run after each wake-up, so Perfetto links the two slices. When a task woke it from a
//!   trace's `wait_for` while running (the wake-up relation), the arrow starts in the waker's
//!   slice, at the wake (a nanosecond before it, so a run that ends with its `wake` still holds
//!   it) and says which task (`waker`); otherwise it starts in the run before the task's own
//!   sleep. A start event binds to the slice enclosing it, and the end, with binding point
//!   `"bp":"e"`, to the slice enclosing it rather than the next one to begin: both ends sit
//!   strictly inside their slices, so no neighbouring slice can take them; runs shorter than
//!   2 ns get none.
//! - counter (`C`) tracks for each cluster's busy CPUs and the machine's power in watts, with
//!   one sample per timestamp: the changes within one instant are folded into their final
//!   value.
//!
//! A CPU runs one task at a time and a task runs on one CPU, so slices on a track never
//! overlap.
//!
//! Events are written as the replay produces them (through the engine's observer hook,
//! [`DecisionObserver::on_run`](crate::DecisionObserver::on_run) and
//! [`on_occupancy`](crate::DecisionObserver::on_occupancy)), never gathered in memory: a long
//! replay's timeline costs output, and a few words per task, not RAM per event. Call
//! [`begin_policy`](TimelineWriter::begin_policy) before each replay, hand it the replay's runs
//! and occupancy changes, then [`finish`](TimelineWriter::finish).

use crate::engine::{OccupancyRecord, RunRecord};
use hybridland_policy::{CpuId, Topology};
use std::io::Write;

/// Task tracks' thread ids start here, above any CPU id.
pub const TASK_TID_BASE: u64 = 1 << 20;

/// What the writer remembers of a task: whether its track is named yet, and its last run.
#[derive(Clone, Copy, Default)]
struct TaskTrack {
    named: bool,
    /// CPU, start and end of the task's last run.
    last: Option<(CpuId, u64, u64)>,
}

/// Counter samples of the current instant, written when time moves on.
#[derive(Default)]
struct PendingCounters {
    ts_ns: Option<u64>,
    busy: Vec<Option<u32>>,
    power_mw: Option<u64>,
}

/// A trace-event document being written to `W` (give it a buffered writer).
pub struct TimelineWriter<W: Write> {
    out: W,
    first: bool,
    /// The first write error; later writes are skipped and it is reported at the end.
    error: Option<std::io::Error>,
    /// Per cluster of the current machine: its counter's name.
    cluster_names: Vec<String>,
    pid: u32,
    nr_cpus: usize,
    tasks: Vec<TaskTrack>,
    counters: PendingCounters,
    next_flow: u64,
}

/// Microseconds, the format's unit, with the nanoseconds kept as three decimals.
fn micros(ns: u64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"?\"".to_owned())
}

/// How a run got its CPU, as its slice's category says.
fn placed(r: &RunRecord<'_>) -> &'static str {
    match (r.step, r.queued) {
        (Some(step), _) => step.name(),
        (None, true) => "queued",
        (None, false) => "placed",
    }
}

impl<W: Write> TimelineWriter<W> {
    /// Starts the document.
    ///
    /// # Errors
    /// The writer's.
    pub fn new(mut out: W) -> std::io::Result<Self> {
        out.write_all(b"{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n")?;
        Ok(Self {
            out,
            first: true,
            error: None,
            cluster_names: Vec::new(),
            pid: 0,
            nr_cpus: 0,
            tasks: Vec::new(),
            counters: PendingCounters::default(),
            next_flow: 1,
        })
    }

    fn event(&mut self, json: &str) {
        if self.error.is_some() {
            return;
        }
        let sep: &[u8] = if self.first { b"" } else { b",\n" };
        self.first = false;
        if let Err(e) = self
            .out
            .write_all(sep)
            .and_then(|()| self.out.write_all(json.as_bytes()))
        {
            self.error = Some(e);
        }
    }

    /// Starts the process of the next policy: its name and one named track per CPU.
    pub fn begin_policy(&mut self, index: usize, policy: &str, topo: &Topology) {
        self.flush_counters();
        self.pid = index as u32 + 1;
        let pid = self.pid;
        self.tasks.clear();
        self.event(&format!(
            "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{pid},\"tid\":0,\"args\":{{\"name\":{}}}}}",
            quoted(policy)
        ));
        self.event(&format!(
            "{{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":{pid},\"tid\":0,\"args\":{{\"sort_index\":{pid}}}}}"
        ));
        let mut order: Vec<(usize, u16, CpuId)> = topo
            .cpus()
            .iter()
            .filter_map(|c| topo.info(c).map(|i| (i.kind.index(), i.cluster, c)))
            .collect();
        order.sort_unstable();
        self.nr_cpus = order.len();
        for (sort, (_, cluster, cpu)) in order.iter().enumerate() {
            let kind = topo.info(*cpu).map_or("?", |i| i.kind.name());
            let tid = cpu.0;
            self.event(&format!(
                "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{pid},\"tid\":{tid},\"args\":{{\"name\":\"cpu {tid} {kind} cluster {cluster}\"}}}}"
            ));
            self.event(&format!(
                "{{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":{pid},\"tid\":{tid},\"args\":{{\"sort_index\":{sort}}}}}"
            ));
        }
        self.cluster_names = (0..topo.nr_clusters())
            .map(|c| {
                let kind = topo
                    .cluster_cpus(c)
                    .first()
                    .and_then(|cpu| topo.info(*cpu))
                    .map_or("?", |i| i.kind.name());
                format!("busy cpus: cluster {c} ({kind})")
            })
            .collect();
        // Every counter starts at zero, so its track begins with the replay; a change at
        // time 0 replaces the zero rather than adding a second sample there.
        self.counters = PendingCounters {
            ts_ns: Some(0),
            busy: vec![Some(0); self.cluster_names.len()],
            power_mw: None,
        };
    }

    /// Names task `task`'s track the first time it runs.
    fn task_track(&mut self, task: usize, name: &str) {
        if self.tasks.len() <= task {
            self.tasks.resize(task + 1, TaskTrack::default());
        }
        if self.tasks[task].named {
            return;
        }
        self.tasks[task].named = true;
        let (pid, tid) = (self.pid, TASK_TID_BASE + task as u64);
        let sort = self.nr_cpus + task;
        self.event(&format!(
            "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{pid},\"tid\":{tid},\"args\":{{\"name\":{}}}}}",
            quoted(&format!("task {name}"))
        ));
        self.event(&format!(
            "{{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":{pid},\"tid\":{tid},\"args\":{{\"sort_index\":{sort}}}}}"
        ));
    }

    /// One run: a slice on its CPU's track and one on its task's, and after a wake-up the
    /// arrow from the run before it.
    pub fn run(&mut self, r: &RunRecord<'_>) {
        self.task_track(r.task, r.task_name);
        let pid = self.pid;
        let placed = placed(r);
        let wait = r
            .latency_ns
            .map_or_else(String::new, |ns| format!(",\"wait_us\":{}", micros(ns)));
        let (ts, dur) = (micros(r.start_ns), micros(r.end_ns - r.start_ns));
        let line = format!(
            "{{\"ph\":\"X\",\"name\":{},\"cat\":\"{placed}\",\"pid\":{pid},\"tid\":{},\"ts\":{ts},\"dur\":{dur},\"args\":{{\"task\":{},\"placed\":\"{placed}\",\"util\":{}{wait}}}}}",
            quoted(r.task_name),
            r.cpu.0,
            r.task,
            r.util
        );
        self.event(&line);
        let line = format!(
            "{{\"ph\":\"X\",\"name\":\"cpu {}\",\"cat\":\"{placed}\",\"pid\":{pid},\"tid\":{},\"ts\":{ts},\"dur\":{dur},\"args\":{{\"cpu\":{},\"placed\":\"{placed}\"{wait}}}}}",
            r.cpu.0,
            TASK_TID_BASE + r.task as u64,
            r.cpu.0,
        );
        self.event(&line);
        let previous = self.tasks[r.task].last;
        self.tasks[r.task].last = Some((r.cpu, r.start_ns, r.end_ns));
        // A run that starts with a wait followed a wake-up. The arrow starts in the waker's
        // slice, which holds [run_start, at] at least (it may go on after the wake), or else
        // mid-way through the task's own run before its sleep; it ends mid-slice.
        let Some(wait_ns) = r.latency_ns else {
            return;
        };
        if r.end_ns - r.start_ns < 2 {
            return;
        }
        let (from_cpu, from_ns, waker) = match (r.woken_by, previous) {
            (Some(w), _) if w.at_ns >= w.run_start_ns + 2 => (w.cpu, w.at_ns - 1, Some(w.task)),
            (_, Some((cpu, start, end))) if end - start >= 2 => {
                (cpu, start + (end - start) / 2, None)
            }
            _ => return,
        };
        let id = self.next_flow;
        self.next_flow += 1;
        let to_ts = micros(r.start_ns + (r.end_ns - r.start_ns) / 2);
        let waker = waker.map_or_else(String::new, |w| format!(",\"waker\":{w}"));
        self.event(&format!(
            "{{\"ph\":\"s\",\"name\":\"wake-up\",\"cat\":\"wake-up\",\"id\":{id},\"pid\":{pid},\"tid\":{},\"ts\":{}}}",
            from_cpu.0,
            micros(from_ns)
        ));
        self.event(&format!(
            "{{\"ph\":\"f\",\"bp\":\"e\",\"name\":\"wake-up\",\"cat\":\"wake-up\",\"id\":{id},\"pid\":{pid},\"tid\":{},\"ts\":{to_ts},\"args\":{{\"wait_us\":{}{waker}}}}}",
            r.cpu.0,
            micros(wait_ns)
        ));
    }

    /// A cluster's busy CPUs and the machine's power: counter samples, one per counter and
    /// timestamp.
    pub fn occupancy(&mut self, o: &OccupancyRecord) {
        if self.counters.ts_ns.is_some_and(|t| t != o.now_ns) {
            self.flush_counters();
        }
        self.counters.ts_ns = Some(o.now_ns);
        if let Some(slot) = self.counters.busy.get_mut(o.cluster) {
            *slot = Some(o.busy_cpus);
        }
        self.counters.power_mw = Some(o.power_mw);
    }

    /// Writes the current instant's counter samples.
    fn flush_counters(&mut self) {
        let Some(ts_ns) = self.counters.ts_ns.take() else {
            return;
        };
        let pid = self.pid;
        let ts = micros(ts_ns);
        let busy = core::mem::take(&mut self.counters.busy);
        for (c, value) in busy.iter().enumerate() {
            let (Some(n), Some(name)) = (value, self.cluster_names.get(c)) else {
                continue;
            };
            let line = format!(
                "{{\"ph\":\"C\",\"name\":{},\"pid\":{pid},\"tid\":0,\"ts\":{ts},\"args\":{{\"busy\":{n}}}}}",
                quoted(name)
            );
            self.event(&line);
        }
        self.counters.busy = busy.iter().map(|_| None).collect();
        if let Some(mw) = self.counters.power_mw.take() {
            self.event(&format!(
                "{{\"ph\":\"C\",\"name\":\"power (W)\",\"pid\":{pid},\"tid\":0,\"ts\":{ts},\"args\":{{\"W\":{}.{:03}}}}}",
                mw / 1000,
                mw % 1000
            ));
        }
    }

    /// Closes the event list and flushes; returns the writer.
    ///
    /// # Errors
    /// The first write error of the whole document, if any.
    pub fn finish(mut self) -> std::io::Result<W> {
        self.flush_counters();
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.out.write_all(b"\n]}\n")?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// A writer is an observer itself, for a replay that only wants its timeline:
/// `sim.run_observed(&mut writer)` after [`begin_policy`](TimelineWriter::begin_policy).
impl<W: Write> crate::DecisionObserver for TimelineWriter<W> {
    fn on_decision(&mut self, _record: &crate::DecisionRecord<'_>) {}

    fn wants_decisions(&self) -> bool {
        false
    }

    fn wants_runs(&self) -> bool {
        true
    }

    fn on_run(&mut self, record: &RunRecord<'_>) {
        self.run(record);
    }

    fn on_occupancy(&mut self, record: &OccupancyRecord) {
        self.occupancy(record);
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::{Knobs, SimOptions, Simulation, Trace, policy_by_name, presets};

    /// A replay of `trace` on tc2 under hybridland, observed by a timeline writer: its report
    /// and the document written.
    fn written(trace: &str) -> (crate::Report, serde_json::Value) {
        let machine = presets::lookup("tc2").unwrap();
        let trace = Trace::from_json_str(trace, "t.json").unwrap();
        let policy = policy_by_name("hybridland", &Knobs::new()).unwrap();
        let sim = Simulation::new(
            &machine.topology,
            &machine.model,
            &trace,
            policy,
            SimOptions::default(),
        )
        .unwrap();
        let mut w = TimelineWriter::new(Vec::new()).unwrap();
        w.begin_policy(0, "hybridland", &machine.topology);
        let report = sim.run_observed(&mut w).unwrap();
        let doc = serde_json::from_slice(&w.finish().unwrap()).unwrap();
        (report, doc)
    }

    #[test]
    fn a_replay_observed_by_a_writer_is_one_json_document() {
        let (report, doc) = written(
            r#"{"version": 1, "tasks": [{"name": "a \"quoted\"", "copies": 2,
                "phases": [{"run_ns": 1000000}, {"sleep_ns": 500000}, {"run_ns": 2000}]}]}"#,
        );
        let slices: Vec<&serde_json::Value> = doc["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "X")
            .collect();
        // Two copies, two runs each, on a CPU's track and on the task's.
        assert_eq!(slices.len(), 8);
        let slices: Vec<&serde_json::Value> = slices
            .into_iter()
            .filter(|s| s["tid"].as_u64().unwrap() < TASK_TID_BASE)
            .collect();
        assert_eq!(slices[0]["name"], "a \"quoted\".0");
        let busy: f64 = slices.iter().map(|s| s["dur"].as_f64().unwrap()).sum();
        let reported: u64 = report.cpus.iter().map(|c| c.busy_ns).sum();
        assert_eq!((busy * 1000.0).round() as u64, reported);
    }

    /// The flow events of a replay of `trace` on tc2 under hybridland.
    fn flows(trace: &str) -> Vec<serde_json::Value> {
        let (_, doc) = written(trace);
        doc["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "s" || e["ph"] == "f")
            .cloned()
            .collect()
    }

    /// An arrow from a waker goes to the run its wake-up started: `b`, woken by `a` mid-run,
    /// runs at once and gets one, starting a nanosecond before the wake (1 ms into `a`'s
    /// run); `c`, woken by `a` into a sleep, runs only after the sleep and gets none (it never
    /// ran before, so no arrow of its own either).
    #[test]
    fn an_arrow_from_the_waker_goes_to_the_run_its_wake_up_started() {
        let woken = flows(
            r#"{"version": 2, "tasks": [
                {"name": "a", "phases": [{"run_ns": 1000000}, {"wake": "b"}, {"run_ns": 1000000}]},
                {"name": "b", "phases": [{"wait_for": ["a"]}, {"run_ns": 1000000}]}]}"#,
        );
        assert_eq!(woken.len(), 2, "{woken:?}");
        assert_eq!(woken[0]["ts"].as_f64(), Some(999.999));
        assert_eq!(woken[1]["args"]["waker"], 0);
        let slept = flows(
            r#"{"version": 2, "tasks": [
                {"name": "a", "phases": [{"run_ns": 1000000}, {"wake": "c"}, {"run_ns": 1000000}]},
                {"name": "c", "phases": [{"wait_for": ["a"]}, {"sleep_ns": 2000000}, {"run_ns": 1000000}]}]}"#,
        );
        assert!(slept.is_empty(), "{slept:?}");
    }
}
