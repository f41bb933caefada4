//! The loop's outside controls: the stats server's requests and the control file's knob.

use super::*;

impl<O: SchedOps> Scheduler<O> {
    /// The loop's counters, with what the core counts read from the core (the loop keeps no
    /// second count of nudges, preemptions or exits of held tasks).
    pub(super) fn counters(&self) -> Counters {
        let core = self.core.stats();
        let mut c = self.counters;
        c.nudges = core.nudges;
        c.preempts = core.preempts;
        c.events.exit_tracked = core.exits_tracked;
        c.events.renewed = core.renewed;
        c.events.stale_exit = core.stale_exits;
        c.rounds.timer_wakes = self.nudger.as_ref().map_or(0, Nudger::timer_wakes);
        c
    }

    /// Answers the stats server's requests through `link`.
    pub(crate) fn with_stats(mut self, link: StatsLink) -> Self {
        self.stats = Some(link);
        self
    }

    /// Takes `lock` at the start of each round (`--test-own-lock`).
    pub(crate) fn with_own_lock(mut self, lock: OwnLock) -> Self {
        self.own_lock = Some(lock);
        self
    }

    /// Answers each pending stats request with the counters as they stand (a copy and a
    /// channel send; the server side does the arithmetic and the formatting). A server that
    /// went away is not the loop's concern.
    pub(super) fn answer_stats(&mut self) {
        let Some(link) = &self.stats else { return };
        while link.requests.try_recv().is_ok() {
            let core = self.core.stats();
            let sample = Sample {
                counters: self.counters(),
                fw: self.ops.counters(),
                balance: self.core.policy_config().map(|c| c.cluster_balance),
                backlog: self.backlog.len() as u64,
                tasks_tracked: core.tracked,
                tasks_high_water: core.high_water,
                tasks_untracked: core.untracked,
                class_drift: core.class_drift,
                events_dropped: self.ops.event_counters().dropped.iter().sum(),
                loop_cpu_ns: thread_cpu_ns(),
            };
            let _ = link.samples.send(sample);
        }
    }

    /// Applies a change of the control files, if the watcher found one: the cluster-balance
    /// knob's, or a policy's own knob's (handed to the core as `Input::Knob`).
    pub(super) fn poll_knob(&mut self) {
        let Some(control) = self.control.as_ref() else {
            return;
        };
        let change = control.try_change();
        match change {
            Some(KnobChange::Own { index, value }) => {
                control.applied_own(index, value);
                let spec = self.core.policy().knobs().get(usize::from(index));
                let name = spec.map_or("?", |s| s.name);
                info!("{name}: {value} (from the control file)");
                let now = self.now();
                let _ = self.feed(now, Input::Knob { index, value });
                return;
            }
            Some(KnobChange::OwnRejected { index }) => {
                let spec = self.core.policy().knobs().get(usize::from(index));
                warn!(
                    "control file {}: not a value it takes ({}); unchanged",
                    spec.map_or("?", |s| s.name),
                    spec.map(|s| s.range().to_string()).unwrap_or_default()
                );
                return;
            }
            _ => {}
        }
        let Some(current) = self.core.policy_config().map(|c| c.cluster_balance) else {
            return;
        };
        match change {
            None | Some(KnobChange::None) => {}
            Some(KnobChange::Set(mode)) => {
                control.applied(mode);
                info!(
                    "cluster balance: {current} -> {mode} (from {})",
                    control.path().display()
                );
                // Only hybridland has the knob, and only then is there a current mode.
                let now = self.now();
                let _ = self.feed(now, Input::ClusterBalance { mode });
                self.install_fast_wake(false);
            }
            Some(KnobChange::Own { .. } | KnobChange::OwnRejected { .. }) => {}
            Some(KnobChange::Rejected) => {
                warn!(
                    "{}: expected off, on or auto; keeping {current}",
                    control.path().display()
                );
            }
        }
    }
}
