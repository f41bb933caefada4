//! The decision log in memory: entries packed into bytes (a tag, LEB128 numbers, CPU sets as
//! their words up to the last non-zero one), so the live loop keeps a long log in little
//! memory and never allocates while it runs. The live scheduler's whole heap is the framework's
//! fixed arena; a `Vec<Entry>` (up to two 128-byte CPU sets per entry) would not fit in it.

use super::{Entry, WaitingRec};
use hybridland_policy::{ClusterBalance, CpuSet, MAX_CPUS};

const WORDS: usize = MAX_CPUS / 64;

/// The longest encoding of one entry: a snapshot with two full CPU sets (2 x 129 bytes) and a
/// few numbers.
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

fn waiting_code(w: Option<WaitingRec>) -> u8 {
    match w {
        None => 0,
        Some(WaitingRec::Nobody) => 1,
        Some(WaitingRec::OwnQueue) => 2,
        Some(WaitingRec::SharedQueue) => 3,
    }
}

/// Writes `e` into `buf`; returns its length.
pub(super) fn encode(e: &Entry, buf: &mut [u8; MAX_ENTRY_BYTES]) -> usize {
    let mut w = Writer { buf, len: 0 };
    match e {
        Entry::Queued {
            now,
            task,
            waker_cpu,
            slice_end,
            cpu,
            last_run,
            weight,
            allowed,
            util_hint,
        } => {
            w.byte(0);
            let flags = waiting_code(*slice_end)
                | u8::from(waker_cpu.is_some()) << 2
                | u8::from(cpu.is_some()) << 3
                | u8::from(last_run.is_some()) << 4
                | u8::from(allowed.is_some()) << 5
                | u8::from(util_hint.is_some()) << 6;
            w.byte(flags);
            w.num(*now);
            w.num(u64::from(*task));
            w.num(u64::from(*weight));
            if let Some(c) = waker_cpu {
                w.num(u64::from(*c));
            }
            if let Some(c) = cpu {
                w.num(u64::from(*c));
            }
            if let Some([a, b]) = last_run {
                w.num(*a);
                w.num(*b);
            }
            if let Some(s) = allowed {
                w.set(s);
            }
            if let Some(u) = util_hint {
                w.num(u64::from(*u));
            }
        }
        Entry::Snapshot {
            now,
            idle,
            queued,
            caller,
        } => {
            w.byte(1);
            w.byte(u8::from(queued.is_some()) | u8::from(caller.is_some()) << 1);
            w.num(*now);
            w.set(idle);
            if let Some(q) = queued {
                w.set(q);
            }
            if let Some(c) = caller {
                w.num(u64::from(*c));
            }
        }
        Entry::SnapshotFailed { now } => {
            w.byte(2);
            w.num(*now);
        }
        Entry::Recheck { idle, queued } => {
            w.byte(3);
            w.byte(u8::from(queued.is_some()));
            w.set(idle);
            if let Some(q) = queued {
                w.set(q);
            }
        }
        Entry::Backlog { waiting } => {
            w.byte(4);
            w.num(*waiting);
        }
        Entry::Tick { now } => {
            w.byte(5);
            w.num(*now);
        }
        Entry::Exit { task } => {
            w.byte(6);
            w.num(u64::from(*task));
        }
        Entry::ClusterBalance { mode } => {
            w.byte(7);
            w.byte(match mode {
                ClusterBalance::Off => 0,
                ClusterBalance::On => 1,
                ClusterBalance::Auto => 2,
            });
        }
        Entry::Sent {
            task,
            cpu,
            slice_ns,
            vtime,
            preempt,
        } => {
            w.byte(8);
            w.byte(u8::from(cpu.is_some()) | u8::from(*preempt) << 1);
            w.num(u64::from(*task));
            if let Some(c) = cpu {
                w.num(u64::from(*c));
            }
            w.num(*slice_ns);
            w.num(*vtime);
        }
        Entry::Nudged { cpu, task } => {
            w.byte(9);
            w.num(u64::from(*cpu));
            w.num(u64::from(*task));
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

/// Reads the entry at the start of `bytes`: it and its length; `None` for bytes `encode` did
/// not write.
pub(super) fn decode(bytes: &[u8]) -> Option<(Entry, usize)> {
    let mut r = Reader { bytes, at: 0 };
    let entry = match r.byte()? {
        0 => {
            let flags = r.byte()?;
            let now = r.num()?;
            let task = r.small()?;
            let weight = r.small()?;
            let waker_cpu = r.opt(flags & 4 != 0, Reader::small)?;
            let cpu = r.opt(flags & 8 != 0, Reader::small)?;
            let last_run = r.opt(flags & 16 != 0, |r| Some([r.num()?, r.num()?]))?;
            let allowed = r.opt(flags & 32 != 0, Reader::set)?;
            let util_hint = r.opt(flags & 64 != 0, Reader::small)?;
            let slice_end = match flags & 3 {
                0 => None,
                1 => Some(WaitingRec::Nobody),
                2 => Some(WaitingRec::OwnQueue),
                _ => Some(WaitingRec::SharedQueue),
            };
            Entry::Queued {
                now,
                task,
                waker_cpu,
                slice_end,
                cpu,
                last_run,
                weight,
                allowed,
                util_hint,
            }
        }
        1 => {
            let flags = r.byte()?;
            let now = r.num()?;
            let idle = r.set()?;
            let queued = r.opt(flags & 1 != 0, Reader::set)?;
            let caller = r.opt(flags & 2 != 0, Reader::small)?;
            Entry::Snapshot {
                now,
                idle,
                queued,
                caller,
            }
        }
        2 => Entry::SnapshotFailed { now: r.num()? },
        3 => {
            let flags = r.byte()?;
            let idle = r.set()?;
            let queued = r.opt(flags & 1 != 0, Reader::set)?;
            Entry::Recheck { idle, queued }
        }
        4 => Entry::Backlog { waiting: r.num()? },
        5 => Entry::Tick { now: r.num()? },
        6 => Entry::Exit { task: r.small()? },
        7 => Entry::ClusterBalance {
            mode: match r.byte()? {
                0 => ClusterBalance::Off,
                1 => ClusterBalance::On,
                _ => ClusterBalance::Auto,
            },
        },
        8 => {
            let flags = r.byte()?;
            let task = r.small()?;
            let cpu = r.opt(flags & 1 != 0, Reader::small)?;
            Entry::Sent {
                task,
                cpu,
                slice_ns: r.num()?,
                vtime: r.num()?,
                preempt: flags & 2 != 0,
            }
        }
        9 => Entry::Nudged {
            cpu: r.small()?,
            task: r.small()?,
        },
        _ => return None,
    };
    Some((entry, r.at))
}
