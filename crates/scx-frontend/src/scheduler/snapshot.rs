//! Taking an idle snapshot, and giving up after a sustained run of failures.

use super::*;

/// The scheduler gives up when every idle snapshot has failed for this long, and at least
/// [`SNAPSHOT_GIVE_UP_MIN`] in a row. Transient causes (`EINTR`, `ENOMEM` or `EAGAIN` under
/// memory pressure) clear within milliseconds, and meanwhile each batch goes to the shared
/// queue, which is correct, only not hybrid-aware. A run of failures lasting 2 s (hundreds of
/// batches on a busy machine, and at least 10 attempts on an idle one, where the framework
/// wakes the loop once a second) means the program is gone or broken for good: the
/// scheduler would run blind, and the kernel's own scheduler serves the machine better, so
/// it exits with an error (a service manager restarts it: `Restart=on-failure`).
const SNAPSHOT_GIVE_UP_NS: u64 = 2_000_000_000;

/// See [`SNAPSHOT_GIVE_UP_NS`].
const SNAPSHOT_GIVE_UP_MIN: u64 = 10;

impl<O: SchedOps> Scheduler<O> {
    /// An idle snapshot, or `None` if this one failed (counted). Fails only when every
    /// snapshot has failed for [`SNAPSHOT_GIVE_UP_NS`] and at least [`SNAPSHOT_GIVE_UP_MIN`]
    /// times in a row.
    pub(super) fn snapshot(&mut self, now: u64) -> Result<Option<IdleCpus>> {
        let t0 = now_ns();
        let taken = self.ops.snapshot();
        let t1 = now_ns();
        let rounds = &mut self.counters.rounds;
        rounds.snapshots += 1;
        rounds.snapshot_ns += t1.saturating_sub(t0);
        match taken {
            Ok(s) => {
                self.clock_reading(t0, t1, s.clock_ns);
                self.snapshot_failures = FailureRun::default();
                Ok(Some(s))
            }
            Err(e) => {
                self.counters.snapshot_errors += 1;
                let run = &mut self.snapshot_failures;
                if run.count == 0 {
                    run.since_ns = now;
                    warn!("{e:#}: this batch goes to the shared queue");
                }
                run.count += 1;
                if run.count >= SNAPSHOT_GIVE_UP_MIN
                    && now.saturating_sub(run.since_ns) >= SNAPSHOT_GIVE_UP_NS
                {
                    error!(
                        "{} idle snapshots in a row failed over {} ms",
                        run.count,
                        (now - run.since_ns) / 1_000_000
                    );
                    bail!("the idle snapshot keeps failing: {e:#}");
                }
                Ok(None)
            }
        }
    }
}
