//! The framework's queues: dequeuing a batch, dispatching, and the backlog kept while the
//! user ring buffer is full.

use super::*;

impl<O: SchedOps> Scheduler<O> {
    /// Sends the backlog, oldest first, until the ring buffer refuses one. Returns whether it
    /// is empty now.
    pub(super) fn flush_backlog(&mut self) -> bool {
        while let Some(task) = self.backlog.front() {
            if self.ops.dispatch(task).is_err() {
                return false;
            }
            let _sent = self.backlog.pop_front();
        }
        true
    }

    /// Dispatches this batch's decisions. Once one fails (the ring buffer is full) it and every
    /// later one go to the backlog, to the shared queue: the CPU was picked against this
    /// snapshot, and by the time the ring buffer has room it is stale.
    pub(super) fn send_outgoing(&mut self) {
        let mut full = !self.backlog.is_empty();
        let mut outgoing = core::mem::take(&mut self.outgoing);
        for task in outgoing.drain(..) {
            if !full {
                match self.ops.dispatch(&task) {
                    Ok(()) => continue,
                    Err(e) => {
                        full = true;
                        debug!("dispatching pid {} failed: {e:#}; kept for later", task.pid);
                    }
                }
            }
            let mut later = task;
            later.cpu = RL_CPU_ANY;
            self.backlog.push_back(later);
            self.counters.dispatch_retries += 1;
        }
        self.outgoing = outgoing;
    }

    /// Drains up to [`BATCH_MAX`] queued tasks into `self.queued`, fewer when the backlog is
    /// near [`BACKLOG_MAX`] (none when it is past it: the rest stay queued in the kernel).
    pub(super) fn dequeue_batch(&mut self) {
        self.queued.clear();
        let room = BACKLOG_MAX
            .saturating_sub(self.backlog.len())
            .min(BATCH_MAX);
        while self.queued.len() < room {
            match self.ops.dequeue() {
                Ok(Some(task)) => self.queued.push(task),
                Ok(None) => break,
                Err(code) => {
                    self.counters.dequeue_errors += 1;
                    if let Some(skipped) = self.dequeue_log.allow(now_ns()) {
                        warn!(
                            "reading the queued-task ring buffer failed: {code} \
                             ({skipped} more since the last report)"
                        );
                    }
                    break;
                }
            }
        }
    }
}
