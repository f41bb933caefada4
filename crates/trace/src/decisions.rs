//! The decision log: the scheduler core's inputs as the live loop handed them over, and what
//! the loop sent, so `hybrid-sim decisions FILE` can feed the same inputs through the same core
//! and compare. This separates "the core decides what was done" (exact) from "the model
//! predicts the machine" (the simulator's fidelity).
//!
//! The file is JSON lines: a [`Header`] first (format name and version, the machine as a
//! machine file, the policy and its knobs, the core's settings), then one [`Entry`] per line in
//! the order the loop made the calls. It is bounded: at most [`Header::max_entries`] entries
//! are kept, and a log that reached the bound says so ([`Header::truncated`]); a replay then
//! compares what was kept. `docs/decision-log.md` describes every field.

use hybridland_policy::{
    Affinity, Arrival, ClusterBalance, CoreConfig, CpuId, CpuSet, LastRun, Nudging, PolicyConfig,
    Queued, SliceMode, Snapshot, UtilSource, Waiting, Waker,
};
use serde::{Deserialize, Serialize};
use std::io::{self, BufRead, Write};

/// The format's name, in every header.
pub const FORMAT: &str = "hybridland-decisions";
/// The format version this crate writes and reads.
pub const VERSION: u32 = 1;
/// Entries kept unless told otherwise (about 100 bytes each in the file).
pub const DEFAULT_MAX_ENTRIES: usize = 200_000;
/// The largest file the reader accepts.
pub const MAX_FILE_BYTES: u64 = 256 << 20;

/// The first line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Header {
    /// Always [`FORMAT`].
    pub format: String,
    /// [`VERSION`].
    pub version: u32,
    /// The machine, as a machine file (`hybridland-machine`'s format).
    pub machine: String,
    /// The policy's name (`--policy`).
    pub policy: String,
    /// The seed the policy drew from.
    pub seed: u64,
    /// Hybridland's knobs (read by hybridland only).
    pub knobs: PolicyConfig,
    /// The core's settings.
    pub core: CoreSettings,
    /// The task storage's capacity (`--max-tasks`).
    pub max_tasks: usize,
    /// The nudge helper's task id, if there was one.
    pub helper: Option<u32>,
    /// Most entries kept.
    pub max_entries: usize,
    /// The log reached `max_entries`: later calls were not logged.
    pub truncated: bool,
}

/// [`CoreConfig`] as the log keeps it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoreSettings {
    /// Base slice.
    pub slice_ns: u64,
    /// Whether slices are divided by the tasks waiting.
    pub scaled_slice: bool,
    /// The claim window.
    pub claim_ns: u64,
    /// The up-migration scan's period, or none.
    pub scan_every_ns: Option<u64>,
    /// Shortest time between two nudges.
    pub nudge_gap_ns: u64,
    /// The nudge helper's slice.
    pub helper_slice_ns: u64,
    /// The age prune's limit.
    pub forget_after_ns: u64,
}

impl From<&CoreConfig> for CoreSettings {
    fn from(c: &CoreConfig) -> Self {
        let (scan_every_ns, nudge_gap_ns) = match c.nudging {
            Nudging::Off => (None, 0),
            Nudging::Scan { every_ns, gap_ns } => (Some(every_ns), gap_ns),
        };
        Self {
            slice_ns: c.slice_ns,
            scaled_slice: c.slice == SliceMode::Scaled,
            claim_ns: c.claim_ns,
            scan_every_ns,
            nudge_gap_ns,
            helper_slice_ns: c.helper_slice_ns,
            forget_after_ns: c.forget_after_ns,
        }
    }
}

impl From<&CoreSettings> for CoreConfig {
    fn from(s: &CoreSettings) -> Self {
        Self {
            slice_ns: s.slice_ns,
            slice: if s.scaled_slice {
                SliceMode::Scaled
            } else {
                SliceMode::Fixed
            },
            claim_ns: s.claim_ns,
            nudging: match s.scan_every_ns {
                None => Nudging::Off,
                Some(every_ns) => Nudging::Scan {
                    every_ns,
                    gap_ns: s.nudge_gap_ns,
                },
            },
            helper_slice_ns: s.helper_slice_ns,
            forget_after_ns: s.forget_after_ns,
        }
    }
}

