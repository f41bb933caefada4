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
    Affinity, Arrival, ClusterBalance, CoreConfig, CpuId, CpuSet, Dispatch, LastRun, Nudging,
    PolicyConfig, Queued, SliceMode, Snapshot, Target, UtilSource, Waiting, WakePreempt, Waker,
};
use serde::{Deserialize, Serialize};

mod codec;
use std::io::{self, BufRead, Write};

/// The format's name, in every header.
pub const FORMAT: &str = "hybridland-decisions";
/// The format version this crate writes and reads.
pub const VERSION: u32 = 1;
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
    /// The core's settings.
    pub core: CoreSettings,
    /// The task storage's capacity (`--max-tasks`).
    pub max_tasks: usize,
    /// The nudge helper's task id, if there was one.
    pub helper: Option<u32>,
    /// The most bytes the log keeps in memory while the loop runs (entries packed, 10-40
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
    /// Wake-up preemption (logs written before it existed say nothing: it was off).
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
        /// It takes `cpu` from the task there ([`hybridland_policy::Target::Preempt`]).
        #[serde(default, skip_serializing_if = "core::ops::Not::not")]
        preempt: bool,
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

/// The target an [`Entry::Sent`] names: `cpu` (absent: the shared queue), taken from the task
/// there when `preempt`.
pub fn sent_target(cpu: Option<u16>, preempt: bool) -> Target {
    match cpu.map(CpuId) {
        None => Target::Shared,
        Some(c) if preempt => Target::Preempt(c),
        Some(c) => Target::Cpu(c),
    }
}

impl Entry {
    /// The entry for dispatch `d`, sent.
    pub fn sent(d: &Dispatch) -> Self {
        Self::Sent {
            task: d.task,
            cpu: d.target.cpu().map(|c| c.0),
            slice_ns: d.slice_ns,
            vtime: d.vtime,
            preempt: matches!(d.target, Target::Preempt(_)),
        }
    }

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

/// A decision log: kept by the live loop (bounded, appended to without allocating, written
/// once at exit) or read back for a replay.
#[derive(Clone, Debug)]
pub struct DecisionLog {
    header: Header,
    /// The entries, packed (see `codec`).
    bytes: Vec<u8>,
    len: usize,
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
        }
    }

    /// Appends `entry`, unless the log is full (then it is marked truncated and keeps what it
    /// has).
    pub fn push(&mut self, entry: Entry) {
        if self.header.truncated {
            return;
        }
        let mut buf = [0u8; codec::MAX_ENTRY_BYTES];
        let n = codec::encode(&entry, &mut buf);
        if self.bytes.len() + n > self.header.max_bytes {
            self.header.truncated = true;
            return;
        }
        self.bytes.extend_from_slice(&buf[..n]);
        self.len += 1;
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
        core::iter::from_fn(move || {
            let (entry, n) = codec::decode(self.bytes.get(at..)?)?;
            at += n;
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
            let n = codec::encode(&entry, &mut buf);
            log.bytes.extend_from_slice(&buf[..n]);
            log.len += 1;
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
mod test {
    use super::*;
    use hybridland_policy::CpuId;

    fn header(max_bytes: usize) -> Header {
        Header {
            format: FORMAT.into(),
            version: VERSION,
            machine: String::new(),
            policy: "hybridland".into(),
            seed: 3,
            knobs: PolicyConfig::default(),
            core: CoreSettings::from(&CoreConfig::DEFAULT),
            max_tasks: 64,
            helper: None,
            max_bytes,
            truncated: false,
        }
    }

    fn every_kind() -> Vec<Entry> {
        let full = CpuSet::first_n(1024);
        let some: CpuSet = [CpuId(0), CpuId(5), CpuId(700)].into_iter().collect();
        vec![
            Entry::Queued {
                now: u64::MAX,
                task: u32::MAX,
                waker_cpu: Some(3),
                slice_end: None,
                cpu: Some(1023),
                last_run: Some([1, u64::MAX - 1]),
                weight: 100,
                allowed: Some(full),
                util_hint: Some(1024),
            },
            Entry::Queued {
                now: 0,
                task: 7,
                waker_cpu: None,
                slice_end: Some(WaitingRec::SharedQueue),
                cpu: None,
                last_run: None,
                weight: 0,
                allowed: None,
                util_hint: None,
            },
            Entry::Snapshot {
                now: 9,
                idle: full,
                queued: Some(full),
                caller: Some(2),
            },
            Entry::Snapshot {
                now: 9,
                idle: CpuSet::EMPTY,
                queued: None,
                caller: None,
            },
            Entry::SnapshotFailed { now: 1 },
            Entry::Recheck {
                idle: some,
                queued: Some(CpuSet::EMPTY),
            },
            Entry::Backlog { waiting: 1 << 40 },
            Entry::Tick { now: 5 },
            Entry::Exit { task: 0 },
            Entry::ClusterBalance {
                mode: ClusterBalance::Auto,
            },
            Entry::Sent {
                task: 4,
                cpu: None,
                slice_ns: 5_000_000,
                vtime: 0,
                preempt: false,
            },
            Entry::Sent {
                task: 4,
                cpu: Some(6),
                slice_ns: 1,
                vtime: u64::MAX,
                preempt: false,
            },
            Entry::Sent {
                task: 5,
                cpu: Some(7),
                slice_ns: 2,
                vtime: 3,
                preempt: true,
            },
            Entry::Nudged { cpu: 2, task: 9 },
        ]
    }

    #[test]
    fn every_entry_survives_memory_and_the_file() {
        let mut log = DecisionLog::new(header(1 << 16));
        for e in every_kind() {
            log.push(e);
        }
        assert_eq!(log.iter().collect::<Vec<_>>(), every_kind());
        let mut file = Vec::new();
        log.write_to(&mut file).unwrap();
        let back = DecisionLog::read_from(file.as_slice()).unwrap();
        assert_eq!(back.header(), log.header());
        assert_eq!(back.iter().collect::<Vec<_>>(), every_kind());
    }

    #[test]
    fn a_full_log_stops_whole_and_says_so() {
        let mut log = DecisionLog::new(header(40));
        for _ in 0..20 {
            log.push(Entry::Tick { now: 1_000_000 });
        }
        assert!(log.header().truncated);
        assert_eq!(log.len(), 10, "4 bytes each, 40 bytes");
        assert_eq!(log.iter().count(), 10);
    }

    #[test]
    fn packed_bytes_that_encode_did_not_write_read_as_nothing() {
        for bytes in [&[10u8][..], &[0, 0xff], &[1, 0, 5, 17], &[8, 1, 0x80]] {
            assert!(codec::decode(bytes).is_none(), "{bytes:?}");
        }
    }
}
