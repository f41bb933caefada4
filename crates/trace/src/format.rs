//! Workload traces: the JSON format, its limits, and validation with errors that name the
//! place. The format is described for people in `docs/trace-format.md` and for programs in
//! `docs/trace.schema.json`.
//!
//! A trace is checked whole before anything runs: [`Trace::from_json_str`] rejects bad syntax,
//! wrong types (an array where an object belongs too: see `objects.rs`), unknown fields,
//! negative numbers, an unsupported `version`, sizes beyond the limits below and task names
//! that repeat; [`Trace::validate_for`] then checks it against the machine (CPU ids).
//!
//! This module holds the limits and the types, and reads a trace; [`TraceError`] is in
//! `error.rs`, the checks in `validate.rs` and (for phase lists) `phases.rs`.

use crate::json_error;
/// The syntax error a trace shares with the live figures ([`TraceError::Syntax`]).
pub use crate::json_error::JsonSyntax;
use hybridland_policy::{CpuSet, Topology, parse_cpu_list};
pub(crate) use phases::phase_totals;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

mod big_integer;
mod error;
mod objects;
mod phases;
mod validate;

pub use error::TraceError;

/// The trace format version this crate writes, and the newest it reads. Version 2 added the
/// wake-up relation (`wake`, `wake_if_waiting` and `wait_for` phases).
pub const TRACE_VERSION: u32 = 2;
/// The oldest version this crate reads: a version-1 trace is a version-2 trace without
/// wake-up relations.
pub const MIN_TRACE_VERSION: u32 = 1;
/// Most tasks one `wait_for` phase names.
pub const MAX_WAKERS: usize = 256;
/// Largest trace text accepted, checked before parsing.
pub const MAX_TRACE_BYTES: usize = 64 << 20;
/// Most tasks after expanding `copies`.
pub const MAX_TASKS: usize = 200_000;
/// Most phases in one task, counting those inside loops once each.
pub const MAX_PHASES: usize = 1_024;
/// Deepest nesting of loops.
pub const MAX_LOOP_DEPTH: usize = 4;
/// Most repetitions of one loop.
pub const MAX_LOOP_TIMES: u64 = 1_000_000;
/// Most frames of one frame task.
pub const MAX_FRAMES: u64 = 10_000_000;
/// Most work pools.
pub const MAX_POOLS: usize = 256;
/// Longest single duration (run, sleep, period, start, horizon): about 28 hours, so sums and
/// fixed-point work never overflow.
pub const MAX_DURATION_NS: u64 = 100_000_000_000_000;

/// One step of a task's behaviour.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Phase {
    /// Compute for this many reference nanoseconds (time alone on a capacity-1024 CPU).
    RunNs(u64),
    /// Sleep for this many nanoseconds of wall time.
    SleepNs(u64),
    /// Take chunks from the named work pool until it is empty (an OpenMP `dynamic` loop or a
    /// work queue shared by several threads).
    Pool(String),
    /// Repeat the inner phases.
    Loop(LoopSpec),
    /// Wake every copy of the named task (its `name`, before copies are expanded). A copy not
    /// waiting for this task keeps the wake-up for its next wait on it, counted: the k-th
    /// wake-up meets the k-th wait, as a recording's do. Takes no time. Version 2.
    Wake(String),
    /// As [`Wake`](Self::Wake), but lost when the copy is not already waiting for this task:
    /// a condition variable's signal (rt-app's `resume`, `signal`, `broad`). Version 2.
    WakeIfWaiting(String),
    /// Block until one of the named tasks wakes this one (a chain: the sleep lasts until the
    /// waker's own program gets there). Version 2.
    WaitFor(Vec<String>),
}

impl Phase {
    /// Whether the phase is one of the wake-up relation's (version 2).
    pub const fn is_relation(&self) -> bool {
        matches!(
            self,
            Self::Wake(_) | Self::WakeIfWaiting(_) | Self::WaitFor(_)
        )
    }
}