/// One call the loop made, or one dispatch it sent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "in", rename_all = "snake_case", deny_unknown_fields)]
pub enum Entry {
    /// `handle_queued`.
    Queued {
        /// Time handed over.
        now: u64,
        /// Task id (pid).
        task: u32,
        /// For a wake-up: the waker's CPU, when known. `None` with `slice_end` unset: no waker.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        waker_cpu: Option<u16>,
        /// For a slice end: who waits (`nobody`, `own_queue`, `shared_queue`); absent for a
        /// wake-up.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        slice_end: Option<WaitingRec>,
        /// The CPU it last ran on.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cpu: Option<u16>,
        /// Its last run, `[start_ns, stop_ns]`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        last_run: Option<[u64; 2]>,
        /// Its weight.
        weight: u32,
        /// Its allowed CPUs as a CPU list; absent: unknown.
        #[serde(default, skip_serializing_if = "Option::is_none", with = "opt_set")]
        allowed: Option<CpuSet>,
        /// A utilisation hint in place of the core's estimate.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        util_hint: Option<u16>,
    },
    /// `handle_snapshot`.
    Snapshot {
        /// Time.
        now: u64,
        /// Idle CPUs.
        #[serde(with = "set")]
        idle: CpuSet,
        /// CPUs with tasks in their own queue, when the snapshot had them.
        #[serde(default, skip_serializing_if = "Option::is_none", with = "opt_set")]
        queued: Option<CpuSet>,
        /// The loop's own CPU.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        caller: Option<u16>,
    },
    /// `handle_snapshot_failed`.
    SnapshotFailed {
        /// Time.
        now: u64,
    },
    /// `handle_recheck`.
    Recheck {
        /// Idle CPUs.
        #[serde(with = "set")]
        idle: CpuSet,
        /// CPUs with tasks in their own queue.
        #[serde(default, skip_serializing_if = "Option::is_none", with = "opt_set")]
        queued: Option<CpuSet>,
    },
    /// `handle_backlog`.
    Backlog {
        /// Tasks waiting besides the batch.
        waiting: u64,
    },
    /// `handle_tick`.
    Tick {
        /// Time.
        now: u64,
    },
    /// `handle_exit`.
    Exit {
        /// Task id.
        task: u32,
    },
    /// `set_cluster_balance` (the control file).
    ClusterBalance {
        /// The new mode.
        mode: ClusterBalance,
    },
    /// A dispatch the loop sent, as the core polled it out.
    Sent {
        /// Task id.
        task: u32,
        /// The CPU, or absent for the shared queue.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cpu: Option<u16>,
        /// Slice.
        slice_ns: u64,
        /// Vtime.
        vtime: u64,
    },
    /// A nudge the loop carried out, as the core polled it out.
    Nudged {
        /// The CPU nudged.
        cpu: u16,
        /// The task on it.
        task: u32,
    },
}

/// Who waits at a slice end.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitingRec {
    /// Nobody the loop can see.
    Nobody,
    /// Tasks in the CPU's own queue.
    OwnQueue,
    /// Tasks in the shared queue.
    SharedQueue,
}

impl Entry {
    /// The entry for `handle_queued(now, q)`.
    pub fn queued(now: u64, q: &Queued<'_>) -> Self {
        let (waker_cpu, slice_end) = match q.arrival {
            Arrival::Wakeup { waker } => (waker.map(|w| w.cpu.0), None),
            Arrival::SliceEnd { waiting } => (
                None,
                Some(match waiting {
                    Waiting::Nobody => WaitingRec::Nobody,
                    Waiting::OwnQueue => WaitingRec::OwnQueue,
                    Waiting::SharedQueue => WaitingRec::SharedQueue,
                }),
            ),
        };
        Self::Queued {
            now,
            task: q.task,
            waker_cpu,
            slice_end,
            cpu: q.cpu.map(|c| c.0),
            last_run: q.last_run.map(|r| [r.start_ns, r.stop_ns]),
            weight: q.weight,
            allowed: match q.affinity {
                Affinity::Cpus(set) => Some(*set),
                Affinity::Unknown => None,
            },
            util_hint: match q.util {
                UtilSource::Estimate => None,
                UtilSource::Hint(h) => Some(h),
            },
        }
    }

    /// The entry for `handle_snapshot(now, snap)`.
    pub fn snapshot(now: u64, snap: &Snapshot<'_>) -> Self {
        Self::Snapshot {
            now,
            idle: *snap.idle,
            queued: snap.queued.copied(),
            caller: snap.caller_cpu.map(|c| c.0),
        }
    }

    /// The entry for `handle_recheck(snap)`.
    pub fn recheck(snap: &Snapshot<'_>) -> Self {
        Self::Recheck {
            idle: *snap.idle,
            queued: snap.queued.copied(),
        }
    }

    /// For a `queued` entry: the time and the input to hand over again.
    pub fn to_queued(&self) -> Option<(u64, Queued<'_>)> {
        let Self::Queued {
            now,
            task,
            waker_cpu,
            slice_end,
            cpu,
            last_run,
            weight,
            allowed,
            util_hint,
        } = self
        else {
            return None;
        };
        let arrival = match slice_end {
            None => Arrival::Wakeup {
                waker: waker_cpu.map(|c| Waker {
                    task: None,
                    cpu: CpuId(c),
                }),
            },
            Some(w) => Arrival::SliceEnd {
                waiting: match w {
                    WaitingRec::Nobody => Waiting::Nobody,
                    WaitingRec::OwnQueue => Waiting::OwnQueue,
                    WaitingRec::SharedQueue => Waiting::SharedQueue,
                },
            },
        };
        Some((
            *now,
            Queued {
                task: *task,
                arrival,
                cpu: cpu.map(CpuId),
                last_run: last_run.map(|[start_ns, stop_ns]| LastRun { start_ns, stop_ns }),
                weight: *weight,
                affinity: allowed.as_ref().map_or(Affinity::Unknown, Affinity::Cpus),
                util: util_hint.map_or(UtilSource::Estimate, UtilSource::Hint),
            },
        ))
    }

