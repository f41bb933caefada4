//! A queued task in the decision log's packed form (`Input::Queued` and the woken task of
//! `Input::Placed`): its flags byte, and the fields after it.

use super::{Reader, Writer};
use hybridland_policy::{
    Arrival, CpuId, LastRun, Life, OwnedQueued, TaskId, UtilSource, Waiting, Waker,
};

/// A queued task's flags byte: bits 0-1 the arrival (0 a wake-up, else who waits at a slice
/// end), then which optional fields follow.
const Q_WAKER: u8 = 1 << 2;
const Q_WAKER_TASK: u8 = 1 << 3;
const Q_CPU: u8 = 1 << 4;
const Q_LAST_RUN: u8 = 1 << 5;
const Q_ALLOWED: u8 = 1 << 6;
const Q_HINT: u8 = 1 << 7;

/// A queued task's flags byte ([`Q_WAKER`] and the rest).
pub(super) fn queued_flags(q: &OwnedQueued) -> u8 {
    let (arrival, waker) = arrival_bits(q.arrival);
    arrival
        | if waker.is_some() { Q_WAKER } else { 0 }
        | if waker.is_some_and(|w| w.task.is_some()) {
            Q_WAKER_TASK
        } else {
            0
        }
        | if q.cpu.is_some() { Q_CPU } else { 0 }
        | if q.last_run.is_some() { Q_LAST_RUN } else { 0 }
        | if q.allowed.is_some() { Q_ALLOWED } else { 0 }
        | if matches!(q.util, UtilSource::Hint(_)) {
            Q_HINT
        } else {
            0
        }
}

/// An arrival's two bits of the flags byte, and its waker.
fn arrival_bits(arrival: Arrival) -> (u8, Option<Waker>) {
    match arrival {
        Arrival::Wakeup { waker } => (0, waker),
        Arrival::SliceEnd { waiting } => (
            match waiting {
                Waiting::Nobody => 1,
                Waiting::OwnQueue => 2,
                Waiting::SharedQueue => 3,
            },
            None,
        ),
    }
}

/// A queued task's fields after its flags and time.
pub(super) fn queued_body(w: &mut Writer<'_>, q: &OwnedQueued) {
    w.num(u64::from(q.task.0));
    w.num(q.life.0);
    w.num(u64::from(q.weight));
    if let Some(wk) = arrival_bits(q.arrival).1 {
        // The sync bit rides below the CPU.
        w.num(u64::from(wk.cpu.0) << 1 | u64::from(wk.sync));
        w.opt(wk.task.map(|t| u64::from(t.0)));
    }
    w.opt(q.cpu.map(|c| u64::from(c.0)));
    if let Some(r) = q.last_run {
        w.num(r.start_ns);
        w.num(r.stop_ns);
    }
    if let Some(s) = &q.allowed {
        w.set(s);
    }
    if let UtilSource::Hint(h) = q.util {
        w.num(u64::from(h));
    }
}

/// A queued task's fields after its flags (`flags`) and time.
pub(super) fn read_queued(r: &mut Reader<'_>, flags: u8) -> Option<OwnedQueued> {
    let cpu = |r: &mut Reader<'_>| r.small().map(CpuId);
    let task = TaskId(r.small()?);
    let life = Life(r.num()?);
    let weight = r.small()?;
    let waker = if flags & Q_WAKER != 0 {
        let at = r.num()?;
        let cpu = CpuId(u16::try_from(at >> 1).ok()?);
        let task = r.opt(flags & Q_WAKER_TASK != 0, |r| r.small().map(TaskId))?;
        Some(Waker {
            task,
            cpu,
            sync: at & 1 != 0,
        })
    } else {
        None
    };
    let arrival = match flags & 3 {
        0 => Arrival::Wakeup { waker },
        1 => Arrival::SliceEnd {
            waiting: Waiting::Nobody,
        },
        2 => Arrival::SliceEnd {
            waiting: Waiting::OwnQueue,
        },
        _ => Arrival::SliceEnd {
            waiting: Waiting::SharedQueue,
        },
    };
    Some(OwnedQueued {
        task,
        life,
        arrival,
        cpu: r.opt(flags & Q_CPU != 0, cpu)?,
        last_run: r.opt(flags & Q_LAST_RUN != 0, |r| {
            Some(LastRun {
                start_ns: r.num()?,
                stop_ns: r.num()?,
            })
        })?,
        weight,
        allowed: r.opt(flags & Q_ALLOWED != 0, Reader::set)?,
        util: match r.opt(flags & Q_HINT != 0, Reader::small)? {
            Some(h) => UtilSource::Hint(h),
            None => UtilSource::Estimate,
        },
    })
}
