//! The sweep's grid: the `--set` items read, which policy reads which knob, every point in
//! row order, and each row's gain over its reference row in the compared dimension.

use super::Point;
use crate::failure::Failure;
use anyhow::anyhow;
use hybridland_sim::Report;
use serde::Serialize;

/// `KEY=V1,V2` items; a key given twice is refused.
pub(super) fn parse_sets(items: &[String]) -> Result<Vec<(String, Vec<String>)>, Failure> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for item in items {
        let Some((key, values)) = item.split_once('=') else {
            return Err(Failure::Input(anyhow!(
                "--set {item}: expected KEY=VALUE[,VALUE...]"
            )));
        };
        let key = key.trim();
        let values: Vec<String> = values.split(',').map(|v| v.trim().to_owned()).collect();
        if key.is_empty() || values.iter().any(String::is_empty) {
            return Err(Failure::Input(anyhow!(
                "--set {item}: expected KEY=VALUE[,VALUE...] with no empty value"
            )));
        }
        if out.iter().any(|(k, _)| k == key) {
            return Err(Failure::Input(anyhow!(
                "--set {key} is given twice: list every value in one --set {key}=V1,V2"
            )));
        }
        out.push((key.to_owned(), values));
    }
    Ok(out)
}

/// Whether a replay under `policy` (a name, perhaps with its own `:KEY=VALUE` knobs) depends
/// on `key` from `--set`. An unknown name is taken to read everything: building it fails later
/// with the error that names it.
pub(super) fn reads_knob(policy: &str, key: &str) -> bool {
    let mut parts = policy.split(':');
    let base = parts.next().unwrap_or("").trim();
    let set_by_name = parts.any(|item| item.split_once('=').is_some_and(|(k, _)| k.trim() == key));
    !set_by_name && hybridland_sim::registry::reads_knob(base, key)
}

pub(super) fn grid(
    copies: &[u32],
    swept: &[(String, Vec<String>)],
    policies: &[String],
) -> Vec<Point> {
    let copies: Vec<Option<u32>> = if copies.is_empty() {
        vec![None]
    } else {
        copies.iter().copied().map(Some).collect()
    };
    let mut settings: Vec<Vec<(String, String)>> = vec![Vec::new()];
    for (key, values) in swept {
        settings = settings
            .into_iter()
            .flat_map(|prefix| {
                values.iter().map(move |v| {
                    let mut s = prefix.clone();
                    s.push((key.clone(), v.clone()));
                    s
                })
            })
            .collect();
    }
    let mut points = Vec::new();
    for c in &copies {
        for s in &settings {
            for policy in policies {
                let point = Point {
                    copies: *c,
                    settings: s
                        .iter()
                        .map(|(k, v)| (k.clone(), reads_knob(policy, k).then(|| v.clone())))
                        .collect(),
                    policy: policy.clone(),
                };
                // The keys it does not read: one replay stands for all their values.
                let same = |q: &Point| {
                    q.copies == point.copies
                        && q.policy == point.policy
                        && q.settings == point.settings
                };
                if !points.iter().any(same) {
                    points.push(point);
                }
            }
        }
    }
    points
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Compared {
    None,
    Policy,
    /// Index into the swept keys.
    Key(usize),
}

/// What a row's gain is measured on: the sweep's one figure, named in the gain column's header
/// (and each CSV row and JSON outcome). Every gain reads "better by", `+10%` being 10% better.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(super) enum GainFigure {
    /// `reference makespan / makespan - 1`: when every replay finished every task, the time
    /// they took is what a policy changes (seed 002's measure).
    Throughput,
    /// Frames completed by their deadline, summed over every frame task: on a frame trace the
    /// makespan is the trace's pacing (or its horizon), the same under every policy, while the
    /// frames each policy delivered in time move.
    OnTimeFrames,
    /// `reference mean / mean - 1` of the wake-up latency: a trace that runs to its horizon
    /// without frames (rt-app loops) ends at the same time under every policy; how long its
    /// wake-ups waited is what moves.
    WakeLatency,
}