/// A repeated run of phases.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LoopSpec {
    /// Number of repetitions, 1..=[`MAX_LOOP_TIMES`].
    pub times: u64,
    /// The body.
    pub phases: Vec<Phase>,
}

/// A periodic frame loop (a render thread): frame `k+1` is released one period after frame `k`
/// was, or when frame `k` completes if that is later; each frame needs `work_ns` of reference
/// work and is missed when it completes more than `deadline_ns` after its release.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FrameSpec {
    /// Frame period, ns.
    pub period_ns: u64,
    /// Reference work per frame, ns.
    pub work_ns: u64,
    /// Deadline after release, ns. Default: the period.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadline_ns: Option<u64>,
    /// Number of frames.
    pub count: u64,
}

/// A pool of equal work chunks shared by the tasks that name it in a `pool` phase.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PoolSpec {
    /// The name phases refer to.
    pub name: String,
    /// Number of chunks.
    pub chunks: u64,
    /// Reference work per chunk, ns.
    pub chunk_ns: u64,
}

/// One task (or `copies` identical tasks) of the workload.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TaskSpec {
    /// Name in reports; copies get `.0`, `.1`... appended.
    pub name: String,
    /// Identical tasks to create. Default 1.
    pub copies: u32,
    /// First wake-up, ns from the start.
    pub start_ns: u64,
    /// Share weight in the queue, 1..=10000 (the cgroup `cpu.weight` scale). Default 100.
    pub weight: u32,
    /// CPUs the task may run on, as a kernel CPU list (`0-3,8`). Default: all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed_cpus: Option<String>,
    /// Utilisation hint 0..=1024 for capacity-aware placement. Default: estimated from the
    /// phases (run share) or frames (work / period).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub util: Option<u16>,
    /// How much the task suffers from sharing an L2, 0..=100. Default 0.
    pub cache_sensitivity_pct: u8,
    /// Behaviour as phases; exactly one of `phases` and `frames`. Written only when there
    /// are some: a frame task has none, and the schema takes one of the two, not both.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<Phase>,
    /// Behaviour as a frame loop; exactly one of `phases` and `frames`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frames: Option<FrameSpec>,
}

/// A workload: the whole trace file. What is not set is left out when written, never written
/// as `null`, which docs/trace.schema.json (and the reader) do not take for "not set".
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Trace {
    /// Format version; must be [`TRACE_VERSION`].
    pub version: u32,
    /// Short name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What the workload stands for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The machine (preset name or topology file) the trace was made for; a front end's
    /// default when none is given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
    /// Seed for every random choice of a replay (policies that draw, e.g. `spread`).
    pub seed: u64,
    /// Stop the replay at this time even if tasks remain. Default: when every task is done.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ns: Option<u64>,
    /// Shared work pools.
    pub pools: Vec<PoolSpec>,
    /// The tasks.
    pub tasks: Vec<TaskSpec>,
}

impl Trace {
    /// Parses and validates a trace. `source_name` (usually the file name) goes into errors.
    pub fn from_json_str(text: &str, source_name: &str) -> Result<Self, TraceError> {
        if text.len() > MAX_TRACE_BYTES {
            return Err(TraceError::TooLarge {
                source_name: source_name.to_owned(),
                bytes: text.len(),
                max: MAX_TRACE_BYTES,
            });
        }
        // The version decides how to read the rest, so check it before the full schema; a
        // document that is not even JSON falls through to the full parse's error.
        if let Ok(probe) = serde_json::from_str::<objects::VersionProbe>(text) {
            match probe.version {
                Some(serde_json::Value::Number(n))
                    if n.as_u64().is_some_and(|v| {
                        (u64::from(MIN_TRACE_VERSION)..=u64::from(TRACE_VERSION)).contains(&v)
                    }) => {}
                Some(v) => {
                    return Err(TraceError::UnsupportedVersion {
                        source_name: source_name.to_owned(),
                        version: v.to_string(),
                        supported: TRACE_VERSION,
                    });
                }
                None => {
                    return Err(TraceError::Invalid {
                        source_name: source_name.to_owned(),
                        place: "trace".into(),
                        field: "version".into(),
                        message: format!(
                            "is missing (this build reads versions {MIN_TRACE_VERSION} to {TRACE_VERSION})"
                        ),
                    });
                }
            }
        }
        let trace: Self = json_error::from_json_str(text, source_name).map_err(|mut e| {
            e.message = big_integer::reword(&e.message, text, e.line, e.column);
            // serde_json says column 0 for a value refused before its first character is
            // read (an array where an object belongs); editors count from 1.
            e.column = e.column.max(1);
            TraceError::Syntax(e)
        })?;
        trace.validate(source_name)?;
        Ok(trace)
    }

