//! A thread's events laid out in time: rt-app's timers as sleeps to their next firing, tracked
//! across phases and loop rounds as rt-app's timer resources are, loops folded into the
//! trace's repetitions, and the moments its `fork` events happen.

use crate::trace::{LoopSpec, MAX_LOOP_TIMES, Phase};
use std::collections::BTreeMap;

/// One modelled event of a phase, in the order written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Event {
    /// Work at reference speed (rt-app's `run`, `runtime`, and `mem`/`iorun`/`memrun` as
    /// work).
    Run(u64),
    /// A sleep of wall time.
    Sleep(u64),
    /// rt-app's `timer`: wait until the timer `name` next fires, `period_ns` after the last
    /// time it did (the thread's start the first time).
    Timer {
        name: String,
        period_ns: u64,
        absolute: bool,
    },
    /// rt-app's `fork`: start a thread of the task `target`.
    Fork(String),
    /// A wake-up sent or waited for (resume/suspend, signal/wait, sem_post/sem_wait).
    Rel(Relation),
}

/// rt-app's wake-ups between threads, by the resource they name; which threads they wake or
/// wait for is settled once every thread is read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Relation {
    /// `resume`: wake the threads suspended under this thread name (a broadcast, lost when
    /// none is).
    Resume(String),
    /// `suspend`: block under the thread's own name until a `resume` of it (current rt-app),
    /// or of the name written, when one is (rt-app before 2025, and workgen's files).
    Suspend(Option<String>),
    /// `signal` (`one`: pthread_cond_signal) / `broad` on a condition (lost when no thread
    /// waits).
    Signal { cond: String, one: bool },
    /// `wait` on a condition.
    Wait(String),
    /// `sem_post`: a wake-up the semaphore remembers.
    SemPost(String),
    /// `sem_wait`.
    SemWait(String),
}

/// The importer's own phase list, which can still say where a fork happens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Step {
    Run(u64),
    Sleep(u64),
    Fork(String),
    Rel(Relation),
    Loop(u64, Vec<Self>),
}

/// Per timer name: reference ns since its last firing (its expected firing time in absolute
/// mode), capped at the longest period: beyond it every timer fires at once either way, so
/// equal states stay equal and a loop's rounds reach a steady layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct TimerState {
    since: BTreeMap<String, u64>,
    cap: u64,
}

impl TimerState {
    /// The state at a thread's start: every timer named in `events` at 0.
    pub(super) fn start<'e>(events: impl Iterator<Item = &'e Event>) -> Self {
        let mut since = BTreeMap::new();
        let mut cap = 0;
        for e in events {
            if let Event::Timer {
                name, period_ns, ..
            } = e
            {
                since.insert(name.clone(), 0);
                cap = cap.max(*period_ns);
            }
        }
        Self { since, cap }
    }

    fn advance(&mut self, ns: u64) {
        for v in self.since.values_mut() {
            *v = v.saturating_add(ns).min(self.cap);
        }
    }
}

/// How many times a body repeats.
#[derive(Copy, Clone, Debug)]
pub(super) enum Times {
    Count(u64),
    /// rt-app's -1: until the run's duration, which is given here.
    Fill(u64),
}

/// Lays out `events` from `state`: a timer becomes the sleep left to its next firing.
pub(super) fn lay_out(events: &[Event], state: &TimerState) -> (Vec<Step>, TimerState) {
    let mut s = state.clone();
    let mut out = Vec::new();
    for e in events {
        match e {
            Event::Run(ns) => {
                s.advance(*ns);
                if *ns > 0 {
                    out.push(Step::Run(*ns));
                }
            }
            Event::Sleep(ns) => {
                s.advance(*ns);
                if *ns > 0 {
                    out.push(Step::Sleep(*ns));
                }
            }
            Event::Timer {
                name,
                period_ns,
                absolute,
            } => {
                let since = s.since.get(name).copied().unwrap_or(0);
                let rest = period_ns.saturating_sub(since);
                if rest > 0 {
                    out.push(Step::Sleep(rest));
                }
                s.advance(rest);
                // On time: it fired now. Late: relative mode starts the next period now,
                // absolute mode keeps the lag and fires the next one sooner.
                let lag = if *absolute {
                    since.saturating_sub(*period_ns)
                } else {
                    0
                };
                s.since.insert(name.clone(), lag);
            }
            Event::Fork(t) => out.push(Step::Fork(t.clone())),
            Event::Rel(r) => out.push(Step::Rel(r.clone())),
        }
    }
    (out, s)
}

/// Rounds laid out one by one before a loop's steady layout is taken for the rest.
const MAX_UNROLLED: usize = 4;

