//! The files `--record` writes, as root: the trace and the live figures at exit, the decision
//! log, and on request (`HYBRIDLAND_RECORD_RAW`) the recording's raw input.

use super::Recorder;
use crate::safe_file;
use anyhow::{Context as _, Result};
use hybridland_policy::Topology;
use hybridland_trace::recording::TaskInfo;
use std::path::{Path, PathBuf};
use tracing::{info, warn};

impl Recorder {
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

    /// The recording's input as JSON, written line by line (no document is built in the
    /// arena): the window, each task's name and exit, the events and wake-ups in the order
    /// seen (arrays in the fields' order), and the tails.
    pub(super) fn write_raw(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
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
            let comm = self
                .tasks
                .get(*pid)
                .map_or_else(String::new, TaskInfo::command);
            let name = serde_json::to_string(&comm).unwrap_or_default();
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
