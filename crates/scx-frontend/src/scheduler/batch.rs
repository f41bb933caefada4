//! A batch in the core's terms: each queued task handed over as `Input::Queued` with its
//! affinity, waker and who waits at its CPU, the idle snapshot, and the dispatches polled out.

use super::*;

impl<O: SchedOps> Scheduler<O> {
    /// Hands the batch and an idle snapshot to the core and turns what it polls out into
    /// dispatches, in `self.outgoing`.
    pub(super) fn decide_batch(&mut self, now: u64) -> Result<()> {
        let t0 = now_ns();
        let snapshot_ns = self.counters.rounds.snapshot_ns;
        let snap = self.snapshot(now)?;
        let queued_cpus = snap.as_ref().and_then(|s| s.queued);
        let served_cpus = snap.as_ref().and_then(|s| s.served);
        let waiting = self.ops.nr_queued();
        let _ = self.feed(now, Input::Backlog { waiting });
        let batch = core::mem::take(&mut self.queued);
        for (token, task) in (0u32..).zip(&batch) {
            let helper = self.nudger.as_ref().is_some_and(|n| n.tid == task.pid);
            let allowed = if helper {
                None
            } else {
                allowed_cpus(
                    task.pid,
                    task.nr_cpus_allowed,
                    self.cfg.nr_possible,
                    self.core.topology(),
                )
            };
            if let (Some(r), Some(allowed)) = (self.recorder.as_mut(), allowed.as_ref()) {
                r.allowed(
                    task.pid,
                    allowed,
                    task.nr_cpus_allowed < self.cfg.nr_possible,
                );
            }
            let waker = if task.flags & SCX_ENQ_WAKEUP != 0 {
                self.wakers.take(task.pid, now)
            } else {
                None
            };
            self.counters.events.waker_to_core += u64::from(waker.is_some());
            let queued = Queued {
                token,
                ..queued_input(
                    task,
                    allowed.as_ref(),
                    Queues {
                        own: queued_cpus.as_ref(),
                        shared: served_cpus.as_ref(),
                    },
                    waker,
                )
            };
            // Cannot fail: a batch holds at most BATCH_MAX tasks and was polled empty.
            let _ = self.feed(now, Input::Queued(queued));
        }
        // Neither can these: the core reads idle snapshots.
        match &snap {
            Some(snap) => {
                let caller_cpu = self.ops.current_cpu();
                let _ = self.feed(
                    now,
                    Input::Snapshot(Snapshot {
                        idle: &snap.idle,
                        queued: snap.queued.as_ref(),
                        caller_cpu,
                    }),
                );
                // The second look earns its cost (one `bpf()` call) only for a batch with a
                // pick from the snapshot; a failed one keeps the picks as they are.
                if self.core.wants_recheck()
                    && let Some(again) = self.snapshot(now)?
                {
                    let _ = self.feed(
                        now,
                        Input::Recheck(Snapshot {
                            idle: &again.idle,
                            queued: again.queued.as_ref(),
                            caller_cpu: None,
                        }),
                    );
                }
            }
            None => {
                let _ = self.feed(now, Input::SnapshotFailed);
            }
        }
        // Dispatches come in the core's order (slice ends first), each with its task's place
        // in the batch as its token. A batch decided here gives no nudge (those come at ticks).
        while let Some(out) = self.core.poll() {
            let Output::Dispatch(d) = out else {
                self.carry_out(out);
                continue;
            };
            let Some(task) = batch.get(d.token as usize) else {
                // The core gives back the tokens it was handed, so this is a core defect.
                error!(
                    token = d.token,
                    pid = d.task.0,
                    "a dispatch for no task of the batch"
                );
                continue;
            };
            self.count(task, &d);
            self.carried_out(&out);
            let mut out = DispatchedTask::new(task);
            out.slice_ns = d.slice_ns;
            out.vtime = d.vtime;
            out.cpu = d.target.cpu().map_or(RL_CPU_ANY, |c| i32::from(c.0));
            // The bit is the kernel's "preempt the current task"; the kernel honours it only
            // for a local queue, so the patched dispatch reads it and kicks the CPU itself.
            out.flags &= !ENQ_PREEMPT;
            if matches!(d.target, Target::Preempt(_)) {
                out.flags |= ENQ_PREEMPT;
            }
            debug!(
                pid = task.pid,
                prev = task.cpu,
                util = d.util,
                why = ?d.why,
                target = out.cpu,
                "placed"
            );
            self.outgoing.push(out);
        }
        self.queued = batch;
        if self.fast_table.is_some() {
            self.ops.set_homes(self.core.state().homes());
        }
        let rounds = &mut self.counters.rounds;
        let in_snapshots = rounds.snapshot_ns - snapshot_ns;
        rounds.decide_ns += now_ns().saturating_sub(t0).saturating_sub(in_snapshots);
        Ok(())
    }

