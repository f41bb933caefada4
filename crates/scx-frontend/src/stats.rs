//! Per-interval statistics, logged through `tracing` as one line per interval:
//!
//! ```text
//! stats: placed idle-p-core=12 idle-e-core=30 busy-sibling=2 no-idle=5 | overflow=0 stale=1
//!   nudge=0 kept=40 | busy performance=95% efficiency=40% | balance=auto | fw user=44 kernel=3 cancel=0
//!   bounce=0 failed=0 congested=0 running=6 queued=0
//! ```
//!
//! - `placed`: wake-ups and slice-end moves per step of the idle order (`no-idle` went to the
//!   shared queue);
//! - `overflow`: placements outside the primary domain because none of it was idle;
//! - `stale`: picks whose CPU was idle in the snapshot but busy by dispatch time, sent to the
//!   shared queue instead;
//! - `nudge`: tasks made to come back for re-placement because a better CPU went idle;
//! - `kept`: slice ends where the task kept its CPU (the policy's slice-end rule);
//! - `busy`: share of each core kind's CPU time spent not idle (from `/proc/stat`);
//! - only when non-zero: `dispatch-retries` (tasks kept in the local backlog because the ring
//!   buffer to the kernel was full), `backlog` (tasks in it now), `snapshot-errors` (failed idle
//!   snapshots: that batch went to the shared queue), `dequeue-errors`, `affinity-errors`;
//! - `fw`: scx_rustland_core's counters over the interval (user/kernel dispatches, cancelled,
//!   bounced to the previous CPU, failed, ring-buffer congestion) and its current gauges.

#![forbid(unsafe_code)]

use crate::adapter::StepCounts;
use core::fmt::Write as _;
use hybridland_policy::{CoreKind, CpuId, Step, Topology};

/// Counters kept by the loop.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Counters {
    /// Placements by step.
    pub(crate) steps: StepCounts,
    /// Primary-domain overflows.
    pub(crate) overflow: u64,
    /// Dispatches whose CPU was no longer idle when dispatched.
    pub(crate) stale: u64,
    /// Nudges: a task left on an E-core or SMT sibling while a better CPU idled was made to
    /// come back for re-placement.
    pub(crate) nudges: u64,
    /// Slice ends that kept their CPU (nothing strictly better idle, nobody waiting).
    pub(crate) kept: u64,
    /// Tasks a failed dispatch (user ring buffer full) put in the backlog, to be sent again.
    pub(crate) dispatch_retries: u64,
    /// Idle snapshots that failed (that batch went to the shared queue).
    pub(crate) snapshot_errors: u64,
    /// Failed reads of the queued-task ring buffer.
    pub(crate) dequeue_errors: u64,
    /// Affinity look-ups that failed (task gone).
    pub(crate) affinity_errors: u64,
}

impl Counters {
    fn delta(&self, prev: &Self) -> Self {
        let mut steps = StepCounts::default();
        for i in 0..Step::ALL.len() {
            steps.0[i] = self.steps.0[i] - prev.steps.0[i];
        }
        Self {
            steps,
            overflow: self.overflow - prev.overflow,
            stale: self.stale - prev.stale,
            nudges: self.nudges - prev.nudges,
            kept: self.kept - prev.kept,
            dispatch_retries: self.dispatch_retries - prev.dispatch_retries,
            snapshot_errors: self.snapshot_errors - prev.snapshot_errors,
            dequeue_errors: self.dequeue_errors - prev.dequeue_errors,
            affinity_errors: self.affinity_errors - prev.affinity_errors,
        }
    }
}

/// scx_rustland_core's counters, read from its BPF globals.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Framework {
    pub(crate) user: u64,
    pub(crate) kernel: u64,
    pub(crate) cancel: u64,
    pub(crate) bounce: u64,
    pub(crate) failed: u64,
    pub(crate) congested: u64,
    pub(crate) running: u64,
    pub(crate) queued: u64,
}

/// Busy and total jiffies of each CPU, from `/proc/stat`.
fn cpu_times(text: &str) -> Vec<(u16, u64, u64)> {
    text.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let cpu: u16 = it.next()?.strip_prefix("cpu")?.parse().ok()?;
            let v: Vec<u64> = it.filter_map(|x| x.parse().ok()).collect();
            // user nice system idle iowait irq softirq steal (guest time is inside user).
            let idle = v.get(3).copied().unwrap_or(0) + v.get(4).copied().unwrap_or(0);
            let total: u64 = v.iter().take(8).sum();
            Some((cpu, total - idle.min(total), total))
        })
        .collect()
}

/// Per-kind busy share over an interval.
pub(crate) struct KindBusy {
    last: Vec<(u16, u64, u64)>,
}

impl KindBusy {
    pub(crate) fn new() -> Self {
        Self {
            last: cpu_times(&std::fs::read_to_string("/proc/stat").unwrap_or_default()),
        }
    }

    /// Busy percentage of each kind present since the last call.
    pub(crate) fn sample(&mut self, topo: &Topology) -> Vec<(CoreKind, u64)> {
        let now = cpu_times(&std::fs::read_to_string("/proc/stat").unwrap_or_default());
        let out = busy_share(topo, &self.last, &now);
        self.last = now;
        out
    }
}

