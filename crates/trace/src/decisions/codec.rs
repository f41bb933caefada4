//! The decision log in memory: entries packed into bytes (a tag, LEB128 numbers, an input's
//! time as the zigzag difference from the previous input's, CPU sets as their words up to the
//! last non-zero one), so the live loop keeps a long log in little memory and never allocates
//! while it runs. The live scheduler's whole heap is the framework's
//! fixed arena; a `Vec<Entry>` (up to two 128-byte CPU sets per entry) would not fit in it.

mod queued;

use super::{Entry, Nudged, Sent};
use hybridland_policy::{
    Classed, ClusterBalance, CpuId, CpuSet, LastRun, Life, MAX_CPUS, OwnedInput, OwnedSnapshot,
    TaskClass, TaskId, TimeNs,
};
use queued::{queued_body, queued_flags, read_queued};

const WORDS: usize = MAX_CPUS / 64;

/// The longest encoding of one entry: a snapshot with two full CPU sets (2 x 129 bytes) and a
/// few numbers (at most 10 bytes each).
pub(super) const MAX_ENTRY_BYTES: usize = 320;

struct Writer<'a> {
    buf: &'a mut [u8; MAX_ENTRY_BYTES],
    len: usize,
}

impl Writer<'_> {
    fn byte(&mut self, b: u8) {
        self.buf[self.len] = b;
        self.len += 1;
    }

    fn num(&mut self, mut v: u64) {
        loop {
            let low = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                self.byte(low);
                return;
            }
            self.byte(low | 0x80);
        }
    }

    fn opt(&mut self, v: Option<u64>) {
        if let Some(v) = v {
            self.num(v);
        }
    }

    fn set(&mut self, set: &CpuSet) {
        let words = set.words();
        let n = words.iter().rposition(|w| *w != 0).map_or(0, |i| i + 1);
        self.byte(n as u8);
        for w in &words[..n] {
            for b in w.to_le_bytes() {
                self.byte(b);
            }
        }
    }
}

/// An entry's first byte: what follows.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Tag {
    Queued,
    Snapshot,
    SnapshotFailed,
    Recheck,
    Backlog,
    Tick,
    Exit,
    ClusterBalance,
    Sent,
    Nudged,
    Started,
    Stopped,
    Placed,
    Classed,
    Knob,
}

impl Tag {
    /// Every tag, at its own value.
    const ALL: [Self; 15] = [
        Self::Queued,
        Self::Snapshot,
        Self::SnapshotFailed,
        Self::Recheck,
        Self::Backlog,
        Self::Tick,
        Self::Exit,
        Self::ClusterBalance,
        Self::Sent,
        Self::Nudged,
        Self::Started,
        Self::Stopped,
        Self::Placed,
        Self::Classed,
        Self::Knob,
    ];

    fn of(byte: u8) -> Option<Self> {
        Self::ALL.get(usize::from(byte)).copied()
    }
}

fn zigzag(delta: u64) -> u64 {
    let d = delta as i64;
    ((d << 1) ^ (d >> 63)) as u64
}

fn unzigzag(z: u64) -> u64 {
    ((z >> 1) as i64 ^ -((z & 1) as i64)) as u64
}

fn snapshot_flags(s: &OwnedSnapshot) -> u8 {
    u8::from(s.queued.is_some()) | u8::from(s.caller_cpu.is_some()) << 1
}

