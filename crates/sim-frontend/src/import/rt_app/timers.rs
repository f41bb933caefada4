//! rt-app's timers: a `timer` event read, a task paced by one timer taken as a frame loop,
//! any other task's phases laid out in time with its timers' clocks, and a timer several
//! threads share, noted.

use super::super::json_tree::Node;
use super::importer::{Importer, show};
use super::steps::{self, Event, Step, TimerState, Times};
use super::tasks::{PhaseIn, TaskModel};
use super::{RtAppError, Treatment, Unmodelled};
use crate::trace::{FrameSpec, MAX_FRAMES};

impl Importer {
    pub(super) fn timer(
        &mut self,
        task: &str,
        phase: Option<&str>,
        value: &Node,
        at: &str,
        key: &str,
    ) -> Result<Event, RtAppError> {
        let Node::Obj(_) = value else {
            return Err(self.invalid(
                at,
                format!(
                    "must be an object {{\"ref\": NAME, \"period\": USEC}}, got {}",
                    value.kind()
                ),
            ));
        };
        let period = value
            .get("period")
            .ok_or_else(|| self.invalid(at, "has no `period`".into()))?;
        let period_ns = self.micros(period, &format!("{at}.period"))?;
        if period_ns == 0 {
            return Err(self.invalid(&format!("{at}.period"), "must be at least 1 us".into()));
        }
        let absolute = match value.get("mode") {
            None => false,
            Some(Node::Str(m)) if m == "relative" => false,
            Some(Node::Str(m)) if m == "absolute" => true,
            Some(other) => {
                return Err(self.invalid(
                    &format!("{at}.mode"),
                    format!("must be \"relative\" or \"absolute\", got {}", show(other)),
                ));
            }
        };
        let name = match value.get("ref") {
            Some(Node::Str(r)) => r.clone(),
            _ => "unknown".to_owned(),
        };
        if !name.starts_with("unique") {
            self.shared_timers.push(Unmodelled {
                source: self.source.clone(),
                task: task.to_owned(),
                phase: phase.map(str::to_owned),
                key: key.to_owned(),
                feature: name.clone(),
                treatment: Treatment::Approximated(String::new()),
            });
        }
        Ok(Event::Timer {
            name,
            period_ns,
            absolute,
        })
    }

    /// A task whose every round is runs and one timer, the timer last or first, is a frame
    /// loop: the timer paces it and a late frame starts the next at once, which is what
    /// relative mode does. Returns the frames and the start offset (a period when the timer
    /// comes first: the first frame starts when it fires).
    pub(super) fn frames(
        &mut self,
        task: &str,
        phases: &[PhaseIn<'_>],
        task_loop: Option<u64>,
        base: &str,
    ) -> Result<Option<(FrameSpec, u64)>, RtAppError> {
        // A zero-length sleep takes no time (rt-app's template.json has one beside its timer).
        let takes_time = |e: &&Event| !matches!(e, Event::Sleep(0));
        let (cycle, phase_times): (Vec<&Event>, Option<u64>) = match phases {
            [one] => (one.events.iter().filter(takes_time).collect(), one.times),
            many if many.iter().all(|p| p.times == Some(1)) => (
                many.iter()
                    .flat_map(|p| p.events.iter())
                    .filter(takes_time)
                    .collect(),
                Some(1),
            ),
            _ => return Ok(None),
        };
        let timers: Vec<usize> = (0..cycle.len())
            .filter(|&i| matches!(cycle[i], Event::Timer { .. }))
            .collect();
        let [at] = timers[..] else {
            return Ok(None);
        };
        if at != 0 && at != cycle.len() - 1 {
            return Ok(None);
        }
        let Event::Timer {
            period_ns,
            absolute,
            ..
        } = cycle[at]
        else {
            return Ok(None);
        };
        let mut work_ns = 0u64;
        for (i, e) in cycle.iter().enumerate() {
            match e {
                Event::Run(ns) => work_ns = work_ns.saturating_add(*ns),
                _ if i == at => {}
                _ => return Ok(None),
            }
        }
        if work_ns == 0 {
            return Ok(None);
        }
        let count = match (task_loop, phase_times) {
            (Some(a), Some(b)) => a.saturating_mul(b),
            _ => {
                let Some(d) = self.duration_ns else {
                    return Err(self.forever(base));
                };
                d.div_ceil(*period_ns)
            }
        };
        if count > MAX_FRAMES {
            return Err(self.invalid(
                base,
                format!(
                    "runs {count} frames, more than the trace's {MAX_FRAMES}: give a smaller \
                     loop or duration"
                ),
            ));
        }
        if *absolute {
            self.note(
                task,
                phases[0].name.as_deref().filter(|_| phases.len() == 1),
                "timer",
                Treatment::Approximated(
                    "absolute mode as relative: a late frame moves the later releases".into(),
                ),
            );
        }
        let offset = if at == 0 { *period_ns } else { 0 };
        Ok(Some((
            FrameSpec {
                period_ns: *period_ns,
                work_ns,
                deadline_ns: None,
                count,
            },
            offset,
        )))
    }

    /// The task's phases laid out in time, with its timers' clocks kept across phases and
    /// rounds.
    pub(super) fn layout(
        &mut self,
        task: &str,
        phases: &[PhaseIn<'_>],
        task_loop: Option<u64>,
        base: &str,
    ) -> Result<Vec<Step>, RtAppError> {
        let start = TimerState::start(phases.iter().flat_map(|p| p.events.iter()));
        let duration = self.duration_ns;
        let times_of = |t: Option<u64>| match (t, duration) {
            (Some(n), _) => Ok(Times::Count(n)),
            (None, Some(d)) => Ok(Times::Fill(d)),
            (None, None) => Err(()),
        };
        let mut assumed = false;
        let mut cycle = |s: &TimerState| -> Result<(Vec<Step>, TimerState), ()> {
            let mut out = Vec::new();
            let mut s = s.clone();
            for p in phases {
                let (steps, next, a) =
                    steps::repeat(times_of(p.times)?, &s, |s| Ok(steps::lay_out(&p.events, s)))?;
                assumed |= a;
                out.extend(steps);
                s = next;
            }
            Ok((out, s))
        };
        let task_times = times_of(task_loop).map_err(|()| self.forever(base))?;
        let (layout, _, a) =
            steps::repeat(task_times, &start, &mut cycle).map_err(|()| self.forever(base))?;
        if phases
            .iter()
            .any(|p| p.events.iter().any(|e| matches!(e, Event::Timer { .. })))
        {
            let mut how =
                "a sleep to its next firing as the runs before it take reference time".to_owned();
            if a || assumed {
                how.push_str(", the rounds' layout taken as steady");
            }
            self.note(task, None, "timer", Treatment::Approximated(how));
        }
        Ok(layout)
    }

    /// A timer named by more than one thread (instances included) is one clock in rt-app,
    /// each thread's own here.
    pub(super) fn note_shared_timers(&mut self, models: &[TaskModel]) {
        let uses = core::mem::take(&mut self.shared_timers);
        for u in &uses {
            let threads: u64 = models
                .iter()
                .filter(|m| {
                    uses.iter()
                        .any(|v| v.feature == u.feature && v.task == m.spec.name)
                })
                .map(|m| u64::from(m.instance.max(1)))
                .sum();
            if threads > 1 {
                self.notes.push(Unmodelled {
                    feature: "timer".into(),
                    treatment: Treatment::Approximated(format!(
                        "\"{}\" is one clock for its {threads} threads in rt-app, one each here",
                        u.feature
                    )),
                    ..u.clone()
                });
            }
        }
    }
}