fn busy_share(
    topo: &Topology,
    before: &[(u16, u64, u64)],
    after: &[(u16, u64, u64)],
) -> Vec<(CoreKind, u64)> {
    let mut acc = [(0u64, 0u64); 3];
    for &(cpu, busy, total) in after {
        let Some(info) = topo.info(CpuId(cpu)) else {
            continue;
        };
        let (b0, t0) = before
            .iter()
            .find(|x| x.0 == cpu)
            .map_or((0, 0), |x| (x.1, x.2));
        let a = &mut acc[info.kind.index()];
        a.0 += busy.saturating_sub(b0);
        a.1 += total.saturating_sub(t0);
    }
    CoreKind::ALL
        .iter()
        .filter(|k| !topo.kind_mask(**k).is_empty())
        .map(|k| {
            let (b, t) = acc[k.index()];
            (*k, (b * 100).checked_div(t).unwrap_or(0))
        })
        .collect()
}

/// The interval reporter.
pub(crate) struct Reporter {
    counters: Counters,
    framework: Framework,
    busy: KindBusy,
}

impl Reporter {
    pub(crate) fn new(counters: Counters, framework: Framework) -> Self {
        Self {
            counters,
            framework,
            busy: KindBusy::new(),
        }
    }

    /// The line for the interval ending now, and starts the next one.
    pub(crate) fn line(
        &mut self,
        topo: &Topology,
        now: &Counters,
        fw: &Framework,
        balance: &str,
        backlog: usize,
    ) -> String {
        let d = now.delta(&self.counters);
        let mut s = String::from("stats: placed");
        for step in Step::ALL {
            let _ = write!(s, " {}={}", step.name(), d.steps.0[step.index()]);
        }
        let _ = write!(
            s,
            " | overflow={} stale={} nudge={} kept={}",
            d.overflow, d.stale, d.nudges, d.kept
        );
        let errors = d.dispatch_retries + d.snapshot_errors + d.dequeue_errors + d.affinity_errors;
        if errors > 0 || backlog > 0 {
            let _ = write!(
                s,
                " dispatch-retries={} backlog={backlog} snapshot-errors={} dequeue-errors={} affinity-errors={}",
                d.dispatch_retries, d.snapshot_errors, d.dequeue_errors, d.affinity_errors
            );
        }
        s.push_str(" | busy");
        for (kind, pct) in self.busy.sample(topo) {
            let _ = write!(s, " {kind}={pct}%");
        }
        let p = &self.framework;
        let _ = write!(
            s,
            " | balance={balance} | fw user={} kernel={} cancel={} bounce={} failed={} congested={} running={} queued={}",
            fw.user - p.user.min(fw.user),
            fw.kernel - p.kernel.min(fw.kernel),
            fw.cancel - p.cancel.min(fw.cancel),
            fw.bounce - p.bounce.min(fw.bounce),
            fw.failed - p.failed.min(fw.failed),
            fw.congested - p.congested.min(fw.congested),
            fw.running,
            fw.queued,
        );
        self.counters = *now;
        self.framework = *fw;
        s
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use hybridland_policy::TopologyBuilder;

    #[test]
    fn busy_share_is_per_kind() {
        let mut b = TopologyBuilder::new();
        b.add_cpu(CpuId(0), CoreKind::Performance, 1024, 0).unwrap();
        b.add_cpu(CpuId(1), CoreKind::Efficiency, 512, 0).unwrap();
        let topo = b.build().unwrap();
        let before =
            cpu_times("cpu  9 9 9 9\ncpu0 10 0 0 90 0 0 0 0 0 0\ncpu1 0 0 0 100 0 0 0 0 0 0\n");
        let after = cpu_times("cpu0 60 0 10 120 0 0 0 0 0 0\ncpu1 10 0 0 190 0 0 0 0 0 0\n");
        // cpu0: busy 60 of 90 more jiffies; cpu1: 10 of 100.
        assert_eq!(
            busy_share(&topo, &before, &after),
            vec![(CoreKind::Performance, 66), (CoreKind::Efficiency, 10)]
        );
    }

    #[test]
    fn the_line_reports_deltas() {
        let mut b = TopologyBuilder::new();
        b.add_cpu(CpuId(0), CoreKind::Performance, 1024, 0).unwrap();
        let topo = b.build().unwrap();
        let mut r = Reporter::new(Counters::default(), Framework::default());
        let mut c = Counters::default();
        c.steps.add(Step::IdlePCore);
        c.steps.add(Step::IdlePCore);
        c.stale = 1;
        let fw = Framework {
            user: 5,
            running: 1,
            ..Default::default()
        };
        let line = r.line(&topo, &c, &fw, "on", 0);
        assert!(line.starts_with("stats: placed idle-p-core=2 idle-e-core=0 busy-sibling=0 no-idle=0 | overflow=0 stale=1 nudge=0 kept=0 | busy performance="), "{line}");
        assert!(line.contains("balance=on | fw user=5 kernel=0"), "{line}");
        let line = r.line(&topo, &c, &fw, "on", 0);
        assert!(
            line.contains("idle-p-core=0") && line.contains("user=0"),
            "{line}"
        );
    }
}
