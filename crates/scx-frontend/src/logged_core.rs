//! The loop's scheduler core with `--record`'s decision log beside it: every call that changes
//! the core goes through here, and while a log is kept it is appended to it, in the order the
//! loop made the calls, with the dispatches and nudges the loop then carried out.
//! `hybrid-sim decisions` feeds the log through the same core and compares.

#![forbid(unsafe_code)]

use crate::policy_choice::LivePolicy;
use core::ops::Deref;
use hybridland_policy::{
    ClusterBalance, Dispatch, Nudge, Queued, SchedCore, Slot, Snapshot, TaskId,
};
use hybridland_trace::decisions::{DecisionLog, Entry};
use std::path::PathBuf;

/// The core and, with `--record`, its decision log. Reading the core goes through `Deref`;
/// changing it only through the methods here, so nothing reaches the core unlogged.
pub(crate) struct LoggedCore {
    core: Box<SchedCore<Vec<Slot>, LivePolicy>>,
    /// The log, and where it is to be written.
    log: Option<(PathBuf, DecisionLog)>,
}

impl Deref for LoggedCore {
    type Target = SchedCore<Vec<Slot>, LivePolicy>;

    fn deref(&self) -> &Self::Target {
        &self.core
    }
}

impl LoggedCore {
    pub(crate) fn new(core: Box<SchedCore<Vec<Slot>, LivePolicy>>) -> Self {
        Self { core, log: None }
    }

    /// Logs from now on into `log`, to be written to `path`.
    /// The shared invariants over every later decision (tests only: `SchedCore::start_audit`).
    #[cfg(test)]
    pub(crate) fn start_audit(&mut self) {
        self.core.start_audit();
    }

    pub(crate) fn start_log(&mut self, path: PathBuf, log: DecisionLog) {
        self.log = Some((path, log));
    }

    /// The log and its path, handed over to be written.
    pub(crate) fn take_log(&mut self) -> Option<(PathBuf, DecisionLog)> {
        self.log.take()
    }

    fn log(&mut self, entry: impl FnOnce() -> Entry) {
        if let Some((_, log)) = self.log.as_mut() {
            log.push(entry());
        }
    }

    pub(crate) fn set_helper(&mut self, helper: Option<TaskId>) {
        self.core.set_helper(helper);
    }

    pub(crate) fn set_cluster_balance(&mut self, mode: ClusterBalance) -> bool {
        self.log(|| Entry::ClusterBalance { mode });
        self.core.set_cluster_balance(mode)
    }

    pub(crate) fn handle_backlog(&mut self, waiting: u64) {
        self.log(|| Entry::Backlog { waiting });
        self.core.handle_backlog(waiting);
    }

    pub(crate) fn handle_queued(
        &mut self,
        now_ns: u64,
        q: &Queued<'_>,
    ) -> Result<(), hybridland_policy::BatchFull> {
        self.log(|| Entry::queued(now_ns, q));
        self.core.handle_queued(now_ns, q)
    }

    pub(crate) fn handle_snapshot(&mut self, now_ns: u64, snap: &Snapshot<'_>) {
        self.log(|| Entry::snapshot(now_ns, snap));
        self.core.handle_snapshot(now_ns, snap);
    }

    pub(crate) fn handle_snapshot_failed(&mut self, now_ns: u64) {
        self.log(|| Entry::SnapshotFailed { now: now_ns });
        self.core.handle_snapshot_failed(now_ns);
    }

    pub(crate) fn wants_recheck(&mut self) -> bool {
        self.core.wants_recheck()
    }

    pub(crate) fn handle_recheck(&mut self, snap: &Snapshot<'_>) {
        self.log(|| Entry::recheck(snap));
        self.core.handle_recheck(snap);
    }

    pub(crate) fn handle_tick(&mut self, now_ns: u64) {
        self.log(|| Entry::Tick { now: now_ns });
        self.core.handle_tick(now_ns);
    }

    pub(crate) fn handle_exit(&mut self, task: TaskId) -> bool {
        self.log(|| Entry::Exit { task });
        self.core.handle_exit(task)
    }

    pub(crate) fn poll_dispatch(&mut self) -> Option<Dispatch> {
        self.core.poll_dispatch()
    }

    pub(crate) fn poll_nudge(&mut self) -> Option<Nudge> {
        self.core.poll_nudge()
    }

    /// The loop sent `d`.
    pub(crate) fn sent(&mut self, d: &Dispatch) {
        self.log(|| Entry::sent(d));
    }

    /// The loop carried out `n`.
    pub(crate) fn nudged(&mut self, n: &Nudge) {
        self.log(|| Entry::Nudged {
            cpu: n.cpu.0,
            task: n.task,
        });
    }
}
