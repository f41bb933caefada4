//! Accumulators the engine feeds while it runs, turned into [`crate::report`] figures at the
//! end.

use crate::report::{FrameStats, LatencyStats};

/// Every latency sample; percentiles by nearest rank after sorting.
#[derive(Clone, Debug, Default)]
pub struct LatencySamples {
    samples: Vec<u64>,
}

impl LatencySamples {
    /// Records one sample, ns.
    pub fn record(&mut self, ns: u64) {
        self.samples.push(ns);
    }

    /// Percentiles of everything recorded.
    pub fn stats(&mut self) -> LatencyStats {
        if self.samples.is_empty() {
            return LatencyStats::default();
        }
        self.samples.sort_unstable();
        let n = self.samples.len();
        let rank = |pct: usize| self.samples[((n * pct).div_ceil(100)).clamp(1, n) - 1];
        let sum: u128 = self.samples.iter().map(|&s| u128::from(s)).sum();
        LatencyStats {
            count: n as u64,
            p50_ns: rank(50),
            p99_ns: rank(99),
            max_ns: self.samples[n - 1],
            mean_ns: (sum / n as u128) as u64,
        }
    }
}

/// Frame completions of one frame task, counted per fixed window from its first release.
#[derive(Clone, Debug, Default)]
pub struct FrameCounter {
    first_release_ns: u64,
    window_ns: u64,
    per_window: Vec<u32>,
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
        let w = ((now_ns - self.first_release_ns) / self.window_ns) as usize;
        if self.per_window.len() <= w {
            self.per_window.resize(w + 1, 0);
        }
        self.per_window[w] += 1;
        self.frames += 1;
        self.missed += u64::from(missed);
        self.latency_sum += u128::from(now_ns - release_ns);
        self.last_completion_ns = now_ns;
    }

    /// The figures over every full window up to the last completion.
    pub fn stats(&self, task: &str) -> FrameStats {
        let full = ((self.last_completion_ns - self.first_release_ns.min(self.last_completion_ns))
            / self.window_ns) as usize;
        let scale = 1e9 / self.window_ns as f64;
        let fps: Vec<f64> = self.per_window[..full.min(self.per_window.len())]
            .iter()
            .map(|&n| f64::from(n) * scale)
            .collect();
        let (mean, stdev, min, max) = if fps.is_empty() {
            (0.0, 0.0, 0.0, 0.0)
        } else {
            let n = fps.len() as f64;
            let mean = fps.iter().sum::<f64>() / n;
            let var = fps.iter().map(|f| (f - mean) * (f - mean)).sum::<f64>() / n;
            let min = fps.iter().copied().fold(f64::INFINITY, f64::min);
            let max = fps.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            (mean, var.sqrt(), min, max)
        };
        FrameStats {
            task: task.to_owned(),
            frames: self.frames,
            missed_deadlines: self.missed,
            windows: fps.len(),
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
