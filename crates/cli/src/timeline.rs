//! `replay --timeline FILE.json`: the replay as a Chrome trace-event file, which Perfetto
//! (ui.perfetto.dev, "Open trace file") and chrome://tracing open.
//!
//! Layout: one process per policy, in `--policy` order, so several policies sit one above
//! the other in one file; in each, one thread (track) per CPU, named `cpu N <kind> cluster C`
//! and sorted by core kind, then cluster, then CPU, so a kind's clusters stay together. Each
//! run of a task is one complete (`X`) slice on its CPU's track, named after the task, with the
//! idle-order step that placed it (`queued` when it came off a queue) and the utilisation the
//! policy was given as arguments. Counter (`C`) tracks give each cluster's busy CPUs and the
//! machine's power in watts. A CPU runs one task at a time, so slices on a track never overlap.
//!
//! Events are written as the replay produces them (through the engine's observer hook) into a
//! buffered file, never gathered in memory: a long replay's timeline costs disk, not RAM.

use hybridland_policy::{CpuId, Topology};
use hybridland_sim::{OccupancyRecord, RunRecord};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// A trace-event file being written.
pub(crate) struct TimelineWriter {
    out: BufWriter<File>,
    path: PathBuf,
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

impl TimelineWriter {
    pub(crate) fn create(path: &Path) -> std::io::Result<Self> {
        let mut out = BufWriter::new(File::create(path)?);
        out.write_all(b"{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n")?;
        Ok(Self {
            out,
            path: path.to_owned(),
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
    pub(crate) fn begin_policy(&mut self, index: usize, policy: &str, topo: &Topology) {
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

    pub(crate) fn run(&mut self, r: &RunRecord<'_>) {
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

    pub(crate) fn occupancy(&mut self, o: &OccupancyRecord) {
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

    /// Closes the event list and flushes; the first error of the whole file, if any.
    pub(crate) fn finish(mut self) -> anyhow::Result<()> {
        if let Some(e) = self.error.take() {
            return Err(anyhow::anyhow!(
                "{}: cannot write: {e}",
                self.path.display()
            ));
        }
        self.out
            .write_all(b"\n]}\n")
            .and_then(|()| self.out.flush())
            .map_err(|e| anyhow::anyhow!("{}: cannot write: {e}", self.path.display()))
    }
}
