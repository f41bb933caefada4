//! The task events the framework reports between batches: exits reach the core, wake-ups
//! name their wakers, and both go into the recording.

use super::*;

impl<O: SchedOps> Scheduler<O> {
    /// Applies the task events that arrived since the last call: an exit takes the task out of
    /// the task table at once (and ends it in the recording); wake-ups and refills are counted,
    /// and a wake-up by a task goes into the recording. (`--fifo` loads no event source:
    /// nothing to drain there.)
    pub(super) fn apply_events(&mut self) {
        let (counters, recorder, wakers, exits) = (
            &mut self.counters,
            &mut self.recorder,
            &mut self.wakers,
            &mut self.exits,
        );
        let mut full = false;
        let drained = self.ops.drain_events(&mut |ev| match ev {
            Ok(TaskEvent::Exit {
                at_ns, pid, life, ..
            }) => {
                counters.events.exit += 1;
                exits.push((at_ns, pid, Life(life)));
            }
            Ok(TaskEvent::Waking { at_ns, pid, waker }) => {
                counters.events.waking += 1;
                counters.events.woken_by_task += u64::from(waker.is_some());
                if let Some(w) = waker {
                    wakers.note(pid, w.pid, w.cpu, at_ns);
                }
                if let (Some(r), Some(w)) = (recorder.as_mut(), waker) {
                    full |= r.woken(at_ns, pid, w.pid);
                }
            }
            Ok(TaskEvent::Refill { .. }) => counters.events.refill += 1,
            Err(e) => {
                counters.events.bad += 1;
                debug!("task-event record skipped: {e}");
            }
        });
        if let Err(e) = drained {
            self.counters.events.read_errors += 1;
            debug!("reading task events: {e:#}");
        }
        if full {
            self.stop_recording();
        }
    }

    /// Hands the exits [`Self::apply_events`] drained to the core, the framework's side (the
    /// task's class leaves the fast path's table) and the recorder. Called after the fast path's placements are
    /// applied: a placement is reported when it is made, before the task can exit, so every
    /// placement of a task whose exit was drained has been written by the time the placements
    /// are drained after the events (drained before them, one written in between reached the
    /// core a round after the exit and gave the dead task a new record).
    pub(super) fn apply_exits(&mut self) {
        let (core, decisions, recorder) = (&mut self.core, &mut self.decisions, &mut self.recorder);
        for (at_ns, pid, life) in self.exits.drain(..) {
            self.ops.forget_task(pid);
            if let Ok(task) = u32::try_from(pid).map(TaskId) {
                // Any core takes an exit; one of an earlier life than the core holds (a new
                // thread took the pid first) it ignores.
                let _ = feed(core, decisions, at_ns, Input::Exit { task, life });
            }
            if let Some(r) = recorder.as_mut() {
                r.exited(pid, at_ns);
            }
        }
    }
}
