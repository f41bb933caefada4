//! Accumulators the engine feeds while it runs, turned into [`crate::report`] figures at the
//! end.

use crate::report::{FrameStats, LatencyStats};

/// Latency samples in a log-linear histogram: exact below 128 ns, then 64 buckets per power of
/// two (under 1.6% relative error), so memory stays fixed however many wake-ups a replay has.
/// The count, sum and maximum are kept exactly.
#[derive(Clone, Debug)]
pub struct LatencySamples {
    buckets: Vec<u64>,
    count: u64,
    sum: u128,
    max: u64,
}

const EXACT: u64 = 128;
const SUB_BITS: u32 = 6;
const NR_BUCKETS: usize = EXACT as usize + (64 - 7) * (1 << SUB_BITS);

impl Default for LatencySamples {
    fn default() -> Self {
        Self {
            buckets: vec![0; NR_BUCKETS],
            count: 0,
            sum: 0,
            max: 0,
        }
    }
}

fn bucket_of(v: u64) -> usize {
    if v < EXACT {
        return v as usize;
    }
    let e = 63 - v.leading_zeros();
    let sub = (v >> (e - SUB_BITS)) & ((1 << SUB_BITS) - 1);
    EXACT as usize + (e as usize - 7) * (1 << SUB_BITS) + sub as usize
}

/// The largest value that falls in bucket `b`.
fn bucket_top(b: usize) -> u64 {
    if b < EXACT as usize {
        return b as u64;
    }
    let i = b - EXACT as usize;
    let e = (i >> SUB_BITS) as u32 + 7;
    let sub = (i & ((1 << SUB_BITS) - 1)) as u64;
    let low = ((1u64 << SUB_BITS) + sub) << (e - SUB_BITS);
    low.saturating_add((1u64 << (e - SUB_BITS)) - 1)
}

impl LatencySamples {
    /// Records one sample, ns.
    pub fn record(&mut self, ns: u64) {
        self.buckets[bucket_of(ns)] += 1;
        self.count += 1;
        self.sum += u128::from(ns);
        self.max = self.max.max(ns);
    }

    /// The nearest-rank percentile `pct`, as the top of its bucket (never above the maximum).
    fn percentile(&self, pct: u64) -> u64 {
        let rank = (self.count * pct).div_ceil(100).clamp(1, self.count);
        let mut seen = 0;
        for (b, &n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return bucket_top(b).min(self.max);
            }
        }
        self.max
    }

    /// Percentiles of everything recorded.
    pub fn stats(&self) -> LatencyStats {
        if self.count == 0 {
            return LatencyStats::default();
        }
        LatencyStats {
            count: self.count,
            p50_ns: self.percentile(50),
            p99_ns: self.percentile(99),
            max_ns: self.max,
            mean_ns: (self.sum / u128::from(self.count)) as u64,
        }
    }
}

/// Frame completions of one frame task, counted per fixed window from its first release.
/// Only windows with completions are stored, so a long replay with sparse frames stays small.
#[derive(Clone, Debug, Default)]
pub struct FrameCounter {
    first_release_ns: u64,
    window_ns: u64,
    /// (window index, completions), windows ascending.
    per_window: Vec<(u64, u32)>,
    frames: u64,
    missed: u64,
    latency_sum: u128,
    last_completion_ns: u64,
}

impl FrameCounter {
    /// A counter starting at `first_release_ns` with windows of `window_ns` (non-zero).
    pub fn new(first_release_ns: u64, window_ns: u64) -> Self {
        Self {
            first_release_ns,
            window_ns: window_ns.max(1),
            ..Self::default()
        }
    }

    /// A frame released at `release_ns` completed at `now_ns`; `missed` when late.
    pub fn complete(&mut self, release_ns: u64, now_ns: u64, missed: bool) {
        let w = now_ns.saturating_sub(self.first_release_ns) / self.window_ns;
        match self.per_window.last_mut() {
            Some((last, n)) if *last == w => *n += 1,
            _ => self.per_window.push((w, 1)),
        }
        self.frames += 1;
        self.missed += u64::from(missed);
        self.latency_sum += u128::from(now_ns.saturating_sub(release_ns));
        self.last_completion_ns = now_ns;
    }

