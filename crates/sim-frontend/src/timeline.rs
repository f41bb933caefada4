//! Replays as Chrome trace-event JSON (the Trace Event Format's JSON object form), which
//! Perfetto (ui.perfetto.dev, "Open trace file") and chrome://tracing open; `hybrid-sim
//! replay --timeline FILE.json` writes one.
//!
//! Layout: one process per policy, in `--policy` order, so several policies sit one above
//! the other in one file; in each, one thread (track) per CPU, named `cpu N <kind> cluster C`
//! and sorted by core kind, then cluster, then CPU, so a kind's clusters stay together. Each
//! run of a task is one complete (`X`) slice on its CPU's track, named after the task, with the
//! idle-order step that placed it (`queued` when it came off a queue) and the utilisation the
//! policy was given as arguments. Counter (`C`) tracks give each cluster's busy CPUs and the
//! machine's power in watts. A CPU runs one task at a time, so slices on a track never overlap.
//!
//! Events are written as the replay produces them (through the engine's observer hook,
//! [`DecisionObserver::on_run`](crate::DecisionObserver::on_run) and
//! [`on_occupancy`](crate::DecisionObserver::on_occupancy)), never gathered in memory: a long
//! replay's timeline costs output, not RAM. Call [`begin_policy`](TimelineWriter::begin_policy)
//! before each replay, hand it the replay's runs and occupancy changes, then
//! [`finish`](TimelineWriter::finish).

use crate::engine::{OccupancyRecord, RunRecord};
use hybridland_policy::{CpuId, Topology};
use std::io::Write;

/// A trace-event document being written to `W` (give it a buffered writer).
pub struct TimelineWriter<W: Write> {
    out: W,
    first: bool,
    /// The first write error; later writes are skipped and it is reported at the end.
    error: Option<std::io::Error>,
    /// Per cluster of the current machine: its counter's name.
    cluster_names: Vec<String>,
    pid: u32,
}

/// Microseconds, the format's unit, with the nanoseconds kept as three decimals.
fn micros(ns: u64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"?\"".to_owned())
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
        self.pid = index as u32 + 1;
        let pid = self.pid;
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
        // Every counter starts at zero, so its track begins with the replay.
        for c in 0..self.cluster_names.len() {
            let name = quoted(&self.cluster_names[c]);
            self.event(&format!(
                "{{\"ph\":\"C\",\"name\":{name},\"pid\":{pid},\"tid\":0,\"ts\":0.000,\"args\":{{\"busy\":0}}}}"
            ));
        }
    }

    /// One run: a slice on its CPU's track.
    pub fn run(&mut self, r: &RunRecord<'_>) {
        let step = r.step.map_or("queued", |s| s.name());
        let line = format!(
            "{{\"ph\":\"X\",\"name\":{},\"cat\":\"{step}\",\"pid\":{},\"tid\":{},\"ts\":{},\"dur\":{},\"args\":{{\"task\":{},\"step\":\"{step}\",\"util\":{}}}}}",
            quoted(r.task_name),
            self.pid,
            r.cpu.0,
            micros(r.start_ns),
            micros(r.end_ns - r.start_ns),
            r.task,
            r.util
        );
        self.event(&line);
    }

    /// A cluster's busy CPUs and the machine's power: counter samples.
    pub fn occupancy(&mut self, o: &OccupancyRecord) {
        let pid = self.pid;
        let ts = micros(o.now_ns);
        if let Some(name) = self.cluster_names.get(o.cluster).map(|n| quoted(n)) {
            self.event(&format!(
                "{{\"ph\":\"C\",\"name\":{name},\"pid\":{pid},\"tid\":0,\"ts\":{ts},\"args\":{{\"busy\":{}}}}}",
                o.busy_cpus
            ));
        }
        self.event(&format!(
            "{{\"ph\":\"C\",\"name\":\"power (W)\",\"pid\":{pid},\"tid\":0,\"ts\":{ts},\"args\":{{\"W\":{}.{:03}}}}}",
            o.power_mw / 1000,
            o.power_mw % 1000
        ));
    }

    /// Closes the event list and flushes; returns the writer.
    ///
    /// # Errors
    /// The first write error of the whole document, if any.
    pub fn finish(mut self) -> std::io::Result<W> {
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

    #[test]
    fn a_replay_observed_by_a_writer_is_one_json_document() {
        let machine = presets::lookup("tc2").unwrap();
        let trace = Trace::from_json_str(
            r#"{"version": 1, "tasks": [{"name": "a \"quoted\"", "copies": 2,
                "phases": [{"run_ns": 1000000}, {"sleep_ns": 500000}, {"run_ns": 2000}]}]}"#,
            "t.json",
        )
        .unwrap();
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
        let bytes = w.finish().unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        let slices: Vec<&serde_json::Value> = doc["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "X")
            .collect();
        // Two copies, two runs each.
        assert_eq!(slices.len(), 4);
        assert_eq!(slices[0]["name"], "a \"quoted\".0");
        let busy: f64 = slices.iter().map(|s| s["dur"].as_f64().unwrap()).sum();
        let reported: u64 = report.cpus.iter().map(|c| c.busy_ns).sum();
        assert_eq!((busy * 1000.0).round() as u64, reported);
    }
}
