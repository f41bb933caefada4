//! The timeline turned into a trace: trailing sleeps dropped, relations kept only between
//! tasks kept unfolded, recorded phases settled into trace phases, and a task with more phases
//! than a trace task holds folded into a loop.

use super::{Built, Timeline, TimelineBuilder, TimelineError, close_run};
use crate::format::{LoopSpec, MAX_LOOP_TIMES, MAX_PHASES, Phase, TRACE_VERSION, TaskSpec, Trace};
use std::collections::BTreeMap;

impl TimelineBuilder<'_> {
    /// The trace: one task per pid that ran, named `COMM-PID`, starting at its first event
    /// counted from the start of the span ([`mark`](Self::mark)); tasks still running are
    /// closed at its end, which is also the trace's `duration_ns`. `pin_observed` makes the
    /// CPUs a task ran on its `allowed_cpus` where [`restrict`](Self::restrict) gave none.
    /// `source_name` names the recording in the description and in errors.
    pub fn finish(
        mut self,
        source_name: &str,
        trace_name: &str,
        pin_observed: bool,
    ) -> Result<Timeline, TimelineError> {
        let start = self.first_ns.unwrap_or(0);
        let end = self.last_ns;
        let mut tracks = core::mem::take(&mut self.tasks);
        // What each task keeps: trailing sleeps go (the recording ended, not the task), a
        // task that never ran is left out, one with more phases than a trace task holds is
        // folded. A relation stays only between two tasks kept unfolded.
        let mut names: BTreeMap<u32, String> = BTreeMap::new();
        let mut unfolded: BTreeMap<u32, bool> = BTreeMap::new();
        for (pid, t) in &mut tracks {
            close_run(self.topo, &mut self.busy_ns, t, end);
            t.flush_run();
            while matches!(t.phases.last(), Some(Built::Sleep(_) | Built::Wait { .. })) {
                t.phases.pop();
            }
            if !t.phases.iter().any(|p| matches!(p, Built::Run(_))) {
                continue;
            }
            names.insert(
                *pid,
                format!("{}-{pid}", t.comm.replace(char::is_whitespace, "_")),
            );
            unfolded.insert(*pid, t.phases.len() <= MAX_PHASES);
        }
        let mut kept = std::collections::BTreeSet::new();
        for (pid, t) in &tracks {
            if unfolded.get(pid) != Some(&true) {
                continue;
            }
            for p in &t.phases {
                if let Built::Wait { waker, seq, .. } = p
                    && unfolded.get(waker) == Some(&true)
                {
                    kept.insert(*seq);
                }
            }
        }
        let mut specs = Vec::new();
        let mut observed = BTreeMap::new();
        let mut folded = Vec::new();
        for (pid, t) in tracks {
            let Some(name) = names.get(&pid).cloned() else {
                continue;
            };
            let mut cpus = t.cpus.clone();
            cpus.sort_unstable();
            let list = cpus
                .iter()
                .map(u16::to_string)
                .collect::<Vec<_>>()
                .join(",");
            let mut phases = settle(&t.phases, &kept, &names);
            if phases.len() > MAX_PHASES {
                phases = fold(&phases);
                folded.push(name.clone());
            }
            observed.insert(name.clone(), list.clone());
            let allowed = t.allowed.or_else(|| pin_observed.then_some(list));
            specs.push(TaskSpec {
                name,
                copies: 1,
                start_ns: t.first_ns.saturating_sub(start),
                weight: 100,
                allowed_cpus: allowed,
                util: None,
                cache_sensitivity_pct: 0,
                phases,
                frames: None,
            });
        }
        if specs.is_empty() {
            return Err(TimelineError::Empty);
        }
        let trace = Trace {
            version: TRACE_VERSION,
            name: Some(trace_name.to_owned()),
            description: Some(format!("recorded: {source_name}")),
            machine: None,
            seed: 0,
            duration_ns: Some(end.saturating_sub(start).max(1)),
            pools: Vec::new(),
            tasks: specs,
        };
        trace.validate(source_name)?;
        trace.validate_for(self.topo, source_name)?;
        Ok(Timeline {
            trace,
            observed_cpus: observed,
            folded,
            busy_ns: self.busy_ns,
            migrations: self.migrations,
            relations: kept.len() as u64,
        })
    }
}

