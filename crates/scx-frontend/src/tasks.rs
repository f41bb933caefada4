//! Per-task bookkeeping the policy call needs but the framework does not keep: a utilisation
//! estimate, and the fair (vtime) order of the shared queue. All timestamps are the kernel's
//! (`start_ts`/`stop_ts` from the BPF side), so no user-space clock is mixed in.

use std::collections::HashMap;

/// What the loop needs from a queued task (a copy of the framework's fields).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Seen {
    pub(crate) pid: i32,
    /// Start of the task's last run, 0 if it never ran.
    pub(crate) start_ts: u64,
    /// End of the task's last run.
    pub(crate) stop_ts: u64,
    /// Whether it was woken (rather than preempted at a slice end).
    pub(crate) wakeup: bool,
    /// Its weight (100 = nice 0).
    pub(crate) weight: u64,
    /// Its vtime as last dispatched.
    pub(crate) vtime: u64,
}

#[derive(Copy, Clone, Debug, Default)]
struct Record {
    util: u16,
    last_start: u64,
    seen_ns: u64,
}

/// Utilisation estimates and the global vtime.
#[derive(Default)]
pub(crate) struct TaskTable {
    tasks: HashMap<i32, Record>,
    vtime_now: u64,
}

impl TaskTable {
    /// Updates the task's utilisation estimate (0..=1024) and returns it.
    ///
    /// A task preempted at the end of its slice wanted more CPU: sample 1024. A woken task:
    /// its last run's length over the time between the starts of its last two runs. The
    /// estimate is an exponential average (1/4 weight to the new sample).
    pub(crate) fn util(&mut self, t: &Seen) -> u16 {
        let rec = self.tasks.entry(t.pid).or_default();
        rec.seen_ns = rec.seen_ns.max(t.stop_ts).max(t.start_ts);
        if t.start_ts == 0 || t.start_ts == rec.last_start {
            return rec.util;
        }
        let run = t.stop_ts.saturating_sub(t.start_ts);
        let sample = if !t.wakeup {
            1024
        } else if rec.last_start != 0 && t.start_ts > rec.last_start {
            (run.saturating_mul(1024) / (t.start_ts - rec.last_start)).min(1024)
        } else {
            u64::from(rec.util)
        };
        rec.util = ((u64::from(rec.util) * 3 + sample) / 4) as u16;
        rec.last_start = t.start_ts;
        rec.util
    }

    /// The current estimate for `pid` (0 if unknown), without updating it.
    pub(crate) fn util_of(&self, pid: i32) -> u16 {
        self.tasks.get(&pid).map_or(0, |r| r.util)
    }

    /// The vtime to dispatch the task with: its own, not more than one slice behind the
    /// global one (a sleeper gets at most a slice of credit), charged for its last run scaled
    /// by its weight.
    pub(crate) fn vtime(&mut self, t: &Seen, slice_ns: u64) -> u64 {
        let used = if t.start_ts == 0 {
            0
        } else {
            t.stop_ts.saturating_sub(t.start_ts).min(slice_ns)
        };
        let base = t.vtime.max(self.vtime_now.saturating_sub(slice_ns));
        self.vtime_now = self.vtime_now.max(base);
        base + used * 100 / t.weight.max(1)
    }

    /// Forgets tasks not seen since `before_ns` (kernel time).
    pub(crate) fn prune(&mut self, before_ns: u64) {
        self.tasks.retain(|_, r| r.seen_ns >= before_ns);
    }

    /// Latest kernel timestamp seen.
    pub(crate) fn latest_ns(&self) -> u64 {
        self.tasks.values().map(|r| r.seen_ns).max().unwrap_or(0)
    }

    /// Tasks tracked.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.tasks.len()
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn a_cpu_hog_climbs_to_full_and_a_sleeper_stays_low() {
        let mut t = TaskTable::default();
        let mut hog = Seen {
            pid: 1,
            weight: 100,
            ..Default::default()
        };
        let mut u = 0;
        for i in 1..20u64 {
            hog.start_ts = i * 1000;
            hog.stop_ts = i * 1000 + 1000;
            u = t.util(&hog);
        }
        assert!(u > 1000, "{u}");
        // 10% duty cycle: runs 100 of every 1000.
        let mut s = Seen {
            pid: 2,
            weight: 100,
            wakeup: true,
            ..Default::default()
        };
        for i in 1..40u64 {
            s.start_ts = i * 1000;
            s.stop_ts = i * 1000 + 100;
            u = t.util(&s);
        }
        assert!((90..=115).contains(&u), "{u}");
        t.prune(35_000);
        assert_eq!(t.len(), 1);
    }

    #[test]
    fn vtime_credit_is_bounded_by_one_slice() {
        let mut t = TaskTable::default();
        let busy = Seen {
            pid: 1,
            weight: 100,
            start_ts: 1,
            stop_ts: 1 + 5_000,
            vtime: 1_000_000,
            ..Default::default()
        };
        assert_eq!(t.vtime(&busy, 5_000), 1_005_000);
        let sleeper = Seen {
            pid: 2,
            weight: 100,
            vtime: 0,
            ..Default::default()
        };
        assert_eq!(t.vtime(&sleeper, 5_000), 995_000);
        let heavy = Seen {
            pid: 3,
            weight: 200,
            start_ts: 1,
            stop_ts: 1 + 4_000,
            vtime: 1_000_000,
            ..Default::default()
        };
        assert_eq!(t.vtime(&heavy, 5_000), 1_002_000);
    }
}
