//! The replay limits a trace can be seen to exceed before anything runs: the events it needs
//! at the least and the simulated time its slowest task needs at the least. `hybrid-sim
//! validate` applies them as `replay` does, so a trace that would be stopped after minutes of
//! replay is refused at once, naming the task.

use crate::options::SimOptions;
use crate::trace::{Phase, Trace, TraceError};

/// Lower bounds for one copy of a task: events, and simulated ns from its start to its end.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
struct Needs {
    events: u128,
    time_ns: u128,
}

/// Every run of nonzero length ends in at least one event (its completion) and lasts at
/// least its reference time (no CPU is faster than capacity 1024); every nonzero sleep is a
/// wake-up event and lasts its length. Pool chunks may all go to other tasks: they count 0,
/// as do the wake-up relation's phases (a wait may be answered at once by a kept wake-up).
fn phase_needs(phases: &[Phase]) -> Needs {
    let mut n = Needs::default();
    for p in phases {
        let (events, time_ns) = match p {
            Phase::RunNs(0)
            | Phase::SleepNs(0)
            | Phase::Pool(_)
            | Phase::Wake(_)
            | Phase::WakeIfWaiting(_)
            | Phase::WaitFor(_) => (0, 0),
            Phase::RunNs(ns) | Phase::SleepNs(ns) => (1, u128::from(*ns)),
            Phase::Loop(l) => {
                let inner = phase_needs(&l.phases);
                let times = u128::from(l.times);
                (
                    inner.events.saturating_mul(times),
                    inner.time_ns.saturating_mul(times),
                )
            }
        };
        n.events = n.events.saturating_add(events);
        n.time_ns = n.time_ns.saturating_add(time_ns);
    }
    n
}

/// The replay limits as a check on a [`Trace`] (the trace crate knows nothing of the
/// simulator's options).
pub trait ReplayLimits {
    /// Refuses a trace that certainly passes `options`' event limit (with no `duration_ns`
    /// horizon to stop it first) or whose slowest task certainly ends past the simulated-time
    /// limit. Bounds are from below, so an accepted trace may still hit a limit at run time
    /// (a pool, queueing, contention); a refused one would always have.
    fn check_replay_limits(
        &self,
        options: &SimOptions,
        source_name: &str,
    ) -> Result<(), TraceError>;
}

impl ReplayLimits for Trace {
    fn check_replay_limits(
        &self,
        options: &SimOptions,
        source_name: &str,
    ) -> Result<(), TraceError> {
        if self.duration_ns.is_some() {
            return Ok(());
        }
        let mut total_events = 0u128;
        let mut busiest: Option<(usize, u128)> = None;
        for (i, t) in self.tasks.iter().enumerate() {
            let needs = match &t.frames {
                Some(f) => Needs {
                    events: u128::from(f.count),
                    time_ns: u128::from(f.count.saturating_sub(1)) * u128::from(f.period_ns)
                        + u128::from(f.work_ns),
                },
                None => phase_needs(&t.phases),
            };
            // Arrival, then the work; the simulated-time limit counts from time 0.
            let copy_events = needs.events.saturating_add(1);
            let events = copy_events.saturating_mul(u128::from(t.copies));
            total_events = total_events.saturating_add(events);
            if busiest.is_none_or(|(_, e)| events > e) {
                busiest = Some((i, events));
            }
            let end_ns = needs.time_ns.saturating_add(u128::from(t.start_ns));
            if t.copies > 0 && end_ns > u128::from(options.max_time_ns) {
                return Err(TraceError::ExceedsReplayLimit {
                    source_name: source_name.to_owned(),
                    index: i,
                    name: t.name.clone(),
                    needs: format!("{end_ns} ns of simulated time at the least"),
                    limit: format!("{} ns", options.max_time_ns),
                });
            }
        }
        if total_events > u128::from(options.max_events) {
            let (i, events) = busiest.unwrap_or((0, total_events));
            return Err(TraceError::ExceedsReplayLimit {
                source_name: source_name.to_owned(),
                index: i,
                name: self
                    .tasks
                    .get(i)
                    .map_or_else(String::new, |t| t.name.clone()),
                needs: format!("{events} events at the least ({total_events} for the whole trace)"),
                limit: format!("{} events", options.max_events),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn trace(tasks: &str) -> Trace {
        Trace::from_json_str(
            &format!(r#"{{"version": 1, "tasks": [{tasks}]}}"#),
            "t.json",
        )
        .unwrap()
    }

    #[test]
    fn a_trillion_iterations_are_refused_naming_the_task() {
        let t = trace(
            r#"{"name": "ok", "phases": [{"run_ns": 5}]},
               {"name": "spin", "phases": [{"loop": {"times": 1000000, "phases": [{"loop":
                {"times": 1000000, "phases": [{"run_ns": 1}, {"sleep_ns": 1}]}}]}}]}"#,
        );
        let err = t
            .check_replay_limits(&SimOptions::default(), "t.json")
            .unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("t.json: tasks[1] \"spin\": needs 2000000000001 events"),
            "{text}"
        );
        assert!(text.contains("200000000 events"), "{text}");
    }

    #[test]
    fn simulated_time_past_the_limit_is_refused_and_a_horizon_excuses_both() {
        let t = trace(
            r#"{"name": "sleepy", "phases": [{"loop": {"times": 100,
                "phases": [{"sleep_ns": 100000000000000}]}}]}"#,
        );
        let err = t
            .check_replay_limits(&SimOptions::default(), "t.json")
            .unwrap_err();
        assert!(err.to_string().contains("ns of simulated time"), "{err}");
        let mut cut = t.clone();
        cut.duration_ns = Some(1_000_000);
        assert!(
            cut.check_replay_limits(&SimOptions::default(), "t.json")
                .is_ok()
        );
    }

    #[test]
    fn traces_within_the_limits_pass() {
        let t = trace(
            r#"{"name": "a", "copies": 100, "phases": [{"loop": {"times": 1000000,
                "phases": [{"run_ns": 1}, {"sleep_ns": 1}]}}]}"#,
        );
        // 100 x (2 x 10^6 + 1) events: just over the limit; one copy fewer is under it.
        assert!(
            t.check_replay_limits(&SimOptions::default(), "t.json")
                .is_err()
        );
        let mut fewer = t.clone();
        fewer.tasks[0].copies = 99;
        assert!(
            fewer
                .check_replay_limits(&SimOptions::default(), "t.json")
                .is_ok()
        );
    }
}
