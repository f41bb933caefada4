//! The decision log: the scheduler core's inputs as the live loop handed them over, and what
//! the loop sent, so `hybrid-sim decisions FILE` can feed the same inputs through the same core
//! and compare. This separates "the core decides what was done" (exact) from "the model
//! predicts the machine" (the simulator's fidelity).
//!
//! The file is JSON lines: a [`Header`] first (format name and version, the machine as a
//! machine file, the policy and its knobs, the core's settings), then one [`Entry`] per line in
//! the order the loop made the calls. It is bounded: the loop keeps it packed in at most
//! [`Header::max_bytes`] of memory, and a log that reached the bound says so
//! ([`Header::truncated`]); a replay then compares what was kept. `docs/decision-log.md` describes every field.

use hybridland_policy::{
    Classed, CoreConfig, CpuId, Dispatch, Input, Nudge, Nudging, Occupancy, Output, OwnedInput,
    PolicyConfig, SliceMode, Target, TaskId, TimeNs, WakePreempt,
};
use serde::{Deserialize, Serialize};

mod codec;
mod line;
use std::io::{self, BufRead, Write};

/// The format's name, in every header.
pub const FORMAT: &str = "hybridland-decisions";
/// The format version this crate writes and reads.
pub const VERSION: u32 = 3;
/// The memory the live loop keeps the log in unless told otherwise: 8 MiB, a few hundred
/// thousand entries (the framework's whole heap is a fixed 64 MiB arena).
pub const DEFAULT_MAX_BYTES: usize = 8 << 20;
/// The most tasks a log's core may hold (`scx_hybridland --max-tasks` at most).
pub const MAX_TASKS: usize = 1 << 20;
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
    /// A policy's own knobs ([`KnobSpec`](hybridland_policy::KnobSpec)) at the start, by
    /// name, each value as the core takes it (an integer; on/off 1 or 0; a choice its index).
    /// Absent: none. A change while running is an [`OwnedInput::Knob`] entry.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub policy_knobs: std::collections::BTreeMap<String, i64>,
    /// The core's settings.
    pub core: CoreSettings,
    /// The task storage's capacity (`--max-tasks`).
    pub max_tasks: usize,
    /// The nudge helper's task id, if there was one.
    pub helper: Option<TaskId>,
    /// The most bytes the log keeps in memory while the loop runs (entries packed, about 20-50
    /// bytes each on a machine of up to 64 CPUs).
    pub max_bytes: usize,
    /// The log reached `max_bytes`: later calls were not logged.
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
    /// Wake-up preemption.
    #[serde(default, skip_serializing_if = "core::ops::Not::not")]
    pub wake_preempt: bool,
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
            wake_preempt: c.wake_preempt == WakePreempt::SliceAhead,
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
            wake_preempt: if s.wake_preempt {
                WakePreempt::SliceAhead
            } else {
                WakePreempt::Off
            },
            // A log is the live loop's: it reads idle snapshots.
            occupancy: Occupancy::Snapshots,
        }
    }
}

/// One input the loop handed to the core, or one decision it carried out.
///
/// As a JSON line: an input is `{"now": NS, "in": INPUT}` with the core's own
/// [`OwnedInput`] form (`"tick"`, `{"exit": {"task": 7}}`, `{"queued": {...}}`); a dispatch
/// sent is `{"sent": {...}}`, a nudge carried out `{"nudged": {...}}`, a class written to the
/// kernel `{"classed": {"task": 7, "class": 1}}`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[allow(
    clippy::large_enum_variant,
    reason = "built on the stack and packed at once: boxing the input would allocate in the live loop"
)]
pub enum Entry {
    /// An input, with the time it was handed over.
    Input {
        /// The time handed over.
        now: TimeNs,
        /// The input.
        input: OwnedInput,
    },
    /// A dispatch the loop sent, as the core polled it out.
    Sent(Sent),
    /// A nudge the loop carried out, as the core polled it out.
    Nudged(Nudged),
    /// A task class the loop wrote for the kernel's fast path, as the core polled it out.
    Classed(Classed),
}

/// A dispatch as sent.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sent {
    /// Task id (pid).
    pub task: TaskId,
    /// The CPU, or absent for the shared queue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<u16>,
    /// Slice.
    pub slice_ns: u64,
    /// Vtime.
    pub vtime: u64,
    /// It takes `cpu` from the task there ([`Target::Preempt`]).
    #[serde(default, skip_serializing_if = "core::ops::Not::not")]
    pub preempt: bool,
}

impl Sent {
    /// What dispatch `d` logs as.
    pub fn of(d: &Dispatch) -> Self {
        Self {
            task: d.task,
            cpu: d.target.cpu().map(|c| c.0),
            slice_ns: d.slice_ns,
            vtime: d.vtime,
            preempt: matches!(d.target, Target::Preempt(_)),
        }
    }

    /// The target it names.
    pub fn target(&self) -> Target {
        match self.cpu.map(CpuId) {
            None => Target::Shared,
            Some(c) if self.preempt => Target::Preempt(c),
            Some(c) => Target::Cpu(c),
        }
    }

