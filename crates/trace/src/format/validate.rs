//! The checks of a whole trace: limits, pools, tasks, unique names (without the machine), and
//! allowed CPUs (against it).

use super::phases::PhaseCheck;
use super::{
    MAX_DURATION_NS, MAX_FRAMES, MAX_POOLS, MAX_TASKS, MIN_TRACE_VERSION, TRACE_VERSION, TaskSpec,
    Trace, TraceError,
};
use hybridland_policy::{CpuSet, Topology, parse_cpu_list};
use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

impl Trace {
    /// Checks everything that does not depend on the machine.
    pub fn validate(&self, source_name: &str) -> Result<(), TraceError> {
        let top = |field: &str, message: String| TraceError::Invalid {
            source_name: source_name.to_owned(),
            place: "trace".into(),
            field: field.to_owned(),
            message,
        };
        if !(MIN_TRACE_VERSION..=TRACE_VERSION).contains(&self.version) {
            return Err(TraceError::UnsupportedVersion {
                source_name: source_name.to_owned(),
                version: self.version.to_string(),
                supported: TRACE_VERSION,
            });
        }
        if let Some(d) = self.duration_ns
            && (d == 0 || d > MAX_DURATION_NS)
        {
            return Err(top(
                "duration_ns",
                format!("must be 1..={MAX_DURATION_NS}, got {d}"),
            ));
        }
        if self.tasks.is_empty() {
            return Err(top(
                "tasks",
                "is empty: a trace needs at least one task".into(),
            ));
        }
        if self.pools.len() > MAX_POOLS {
            return Err(top(
                "pools",
                format!("has {} pools, more than {MAX_POOLS}", self.pools.len()),
            ));
        }
        for (i, p) in self.pools.iter().enumerate() {
            let place = format!("pools[{i}] \"{}\"", p.name);
            let bad = |field: &str, message: String| TraceError::Invalid {
                source_name: source_name.to_owned(),
                place: place.clone(),
                field: field.to_owned(),
                message,
            };
            if self.pools[..i].iter().any(|q| q.name == p.name) {
                return Err(bad("name", "is used by an earlier pool".into()));
            }
            if p.chunk_ns == 0 || p.chunk_ns > MAX_DURATION_NS {
                return Err(bad(
                    "chunk_ns",
                    format!("must be 1..={MAX_DURATION_NS}, got {}", p.chunk_ns),
                ));
            }
            if p.chunks > MAX_FRAMES {
                return Err(bad(
                    "chunks",
                    format!("must be at most {MAX_FRAMES}, got {}", p.chunks),
                ));
            }
        }
        let mut total = 0usize;
        for (i, t) in self.tasks.iter().enumerate() {
            total = total.saturating_add(t.copies as usize);
            if total > MAX_TASKS {
                return Err(top(
                    "tasks",
                    format!("expand to more than {MAX_TASKS} tasks (at tasks[{i}])"),
                ));
            }
        }
        let names: BTreeSet<&str> = self.tasks.iter().map(|t| t.name.as_str()).collect();
        for (i, t) in self.tasks.iter().enumerate() {
            self.validate_task(source_name, i, t, &names)?;
        }
        self.check_unique_names(source_name)
    }

    /// Every task of the replay, copies expanded, has a name of its own: per-task results are
    /// looked up by name. Runs after the size limits, so the names it builds are bounded.
    fn check_unique_names(&self, source_name: &str) -> Result<(), TraceError> {
        let mut first: BTreeMap<Cow<'_, str>, usize> = BTreeMap::new();
        for (index, t) in self.tasks.iter().enumerate() {
            for copy in 0..t.copies {
                let name = t.copy_name(copy);
                if let Some(&first_index) = first.get(&name) {
                    return Err(TraceError::DuplicateTaskName {
                        source_name: source_name.to_owned(),
                        index,
                        name: name.into_owned(),
                        first_index,
                    });
                }
                first.insert(name, index);
            }
        }
        Ok(())
    }