/// `times` rounds of `body` from `state`: the first rounds laid out until the timer state
/// comes back to what it was (from then on every round is the same), the rest one loop.
/// Returns the layout, the state after it, and whether the steady layout was only assumed
/// (the state had not settled after [`MAX_UNROLLED`] rounds).
pub(super) fn repeat<E>(
    times: Times,
    state: &TimerState,
    mut body: impl FnMut(&TimerState) -> Result<(Vec<Step>, TimerState), E>,
) -> Result<(Vec<Step>, TimerState, bool), E> {
    let mut rounds: Vec<Vec<Step>> = Vec::new();
    let mut after: Vec<TimerState> = Vec::new();
    let mut s = state.clone();
    let mut settled = false;
    while rounds.len() < MAX_UNROLLED {
        let (steps, next) = body(&s)?;
        rounds.push(steps);
        let same = next == s;
        s = next;
        after.push(s.clone());
        if same {
            settled = true;
            break;
        }
    }
    let steady = rounds.last().cloned().unwrap_or_default();
    let n = match times {
        Times::Count(n) => n,
        Times::Fill(horizon_ns) => {
            let once = reference_ns(&steady).max(1);
            u64::try_from(u128::from(horizon_ns).div_ceil(once))
                .unwrap_or(u64::MAX)
                .max(1)
        }
    };
    let mut out = Vec::new();
    let unrolled = rounds.len() as u64;
    if n <= unrolled {
        for r in rounds.into_iter().take(n as usize) {
            out.extend(r);
        }
        let end = after.swap_remove(n.max(1) as usize - 1);
        return Ok((out, end, false));
    }
    let first_steady = rounds.iter().position(|r| *r == steady).unwrap_or(0) as u64;
    for r in rounds.iter().take(first_steady as usize) {
        out.extend(r.iter().cloned());
    }
    push_repeated(&mut out, steady, n - first_steady);
    Ok((out, s, !settled))
}

/// Appends `times` rounds of `body`, as one loop or, past the trace's repetition limit, a
/// loop of loops and a remainder (the trace stores the structure, never the rounds).
pub(super) fn push_repeated(out: &mut Vec<Step>, body: Vec<Step>, times: u64) {
    if body.is_empty() || times == 0 {
        return;
    }
    if times == 1 {
        out.extend(body);
        return;
    }
    if times <= MAX_LOOP_TIMES {
        out.push(Step::Loop(times, body));
        return;
    }
    let outer = times / MAX_LOOP_TIMES;
    let rest = times % MAX_LOOP_TIMES;
    let mut inner = Vec::new();
    push_repeated(&mut inner, body.clone(), MAX_LOOP_TIMES);
    push_repeated(out, inner, outer);
    push_repeated(out, body, rest);
}

/// Reference time of a layout: runs at reference speed plus sleeps.
pub(super) fn reference_ns(steps: &[Step]) -> u128 {
    steps
        .iter()
        .map(|s| match s {
            Step::Run(n) | Step::Sleep(n) => u128::from(*n),
            Step::Fork(_) | Step::Rel(_) => 0,
            Step::Loop(t, b) => reference_ns(b).saturating_mul(u128::from(*t)),
        })
        .fold(0, u128::saturating_add)
}

/// The trace's phases for a layout (forks are not phases); `relation` gives the phases a
/// wake-up becomes (none when it wakes or waits for no thread).
pub(super) fn to_phases(
    steps: &[Step],
    relation: &mut dyn FnMut(&Relation) -> Vec<Phase>,
) -> Vec<Phase> {
    let mut out = Vec::new();
    for s in steps {
        match s {
            Step::Run(n) => out.push(Phase::RunNs(*n)),
            Step::Sleep(n) => out.push(Phase::SleepNs(*n)),
            Step::Fork(_) => {}
            Step::Rel(r) => out.extend(relation(r)),
            Step::Loop(t, b) => {
                let body = to_phases(b, relation);
                match (body.len(), *t) {
                    (0, _) => {}
                    (_, 1) => out.extend(body),
                    _ => out.push(Phase::Loop(LoopSpec {
                        times: *t,
                        phases: body,
                    })),
                }
            }
        }
    }
    out
}

/// Every relation of a layout, loops looked into once.
pub(super) fn relations(steps: &[Step]) -> Vec<&Relation> {
    let mut out = Vec::new();
    for s in steps {
        match s {
            Step::Rel(r) => out.push(r),
            Step::Loop(_, b) => out.extend(relations(b)),
            _ => {}
        }
    }
    out
}

fn has_fork(steps: &[Step]) -> bool {
    steps.iter().any(|s| match s {
        Step::Fork(_) => true,
        Step::Loop(_, b) => has_fork(b),
        _ => false,
    })
}

