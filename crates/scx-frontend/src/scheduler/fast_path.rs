//! The wake-up fast path: its tables written at start and after a knob change, the placements
//! it reports handed to the core, the classes and homes the core gives written back.

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
                self.cfg.slice,
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

    /// Hands the placements the fast path reported to the core (`Input::Placed`: counted as
    /// wake-ups it decided, the tasks noted where they run), then carries out the class changes
    /// that follow and mirrors the homes.
    pub(super) fn apply_fast_placements(&mut self) {
        if self.fast_table.is_none() {
            return;
        }
        let at_ns = self.now();
        let nr_possible = self.cfg.nr_possible;
        let (core, decisions, counters, recorder) = (
            &mut self.core,
            &mut self.decisions,
            &mut self.counters,
            &mut self.recorder,
        );
        let mut full = false;
        let lost = self.ops.drain_fast_placements(&mut |p| {
            counters.fast_path.placed += 1;
            if let (Some(rec), Some(run)) = (recorder.as_mut().filter(|r| r.recording()), p.run) {
                // The run before a wake-up the kernel placed: as the loop sees a woken task's.
                full |= rec.observe_run(Event {
                    at_ns,
                    start_ts: run.start_ns,
                    stop_ts: run.stop_ns,
                    exec_runtime: run.stop_ns.saturating_sub(run.start_ns),
                    pid: i32::try_from(p.task.0).unwrap_or(-1),
                    cpu: p.prev.and_then(|c| i16::try_from(c.0).ok()).unwrap_or(-1),
                    wakeup: true,
                });
            }
            let allowed = p.allowed(core.topology(), nr_possible);
            let woken = Queued {
                task: p.task,
                life: p.life,
                token: 0,
                arrival: Arrival::Wakeup { waker: None },
                cpu: p.prev,
                last_run: p.run,
                weight: p.weight,
                affinity: allowed.as_ref().map_or(Affinity::Unknown, Affinity::Cpus),
                util: UtilSource::Estimate,
            };
            let input = Input::Placed {
                woken,
                cpu: p.cpu,
                class: p.class,
                // A record written after the clock was read is taken as of now.
                woke: TimeNs(p.woke_ns.min(at_ns)),
            };
            // Taken in either occupancy mode, never refused.
            let _ = feed(core, decisions, at_ns, input);
        });
        self.counters.fast_path.lost += lost;
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
                    Ok(true) => self.counters.fast_path.class_writes += 1,
                    // Its exit is on its way to the core.
                    Ok(false) => self.counters.fast_path.class_gone += 1,
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