    /// Whether `d` is this dispatch (task, target, slice and vtime; the caller's token and
    /// the reason are not logged).
    pub fn matches(&self, d: &Dispatch) -> bool {
        *self == Self::of(d)
    }
}

/// A nudge as carried out.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Nudged {
    /// The CPU nudged.
    pub cpu: u16,
    /// The task on it.
    pub task: TaskId,
}

impl Nudged {
    /// What nudge `n` logs as.
    pub fn of(n: &Nudge) -> Self {
        Self {
            cpu: n.cpu.0,
            task: n.task,
        }
    }
}

impl Entry {
    /// The entry for handing `input` over at `now`.
    pub fn input(now: TimeNs, input: &Input<'_>) -> Self {
        Self::Input {
            now,
            input: input.to_owned(),
        }
    }

    /// The entry for a polled output carried out.
    pub fn output(out: &Output) -> Self {
        match out {
            Output::Dispatch(d) => Self::Sent(Sent::of(d)),
            Output::Nudge(n) => Self::Nudged(Nudged::of(n)),
            Output::Class(c) => Self::Classed(*c),
        }
    }

    /// The time the entry carries, if any.
    pub fn now(&self) -> Option<TimeNs> {
        match self {
            Self::Input { now, .. } => Some(*now),
            _ => None,
        }
    }
}

/// A decision log: kept by the live loop (bounded, appended to without allocating, written
/// once at exit) or read back for a replay.
#[derive(Clone, Debug)]
pub struct DecisionLog {
    header: Header,
    /// The entries, packed (see `codec`).
    bytes: Vec<u8>,
    len: usize,
    /// The last input's time: the packed form keeps times as differences.
    last_now: TimeNs,
}

impl DecisionLog {
    /// An empty log; `header.max_bytes` bounds it (reserved now, so appending never
    /// allocates).
    pub fn new(header: Header) -> Self {
        let bytes = Vec::with_capacity(header.max_bytes);
        Self {
            header,
            bytes,
            len: 0,
            last_now: TimeNs(0),
        }
    }

    /// Appends `entry`, unless the log is full (then it is marked truncated and keeps what it
    /// has).
    pub fn push(&mut self, entry: Entry) {
        if self.header.truncated {
            return;
        }
        let mut buf = [0u8; codec::MAX_ENTRY_BYTES];
        let n = codec::encode(&entry, self.last_now, &mut buf);
        if self.bytes.len() + n > self.header.max_bytes {
            self.header.truncated = true;
            return;
        }
        self.bytes.extend_from_slice(&buf[..n]);
        self.len += 1;
        self.last_now = entry.now().unwrap_or(self.last_now);
    }

    /// The header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// How many entries it holds.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The entries, in order.
    pub fn iter(&self) -> impl Iterator<Item = Entry> + '_ {
        let mut at = 0;
        let mut last_now = TimeNs(0);
        core::iter::from_fn(move || {
            let (entry, n) = codec::decode(self.bytes.get(at..)?, last_now)?;
            at += n;
            last_now = entry.now().unwrap_or(last_now);
            Some(entry)
        })
    }

    /// Writes the log as JSON lines.
    pub fn write_to(&self, mut out: impl Write) -> io::Result<()> {
        serde_json::to_writer(&mut out, &self.header)?;
        out.write_all(b"\n")?;
        for e in self.iter() {
            serde_json::to_writer(&mut out, &e)?;
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
            if first.contains(FORMAT) {
                LogError::Line {
                    line: 1,
                    message: e.to_string(),
                }
            } else {
                LogError::NotALog
            }
        })?;
        if header.format != FORMAT {
            return Err(LogError::NotALog);
        }
        if header.version != VERSION {
            return Err(LogError::Version(header.version));
        }
        // A replay reserves task storage for `max_tasks`: the live range, no more.
        if !(1..=MAX_TASKS).contains(&header.max_tasks) {
            return Err(LogError::Line {
                line: 1,
                message: format!(
                    "max_tasks {} is outside 1..={MAX_TASKS} (scx_hybridland --max-tasks)",
                    header.max_tasks
                ),
            });
        }
        let mut log = Self {
            header,
            bytes: Vec::new(),
            len: 0,
            last_now: TimeNs(0),
        };
        let mut buf = [0u8; codec::MAX_ENTRY_BYTES];
        for (i, line) in lines.enumerate() {
            let line = line.map_err(|e| LogError::Io(e.to_string()))?;
            if line.trim().is_empty() {
                continue;
            }
            let entry: Entry = serde_json::from_str(&line).map_err(|e| LogError::Line {
                line: i + 2,
                message: e.to_string(),
            })?;
            let n = codec::encode(&entry, log.last_now, &mut buf);
            log.bytes.extend_from_slice(&buf[..n]);
            log.len += 1;
            log.last_now = entry.now().unwrap_or(log.last_now);
        }
        Ok(log)
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

#[cfg(test)]
mod tests;