    /// The trace as pretty JSON (what [`from_json_str`](Self::from_json_str) reads back).
    pub fn to_json_string(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// The task entry named `name` (as written, before `copies` appends `.N`), if any.
    pub fn task_named(&self, name: &str) -> Option<&TaskSpec> {
        self.tasks.iter().find(|t| t.name == name)
    }

    /// Number of tasks after expanding `copies`.
    pub fn nr_tasks(&self) -> usize {
        self.tasks.iter().map(|t| t.copies as usize).sum()
    }
}

impl TaskSpec {
    /// The name copy `copy` (0-based) has in reports: the name itself for a single task,
    /// `NAME.N` for copies.
    pub fn copy_name(&self, copy: u32) -> Cow<'_, str> {
        if self.copies == 1 {
            Cow::Borrowed(&self.name)
        } else {
            Cow::Owned(format!("{}.{copy}", self.name))
        }
    }

    /// The CPUs the task may use on `topo` (all when unrestricted).
    pub fn allowed_set(&self, topo: &Topology) -> CpuSet {
        match &self.allowed_cpus {
            Some(list) => parse_cpu_list(list)
                .map(|s| s.and(topo.cpus()))
                .unwrap_or(CpuSet::EMPTY),
            None => *topo.cpus(),
        }
    }

