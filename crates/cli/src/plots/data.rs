//! What the charts show, gathered from the engine's observer hooks as a replay runs and kept
//! in bounded form: occupancy in at most [`MAX_BUCKETS`] time buckets (two merge into one when
//! time outgrows them), latencies in a fixed log-scale histogram, frames as a count per window.

use hybridland_policy::Topology;
use hybridland_sim::{OccupancyRecord, Report, RunRecord, Trace};

/// Most time buckets per occupancy series.
pub(super) const MAX_BUCKETS: usize = 256;
/// Most fps windows per series: a window too short for the replay's span (`fps_window_ms=1`
/// with frames ending near the simulation's limit would ask for about 10^9) is doubled until
/// the series fits, so the chart's memory does not follow the input's times.
const MAX_FPS_WINDOWS: usize = 1 << 16;
/// Latency histogram: exact below 8 ns, then 8 buckets per power of two.
const LATENCY_BUCKETS: usize = 8 + 61 * 8;

/// Busy-CPU time per cluster integrated into time buckets that double in width when needed.
pub(super) struct Occupancy {
    pub(super) width_ns: u64,
    /// Per cluster: busy CPU-nanoseconds per bucket.
    pub(super) buckets: Vec<Vec<u128>>,
    /// Per cluster: busy CPUs now and since when.
    busy: Vec<(u32, u64)>,
}

impl Occupancy {
    fn new(clusters: usize) -> Self {
        Self {
            width_ns: 1_000_000,
            buckets: vec![vec![0; MAX_BUCKETS]; clusters],
            busy: vec![(0, 0); clusters],
        }
    }

    fn merge(&mut self) {
        for series in &mut self.buckets {
            for i in 0..MAX_BUCKETS / 2 {
                series[i] = series[2 * i] + series[2 * i + 1];
            }
            for b in &mut series[MAX_BUCKETS / 2..] {
                *b = 0;
            }
        }
        self.width_ns *= 2;
    }

    /// Integrates `cluster`'s current busy count up to `now`.
    fn advance(&mut self, cluster: usize, now: u64) {
        while now > self.width_ns.saturating_mul(MAX_BUCKETS as u64) {
            self.merge();
        }
        let (n, mut t) = self.busy[cluster];
        while t < now {
            let i = (t / self.width_ns) as usize;
            let end = now.min((i as u64 + 1) * self.width_ns);
            self.buckets[cluster][i.min(MAX_BUCKETS - 1)] += u128::from(n) * u128::from(end - t);
            t = end;
        }
        self.busy[cluster].1 = now;
    }

    fn record(&mut self, o: &OccupancyRecord) {
        if o.cluster < self.busy.len() {
            self.advance(o.cluster, o.now_ns);
            self.busy[o.cluster].0 = o.busy_cpus;
        }
    }
}

/// Frame completions per fps window of the first frame task.
pub(super) struct Frames {
    task: usize,
    start_ns: u64,
    pub(super) window_ns: u64,
    pub(super) per_window: Vec<u32>,
}

impl Frames {
    /// Counts a frame done at `end_ns`, widening the windows first if it falls past
    /// [`MAX_FPS_WINDOWS`] of them.
    fn count(&mut self, end_ns: u64) {
        let since = end_ns.saturating_sub(self.start_ns);
        while since / self.window_ns >= MAX_FPS_WINDOWS as u64 {
            self.window_ns = self.window_ns.saturating_mul(2);
            let merged: Vec<u32> = self
                .per_window
                .chunks(2)
                .map(|pair| pair.iter().fold(0u32, |a, n| a.saturating_add(*n)))
                .collect();
            self.per_window = merged;
        }
        let w = (since / self.window_ns) as usize;
        if self.per_window.len() <= w {
            self.per_window.resize(w + 1, 0);
        }
        self.per_window[w] = self.per_window[w].saturating_add(1);
    }
}

/// What one policy's replay looked like, for the charts.
pub(crate) struct PolicyPlot {
    pub(super) policy: String,
    pub(super) occupancy: Occupancy,
    pub(super) frames: Option<Frames>,
    pub(super) latency: Vec<u64>,
    pub(super) kinds: Vec<(String, u64)>,
    pub(super) cluster_names: Vec<String>,
    pub(super) end_ns: u64,
    /// The trace's and the machine's names, for the titles (from the report).
    pub(super) trace: String,
    pub(super) machine: String,
    /// The frame task `frames` counts, as the report names it.
    pub(super) frame_task: Option<String>,
}

impl PolicyPlot {
    pub(crate) fn new(policy: &str, topo: &Topology, trace: &Trace, fps_window_ns: u64) -> Self {
        // The chart's fps is the first frame task's, as the report's `fps`: the task index
        // counts copies.
        let mut index = 0usize;
        let mut frames = None;
        for spec in &trace.tasks {
            if spec.frames.is_some() {
                frames = Some(Frames {
                    task: index,
                    start_ns: spec.start_ns,
                    window_ns: fps_window_ns.max(1),
                    per_window: Vec::new(),
                });
                break;
            }
            index += spec.copies as usize;
        }
        let cluster_names = (0..topo.nr_clusters())
            .map(|c| {
                let first = topo.cluster_cpus(c).first().and_then(|cpu| topo.info(*cpu));
                format!("cluster {c} ({})", first.map_or("?", |i| i.kind.name()))
            })
            .collect();
        Self {
            policy: policy.to_owned(),
            occupancy: Occupancy::new(topo.nr_clusters()),
            frames,
            latency: vec![0; LATENCY_BUCKETS],
            kinds: Vec::new(),
            cluster_names,
            end_ns: 0,
            trace: String::new(),
            machine: String::new(),
            frame_task: None,
        }
    }

