//! A replay of a recorded trace set beside what the live scheduler measured over the same
//! window ([`LiveStats`]): the fidelity check of docs/FIDELITY.md.
//!
//! Every figure is taken over the live window (the trace's `duration_ns`), so a replay that
//! finishes early is not made to look busier. Shares (CPU time per core kind, placements per
//! step) differ in percentage points; occupancy and rates by their ratio, sim over live.

use crate::live::LiveStats;
use crate::report::{Report, StepCount};
use serde::{Deserialize, Serialize};

/// The fidelity target for CPU-time and placement shares, percentage points.
pub const TARGET_POINTS: f64 = 10.0;

/// One figure, simulated and live.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// What it measures: `cpu-time`, `placements`, `occupancy` or `migrations`.
    pub group: String,
    /// Which one: a core kind, a step, a cluster's CPUs, `per-second`.
    pub name: String,
    /// Unit of `sim` and `live`: `%` (a share), `tasks` (average running) or `/s`.
    pub unit: String,
    /// The replay's figure.
    pub sim: f64,
    /// The live figure.
    pub live: f64,
    /// `sim - live` (percentage points for shares).
    pub diff: f64,
    /// `sim / live`; `None` when the live figure is 0.
    pub ratio: Option<f64>,
    /// For shares: whether `|diff|` is within [`TARGET_POINTS`].
    pub within_target: Option<bool>,
}

/// The comparison of one replay with one live run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// Trace name.
    pub trace: String,
    /// Machine name.
    pub machine: String,
    /// Policy replayed.
    pub policy: String,
    /// The policy's knobs in force in the replay.
    pub policy_config: String,
    /// The live scheduler.
    pub scheduler: String,
    /// The window both are measured over, ns.
    pub window_ns: u64,
    /// Placements the replay made / the live scheduler made (a sum of counts a file may set
    /// up to `u64::MAX` each).
    pub placements: (u128, u128),
    /// The figures.
    pub rows: Vec<Row>,
}

impl Comparison {
    /// Whether every share with a target is within it (`None` when no row has a target).
    pub fn within_target(&self) -> Option<bool> {
        let mut any = None;
        for r in &self.rows {
            if let Some(ok) = r.within_target {
                any = Some(any.unwrap_or(true) && ok);
            }
        }
        any
    }
}

fn pct(part: u64, whole: u128) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

/// A sum of figures a file may set up to `u64::MAX` each (found by the `compare` fuzz target:
/// two kinds of `u64::MAX` busy ns overflowed `u64`).
fn total(figures: impl Iterator<Item = u64>) -> u128 {
    figures.map(u128::from).sum()
}

fn row(group: &str, name: &str, unit: &str, sim: f64, live: f64, share: bool) -> Row {
    Row {
        group: group.into(),
        name: name.into(),
        unit: unit.into(),
        sim,
        live,
        diff: sim - live,
        ratio: (live != 0.0).then(|| sim / live),
        within_target: share.then(|| (sim - live).abs() <= TARGET_POINTS),
    }
}

/// The share rows of `group`: one per name either side has (the replay's in its order, then
/// those only the live side has), each side's figure for it (0 where it has none) as a
/// percentage of that side's total.
fn share_rows(rows: &mut Vec<Row>, group: &str, sim: &[(&str, u64)], live: &[(&str, u64)]) {
    let sim_total = total(sim.iter().map(|f| f.1));
    let live_total = total(live.iter().map(|f| f.1));
    let mut names: Vec<&str> = sim.iter().map(|f| f.0).collect();
    for (name, _) in live {
        if !names.contains(name) {
            names.push(name);
        }
    }
    let figure = |side: &[(&str, u64)], name| side.iter().find(|f| f.0 == name).map_or(0, |f| f.1);
    for name in names {
        rows.push(row(
            group,
            name,
            "%",
            pct(figure(sim, name), sim_total),
            pct(figure(live, name), live_total),
            true,
        ));
    }
}

/// Sets `report` (a replay of the recorded trace) beside `live`. Placement shares are left
/// out unless both sides counted placements (a baseline replay, or a recording of a scheduler
/// that is not hybridland, has none to compare).
pub fn compare(report: &Report, live: &LiveStats) -> Comparison {
    let window = live.window_ns.max(1);
    let mut rows = Vec::new();
    let sim_kinds: Vec<_> = report
        .kinds
        .iter()
        .map(|k| (k.kind.as_str(), k.busy_ns))
        .collect();
    let live_kinds: Vec<_> = live
        .kinds
        .iter()
        .map(|k| (k.kind.as_str(), k.busy_ns))
        .collect();
    share_rows(&mut rows, "cpu-time", &sim_kinds, &live_kinds);
    let sim_placed = total(report.steps.iter().map(|s| s.count));
    let live_placed = total(live.steps.iter().map(|s| s.count));
    if sim_placed > 0 && live_placed > 0 {
        fn steps(steps: &[StepCount]) -> Vec<(&str, u64)> {
            steps.iter().map(|s| (s.step.as_str(), s.count)).collect()
        }
        share_rows(
            &mut rows,
            "placements",
            &steps(&report.steps),
            &steps(&live.steps),
        );
    }
    let avg = |busy: u64| busy as f64 / window as f64;
    for c in &report.clusters {
        let lv = live
            .clusters
            .iter()
            .find(|l| same_cpus(&l.cpus, &c.cpus))
            .map_or(0, |l| l.busy_ns);
        rows.push(row(
            "occupancy",
            &format!("{} {}", c.kind, c.cpus),
            "tasks",
            avg(c.busy_ns),
            avg(lv),
            false,
        ));
    }
    let secs = window as f64 / 1e9;
    rows.push(row(
        "migrations",
        "per-second",
        "/s",
        report.summary.migrations as f64 / secs,
        live.migrations as f64 / secs,
        false,
    ));
    Comparison {
        trace: report.trace.clone(),
        machine: report.machine.clone(),
        policy: report.policy.clone(),
        policy_config: report.policy_config.clone(),
        scheduler: live.scheduler.clone(),
        window_ns: live.window_ns,
        placements: (sim_placed, live_placed),
        rows,
    }
}

