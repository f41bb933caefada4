//! The task events the framework reports between batches: exits reach the core, wake-ups
//! name their wakers, and both go into the recording.

use super::*;

impl<O: SchedOps> Scheduler<O> {
    /// Applies the task events that arrived since the last call: an exit takes the task out of
    /// the task table at once (and ends it in the recording); wake-ups and refills are counted,
    /// and a wake-up by a task goes into the recording. (`--fifo` loads no event source:
    /// nothing to drain there.)
    pub(super) fn apply_events(&mut self) {
        let (core, decisions, counters, recorder, wakers) = (
            &mut self.core,
            &mut self.decisions,
            &mut self.counters,
            &mut self.recorder,
            &mut self.wakers,
        );
        let mut full = false;
        let drained = self.ops.drain_events(&mut |ev| match ev {
            Ok(TaskEvent::Exit { at_ns, pid, .. }) => {
                counters.events.exit += 1;
                if let Ok(task) = u32::try_from(pid).map(TaskId) {
                    // Any core takes an exit.
                    let _ = feed(core, decisions, at_ns, Input::Exit { task });
                }
                if let Some(r) = recorder.as_mut() {
                    r.exited(pid, at_ns);
                }
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
}