/// Writes `e` into `buf`, its time relative to `prev_now` (the previous input's); returns its
/// length.
pub(super) fn encode(e: &Entry, prev_now: TimeNs, buf: &mut [u8; MAX_ENTRY_BYTES]) -> usize {
    let mut w = Writer { buf, len: 0 };
    let (now, input) = match e {
        Entry::Input { now, input } => (*now, input),
        Entry::Sent(s) => {
            w.byte(Tag::Sent as u8);
            w.byte(u8::from(s.cpu.is_some()) | u8::from(s.preempt) << 1);
            w.num(u64::from(s.task.0));
            w.opt(s.cpu.map(u64::from));
            w.num(s.slice_ns);
            w.num(s.vtime);
            return w.len;
        }
        Entry::Nudged(n) => {
            w.byte(Tag::Nudged as u8);
            w.num(u64::from(n.cpu));
            w.num(u64::from(n.task.0));
            return w.len;
        }
        Entry::Classed(c) => {
            w.byte(Tag::Classed as u8);
            w.num(u64::from(c.task.0));
            w.byte(c.class.0);
            return w.len;
        }
    };
    let time = |w: &mut Writer<'_>| w.num(zigzag(now.0.wrapping_sub(prev_now.0)));
    match input {
        OwnedInput::Queued(q) => {
            w.byte(Tag::Queued as u8);
            w.byte(queued_flags(q));
            time(&mut w);
            queued_body(&mut w, q);
        }
        OwnedInput::Placed {
            woken,
            cpu,
            class,
            woke,
        } => {
            w.byte(Tag::Placed as u8);
            w.byte(queued_flags(woken));
            time(&mut w);
            w.num(u64::from(cpu.0));
            w.byte(class.0);
            // How long before the input it woke.
            w.num(now.0.saturating_sub(woke.0));
            queued_body(&mut w, woken);
        }
        OwnedInput::Snapshot(s) | OwnedInput::Recheck(s) => {
            let tag = if matches!(input, OwnedInput::Snapshot(_)) {
                Tag::Snapshot
            } else {
                Tag::Recheck
            };
            w.byte(tag as u8);
            w.byte(snapshot_flags(s));
            time(&mut w);
            w.set(&s.idle);
            if let Some(q) = &s.queued {
                w.set(q);
            }
            w.opt(s.caller_cpu.map(|c| u64::from(c.0)));
        }
        OwnedInput::SnapshotFailed => {
            w.byte(Tag::SnapshotFailed as u8);
            time(&mut w);
        }
        OwnedInput::Backlog { waiting } => {
            w.byte(Tag::Backlog as u8);
            time(&mut w);
            w.num(*waiting);
        }
        OwnedInput::Tick => {
            w.byte(Tag::Tick as u8);
            time(&mut w);
        }
        OwnedInput::Exit { task, life } => {
            w.byte(Tag::Exit as u8);
            time(&mut w);
            w.num(u64::from(task.0));
            w.num(life.0);
        }
        OwnedInput::ClusterBalance { mode } => {
            w.byte(Tag::ClusterBalance as u8);
            time(&mut w);
            w.byte(match mode {
                ClusterBalance::Off => 0,
                ClusterBalance::On => 1,
                ClusterBalance::Auto => 2,
            });
        }
        OwnedInput::Knob { index, value } => {
            w.byte(Tag::Knob as u8);
            time(&mut w);
            w.num(u64::from(*index));
            w.num(zigzag(*value as u64));
        }
        OwnedInput::Started { task, cpu } => {
            w.byte(Tag::Started as u8);
            time(&mut w);
            w.num(u64::from(task.0));
            w.num(u64::from(cpu.0));
        }
        OwnedInput::Stopped {
            task,
            cpu,
            run,
            weight,
        } => {
            w.byte(Tag::Stopped as u8);
            time(&mut w);
            w.num(u64::from(task.0));
            w.num(u64::from(cpu.0));
            w.num(run.start_ns);
            w.num(run.stop_ns);
            w.num(u64::from(*weight));
        }
    }
    w.len
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn byte(&mut self) -> Option<u8> {
        let b = *self.bytes.get(self.at)?;
        self.at += 1;
        Some(b)
    }

    fn num(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }

    fn small<T: TryFrom<u64>>(&mut self) -> Option<T> {
        T::try_from(self.num()?).ok()
    }

    fn opt<T>(
        &mut self,
        present: bool,
        f: impl FnOnce(&mut Self) -> Option<T>,
    ) -> Option<Option<T>> {
        if present {
            f(self).map(Some)
        } else {
            Some(None)
        }
    }

    fn set(&mut self) -> Option<CpuSet> {
        let n = usize::from(self.byte()?);
        if n > WORDS {
            return None;
        }
        let mut words = [0u64; WORDS];
        for w in &mut words[..n] {
            let end = self.at.checked_add(8)?;
            let chunk: [u8; 8] = self.bytes.get(self.at..end)?.try_into().ok()?;
            *w = u64::from_le_bytes(chunk);
            self.at = end;
        }
        Some(CpuSet::from_words(words))
    }
}