    pub(crate) fn run(&mut self, r: &RunRecord<'_>) {
        if let Some(ns) = r.latency_ns {
            self.latency[latency_bucket(ns)] += 1;
        }
        if let Some(f) = &mut self.frames
            && r.frame_done
            && r.task == f.task
        {
            f.count(r.end_ns);
        }
    }

    pub(crate) fn occupancy(&mut self, o: &OccupancyRecord) {
        self.occupancy.record(o);
    }

    /// Closes the series at the report's end and takes its per-kind busy time and the names
    /// the titles give.
    pub(crate) fn finish(&mut self, report: &Report) {
        self.end_ns = report.summary.makespan_ns;
        self.trace.clone_from(&report.trace);
        self.machine.clone_from(&report.machine);
        self.frame_task = report.fps.as_ref().map(|f| f.task.clone());
        for c in 0..self.occupancy.busy.len() {
            self.occupancy.advance(c, self.end_ns);
        }
        self.kinds = report
            .kinds
            .iter()
            .map(|k| (k.kind.clone(), k.busy_ns))
            .collect();
    }
}

/// Exact below 8 ns, then 8 buckets per power of two (12.5% wide at most).
fn latency_bucket(ns: u64) -> usize {
    if ns < 8 {
        return ns as usize;
    }
    let b = 63 - ns.leading_zeros() as usize;
    let mant = ((ns >> (b - 3)) & 7) as usize;
    (8 + (b - 3) * 8 + mant).min(LATENCY_BUCKETS - 1)
}

/// The largest latency a bucket holds.
fn latency_bucket_top(i: usize) -> u64 {
    if i < 8 {
        return i as u64;
    }
    let b = (i - 8) / 8 + 3;
    let mant = ((i - 8) % 8) as u128;
    let top = ((8 + mant + 1) << (b - 3)) - 1;
    u64::try_from(top).unwrap_or(u64::MAX)
}

/// One policy's latency CDF: `(latency in us, share of wake-ups served within it)`, rising
/// to exactly 1 at the largest latency; empty when the replay had no wake-up.
pub(super) fn cdf_points(latency: &[u64]) -> Vec<(f64, f64)> {
    let total: u64 = latency.iter().sum();
    let mut acc = 0u64;
    let mut points = Vec::new();
    for (i, n) in latency.iter().enumerate() {
        if *n == 0 {
            continue;
        }
        acc += n;
        points.push((
            latency_bucket_top(i) as f64 / 1e3,
            acc as f64 / total as f64,
        ));
    }
    points
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn a_window_too_short_for_the_span_is_widened_and_keeps_every_frame() {
        let mut f = Frames {
            task: 0,
            start_ns: 0,
            window_ns: 1_000_000,
            per_window: Vec::new(),
        };
        f.count(500_000);
        f.count(1_500_000);
        f.count(1_000_000_000_000_000);
        assert!(f.per_window.len() <= MAX_FPS_WINDOWS);
        assert!(f.window_ns > 1_000_000 && f.window_ns.is_multiple_of(1_000_000));
        assert_eq!(f.per_window.iter().sum::<u32>(), 3);
        // The two early frames share the first, widened window.
        assert_eq!(f.per_window[0], 2);
    }

    #[test]
    fn latency_buckets_hold_their_values() {
        for ns in [
            0u64,
            1,
            7,
            8,
            9,
            15,
            16,
            100,
            1_000,
            123_456,
            10_000_000_000,
            u64::MAX,
        ] {
            let i = latency_bucket(ns);
            assert!(latency_bucket_top(i) >= ns, "{ns} -> bucket {i}");
            if i > 0 {
                assert!(latency_bucket_top(i - 1) < ns, "{ns} -> bucket {i}");
            }
        }
    }

    #[test]
    fn the_cdf_ends_at_one_and_never_passes_it() {
        let mut latency = vec![0u64; LATENCY_BUCKETS];
        latency[0] = 3;
        latency[latency_bucket(1_500)] = 5;
        latency[latency_bucket(2_000_000)] = 1;
        let points = cdf_points(&latency);
        assert_eq!(points.len(), 3);
        assert!(
            points
                .windows(2)
                .all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1)
        );
        assert!(points.iter().all(|p| p.1 <= 1.0));
        assert_eq!(points.last().unwrap().1, 1.0);
        assert!(cdf_points(&vec![0; LATENCY_BUCKETS]).is_empty());
    }

    #[test]
    fn occupancy_integrates_and_merges_without_losing_time() {
        let mut o = Occupancy::new(1);
        let rec = |now_ns, busy_cpus| OccupancyRecord {
            now_ns,
            cluster: 0,
            busy_cpus,
            power_mw: 0,
        };
        o.record(&rec(0, 2));
        o.record(&rec(500_000_000, 1));
        o.advance(0, 1_000_000_000);
        // 2 CPUs for 0.5 s and 1 for 0.5 s, whatever the bucket width became.
        let total: u128 = o.buckets[0].iter().sum();
        assert_eq!(total, 1_500_000_000);
        assert!(o.width_ns * MAX_BUCKETS as u64 >= 1_000_000_000);
    }
}
