//! Who woke a task, kept from the event source's wake-up event until the framework hands the
//! woken task to the loop, so the scheduler core gets the waker with the wake-up
//! (`Arrival::Wakeup { waker }`), as the simulator gives it from a trace's wake relations.
//!
//! The two arrive on different rings: the event source's `sched_waking` record first, the
//! framework's queued task later (after its `enqueue`). The table is direct-mapped by pid with a
//! capacity fixed at start, so a thread storm cannot grow it: a newer wake-up whose pid maps to
//! the same slot replaces the older one (that task is then handed over without a waker, as one
//! woken by an interrupt is). An entry older than [`MAX_AGE_NS`] is not used: its task was
//! handed over before the event was read, or never reached user space.

use hybridland_policy::{CpuId, TaskId, Waker};

/// Slots in the table; a power of two.
pub(crate) const CAPACITY: usize = 4096;

/// How long a wake-up's waker stays usable, ns: far more than one round of the loop.
pub(crate) const MAX_AGE_NS: u64 = 50_000_000;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Entry {
    pid: i32,
    waker_pid: i32,
    cpu: CpuId,
    at_ns: u64,
}

/// The latest waker of each recently woken task.
#[derive(Debug)]
pub(crate) struct Wakers {
    slots: Box<[Option<Entry>]>,
}

impl Wakers {
    /// An empty table of [`CAPACITY`] slots: its only allocation.
    pub(crate) fn new() -> Self {
        Self {
            slots: vec![None; CAPACITY].into_boxed_slice(),
        }
    }

    fn slot(pid: i32) -> usize {
        // Pids of live threads are spread enough that the low bits are a fair hash.
        (pid as u32 as usize) & (CAPACITY - 1)
    }

    /// Task `pid` was woken at `at_ns` by task `waker_pid` running on `cpu`.
    pub(crate) fn note(&mut self, pid: i32, waker_pid: i32, cpu: CpuId, at_ns: u64) {
        self.slots[Self::slot(pid)] = Some(Entry {
            pid,
            waker_pid,
            cpu,
            at_ns,
        });
    }

    /// The waker of `pid`'s latest wake-up, if it is known and no older than [`MAX_AGE_NS`] at
    /// `now_ns`; taken out, so the next wake-up does not reuse it.
    pub(crate) fn take(&mut self, pid: i32, now_ns: u64) -> Option<Waker> {
        let slot = &mut self.slots[Self::slot(pid)];
        let e = slot.filter(|e| e.pid == pid)?;
        *slot = None;
        (now_ns.saturating_sub(e.at_ns) <= MAX_AGE_NS).then(|| Waker {
            task: u32::try_from(e.waker_pid).ok().map(TaskId),
            cpu: e.cpu,
            // The kernel's sync flag reaches only the fast path.
            sync: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_waker_is_handed_over_once() {
        let mut w = Wakers::new();
        w.note(10, 3, CpuId(4), 1_000);
        assert_eq!(w.take(11, 2_000), None, "another task");
        assert_eq!(
            w.take(10, 2_000),
            Some(Waker {
                task: Some(TaskId(3)),
                cpu: CpuId(4),
                sync: false,
            })
        );
        assert_eq!(w.take(10, 2_000), None, "taken");
    }

    #[test]
    fn a_stale_waker_is_not_used() {
        let mut w = Wakers::new();
        w.note(10, 3, CpuId(4), 1_000);
        assert_eq!(w.take(10, 1_000 + MAX_AGE_NS + 1), None);
        w.note(10, 3, CpuId(4), 1_000);
        assert!(w.take(10, 1_000 + MAX_AGE_NS).is_some());
    }

    #[test]
    fn a_newer_wake_up_in_the_same_slot_replaces_the_older() {
        let mut w = Wakers::new();
        let other = 10 + CAPACITY as i32;
        w.note(10, 3, CpuId(4), 1_000);
        w.note(other, 5, CpuId(6), 1_100);
        assert_eq!(
            w.take(10, 2_000),
            None,
            "replaced: handed over without a waker"
        );
        assert_eq!(w.take(other, 2_000).map(|w| w.cpu), Some(CpuId(6)));
        // Negative pids (never a live thread's) map to a slot like any other.
        w.note(-1, 3, CpuId(1), 1_000);
        assert_eq!(w.take(-1, 1_000).map(|w| w.task), Some(Some(TaskId(3))));
    }
}