/// Whether two CPU lists name the same CPUs (`0,2` and `0, 2`, `4-5` and `4,5`).
fn same_cpus(a: &str, b: &str) -> bool {
    match (
        hybridland_policy::parse_cpu_list(a),
        hybridland_policy::parse_cpu_list(b),
    ) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::live::{LIVE_VERSION, LiveCluster, LiveKind};
    use crate::report::{ClusterStats, KindStats, StepCount, Summary};

    fn report() -> Report {
        let kind = |kind: &str, busy_ns| KindStats {
            kind: kind.into(),
            cpus: 4,
            busy_ns,
            utilisation_pct: 0.0,
            energy_j: 0.0,
        };
        Report {
            policy: "hybridland".into(),
            policy_config: String::new(),
            machine: "m".into(),
            trace: "t".into(),
            seed: 0,
            summary: Summary {
                makespan_ns: 1,
                tasks: 1,
                tasks_finished: 1,
                throughput_per_s: 0.0,
                mean_turnaround_ns: 0,
                max_turnaround_ns: 0,
                migrations: 30,
                energy_j: 0.0,
                avg_power_w: 0.0,
                events: 0,
                peak_queued_events: 0,
                rate_refreshes: 0,
            },
            wake_latency: Default::default(),
            fps: None,
            kinds: vec![kind("performance", 750), kind("efficiency", 250)],
            clusters: vec![ClusterStats {
                index: 0,
                kind: "efficiency".into(),
                cpus: "0,2".into(),
                busy_ns: 500,
                avg_running: 0.0,
            }],
            cpus: Vec::new(),
            steps: vec![
                StepCount {
                    step: "idle-p-core".into(),
                    count: 9,
                    overflow: 0,
                },
                StepCount {
                    step: "idle-e-core".into(),
                    count: 1,
                    overflow: 0,
                },
            ],
            tasks: Vec::new(),
        }
    }

    fn live() -> LiveStats {
        LiveStats {
            policy: None,
            policy_seed: None,
            version: LIVE_VERSION,
            scheduler: "s".into(),
            settings: Vec::new(),
            window_ns: 1_000,
            events: 1,
            capped: false,
            tasks: 1,
            kinds: vec![
                LiveKind {
                    kind: "performance".into(),
                    cpus: 4,
                    busy_ns: 600,
                },
                LiveKind {
                    kind: "efficiency".into(),
                    cpus: 4,
                    busy_ns: 400,
                },
            ],
            clusters: vec![LiveCluster {
                cpus: "0, 2".into(),
                kind: "efficiency".into(),
                busy_ns: 250,
            }],
            steps: vec![StepCount {
                step: "idle-p-core".into(),
                count: 3,
                overflow: 0,
            }],
            kept: 0,
            stale: 0,
            nudges: 0,
            migrations: 10,
        }
    }

    #[test]
    fn shares_differ_in_points_and_rates_by_ratio() {
        let c = compare(&report(), &live());
        let get = |g: &str, n: &str| c.rows.iter().find(|r| r.group == g && r.name == n).unwrap();
        let p = get("cpu-time", "performance");
        assert_eq!((p.sim, p.live), (75.0, 60.0));
        assert_eq!(p.within_target, Some(false));
        assert!((get("cpu-time", "efficiency").diff + 15.0).abs() < 1e-9);
        let e = get("placements", "idle-e-core");
        assert_eq!((e.sim, e.live, e.within_target), (10.0, 0.0, Some(true)));
        assert_eq!(get("placements", "idle-p-core").diff, -10.0);
        let o = get("occupancy", "efficiency 0,2");
        assert_eq!((o.sim, o.live, o.ratio), (0.5, 0.25, Some(2.0)));
        let m = get("migrations", "per-second");
        assert!((m.ratio.unwrap() - 3.0).abs() < 1e-9);
        assert_eq!(c.placements, (10, 3));
        assert_eq!(c.within_target(), Some(false));
    }

    /// Busy times and counts a file sets up to `u64::MAX` each add up without overflow (found
    /// by the `compare` fuzz target).
    #[test]
    fn figures_at_their_largest_add_up() {
        let mut l = live();
        l.window_ns = u64::MAX;
        for k in &mut l.kinds {
            (k.cpus, k.busy_ns) = (usize::MAX, u64::MAX);
        }
        l.steps[0].count = u64::MAX;
        l.steps.push(StepCount {
            step: "idle-e-core".into(),
            count: u64::MAX,
            overflow: 0,
        });
        l.validate("l").unwrap();
        let c = compare(&report(), &l);
        let get = |g: &str, n: &str| c.rows.iter().find(|r| r.group == g && r.name == n).unwrap();
        assert_eq!(get("cpu-time", "performance").live, 50.0);
        assert_eq!(get("placements", "idle-e-core").live, 50.0);
        assert_eq!(c.placements.1, 2 * u128::from(u64::MAX));
    }
}
