//! The wake-up fast path: its tables written at start and after a knob change, the runs it
//! reports handed to the core, the classes and homes the core gives written back.

use super::*;

impl<O: SchedOps> Scheduler<O> {
    /// Writes the wake-up fast path's tables for the policy and knobs in force (after a knob
    /// change too: the tables depend on cluster balance), or switches it off where it does not
    /// apply (a policy without a table, `--fifo`, `--no-fast-wake`). `announce`: say so in the
    /// log.
    pub(super) fn install_fast_wake(&mut self, announce: bool) {
        let topo = self.core.topology();
        let table = match self.core.policy().wake_table(topo) {
            Some(table) if self.cfg.fast_wake && self.cfg.mode == Mode::Policy => table,
            _ => {
                self.ops.set_fast_wake(None);
                if announce {
                    info!("wake-up fast path: off");
                }
                return;
            }
        };
        let fast = match &mut self.fast_table {
            Some(fast) => {
                fast.refill(table);
                fast
            }
            None => self.fast_table.insert(FastWakeTable::new(
                table,
                self.cfg.slice_ns,
                self.nudger.as_ref().and_then(|n| u32::try_from(n.tid).ok()),
            )),
        };
        self.ops.set_fast_wake(Some(fast));
        if announce {
            info!(
                "wake-up fast path: a woken task that finds an allowed CPU free is placed in the kernel by the policy's idle order on {} CPUs (--no-fast-wake: off)",
                fast.table().nr_cpus
            );
        }
    }

    /// Hands the runs the fast path reported to the core (its estimate, vtime and homes see
    /// them), then carries out the class changes that follow and mirrors the homes.
    pub(super) fn apply_fast_runs(&mut self) {
        if self.fast_table.is_none() {
            return;
        }
        let at_ns = self.now();
        let (core, decisions, counters, recorder) = (
            &mut self.core,
            &mut self.decisions,
            &mut self.counters,
            &mut self.recorder,
        );
        let mut full = false;
        let lost = self.ops.drain_fast_runs(&mut |r| {
            counters.fast_path.runs += 1;
            if let Some(rec) = recorder.as_mut().filter(|rec| rec.recording()) {
                // The run before a wake-up the kernel placed: as the loop sees a woken task's.
                full |= rec.observe_run(Event {
                    at_ns,
                    start_ts: r.run.start_ns,
                    stop_ts: r.run.stop_ns,
                    exec_runtime: r.run.stop_ns.saturating_sub(r.run.start_ns),
                    pid: i32::try_from(r.task.0).unwrap_or(-1),
                    cpu: i16::try_from(r.cpu.0).unwrap_or(-1),
                    wakeup: true,
                });
            }
            let input = Input::Ran {
                task: r.task,
                cpu: r.cpu,
                run: r.run,
                weight: r.weight,
            };
            // A snapshot-reading core takes every run.
            let _ = feed(core, decisions, at_ns, input);
        });
        self.counters.fast_path.runs_lost += lost;
        if full {
            self.stop_recording();
        }
        while let Some(out) = self.core.poll() {
            self.carry_out(out);
        }
        self.ops.set_homes(self.core.state().homes());
    }

    /// Carries out an output that is not a batch's dispatch: a nudge wakes the helper, a class
    /// is written into the kernel. Logged when carried out.
    pub(super) fn carry_out(&mut self, out: Output) {
        match out {
            Output::Nudge(n) => {
                let Some(nudger) = self.nudger.as_mut() else {
                    return;
                };
                debug!(cpu = n.cpu.0, pid = n.task.0, better = %n.better.step, "nudge");
                nudger.wake();
            }
            Output::Class(c) => {
                let pid = i32::try_from(c.task.0).unwrap_or(-1);
                match self.ops.set_class(pid, c.class) {
                    Ok(()) => self.counters.fast_path.class_writes += 1,
                    Err(e) => {
                        self.counters.fast_path.class_errors += 1;
                        debug!(pid, class = c.class.0, "class not written: {e:#}");
                    }
                }
            }
            Output::Dispatch(d) => {
                // Only a batch gives dispatches, and the batch's loop takes them.
                error!(pid = d.task.0, "a dispatch outside a batch");
                return;
            }
        }
        self.carried_out(&out);
    }
}
