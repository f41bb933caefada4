//! The live side of a fidelity comparison: what a live scheduler measured over the window it
//! recorded as a trace (`scx_hybridland --record FILE` writes it as `FILE.live.json`), in the
//! figures a replay's `Report` (`hybridland_sim::Report`) also has, so the two can be set side by side
//! (`hybridland_sim::compare`).
//!
//! The format (version [`LIVE_VERSION`]) is JSON; every object refuses fields it does not
//! know, and an error names the file, the place and the field, as trace errors do.

use crate::StepCount;
use crate::json_error::{self, JsonSyntax};
use hybridland_policy::{CoreKind, CpuSet, Step, Topology, parse_cpu_list};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The live-figures format version this crate reads and writes.
pub const LIVE_VERSION: u32 = 1;
/// Largest live file accepted, checked before reading: a recording's figures take a few
/// kilobytes (one entry per CPU kind, cluster and step).
pub const MAX_LIVE_BYTES: usize = 16 << 20;

/// What the live scheduler measured over its recorded window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LiveStats {
    /// Format version; must be [`LIVE_VERSION`].
    pub version: u32,
    /// The scheduler and its version.
    pub scheduler: String,
    /// The placement policy it ran (`scx_hybridland --policy`), which a comparison replays;
    /// absent from recordings before `--policy` and from tracepoint recordings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    /// The seed of that policy's own draws (`scx_hybridland --seed`), which a comparison gives
    /// the replayed policy so both draw the same numbers; absent from recordings before it and
    /// from tracepoint recordings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_seed: Option<u64>,
    /// Its knobs in force, as `hybrid-sim --set` items (`cluster_balance=auto`, `slice_us=5000`):
    /// a comparison replays with them.
    pub settings: Vec<String>,
    /// Length of the recorded window, ns (the trace's `duration_ns`).
    pub window_ns: u64,
    /// Scheduling events recorded.
    pub events: u64,
    /// Whether recording stopped at the event cap before the scheduler did.
    pub capped: bool,
    /// Tasks in the trace.
    pub tasks: u64,
    /// CPU time of the recorded tasks per core kind present.
    pub kinds: Vec<LiveKind>,
    /// CPU time of the recorded tasks per L2 cluster.
    pub clusters: Vec<LiveCluster>,
    /// The policy's placements of the recorded tasks by step of the idle order (wake-ups and
    /// slice ends that moved the task), in step order.
    pub steps: Vec<StepCount>,
    /// Slice ends where the task kept its CPU (not placements).
    pub kept: u64,
    /// Picks sent to the shared queue because their CPU turned busy before dispatch.
    pub stale: u64,
    /// Tasks made to come back for re-placement.
    pub nudges: u64,
    /// Runs of a task on another CPU than its previous run.
    pub migrations: u64,
}

/// CPU time on one core kind.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LiveKind {
    /// `performance`, `efficiency` or `low-power-efficiency`.
    pub kind: String,
    /// Logical CPUs of the kind.
    pub cpus: usize,
    /// Time those CPUs ran recorded tasks, ns.
    pub busy_ns: u64,
}

/// CPU time in one L2 cluster.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LiveCluster {
    /// Its CPUs as a kernel CPU list: how a replay's cluster is matched to it.
    pub cpus: String,
    /// Kind of its first CPU.
    pub kind: String,
    /// Time its CPUs ran recorded tasks, ns.
    pub busy_ns: u64,
}

/// Busy time per core kind present on `topo` and per L2 cluster, from each CPU's busy time
/// (as a [`Timeline`](crate::builder::Timeline) gives it).
pub fn busy_by_kind_and_cluster(
    topo: &Topology,
    busy_ns: &BTreeMap<u16, u64>,
) -> (Vec<LiveKind>, Vec<LiveCluster>) {
    let busy = |cpus: &CpuSet| -> u64 {
        cpus.iter()
            .map(|c| busy_ns.get(&c.0).copied().unwrap_or(0))
            .sum()
    };
    let kinds = CoreKind::ALL
        .iter()
        .filter(|k| !topo.kind_mask(**k).is_empty())
        .map(|k| LiveKind {
            kind: k.name().to_owned(),
            cpus: topo.kind_mask(*k).count(),
            busy_ns: busy(topo.kind_mask(*k)),
        })
        .collect();
    let clusters = (0..topo.nr_clusters())
        .map(|i| {
            let mask = topo.cluster_mask(i);
            let kind = mask
                .first()
                .and_then(|c| topo.info(c))
                .map_or(CoreKind::Performance, |info| info.kind);
            LiveCluster {
                cpus: mask.to_string(),
                kind: kind.name().to_owned(),
                busy_ns: busy(&mask),
            }
        })
        .collect();
    (kinds, clusters)
}