    /// The time the entry carries, if any.
    pub fn now(&self) -> Option<u64> {
        match self {
            Self::Queued { now, .. }
            | Self::Snapshot { now, .. }
            | Self::SnapshotFailed { now }
            | Self::Tick { now } => Some(*now),
            _ => None,
        }
    }
}

mod set {
    use hybridland_policy::{CpuSet, parse_cpu_list};
    use serde::{Deserialize, Deserializer, Serializer};

    /// A CPU list (`0-3,6`); the empty set as an empty string.
    pub(super) fn serialize<S: Serializer>(set: &CpuSet, s: S) -> Result<S::Ok, S::Error> {
        if set.is_empty() {
            s.serialize_str("")
        } else {
            s.collect_str(set)
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<CpuSet, D::Error> {
        let text = String::deserialize(d)?;
        if text.trim().is_empty() {
            return Ok(CpuSet::EMPTY);
        }
        parse_cpu_list(&text).map_err(serde::de::Error::custom)
    }
}

mod opt_set {
    use hybridland_policy::CpuSet;
    use serde::{Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(set: &Option<CpuSet>, s: S) -> Result<S::Ok, S::Error> {
        match set {
            Some(set) => super::set::serialize(set, s),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<CpuSet>, D::Error> {
        super::set::deserialize(d).map(Some)
    }
}

/// A decision log being kept: bounded, appended to by the loop, written once at exit.
#[derive(Clone, Debug)]
pub struct DecisionLog {
    header: Header,
    entries: Vec<Entry>,
}

impl DecisionLog {
    /// An empty log; `header.max_entries` bounds it (reserved now, so appending never
    /// allocates).
    pub fn new(header: Header) -> Self {
        let entries = Vec::with_capacity(header.max_entries);
        Self { header, entries }
    }

    /// Appends `entry`, unless the log is full (then it is marked truncated).
    pub fn push(&mut self, entry: Entry) {
        if self.entries.len() < self.header.max_entries {
            self.entries.push(entry);
        } else {
            self.header.truncated = true;
        }
    }

    /// The header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The entries kept.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Writes the log as JSON lines.
    pub fn write_to(&self, mut out: impl Write) -> io::Result<()> {
        serde_json::to_writer(&mut out, &self.header)?;
        out.write_all(b"\n")?;
        for e in &self.entries {
            serde_json::to_writer(&mut out, e)?;
            out.write_all(b"\n")?;
        }
        out.flush()
    }

    /// Reads a log written by [`write_to`](Self::write_to).
    pub fn read_from(input: impl BufRead) -> Result<Self, LogError> {
        let mut lines = input.lines();
        let first = lines
            .next()
            .ok_or(LogError::Empty)?
            .map_err(|e| LogError::Io(e.to_string()))?;
        let header: Header = serde_json::from_str(&first).map_err(|e| {
            // A file of another kind says what it is not before why it does not parse.
            if !first.contains(FORMAT) {
                LogError::NotALog
            } else {
                LogError::Line {
                    line: 1,
                    message: e.to_string(),
                }
            }
        })?;
        if header.format != FORMAT {
            return Err(LogError::NotALog);
        }
        if header.version != VERSION {
            return Err(LogError::Version(header.version));
        }
        let mut entries = Vec::new();
        for (i, line) in lines.enumerate() {
            let line = line.map_err(|e| LogError::Io(e.to_string()))?;
            if line.trim().is_empty() {
                continue;
            }
            if entries.len() >= header.max_entries {
                return Err(LogError::Line {
                    line: i + 2,
                    message: format!(
                        "more entries than the header's max_entries ({})",
                        header.max_entries
                    ),
                });
            }
            let entry = serde_json::from_str(&line).map_err(|e| LogError::Line {
                line: i + 2,
                message: e.to_string(),
            })?;
            entries.push(entry);
        }
        Ok(Self { header, entries })
    }
}

/// A decision log that cannot be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LogError {
    /// Nothing in the file.
    #[error("empty file: no decision-log header")]
    Empty,
    /// The first line is not a decision-log header.
    #[error("not a decision log (its first line is not a `{FORMAT}` header)")]
    NotALog,
    /// A version this build does not read.
    #[error("decision-log version {0}; this build reads version {VERSION}")]
    Version(u32),
    /// A line that does not parse.
    #[error("line {line}: {message}")]
    Line {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// Reading failed.
    #[error("reading: {0}")]
    Io(String),
}