    /// The utilisation hint: the given one, or the share of time the phases compute (a frame
    /// loop's work over its period), on the 0..=1024 scale.
    pub fn util_hint(&self) -> u16 {
        if let Some(u) = self.util {
            return u;
        }
        if let Some(f) = &self.frames {
            return (u128::from(f.work_ns) * 1024 / u128::from(f.period_ns.max(1))).min(1024)
                as u16;
        }
        let (run, sleep) = phase_totals(&self.phases);
        let total = run.saturating_add(sleep);
        if total == 0 {
            return 0;
        }
        // Nested loops can multiply a run past u128 (the totals saturate): then the share is
        // taken at a coarser scale, never by a product that wraps.
        let share = match run.checked_mul(1024) {
            Some(scaled) => scaled / total,
            None => run / (total / 1024).max(1),
        };
        share.min(1024) as u16
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn minimal_trace_parses_with_defaults() {
        let t = Trace::from_json_str(
            r#"{"version": 1, "tasks": [{"name": "a", "phases": [{"run_ns": 1000}, {"sleep_ns": 3000}]}]}"#,
            "t.json",
        )
        .unwrap();
        assert_eq!(t.tasks[0].weight, 100);
        assert_eq!(t.tasks[0].copies, 1);
        assert_eq!(t.tasks[0].util_hint(), 256);
        let back = Trace::from_json_str(&t.to_json_string(), "again").unwrap();
        assert_eq!(back, t);
    }

    /// Four nested loops of a million around runs of the longest duration make more reference
    /// work than u128 holds: the hint is still the run share (all of it), not a wrapped product.
    #[test]
    fn util_hint_of_the_deepest_loops_does_not_wrap() {
        let mut body = vec![Phase::RunNs(MAX_DURATION_NS); 8];
        body.push(Phase::SleepNs(1));
        for _ in 0..MAX_LOOP_DEPTH {
            body = vec![Phase::Loop(LoopSpec {
                times: MAX_LOOP_TIMES,
                phases: body,
            })];
        }
        let mut phases = body;
        phases.push(Phase::SleepNs(MAX_DURATION_NS));
        let text = serde_json::json!({"version": 1, "tasks": [{"name": "deep", "phases": phases}]});
        let trace = Trace::from_json_str(&text.to_string(), "deep.json").unwrap();
        let (run, _) = phase_totals(&trace.tasks[0].phases);
        assert_eq!(run, u128::MAX, "the run total saturates");
        assert_eq!(trace.tasks[0].util_hint(), 1024);
        // Half running, half sleeping at the same depth: half the scale.
        let mut half = vec![Phase::RunNs(MAX_DURATION_NS); 8];
        half.extend(vec![Phase::SleepNs(MAX_DURATION_NS); 8]);
        let spec = TaskSpec {
            phases: vec![Phase::Loop(LoopSpec {
                times: MAX_LOOP_TIMES,
                phases: half,
            })],
            ..trace.tasks[0].clone()
        };
        assert_eq!(spec.util_hint(), 512);
    }

    /// Version 2's relations read back as written; version 1 still reads, without them.
    #[test]
    fn relations_need_version_2_and_known_tasks() {
        let v2 = r#"{"version": 2, "tasks": [
            {"name": "a", "phases": [{"run_ns": 10}, {"wake": "b"}, {"wake_if_waiting": "b"}]},
            {"name": "b", "copies": 2, "phases": [{"wait_for": ["a"]}, {"run_ns": 5}]}]}"#;
        let t = Trace::from_json_str(v2, "v2.json").unwrap();
        assert_eq!(t.version, 2);
        assert_eq!(t.tasks[1].phases[0], Phase::WaitFor(vec!["a".into()]));
        assert_eq!(
            Trace::from_json_str(&t.to_json_string(), "again").unwrap(),
            t
        );
        let v1 = v2.replace("\"version\": 2", "\"version\": 1");
        let e = Trace::from_json_str(&v1, "v1.json").unwrap_err();
        assert!(
            e.to_string()
                .contains("phases[1]` is a wake-up relation, which needs trace version 2"),
            "{e}"
        );
        let e = Trace::from_json_str(&v2.replace("[\"a\"]", "[\"c\"]"), "c.json").unwrap_err();
        assert!(
            e.to_string()
                .contains("waits for task \"c\", which is not a task of the trace"),
            "{e}"
        );
        let e = Trace::from_json_str(&v2.replace("[\"a\"]", "[]"), "e.json").unwrap_err();
        assert!(e.to_string().contains("names no task"), "{e}");
        let e =
            Trace::from_json_str(&v2.replace("\"version\": 2", "\"version\": 3"), "3").unwrap_err();
        assert!(matches!(e, TraceError::UnsupportedVersion { .. }), "{e}");
        // A loop whose body only waits blocks, so it is a body; one that only wakes is not.
        let waits = r#"{"version": 2, "tasks": [
            {"name": "a", "phases": [{"loop": {"times": 3, "phases": [{"wake": "b"}, {"run_ns": 1}]}}]},
            {"name": "b", "phases": [{"loop": {"times": 3, "phases": [{"wait_for": ["a"]}]}}]}]}"#;
        Trace::from_json_str(waits, "w.json").unwrap();
        let spins = waits.replace("{\"wake\": \"b\"}, {\"run_ns\": 1}", "{\"wake\": \"b\"}");
        assert!(Trace::from_json_str(&spins, "s.json").is_err());
    }

    #[test]
    fn errors_name_the_place() {
        let e = Trace::from_json_str(
            "{\"version\": 1,\n \"tasks\": [{\"name\": \"a\", \"phases\": [{\"run_ns\": -5}]}]}",
            "neg.json",
        )
        .unwrap_err();
        match &e {
            TraceError::Syntax(JsonSyntax { line, path, .. }) => {
                assert_eq!(*line, 2);
                assert_eq!(path, "tasks[0].phases[0].run_ns");
            }
            other => panic!("{other:?}"),
        }
        assert!(e.to_string().starts_with("neg.json:2:"), "{e}");
    }
}
