//! The loop's clock: the framework's, so that the times the loop hands the core and the task
//! timestamps the kernel reports are on one scale.
//!
//! scx_rustland_core stamps a task's runs with `scx_bpf_now()`: the runqueue clock, which is
//! `sched_clock` on most machines (`bpf_ktime_get_ns()`, `CLOCK_MONOTONIC`, on kernels before
//! 6.14, which lack the kfunc). `CLOCK_MONOTONIC` starts elsewhere and is slewed by NTP, so the
//! two drift apart by up to milliseconds a minute. The core mixes the loop's time (a wake-up
//! decays the estimate up to it, timers fire at it) with those timestamps (a run raises the
//! estimate from its start to its stop): with the loop's time behind the kernel's, a wake-up
//! decays nothing; ahead of it, the next run seems to have started before the estimate's
//! time and counts only in part, or not at all.
//!
//! So the loop reads `CLOCK_MONOTONIC` (a vDSO call, no system call) and adds the offset to the
//! framework's clock. The offset comes from readings of both clocks: the idle-snapshot program
//! reads the framework's clock at every snapshot, between two reads of `CLOCK_MONOTONIC` by the
//! loop. A reading's error is at most half its round trip, which grows when the loop is
//! preempted in the call; of the readings in each [`WINDOW_NS`], the one with the shortest
//! round trip sets the offset (the first reading sets it at once). The clock the loop reads
//! never goes backwards.

/// How long readings are gathered before the best of them sets the offset.
pub(crate) const WINDOW_NS: u64 = 1_000_000_000;

/// `CLOCK_MONOTONIC` translated to the framework's clock.
#[derive(Debug)]
pub(crate) struct KernelClock {
    /// The framework's clock minus `CLOCK_MONOTONIC`; `None` before the first reading.
    offset_ns: Option<i64>,
    /// The window's best reading so far: (round trip, offset).
    best: Option<(u64, i64)>,
    /// When the window began (`CLOCK_MONOTONIC`).
    window_start_ns: u64,
    /// The latest time handed out: the clock never goes backwards.
    last_ns: u64,
}

impl KernelClock {
    /// A clock with no reading yet: `CLOCK_MONOTONIC` as it is.
    pub(crate) const fn new() -> Self {
        Self {
            offset_ns: None,
            best: None,
            window_start_ns: 0,
            last_ns: 0,
        }
    }

    /// The framework's clock at `CLOCK_MONOTONIC` time `mono_ns`, never before a time handed
    /// out earlier.
    pub(crate) fn at(&mut self, mono_ns: u64) -> u64 {
        let t = mono_ns.saturating_add_signed(self.offset_ns.unwrap_or(0));
        self.last_ns = self.last_ns.max(t);
        self.last_ns
    }

    /// The framework's clock read `kernel_ns` between `CLOCK_MONOTONIC` reads `before_ns` and
    /// `after_ns`. Returns the new offset when this reading set it.
    pub(crate) fn reading(&mut self, before_ns: u64, after_ns: u64, kernel_ns: u64) -> Option<i64> {
        if after_ns < before_ns || kernel_ns == 0 {
            return None;
        }
        let round_trip = after_ns - before_ns;
        let mid = before_ns + round_trip / 2;
        let offset = i64::try_from(i128::from(kernel_ns) - i128::from(mid)).ok()?;
        if self.offset_ns.is_none() {
            self.offset_ns = Some(offset);
            self.window_start_ns = after_ns;
            return Some(offset);
        }
        if self.best.is_none_or(|(rt, _)| round_trip < rt) {
            self.best = Some((round_trip, offset));
        }
        if after_ns.saturating_sub(self.window_start_ns) < WINDOW_NS {
            return None;
        }
        self.window_start_ns = after_ns;
        let (_, best) = self.best.take()?;
        self.offset_ns = Some(best);
        Some(best)
    }

    /// The `CLOCK_MONOTONIC` time at which the framework's clock reads `kernel_ns`, by the
    /// current offset: for timers on `CLOCK_MONOTONIC` (the helper's timerfd).
    pub(crate) fn to_mono(&self, kernel_ns: u64) -> u64 {
        kernel_ns.saturating_add_signed(self.offset_ns.unwrap_or(0).saturating_neg())
    }

    /// The framework's clock minus `CLOCK_MONOTONIC`, once read.
    pub(crate) fn offset_ns(&self) -> Option<i64> {
        self.offset_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn translates_by_the_first_reading_at_once() {
        let mut c = KernelClock::new();
        assert_eq!(c.at(1_000), 1_000, "no reading: monotonic as it is");
        assert_eq!(c.to_mono(1_000), 1_000);
        // The kernel's clock 5 ms ahead, read in a 2 us round trip.
        assert_eq!(c.reading(10_000, 12_000, 5_011_000), Some(5_000_000));
        assert_eq!(c.at(20_000), 5_020_000);
        assert_eq!(c.to_mono(5_020_000), 20_000);
        // Behind: negative offsets work too.
        let mut c = KernelClock::new();
        assert_eq!(c.reading(9_000_000, 9_000_000, 2_000_000), Some(-7_000_000));
        assert_eq!(c.at(10_000_000), 3_000_000);
        assert_eq!(c.to_mono(3_000_000), 10_000_000);
    }

    #[test]
    fn the_shortest_round_trip_of_a_window_wins() {
        let mut c = KernelClock::new();
        c.reading(0, 0, 1_000_000);
        // A preempted reading (500 us round trip) and a clean one (2 us), then the window ends.
        assert_eq!(c.reading(100_000, 600_000, 1_450_000), None);
        assert_eq!(c.reading(200_000, 202_000, 1_201_000), None);
        assert_eq!(c.offset_ns(), Some(1_000_000), "not before the window ends");
        let end = WINDOW_NS + 10;
        assert_eq!(
            c.reading(end, end + 90_000, end + 1_040_000),
            Some(1_000_000)
        );
        // The next window starts afresh: its one reading wins.
        let next = end + WINDOW_NS + 90_000;
        assert_eq!(
            c.reading(next, next + 4_000, next + 1_302_000),
            Some(1_300_000)
        );
    }

    #[test]
    fn never_goes_backwards_and_ignores_bad_readings() {
        let mut c = KernelClock::new();
        c.reading(0, 0, 1_000_000);
        assert_eq!(c.at(5_000_000), 6_000_000);
        // The offset falls by 2 ms: the clock holds until it catches up.
        let w = WINDOW_NS;
        c.reading(w, w, w - 1_000_000);
        assert_eq!(c.offset_ns(), Some(-1_000_000));
        assert_eq!(c.at(6_000_000), 6_000_000);
        assert_eq!(c.at(w), w - 1_000_000);
        // A reading whose second read comes first, or with no kernel time, changes nothing.
        assert_eq!(c.reading(5, 4, 100), None);
        assert_eq!(c.reading(5, 6, 0), None);
        assert_eq!(c.offset_ns(), Some(-1_000_000));
    }
}