    /// Counts a dispatch by why it goes where it goes, and records the decision.
    pub(super) fn count(&mut self, task: &QueuedTask, d: &Dispatch) {
        let c = &mut self.counters;
        match d.why {
            Why::Stale(_) => c.stale += 1,
            Why::AffinityUnknown => c.affinity_errors += 1,
            _ => {}
        }
        if let Some(step) = d.why.step() {
            c.steps.add(step);
        }
        let overflow = d.why.placement().is_some_and(|p| p.is_overflow());
        c.overflow += u64::from(overflow);
        let kept = d.why.slice_end() == Some(SliceEnd::Keep);
        c.kept += u64::from(kept);
        c.yielded += u64::from(d.why.slice_end() == Some(SliceEnd::Yield));
        if let Some(r) = self.recorder.as_mut()
            && !matches!(d.why, Why::Helper | Why::Blind | Why::AffinityUnknown)
        {
            r.decision(task.pid, d.why.step(), overflow, kept);
        }
    }
}

/// Who waits for which CPUs, from the idle snapshot.
#[derive(Copy, Clone, Default)]
struct Queues<'a> {
    /// CPUs whose own queue holds tasks not started yet.
    own: Option<&'a CpuSet>,
    /// CPUs a task waiting in the shared queue may run on.
    shared: Option<&'a CpuSet>,
}

/// A queued task in the core's terms (token 0: the caller sets its own). At a slice end, who
/// waits is what the snapshot shows: tasks in the CPU's own queue, else tasks in the shared
/// queue that may run on the CPU and on no idle one (as the simulator's shared queue that
/// CPU serves: there, an idle CPU has taken the others), else nobody. A task waiting in the shared queue thus goes ahead of one whose slice ends (in
/// vtime order) instead of behind a task kept on its CPU, which its CPU's own queue would
/// run first; a task pinned elsewhere is no reason to leave a CPU.
fn queued_input<'a>(
    task: &QueuedTask,
    allowed: Option<&'a CpuSet>,
    queues: Queues<'_>,
    waker: Option<Waker>,
) -> Queued<'a> {
    let ran = task.start_ts != 0;
    let cpu = u16::try_from(task.cpu).ok().map(CpuId).filter(|_| ran);
    let arrival = if task.flags & SCX_ENQ_WAKEUP != 0 {
        Arrival::Wakeup { waker }
    } else {
        let waits = |q: Option<&CpuSet>| cpu.is_some_and(|c| q.is_some_and(|q| q.contains(c)));
        Arrival::SliceEnd {
            waiting: if waits(queues.own) {
                Waiting::OwnQueue
            } else if waits(queues.shared) {
                Waiting::SharedQueue
            } else {
                Waiting::Nobody
            },
        }
    };
    Queued {
        // Pids are positive; a negative one cannot be stored, and is decided untracked.
        task: u32::try_from(task.pid).map_or(TaskId::UNTRACKABLE, TaskId),
        life: Life(task.start_time),
        token: 0,
        arrival,
        cpu,
        last_run: ran.then_some(LastRun {
            start_ns: task.start_ts,
            stop_ns: task.stop_ts,
        }),
        weight: u32::try_from(task.weight).unwrap_or(u32::MAX),
        affinity: allowed.map_or(Affinity::Unknown, Affinity::Cpus),
        util: UtilSource::Estimate,
    }
}