/// Reads the entry at the start of `bytes`, its time relative to `prev_now`: it and its
/// length; `None` for bytes `encode` did not write.
pub(super) fn decode(bytes: &[u8], prev_now: TimeNs) -> Option<(Entry, usize)> {
    let mut r = Reader { bytes, at: 0 };
    let tag = Tag::of(r.byte()?)?;
    match tag {
        Tag::Sent => {
            let flags = r.byte()?;
            let task = TaskId(r.small()?);
            let cpu = r.opt(flags & 1 != 0, Reader::small)?;
            let sent = Sent {
                task,
                cpu,
                slice_ns: r.num()?,
                vtime: r.num()?,
                preempt: flags & 2 != 0,
            };
            return Some((Entry::Sent(sent), r.at));
        }
        Tag::Nudged => {
            let nudged = Nudged {
                cpu: r.small()?,
                task: TaskId(r.small()?),
            };
            return Some((Entry::Nudged(nudged), r.at));
        }
        Tag::Classed => {
            let classed = Classed {
                task: TaskId(r.small()?),
                class: TaskClass(r.byte()?),
            };
            return Some((Entry::Classed(classed), r.at));
        }
        _ => {}
    }
    let flags = match tag {
        Tag::Queued | Tag::Placed | Tag::Snapshot | Tag::Recheck => r.byte()?,
        _ => 0,
    };
    let now = TimeNs(prev_now.0.wrapping_add(unzigzag(r.num()?)));
    let cpu = |r: &mut Reader<'_>| r.small().map(CpuId);
    let input = match tag {
        Tag::Queued => OwnedInput::Queued(read_queued(&mut r, flags)?),
        Tag::Placed => {
            let on = cpu(&mut r)?;
            let class = TaskClass(r.byte()?);
            let woke = TimeNs(now.0.saturating_sub(r.num()?));
            OwnedInput::Placed {
                cpu: on,
                class,
                woke,
                woken: read_queued(&mut r, flags)?,
            }
        }
        Tag::Snapshot | Tag::Recheck => {
            let s = OwnedSnapshot {
                idle: r.set()?,
                queued: r.opt(flags & 1 != 0, Reader::set)?,
                caller_cpu: r.opt(flags & 2 != 0, cpu)?,
            };
            if tag == Tag::Snapshot {
                OwnedInput::Snapshot(s)
            } else {
                OwnedInput::Recheck(s)
            }
        }
        Tag::SnapshotFailed => OwnedInput::SnapshotFailed,
        Tag::Backlog => OwnedInput::Backlog { waiting: r.num()? },
        Tag::Tick => OwnedInput::Tick,
        Tag::Exit => OwnedInput::Exit {
            task: TaskId(r.small()?),
            life: Life(r.num()?),
        },
        Tag::ClusterBalance => OwnedInput::ClusterBalance {
            mode: match r.byte()? {
                0 => ClusterBalance::Off,
                1 => ClusterBalance::On,
                2 => ClusterBalance::Auto,
                _ => return None,
            },
        },
        Tag::Knob => OwnedInput::Knob {
            index: r.small()?,
            value: unzigzag(r.num()?) as i64,
        },
        Tag::Started => OwnedInput::Started {
            task: TaskId(r.small()?),
            cpu: cpu(&mut r)?,
        },
        Tag::Stopped => OwnedInput::Stopped {
            task: TaskId(r.small()?),
            cpu: cpu(&mut r)?,
            run: LastRun {
                start_ns: r.num()?,
                stop_ns: r.num()?,
            },
            weight: r.small()?,
        },
        _ => return None,
    };
    Some((Entry::Input { now, input }, r.at))
}