/// The forks of a layout with their reference time from the thread's start, those before
/// `horizon_ns` only and at most `limit` (`Err` with the limit's target when more).
pub(super) fn fork_times(
    steps: &[Step],
    horizon_ns: Option<u64>,
    limit: usize,
) -> Result<Vec<(String, u64)>, String> {
    let mut out = Vec::new();
    let mut now = 0u128;
    walk(steps, &mut now, horizon_ns.map(u128::from), limit, &mut out)?;
    Ok(out)
}

fn walk(
    steps: &[Step],
    now: &mut u128,
    horizon: Option<u128>,
    limit: usize,
    out: &mut Vec<(String, u64)>,
) -> Result<(), String> {
    for s in steps {
        if horizon.is_some_and(|h| *now >= h) {
            return Ok(());
        }
        match s {
            // A loop before it may have saturated the clock (its runs times its count pass
            // u128): a plain sum then panicked in a debug build and wrapped in a release one,
            // placing the forks after it at the thread's start.
            Step::Run(n) | Step::Sleep(n) => *now = now.saturating_add(u128::from(*n)),
            Step::Rel(_) => {}
            Step::Fork(t) => {
                if out.len() >= limit {
                    return Err(t.clone());
                }
                out.push((t.clone(), u64::try_from(*now).unwrap_or(u64::MAX)));
            }
            Step::Loop(times, body) => {
                if has_fork(body) {
                    for _ in 0..*times {
                        walk(body, now, horizon, limit, out)?;
                        if horizon.is_some_and(|h| *now >= h) {
                            return Ok(());
                        }
                    }
                } else {
                    *now =
                        now.saturating_add(reference_ns(body).saturating_mul(u128::from(*times)));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod test {
    use super::*;

    fn timer(name: &str, period_ns: u64) -> Event {
        Event::Timer {
            name: name.into(),
            period_ns,
            absolute: false,
        }
    }

    #[test]
    fn a_timer_keeps_its_clock_across_rounds() {
        // rt-app's dvfs.json shape: timer (1.2 s) then run 0.9 s, ten rounds: the first
        // round sleeps a whole period, the others the period less the run.
        let events = [timer("tick", 1_200), Event::Run(900)];
        let s0 = TimerState::start(events.iter());
        let (steps, _, assumed) =
            repeat::<()>(Times::Count(10), &s0, |s| Ok(lay_out(&events, s))).unwrap();
        assert!(!assumed);
        assert_eq!(
            steps,
            [
                Step::Sleep(1_200),
                Step::Run(900),
                Step::Loop(9, vec![Step::Sleep(300), Step::Run(900)])
            ]
        );
        assert_eq!(reference_ns(&steps), 12_900);
    }

    #[test]
    fn a_late_timer_fires_at_once_and_restarts_in_relative_mode() {
        let events = [Event::Run(1_500), timer("t", 1_000), Event::Run(100)];
        let s0 = TimerState::start(events.iter());
        let (steps, _) = lay_out(&events, &s0);
        assert_eq!(steps, [Step::Run(1_500), Step::Run(100)]);
    }

    #[test]
    fn huge_counts_fold_into_a_loop_of_loops() {
        let mut out = Vec::new();
        push_repeated(&mut out, vec![Step::Run(1)], 2 * MAX_LOOP_TIMES + 3);
        assert_eq!(
            out,
            [
                Step::Loop(2, vec![Step::Loop(MAX_LOOP_TIMES, vec![Step::Run(1)])]),
                Step::Loop(3, vec![Step::Run(1)])
            ]
        );
        assert_eq!(reference_ns(&out), u128::from(2 * MAX_LOOP_TIMES + 3));
    }

    /// Two runs of u64::MAX ns in a loop of u64::MAX rounds pass u128: the clock stays at its
    /// top through the run after it, and the fork there is timed at the latest time there is.
    #[test]
    fn a_fork_after_a_saturated_clock_stays_at_its_end() {
        let steps = vec![
            Step::Loop(u64::MAX, vec![Step::Run(u64::MAX), Step::Sleep(u64::MAX)]),
            Step::Run(1),
            Step::Fork("b".into()),
        ];
        assert_eq!(reference_ns(&steps), u128::MAX);
        assert_eq!(
            fork_times(&steps, None, 10).unwrap(),
            [("b".to_owned(), u64::MAX)]
        );
    }

    #[test]
    fn forks_are_timed_and_bounded() {
        let steps = vec![
            Step::Fork("a".into()),
            Step::Run(10),
            Step::Loop(3, vec![Step::Sleep(5), Step::Fork("b".into())]),
        ];
        assert_eq!(
            fork_times(&steps, None, 10).unwrap(),
            [
                ("a".into(), 0),
                ("b".into(), 15),
                ("b".into(), 20),
                ("b".into(), 25)
            ]
        );
        assert_eq!(fork_times(&steps, Some(20), 10).unwrap().len(), 2);
        assert_eq!(fork_times(&steps, None, 2), Err("b".into()));
    }
}
