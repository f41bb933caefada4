//! The wake-up fast path's table: written at start and after a knob change.

use super::*;

impl<O: SchedOps> Scheduler<O> {
    /// Writes the wake-up fast path's table for the policy and knobs in force (after a knob
    /// change too: the table depends on cluster balance), or switches it off where it does not
    /// apply. `announce`: say so in the log.
    pub(super) fn install_fast_wake(&mut self, announce: bool) {
        let policy = match self.core.policy().hybridland() {
            Some(policy) if self.cfg.fast_wake && self.cfg.mode == Mode::Policy => policy,
            _ => {
                self.ops.set_fast_wake(None);
                if announce {
                    info!("wake-up fast path: off");
                }
                return;
            }
        };
        let topo = self.core.topology();
        let table = match &mut self.fast_table {
            Some(table) => {
                table.refill(topo, policy);
                table
            }
            None => self.fast_table.insert(FastWakeTable::new(
                topo,
                policy,
                self.cfg.slice_ns,
                self.nudger.as_ref().and_then(|n| u32::try_from(n.tid).ok()),
            )),
        };
        self.ops.set_fast_wake(Some(table));
        if announce {
            info!(
                "wake-up fast path: a task woken with its previous CPU's core idle may stay there in the kernel on {} of {} CPUs (--no-fast-wake: off)",
                table.nr_keep(),
                topo.nr_cpus()
            );
        }
    }
}
