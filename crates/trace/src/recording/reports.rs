//! The reports a recording makes to the builder, each task's in the order made, and which
//! wake-ups by a task among them become relations.

use super::{MAX_RELATIONS, WAKE_SLACK_NS, Wake};
use std::collections::HashMap;

/// Makes each wake-up by a task a relation where it fits: it ends a sleep of the reports
/// (a switch-out asleep and the wake-up right after it; it is the woken task's last
/// before the loop saw it awake, later than its previous one and at most
/// [`WAKE_SLACK_NS`] before the sleep began) and falls in a run of the waker (within the
/// slack). It is reported at its moment moved into both, strictly inside the waker's run,
/// so the builder finds the waker running and the woken task asleep.
pub(super) fn relate(wakes: Vec<Wake>, reports: &mut Reports, end: u64) {
    if wakes.is_empty() {
        return;
    }
    // Per task: its runs (from, to) as the builder will see them, in time order.
    let mut runs: HashMap<u32, Vec<(u64, u64)>> = HashMap::new();
    let mut open: HashMap<u32, u64> = HashMap::new();
    for r in &reports.list {
        if r.act == Act::Woken {
            continue;
        }
        if let Some(from) = open.remove(&r.pid) {
            runs.entry(r.pid).or_default().push((from, r.key));
        }
        if let Act::In(_) = r.act {
            open.insert(r.pid, r.key);
        }
    }
    for (pid, from) in open {
        runs.entry(pid).or_default().push((from, end.max(from)));
    }
    // Per woken task: its wake-ups by a task (time, waker), in time order.
    let mut by_pid: HashMap<u32, Vec<(u64, u32)>> = HashMap::new();
    for w in &wakes {
        if let (Ok(pid), Ok(waker)) = (u32::try_from(w.pid), u32::try_from(w.waker)) {
            by_pid.entry(pid).or_default().push((w.at_ns, waker));
        }
    }
    drop(wakes);
    for list in by_pid.values_mut() {
        list.sort_unstable();
    }
    let mut previous: HashMap<u32, u64> = HashMap::new();
    for woken in 1..reports.list.len() {
        let (out, r) = (reports.list[woken - 1], reports.list[woken]);
        if r.act != Act::Woken || out.pid != r.pid || out.act != Act::Out(false) {
            continue;
        }
        let (pid, slept_at, until) = (r.pid, out.key, r.key);
        let after = previous.insert(pid, until);
        let Some(list) = by_pid.get(&pid) else {
            continue;
        };
        let n = list.partition_point(|&(at, _)| at <= until);
        let Some(&(at, waker)) = n.checked_sub(1).and_then(|i| list.get(i)) else {
            continue;
        };
        if after.is_some_and(|p| at <= p) || at.saturating_add(WAKE_SLACK_NS) < slept_at {
            continue;
        }
        let Some((from, to)) = runs.get(&waker).and_then(|r| run_near(r, at)) else {
            continue;
        };
        let lo = from.saturating_add(1).max(slept_at);
        let hi = to.saturating_sub(1).min(until);
        if lo > hi {
            continue;
        }
        let Ok(index) = u32::try_from(woken) else {
            continue;
        };
        if reports.wakers.len() >= MAX_RELATIONS {
            break;
        }
        reports.list[woken].key = at.clamp(lo, hi);
        reports.wakers.push((index, waker));
    }
}

/// What a recorded event tells the builder about a task.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Act {
    /// On this CPU from then.
    In(u16),
    /// Off its CPU: still runnable when `true`, else asleep.
    Out(bool),
    /// Woken (by the task [`Reports::wakers`] names for it, if any).
    Woken,
    Exit,
}

/// One report to the builder: 16 bytes, as many as three per event, built after the
/// scheduler has detached but still from its arena.
#[derive(Copy, Clone, Debug)]
pub(super) struct Report {
    /// Its time, raised to the task's latest report so far as the builder raises it: the
    /// reports go to the builder in this order, which keeps each task's own order.
    pub(super) key: u64,
    pub(super) pid: u32,
    pub(super) act: Act,
}

/// The reports of a recording, each task's in the order made.
#[derive(Default)]
pub(super) struct Reports {
    pub(super) list: Vec<Report>,
    latest: HashMap<u32, u64>,
    /// The waker of each wake-up that is a relation: (its report's index, the waker), in
    /// index order (8 bytes each: a hash map's table would double that at the largest).
    pub(super) wakers: Vec<(u32, u32)>,
}

impl Reports {
    pub(super) fn with_capacity(n: usize) -> Self {
        Self {
            list: Vec::with_capacity(n),
            ..Self::default()
        }
    }

    /// Adds a report; returns its index.
    pub(super) fn push(&mut self, pid: u32, at: u64, act: Act) -> usize {
        let latest = self.latest.entry(pid).or_insert(at);
        let key = at.max(*latest);
        *latest = key;
        self.list.push(Report { key, pid, act });
        self.list.len() - 1
    }

    /// Whether `pid` has a report yet.
    pub(super) fn knows(&self, pid: u32) -> bool {
        self.latest.contains_key(&pid)
    }
}

/// The run of `runs` (in time order) that holds `at`, or failing one the nearest within
/// [`WAKE_SLACK_NS`].
fn run_near(runs: &[(u64, u64)], at: u64) -> Option<(u64, u64)> {
    let i = runs.partition_point(|&(from, _)| from <= at);
    let gap = |r: &(u64, u64)| {
        if at < r.0 {
            r.0 - at
        } else {
            at.saturating_sub(r.1)
        }
    };
    [i.checked_sub(1).map(|j| runs[j]), runs.get(i).copied()]
        .into_iter()
        .flatten()
        .filter(|r| gap(r) <= WAKE_SLACK_NS)
        .min_by_key(gap)
}