impl GainFigure {
    /// The figure for these replays of one trace: on-time frames when it has frame tasks,
    /// else throughput when every replay finished every task, else wake-up latency.
    pub(super) fn of(reports: &[Report]) -> Self {
        if reports
            .iter()
            .any(|r| r.tasks.iter().any(|t| t.frames.is_some()))
        {
            Self::OnTimeFrames
        } else if reports
            .iter()
            .all(|r| r.summary.tasks_finished == r.summary.tasks)
        {
            Self::Throughput
        } else {
            Self::WakeLatency
        }
    }

    /// Its name in the table's header and the CSV.
    pub(super) fn name(self) -> &'static str {
        match self {
            Self::Throughput => "throughput",
            Self::OnTimeFrames => "on-time frames",
            Self::WakeLatency => "1/mean wake-up latency",
        }
    }

    /// Its identifier in the CSV and JSON (`throughput`, `on-time-frames`, `wake-latency`).
    pub(super) fn id(self) -> &'static str {
        match self {
            Self::Throughput => "throughput",
            Self::OnTimeFrames => "on-time-frames",
            Self::WakeLatency => "wake-latency",
        }
    }

    /// `report`'s gain over `base`, percent; `None` where the figure is zero in the ratio's
    /// denominator (no makespan, no frame in time for the reference, no wait at all).
    pub(super) fn gain(self, base: &Report, report: &Report) -> Option<f64> {
        let (num, den) = match self {
            Self::Throughput => (base.summary.makespan_ns, report.summary.makespan_ns),
            Self::OnTimeFrames => (on_time_frames(report), on_time_frames(base)),
            Self::WakeLatency => (base.wake_latency.mean_ns, report.wake_latency.mean_ns),
        };
        (den > 0).then(|| (num as f64 / den as f64 - 1.0) * 100.0)
    }
}

/// Frames that completed by their deadline, over every frame task of the replay.
pub(super) fn on_time_frames(report: &Report) -> u64 {
    report
        .tasks
        .iter()
        .filter_map(|t| t.frames.as_ref())
        .map(|f| f.frames.saturating_sub(f.missed_deadlines))
        .sum()
}

pub(super) fn gains(
    points: &[Point],
    reports: &[Report],
    compared: Compared,
    figure: GainFigure,
    swept: &[(String, Vec<String>)],
    policies: &[String],
) -> Vec<Option<f64>> {
    let reference = |p: &Point| -> Option<usize> {
        points.iter().position(|q| match compared {
            Compared::None => false,
            Compared::Policy => {
                q.copies == p.copies && q.settings == p.settings && q.policy == policies[0]
            }
            // A row that does not read the compared key has nothing to be compared with.
            Compared::Key(k) => {
                p.settings[k].1.is_some()
                    && q.copies == p.copies
                    && q.policy == p.policy
                    && q.settings.iter().zip(&p.settings).enumerate().all(
                        |(i, ((qk, qv), (_, pv)))| {
                            if i == k {
                                qv.as_ref() == Some(&swept[k].1[0]) && *qk == swept[k].0
                            } else {
                                qv == pv
                            }
                        },
                    )
            }
        })
    };
    points
        .iter()
        .zip(reports)
        .map(|(p, r)| figure.gain(&reports[reference(p)?], r))
        .collect()
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn a_policy_reads_its_own_knobs_and_the_replays() {
        assert!(reads_knob("hybridland", "cluster_balance"));
        assert!(!reads_knob(
            "hybridland:cluster_balance=on",
            "cluster_balance"
        ));
        assert!(!reads_knob("spread", "cluster_balance"));
        assert!(reads_knob("spread", "slice_us"));
        assert!(reads_knob("spread", "smt_slowdown_pct"));
        assert!(reads_knob("kernel-default", "kernel_asym_capacity"));
        assert!(!reads_knob("hybridland", "kernel_asym_capacity"));
        assert!(reads_knob("no-such-policy", "cluster_balance"));
    }
}