    fn validate_task(
        &self,
        source_name: &str,
        i: usize,
        t: &TaskSpec,
        names: &BTreeSet<&str>,
    ) -> Result<(), TraceError> {
        let bad = |field: &str, message: String| TraceError::Invalid {
            source_name: source_name.to_owned(),
            place: format!("tasks[{i}] \"{}\"", t.name),
            field: field.to_owned(),
            message,
        };
        if t.name.is_empty() {
            return Err(bad("name", "is empty".into()));
        }
        if t.copies == 0 {
            return Err(bad("copies", "must be at least 1".into()));
        }
        if t.start_ns > MAX_DURATION_NS {
            return Err(bad(
                "start_ns",
                format!("must be at most {MAX_DURATION_NS}"),
            ));
        }
        if !(1..=10_000).contains(&t.weight) {
            return Err(bad(
                "weight",
                format!("must be 1..=10000, got {}", t.weight),
            ));
        }
        if let Some(u) = t.util
            && u > 1024
        {
            return Err(bad("util", format!("must be 0..=1024, got {u}")));
        }
        if t.cache_sensitivity_pct > 100 {
            return Err(bad(
                "cache_sensitivity_pct",
                format!("must be 0..=100, got {}", t.cache_sensitivity_pct),
            ));
        }
        if let Some(list) = &t.allowed_cpus {
            match parse_cpu_list(list) {
                Ok(set) if set.is_empty() => {
                    return Err(bad("allowed_cpus", "names no CPU".into()));
                }
                Ok(_) => {}
                Err(e) => return Err(bad("allowed_cpus", format!("`{list}`: {e}"))),
            }
        }
        match (&t.frames, t.phases.is_empty()) {
            (Some(_), false) => {
                return Err(bad("frames", "and `phases` are both given; use one".into()));
            }
            (None, true) => {
                return Err(bad("phases", "is empty and there are no `frames`".into()));
            }
            (Some(f), true) => {
                if f.period_ns == 0 || f.period_ns > MAX_DURATION_NS {
                    return Err(bad(
                        "frames.period_ns",
                        format!("must be 1..={MAX_DURATION_NS}, got {}", f.period_ns),
                    ));
                }
                if f.work_ns == 0 || f.work_ns > MAX_DURATION_NS {
                    return Err(bad(
                        "frames.work_ns",
                        format!("must be 1..={MAX_DURATION_NS}, got {}", f.work_ns),
                    ));
                }
                if f.deadline_ns == Some(0) || f.deadline_ns.is_some_and(|d| d > MAX_DURATION_NS) {
                    return Err(bad(
                        "frames.deadline_ns",
                        format!("must be 1..={MAX_DURATION_NS}"),
                    ));
                }
                if f.count == 0 || f.count > MAX_FRAMES {
                    return Err(bad(
                        "frames.count",
                        format!("must be 1..={MAX_FRAMES}, got {}", f.count),
                    ));
                }
            }
            (None, false) => {
                let mut count = 0;
                let cx = PhaseCheck { names, bad: &bad };
                self.validate_phases(&t.phases, "phases", 0, &mut count, &cx)?;
            }
        }
        Ok(())
    }

    /// Checks the trace against a machine: every allowed CPU exists on it.
    pub fn validate_for(&self, topo: &Topology, source_name: &str) -> Result<(), TraceError> {
        for (i, t) in self.tasks.iter().enumerate() {
            let wanted = match &t.allowed_cpus {
                Some(list) => parse_cpu_list(list).unwrap_or(CpuSet::EMPTY),
                None => continue,
            };
            if let Some(cpu) = wanted.and_not(topo.cpus()).first() {
                return Err(TraceError::Invalid {
                    source_name: source_name.to_owned(),
                    place: format!("tasks[{i}] \"{}\"", t.name),
                    field: "allowed_cpus".into(),
                    message: format!(
                        "names cpu {cpu}, which the machine does not have (it has cpus {})",
                        topo.cpus()
                    ),
                });
            }
        }
        Ok(())
    }
}
