//! The checks of a task's phase lists (counts, nesting, pools, wake-up relations) and the
//! run and sleep totals of a phase list.

use super::{
    MAX_DURATION_NS, MAX_LOOP_DEPTH, MAX_LOOP_TIMES, MAX_PHASES, MAX_WAKERS, Phase, Trace,
    TraceError,
};
use std::collections::BTreeSet;

impl Trace {
    pub(super) fn validate_phases(
        &self,
        phases: &[Phase],
        path: &str,
        depth: usize,
        count: &mut usize,
        cx: &PhaseCheck<'_>,
    ) -> Result<(), TraceError> {
        let bad = cx.bad;
        for (j, p) in phases.iter().enumerate() {
            *count += 1;
            if *count > MAX_PHASES {
                return Err(bad(path, format!("has more than {MAX_PHASES} phases")));
            }
            let here = format!("{path}[{j}]");
            if p.is_relation() && self.version < 2 {
                return Err(bad(
                    &here,
                    format!(
                        "is a wake-up relation, which needs trace version 2 (the trace says {})",
                        self.version
                    ),
                ));
            }
            let known = |name: &str, what: &str| {
                if cx.names.contains(name) {
                    Ok(())
                } else {
                    Err(bad(
                        &here,
                        format!("{what} task \"{name}\", which is not a task of the trace"),
                    ))
                }
            };
            match p {
                Phase::Wake(name) | Phase::WakeIfWaiting(name) => known(name, "wakes")?,
                Phase::WaitFor(wakers) => {
                    if wakers.is_empty() {
                        return Err(bad(&here, "`wait_for` names no task".into()));
                    }
                    if wakers.len() > MAX_WAKERS {
                        return Err(bad(
                            &here,
                            format!("`wait_for` names more than {MAX_WAKERS} tasks"),
                        ));
                    }
                    for w in wakers {
                        known(w, "waits for")?;
                    }
                }
                Phase::RunNs(ns) | Phase::SleepNs(ns) => {
                    if *ns > MAX_DURATION_NS {
                        return Err(bad(&here, format!("must be at most {MAX_DURATION_NS} ns")));
                    }
                }
                Phase::Pool(name) => {
                    if !self.pools.iter().any(|q| &q.name == name) {
                        return Err(bad(
                            &here,
                            format!("names pool `{name}`, which is not in `pools`"),
                        ));
                    }
                }
                Phase::Loop(l) => {
                    if depth + 1 > MAX_LOOP_DEPTH {
                        return Err(bad(
                            &here,
                            format!("nests loops deeper than {MAX_LOOP_DEPTH}"),
                        ));
                    }
                    if l.times == 0 || l.times > MAX_LOOP_TIMES {
                        return Err(bad(
                            &format!("{here}.loop.times"),
                            format!("must be 1..={MAX_LOOP_TIMES}, got {}", l.times),
                        ));
                    }
                    if l.phases.is_empty() {
                        return Err(bad(&format!("{here}.loop.phases"), "is empty".into()));
                    }
                    // A body that neither runs, sleeps nor waits would spin without an event.
                    let (run, sleep) = phase_totals(&l.phases);
                    let pools = count_pools(&l.phases);
                    let waits = l.phases.iter().any(|p| matches!(p, Phase::WaitFor(_)));
                    if run.saturating_sub(pools) == 0 && sleep == 0 && !waits {
                        return Err(bad(
                            &format!("{here}.loop.phases"),
                            "has no run_ns or sleep_ns above 0 and no wait_for".into(),
                        ));
                    }
                    self.validate_phases(
                        &l.phases,
                        &format!("{here}.loop.phases"),
                        depth + 1,
                        count,
                        cx,
                    )?;
                }
            }
        }
        Ok(())
    }
}

/// What a phase list is checked against: the trace's task names and how to word an error.
pub(super) struct PhaseCheck<'a> {
    pub(super) names: &'a BTreeSet<&'a str>,
    pub(super) bad: &'a dyn Fn(&str, String) -> TraceError,
}

/// Reference run time and sleep time of a phase list, loops multiplied out; a pool counts as
/// pure running, a wait (of unknown length) and a wake-up as nothing.
pub(crate) fn phase_totals(phases: &[Phase]) -> (u128, u128) {
    let mut run = 0u128;
    let mut sleep = 0u128;
    for p in phases {
        match p {
            Phase::RunNs(ns) => run = run.saturating_add(u128::from(*ns)),
            Phase::SleepNs(ns) => sleep = sleep.saturating_add(u128::from(*ns)),
            Phase::Pool(_) => run = run.saturating_add(1),
            Phase::Loop(l) => {
                let (r, s) = phase_totals(&l.phases);
                run = run.saturating_add(r.saturating_mul(u128::from(l.times)));
                sleep = sleep.saturating_add(s.saturating_mul(u128::from(l.times)));
            }
            Phase::Wake(_) | Phase::WakeIfWaiting(_) | Phase::WaitFor(_) => {}
        }
    }
    (run, sleep)
}

fn count_pools(phases: &[Phase]) -> u128 {
    phases
        .iter()
        .map(|p| match p {
            Phase::Pool(_) => 1,
            Phase::Loop(l) => count_pools(&l.phases).saturating_mul(u128::from(l.times)),
            _ => 0,
        })
        .fold(0u128, u128::saturating_add)
}