/// A task's recorded phases as trace phases: a wait whose relation is `kept` names its waker,
/// any other is a sleep of its recorded length; a wake whose relation is kept names its target,
/// any other goes (the runs around it join again).
fn settle(
    built: &[Built],
    kept: &std::collections::BTreeSet<u64>,
    names: &BTreeMap<u32, String>,
) -> Vec<Phase> {
    let mut out: Vec<Phase> = Vec::with_capacity(built.len());
    for b in built {
        match *b {
            Built::Run(ns) => match out.last_mut() {
                Some(Phase::RunNs(prev)) => *prev = prev.saturating_add(ns),
                _ => out.push(Phase::RunNs(ns)),
            },
            Built::Wait { waker, seq, .. } if kept.contains(&seq) => {
                if let Some(w) = names.get(&waker) {
                    out.push(Phase::WaitFor(vec![w.clone()]));
                }
            }
            Built::Sleep(ns) | Built::Wait { ns, .. } => {
                if ns > 0 {
                    match out.last_mut() {
                        Some(Phase::SleepNs(prev)) => *prev = prev.saturating_add(ns),
                        _ => out.push(Phase::SleepNs(ns)),
                    }
                }
            }
            Built::Wake { target, seq } => {
                if kept.contains(&seq)
                    && let Some(n) = names.get(&target)
                {
                    out.push(Phase::Wake(n.clone()));
                }
            }
        }
    }
    out
}

/// More phases than a task holds: a loop of the average run and sleep, then what the
/// averages' rounding left, so the run and sleep totals are the recording's to the nanosecond.
/// More runs than a loop repeats ([`MAX_LOOP_TIMES`]) are taken several to an iteration.
fn fold(phases: &[Phase]) -> Vec<Phase> {
    let (mut run, mut sleep, mut runs) = (0u128, 0u128, 0u64);
    for p in phases {
        match p {
            Phase::RunNs(n) => {
                run = run.saturating_add(u128::from(*n));
                runs += 1;
            }
            Phase::SleepNs(n) => sleep = sleep.saturating_add(u128::from(*n)),
            _ => {}
        }
    }
    let times = runs.clamp(1, MAX_LOOP_TIMES);
    let split = |total: u128| {
        let each = total / u128::from(times);
        let rest = total - each * u128::from(times);
        (
            u64::try_from(each).unwrap_or(u64::MAX),
            u64::try_from(rest).unwrap_or(u64::MAX),
        )
    };
    let ((run_each, run_rest), (sleep_each, sleep_rest)) = (split(run), split(sleep));
    let mut body = Vec::new();
    if run_each > 0 {
        body.push(Phase::RunNs(run_each));
    }
    if sleep_each > 0 {
        body.push(Phase::SleepNs(sleep_each));
    }
    let mut out = Vec::new();
    if body.is_empty() {
        // Less than a nanosecond per iteration: the totals as one run and one sleep.
        return [Phase::RunNs(run_rest), Phase::SleepNs(sleep_rest)]
            .into_iter()
            .filter(|p| !matches!(p, Phase::RunNs(0) | Phase::SleepNs(0)))
            .collect();
    }
    out.push(Phase::Loop(LoopSpec {
        times,
        phases: body,
    }));
    if sleep_rest > 0 {
        out.push(Phase::SleepNs(sleep_rest));
    }
    if run_rest > 0 {
        out.push(Phase::RunNs(run_rest));
    }
    out
}

#[cfg(test)]
mod test {
    use super::*;
    // Run and sleep totals of phases, loops multiplied out, as the format counts them.
    use crate::format::phase_totals as totals;

    /// Folding keeps the recording's totals exactly, for uneven runs that do not divide, and
    /// for more runs than a loop may repeat.
    #[test]
    fn folding_keeps_the_run_and_sleep_totals() {
        for runs in [MAX_PHASES as u64 + 7, 2 * MAX_LOOP_TIMES + 3] {
            let mut phases = Vec::new();
            for k in 0..runs {
                phases.push(Phase::RunNs(1_000 + k % 7));
                phases.push(Phase::SleepNs(k % 3));
            }
            let folded = fold(&phases);
            assert!(folded.len() <= 3, "{folded:?}");
            assert_eq!(totals(&folded), totals(&phases), "{runs} runs");
        }
        let tiny = [Phase::RunNs(0), Phase::SleepNs(1), Phase::RunNs(0)];
        assert_eq!(totals(&fold(&tiny)), (0, 1));
    }
}
