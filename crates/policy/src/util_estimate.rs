//! How busy a task keeps a CPU: a time-decayed average of its running time, in the same units
//! as CPU capacity.
//!
//! The estimate follows the kernel's PELT (per-entity load tracking) in shape: time is cut
//! into 1 ms periods, each period's contribution decays by `y` per period with `y^32 = 1/2`,
//! so what a task did 32 ms ago weighs half of what it does now. While the task runs on a CPU
//! of capacity `c` the average is pulled towards `c`, otherwise towards 0; a task that always
//! runs on a P-core (1024) tends to 1024, one that always runs on an E-core of capacity 600
//! tends to 600, and a task running half the time on that E-core to 300. That scaling is what
//! makes the estimate mean the same on every CPU, so the fit test compares like with like.
//!
//! Convergence (checked by `testkit::check_util_converges`): after [`UtilEstimate::SETTLE_HALF_LIVES`]
//! half-lives of a steady pattern the error left from any starting value is below 1/32 of the
//! scale, and a pattern whose period is at most an eighth of the half-life (4 ms) ripples by
//! less than 3% around its mean; together within the 5% the invariant allows.

/// Length of one decay period.
pub const UTIL_PERIOD_NS: u64 = 1_000_000;

/// Fixed-point fraction bits of the stored average (the public value is 0..=1024).
const FRAC_BITS: u32 = 10;

/// `y^n` for n in 0..32, scaled by 2^32, with `y^32 = 1/2`.
const Y_POW: [u64; 32] = [
    4294967296, 4202935003, 4112874773, 4024744348, 3938502376, 3854108391, 3771522796, 3690706840,
    3611622603, 3534232978, 3458501653, 3384393094, 3311872529, 3240905930, 3171459999, 3103502151,
    3037000500, 2971923842, 2908241642, 2845924021, 2784941738, 2725266179, 2666869345, 2609723834,
    2553802834, 2499080105, 2445529972, 2393127307, 2341847524, 2291666561, 2242560872, 2194507417,
];

/// The factor by which a value decays over `delta_ns`, scaled by 2^32.
fn decay(delta_ns: u64) -> u64 {
    let periods = delta_ns / UTIL_PERIOD_NS;
    let halvings = periods / 32;
    if halvings >= 32 {
        return 0;
    }
    let whole = Y_POW[(periods % 32) as usize] >> halvings;
    // Within a period, decay linearly towards the next period's factor.
    let step = whole - ((whole * Y_POW[1]) >> 32);
    let frac = delta_ns % UTIL_PERIOD_NS;
    whole - step * frac / UTIL_PERIOD_NS
}

/// A task's utilisation estimate. The caller stores it (in [`TaskState`](crate::TaskState))
/// and tells it what the task did; it reads no clock.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct UtilEstimate {
    /// The average, 0..=1024 << FRAC_BITS.
    avg: u32,
    /// The time the average is current at; `None` before the first update.
    at_ns: Option<u64>,
}

impl UtilEstimate {
    /// Time for what a task did to lose half its weight (the kernel's PELT uses the same).
    pub const HALF_LIFE_NS: u64 = 32 * UTIL_PERIOD_NS;

    /// Half-lives after which a steady pattern's estimate is within 5% of its duty cycle times
    /// capacity (for patterns of period at most `HALF_LIFE_NS / 8`).
    pub const SETTLE_HALF_LIVES: u64 = 5;

    /// A task with no history: utilisation 0.
    pub const fn new() -> Self {
        Self {
            avg: 0,
            at_ns: None,
        }
    }

    /// The estimate, 0..=1024 on the kernel's capacity scale.
    pub fn util(&self) -> u16 {
        ((self.avg + (1 << (FRAC_BITS - 1))) >> FRAC_BITS) as u16
    }

    /// The time the estimate is current at.
    pub fn at_ns(&self) -> Option<u64> {
        self.at_ns
    }

    /// Brings the estimate up to `now_ns`, the task having run on a CPU of `capacity`
    /// (0..=1024) the whole time since the last update, or not run when `capacity` is 0. The
    /// first call only sets the clock; a `now_ns` before the current time changes nothing
    /// (a caller's clocks may disagree by a little).
    pub fn advance(&mut self, now_ns: u64, capacity: u16) {
        let Some(at) = self.at_ns else {
            self.at_ns = Some(now_ns);
            return;
        };
        if now_ns <= at {
            return;
        }
        let d = decay(now_ns - at);
        let target = u64::from(capacity.min(1024)) << FRAC_BITS;
        let avg = (u64::from(self.avg) * d + target * ((1 << 32) - d)) >> 32;
        self.avg = avg as u32;
        self.at_ns = Some(now_ns);
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn decay_halves_every_half_life() {
        assert_eq!(decay(0), 1 << 32);
        assert_eq!(decay(UtilEstimate::HALF_LIFE_NS), 1 << 31);
        assert_eq!(decay(2 * UtilEstimate::HALF_LIFE_NS), 1 << 30);
        assert_eq!(decay(u64::MAX), 0);
        // Monotone within a period.
        assert!(decay(1_500_000) < decay(1_000_000) && decay(1_500_000) > decay(2_000_000));
    }

    #[test]
    fn a_hog_on_an_e_core_tends_to_its_capacity() {
        let mut u = UtilEstimate::new();
        u.advance(0, 0);
        u.advance(UtilEstimate::HALF_LIFE_NS, 600);
        assert_eq!(u.util(), 300);
        u.advance(40 * UtilEstimate::HALF_LIFE_NS, 600);
        assert_eq!(u.util(), 600);
        u.advance(41 * UtilEstimate::HALF_LIFE_NS, 0);
        assert_eq!(u.util(), 300);
        // Time going backwards changes nothing.
        u.advance(0, 1024);
        assert_eq!(u.util(), 300);
    }
}