/// Why a live-figures file cannot be used. Every variant names the file and the field.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LiveError {
    /// Not JSON, truncated, a wrong type, a missing or unknown field.
    #[error(transparent)]
    Syntax(JsonSyntax),
    /// `version` is not one this crate reads.
    #[error(
        "{source_name}: live figures version {version} are not supported (this build reads version {supported})"
    )]
    UnsupportedVersion {
        /// File name.
        source_name: String,
        /// Version given.
        version: u32,
        /// Version supported.
        supported: u32,
    },
    /// A field whose value cannot be right.
    #[error("{source_name}: `{field}` {message}")]
    Invalid {
        /// File name.
        source_name: String,
        /// The field, e.g. `steps[4].step`.
        field: String,
        /// What is wrong.
        message: String,
    },
}

impl LiveStats {
    /// Parses and checks a live-figures file; `source_name` names it in errors.
    pub fn from_json_str(text: &str, source_name: &str) -> Result<Self, LiveError> {
        let live: Self = json_error::from_json_str(text, source_name).map_err(LiveError::Syntax)?;
        live.validate(source_name)?;
        Ok(live)
    }

    /// Pretty JSON, what [`from_json_str`](Self::from_json_str) reads back.
    pub fn to_json_string(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Checks what the types cannot: the version, a window, known kinds and steps, CPU lists,
    /// no busy time beyond what the CPUs had.
    pub fn validate(&self, source_name: &str) -> Result<(), LiveError> {
        let bad = |field: String, message: String| LiveError::Invalid {
            source_name: source_name.to_owned(),
            field,
            message,
        };
        if self.version != LIVE_VERSION {
            return Err(LiveError::UnsupportedVersion {
                source_name: source_name.to_owned(),
                version: self.version,
                supported: LIVE_VERSION,
            });
        }
        if self.window_ns == 0 {
            return Err(bad("window_ns".into(), "must be at least 1".into()));
        }
        let window = u128::from(self.window_ns);
        for (i, k) in self.kinds.iter().enumerate() {
            if k.kind.parse::<CoreKind>().is_err() {
                return Err(bad(
                    format!("kinds[{i}].kind"),
                    format!(
                        "`{}` is not a core kind (performance, efficiency, low-power-efficiency)",
                        k.kind
                    ),
                ));
            }
            if let Some(j) = self.kinds[..i].iter().position(|o| o.kind == k.kind) {
                // Shares are of the kinds' total: a kind counted twice would make them
                // add up to less than 100% (found by the `compare` fuzz target).
                return Err(bad(
                    format!("kinds[{i}].kind"),
                    format!("`{}` is already kinds[{j}]", k.kind),
                ));
            }
            if u128::from(k.busy_ns) > window * k.cpus as u128 {
                return Err(bad(
                    format!("kinds[{i}].busy_ns"),
                    format!(
                        "is {} ns, more than {} CPUs can run in a window of {} ns",
                        k.busy_ns, k.cpus, self.window_ns
                    ),
                ));
            }
        }
        for (i, c) in self.clusters.iter().enumerate() {
            let cpus = match parse_cpu_list(&c.cpus) {
                Ok(set) if !set.is_empty() => set,
                Ok(_) => return Err(bad(format!("clusters[{i}].cpus"), "names no CPU".into())),
                Err(e) => {
                    return Err(bad(
                        format!("clusters[{i}].cpus"),
                        format!("`{}`: {e}", c.cpus),
                    ));
                }
            };
            if c.kind.parse::<CoreKind>().is_err() {
                return Err(bad(
                    format!("clusters[{i}].kind"),
                    format!("`{}` is not a core kind", c.kind),
                ));
            }
            if u128::from(c.busy_ns) > window * cpus.count() as u128 {
                return Err(bad(
                    format!("clusters[{i}].busy_ns"),
                    format!(
                        "is {} ns, more than its {} CPUs can run in a window of {} ns",
                        c.busy_ns,
                        cpus.count(),
                        self.window_ns
                    ),
                ));
            }
        }
        for (i, s) in self.steps.iter().enumerate() {
            if !Step::ALL.iter().any(|step| step.name() == s.step) {
                let names: Vec<&str> = Step::ALL.iter().map(|s| s.name()).collect();
                return Err(bad(
                    format!("steps[{i}].step"),
                    format!("`{}` is not a step ({})", s.step, names.join(", ")),
                ));
            }
            if let Some(j) = self.steps[..i].iter().position(|o| o.step == s.step) {
                return Err(bad(
                    format!("steps[{i}].step"),
                    format!("`{}` is already steps[{j}]", s.step),
                ));
            }
            if s.overflow > s.count {
                return Err(bad(
                    format!("steps[{i}].overflow"),
                    format!(
                        "is {}, more than the step's {} placements",
                        s.overflow, s.count
                    ),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn sample() -> LiveStats {
        LiveStats {
            policy: None,
            policy_seed: None,
            version: LIVE_VERSION,
            scheduler: "scx_hybridland 0.1.0".into(),
            settings: vec!["cluster_balance=auto".into()],
            window_ns: 1_000_000_000,
            events: 10,
            capped: false,
            tasks: 2,
            kinds: vec![LiveKind {
                kind: "performance".into(),
                cpus: 4,
                busy_ns: 900_000_000,
            }],
            clusters: vec![LiveCluster {
                cpus: "0,2".into(),
                kind: "efficiency".into(),
                busy_ns: 5,
            }],
            steps: vec![StepCount {
                step: "idle-p-core".into(),
                count: 3,
                overflow: 0,
            }],
            kept: 0,
            stale: 0,
            nudges: 0,
            migrations: 1,
        }
    }

    #[test]
    fn round_trips() {
        let s = sample();
        assert_eq!(
            LiveStats::from_json_str(&s.to_json_string(), "x").unwrap(),
            s
        );
    }

    #[test]
    fn errors_name_the_field() {
        let text = sample()
            .to_json_string()
            .replace("\"busy_ns\": 5", "\"busy_ns\": -5");
        let e = LiveStats::from_json_str(&text, "l.json").unwrap_err();
        assert!(
            matches!(&e, LiveError::Syntax(JsonSyntax { path, .. }) if path == "clusters[0].busy_ns"),
            "{e:?}"
        );
        let mut s = sample();
        s.steps[0].step = "idle-x".into();
        let e = LiveStats::from_json_str(&s.to_json_string(), "l.json").unwrap_err();
        assert_eq!(
            e.to_string(),
            "l.json: `steps[0].step` `idle-x` is not a step (waker-cpu, idle-p-core, idle-e-core, busy-sibling, no-idle)"
        );
        let mut s = sample();
        s.kinds[0].busy_ns = 4_000_000_001;
        let e = LiveStats::from_json_str(&s.to_json_string(), "l.json").unwrap_err();
        assert!(
            matches!(&e, LiveError::Invalid { field, .. } if field == "kinds[0].busy_ns"),
            "{e:?}"
        );
        let e = LiveStats::from_json_str(
            &sample().to_json_string().replace("\"kept\"", "\"kep\""),
            "l.json",
        )
        .unwrap_err();
        assert!(e.to_string().contains("unknown field `kep`"), "{e}");
        // A kind or step named twice (found by the `compare` fuzz target).
        let mut s = sample();
        s.kinds.push(s.kinds[0].clone());
        let e = LiveStats::from_json_str(&s.to_json_string(), "l.json").unwrap_err();
        assert_eq!(
            e.to_string(),
            "l.json: `kinds[1].kind` `performance` is already kinds[0]"
        );
        let mut s = sample();
        s.steps.push(s.steps[0].clone());
        let e = LiveStats::from_json_str(&s.to_json_string(), "l.json").unwrap_err();
        assert!(
            matches!(&e, LiveError::Invalid { field, .. } if field == "steps[1].step"),
            "{e:?}"
        );
        let mut s = sample();
        s.version = 2;
        assert!(matches!(
            LiveStats::from_json_str(&s.to_json_string(), "l.json").unwrap_err(),
            LiveError::UnsupportedVersion { version: 2, .. }
        ));
    }
}