    /// The figures over every full window up to the last completion.
    pub fn stats(&self, task: &str) -> FrameStats {
        let full = self
            .last_completion_ns
            .saturating_sub(self.first_release_ns)
            / self.window_ns;
        let scale = 1e9 / self.window_ns as f64;
        let counted: Vec<f64> = self
            .per_window
            .iter()
            .take_while(|(w, _)| *w < full)
            .map(|&(_, n)| f64::from(n) * scale)
            .collect();
        // Full windows without a completion count as 0 fps.
        let empty = full - counted.len() as u64;
        let (mean, stdev, min, max) = if full == 0 {
            (0.0, 0.0, 0.0, 0.0)
        } else {
            let n = full as f64;
            let mean = counted.iter().sum::<f64>() / n;
            let sq: f64 = counted.iter().map(|f| (f - mean) * (f - mean)).sum::<f64>()
                + empty as f64 * mean * mean;
            let mut min = counted.iter().copied().fold(f64::INFINITY, f64::min);
            let mut max = counted.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            if empty > 0 {
                min = 0.0;
                max = max.max(0.0);
            }
            (mean, (sq / n).sqrt(), min, max)
        };
        FrameStats {
            task: task.to_owned(),
            frames: self.frames,
            missed_deadlines: self.missed,
            windows: full as usize,
            fps_mean: mean,
            fps_stdev: stdev,
            fps_min: min,
            fps_max: max,
            mean_frame_ns: if self.frames == 0 {
                0
            } else {
                (self.latency_sum / u128::from(self.frames)) as u64
            },
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn percentiles_by_nearest_rank() {
        let mut l = LatencySamples::default();
        for v in 1..=100 {
            l.record(v);
        }
        let s = l.stats();
        assert_eq!((s.p50_ns, s.p99_ns, s.max_ns, s.count), (50, 99, 100, 100));
        assert_eq!(LatencySamples::default().stats(), LatencyStats::default());
    }

    #[test]
    fn large_values_land_within_two_percent() {
        let mut l = LatencySamples::default();
        for v in [1_000u64, 5_000_000, 123_456_789, u64::MAX / 3] {
            let b = bucket_of(v);
            assert!(bucket_top(b) >= v && bucket_top(b) - v <= v / 64, "{v}");
            assert!(b < NR_BUCKETS);
            l.record(v);
        }
        l.record(u64::MAX);
        assert!(bucket_of(u64::MAX) < NR_BUCKETS);
        let s = l.stats();
        assert_eq!(s.max_ns, u64::MAX);
        assert!(s.p50_ns >= 123_456_789 && s.p50_ns <= 123_456_789 + 123_456_789 / 64);
    }

    #[test]
    fn empty_windows_count_as_zero_fps() {
        let mut f = FrameCounter::new(0, 1_000);
        f.complete(0, 500, false);
        f.complete(2_000, 2_500, false);
        f.complete(3_000, 3_100, false);
        let s = f.stats("r");
        // Windows 0, 1, 2 are full: 1, 0 and 1 frames.
        assert_eq!(s.windows, 3);
        assert_eq!(s.fps_min, 0.0);
        assert!((s.fps_mean - 2.0e6 / 3.0).abs() < 1e-6);
    }

    #[test]
    fn frames_counted_per_full_window() {
        let mut f = FrameCounter::new(0, 1_000);
        // 10 frames in the first window, 5 in the second, one in a partial third.
        for i in 0..10 {
            f.complete(i * 100, i * 100 + 50, false);
        }
        for i in 0..5 {
            f.complete(1_000 + i * 200, 1_000 + i * 200 + 150, i == 4);
        }
        f.complete(2_100, 2_200, false);
        let s = f.stats("r");
        assert_eq!(s.windows, 2);
        assert_eq!(s.frames, 16);
        assert_eq!(s.missed_deadlines, 1);
        assert!((s.fps_mean - 7.5e6).abs() < 1e-3, "{}", s.fps_mean);
        assert!((s.fps_stdev - 2.5e6).abs() < 1e-3);
    }
}
