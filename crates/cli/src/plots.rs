//! `replay --plot DIR`: SVG charts of a replay for people who would rather look than read,
//! drawn with plotters' SVG backend (text as SVG `<text>`, no font files read):
//!
//! - `cpu-time-by-kind.svg`: CPU seconds per core kind, a group of bars per policy, each
//!   group labelled with its policy under it;
//! - `cluster-occupancy-POLICY.svg`: busy CPUs per L2 cluster over time, one line each;
//! - `fps.svg`: the first frame task's frames per second per fps window, a line per policy
//!   (only when the trace has a frame task);
//! - `wakeup-latency-cdf.svg`: the share of wake-ups served within a latency, a line per
//!   policy, on a log latency axis with a tick per decade and the share axis from 0 to 1.
//!
//! Within one chart no two series share a colour, however many there are ([`palette`]).
//! Each chart is drawn into memory and written in one go, so a write that fails is an
//! output error naming the file.
//!
//! The data comes from the engine's observer hooks as the replay runs and is kept in bounded
//! form: occupancy in at most [`MAX_BUCKETS`] time buckets (two merge into one when time
//! outgrows them), latencies in a fixed log-scale histogram, frames as a count per window.

use crate::failure::Failure;
use anyhow::anyhow;
use hybridland_policy::Topology;
use hybridland_sim::{OccupancyRecord, Report, RunRecord, Trace};
use plotters::prelude::*;
use std::path::Path;

/// Most time buckets per occupancy series.
const MAX_BUCKETS: usize = 256;
/// Most fps windows per series: a window too short for the replay's span (`fps_window_ms=1`
/// with frames ending near the simulation's limit would ask for about 10^9) is doubled until
/// the series fits, so the chart's memory does not follow the input's times.
const MAX_FPS_WINDOWS: usize = 1 << 16;
/// Latency histogram: exact below 8 ns, then 8 buckets per power of two.
const LATENCY_BUCKETS: usize = 8 + 61 * 8;

/// Tableau's ten categorical colours, used while a chart needs no more.
const TABLEAU: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// `n` colours, no two alike: Tableau's ten when they suffice, else hues spread evenly round
/// the wheel at three lightness levels (so neighbours in the legend differ in both), and any
/// two that still round to the same RGB value are pulled apart.
fn palette(n: usize) -> Vec<RGBColor> {
    if n <= TABLEAU.len() {
        return TABLEAU[..n].to_vec();
    }
    let mut out: Vec<RGBColor> = Vec::with_capacity(n);
    for i in 0..n {
        let hue = i as f64 * 360.0 / n as f64;
        let light = [0.45, 0.32, 0.58][i % 3];
        let mut c = hsl(hue, 0.7, light);
        while out.contains(&c) {
            c = RGBColor(c.0, c.1, c.2.wrapping_add(1));
        }
        out.push(c);
    }
    out
}

/// HSL (hue in degrees, saturation and lightness in 0..=1) to RGB.
fn hsl(hue: f64, sat: f64, light: f64) -> RGBColor {
    let chroma = (1.0 - (2.0 * light - 1.0).abs()) * sat;
    let h = (hue % 360.0) / 60.0;
    let x = chroma * (1.0 - (h % 2.0 - 1.0).abs());
    let (r, g, b) = match h as u32 {
        0 => (chroma, x, 0.0),
        1 => (x, chroma, 0.0),
        2 => (0.0, chroma, x),
        3 => (0.0, x, chroma),
        4 => (x, 0.0, chroma),
        _ => (chroma, 0.0, x),
    };
    let m = light - chroma / 2.0;
    let byte = |v: f64| ((v + m) * 255.0).round().clamp(0.0, 255.0) as u8;
    RGBColor(byte(r), byte(g), byte(b))
}

/// Busy-CPU time per cluster integrated into time buckets that double in width when needed.
struct Occupancy {
    width_ns: u64,
    /// Per cluster: busy CPU-nanoseconds per bucket.
    buckets: Vec<Vec<u128>>,
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
struct Frames {
    task: usize,
    start_ns: u64,
    window_ns: u64,
    per_window: Vec<u32>,
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
    policy: String,
    occupancy: Occupancy,
    frames: Option<Frames>,
    latency: Vec<u64>,
    kinds: Vec<(String, u64)>,
    cluster_names: Vec<String>,
    end_ns: u64,
}

impl PolicyPlot {
    pub(crate) fn new(policy: &str, topo: &Topology, trace: &Trace, fps_window_ns: u64) -> Self {
        // The report's fps is the first frame task's: the task index counts copies.
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
        }
    }

    pub(crate) fn run(&mut self, r: &RunRecord<'_>) {
        if let Some(ns) = r.latency_ns {
            self.latency[latency_bucket(ns)] += 1;
        }
        if let Some(f) = &mut self.frames {
            if r.frame_done && r.task == f.task {
                f.count(r.end_ns);
            }
        }
    }

    pub(crate) fn occupancy(&mut self, o: &OccupancyRecord) {
        self.occupancy.record(o);
    }

    /// Closes the series at the report's end and takes its per-kind busy time.
    pub(crate) fn finish(&mut self, report: &Report) {
        self.end_ns = report.summary.makespan_ns;
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

/// Creates `dir` (and its parents) if missing: done before any replay runs, so a `--plot`
/// that cannot be written costs nothing first.
pub(crate) fn create_dir(dir: &Path) -> Result<(), Failure> {
    std::fs::create_dir_all(dir)
        .map_err(|e| Failure::Output(anyhow!("{}: cannot create: {e}", dir.display())))
}

/// Writes every chart into `dir` (created if missing); returns the files written.
pub(crate) fn write_all(dir: &Path, plots: &[PolicyPlot]) -> Result<Vec<String>, Failure> {
    create_dir(dir)?;
    let mut written = Vec::new();
    let mut out = |name: String, draw: &dyn Fn(&mut String) -> anyhow::Result<()>| {
        let path = dir.join(&name);
        let mut svg = String::new();
        draw(&mut svg)
            .map_err(|e| Failure::Internal(anyhow!("{}: cannot draw: {e:#}", path.display())))?;
        crate::output::write_file(&path, &svg)?;
        written.push(name);
        Ok::<(), Failure>(())
    };
    out("cpu-time-by-kind.svg".into(), &|svg| cpu_time(svg, plots))?;
    for plot in plots {
        out(
            format!("cluster-occupancy-{}.svg", file_part(&plot.policy)),
            &|svg| occupancy(svg, plot),
        )?;
    }
    if plots.iter().any(|p| p.frames.is_some()) {
        out("fps.svg".into(), &|svg| fps(svg, plots))?;
    }
    out("wakeup-latency-cdf.svg".into(), &|svg| {
        latency_cdf(svg, plots)
    })?;
    Ok(written)
}

/// A policy name as a file name part: `hybridland:primary_domain=powersave` ->
/// `hybridland_primary_domain_powersave`.
fn file_part(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn err<E: core::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow::anyhow!("{e:?}")
}

/// Chart size in pixels.
const SIZE: (u32, u32) = (800, 480);

/// The bar chart's x axis: group `i` spans `i..i + 1`, with its one tick (and so its one
/// label) at the middle. Plotters' own ticks fall where round numbers are, which labelled only
/// the first group.
struct GroupAxis {
    groups: usize,
}

impl Ranged for GroupAxis {
    type FormatOption = plotters::coord::ranged1d::DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let span = f64::from(limit.1 - limit.0);
        limit.0 + (value / self.groups.max(1) as f64 * span).round() as i32
    }

    fn key_points<Hint: plotters::coord::ranged1d::KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            return Vec::new();
        }
        (0..self.groups).map(|i| i as f64 + 0.5).collect()
    }

    fn range(&self) -> core::ops::Range<f64> {
        0.0..self.groups.max(1) as f64
    }
}

fn cpu_time(svg: &mut String, plots: &[PolicyPlot]) -> anyhow::Result<()> {
    let kinds: Vec<String> = plots
        .first()
        .map(|p| p.kinds.iter().map(|k| k.0.clone()).collect())
        .unwrap_or_default();
    let nk = kinds.len().max(1);
    let max_s = plots
        .iter()
        .flat_map(|p| p.kinds.iter().map(|k| k.1 as f64 / 1e9))
        .fold(0.0f64, f64::max)
        .max(1e-9);
    let root = SVGBackend::with_string(svg, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let n = plots.len();
    let mut chart = ChartBuilder::on(&root)
        .caption("CPU time per core kind", ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(48)
        .y_label_area_size(60)
        .build_cartesian_2d(GroupAxis { groups: n }, 0f64..max_s * 1.4)
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_label_formatter(&|x| {
            let i = x.floor() as usize;
            plots.get(i).map_or_else(String::new, |p| p.policy.clone())
        })
        .x_desc("policy")
        .y_desc("CPU seconds")
        .draw()
        .map_err(err)?;
    let colours = palette(kinds.len());
    for (k, kind) in kinds.iter().enumerate() {
        let c = colours[k];
        let bar_w = 0.8 / nk as f64;
        chart
            .draw_series(plots.iter().enumerate().map(|(i, p)| {
                let secs = p.kinds.get(k).map_or(0.0, |x| x.1 as f64 / 1e9);
                let x0 = i as f64 + 0.1 + k as f64 * bar_w;
                Rectangle::new([(x0, 0.0), (x0 + bar_w * 0.9, secs)], c.filled())
            }))
            .map_err(err)?
            .label(kind.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], c.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)?;
    Ok(())
}

fn occupancy(svg: &mut String, plot: &PolicyPlot) -> anyhow::Result<()> {
    let occ = &plot.occupancy;
    let used = ((plot.end_ns.div_ceil(occ.width_ns)) as usize).clamp(1, MAX_BUCKETS);
    let series: Vec<Vec<(f64, f64)>> = occ
        .buckets
        .iter()
        .map(|b| {
            (0..used)
                .map(|i| {
                    let start = i as u64 * occ.width_ns;
                    let len = plot
                        .end_ns
                        .min(start + occ.width_ns)
                        .saturating_sub(start)
                        .max(1);
                    let mid_s = (start as f64 + len as f64 / 2.0) / 1e9;
                    (mid_s, b[i] as f64 / len as f64)
                })
                .collect()
        })
        .collect();
    let max_y = series
        .iter()
        .flatten()
        .map(|p| p.1)
        .fold(0.0f64, f64::max)
        .max(1.0);
    let end_s = (plot.end_ns as f64 / 1e9).max(1e-9);
    let series = series
        .into_iter()
        .zip(&plot.cluster_names)
        .map(|(points, name)| (name.clone(), points))
        .collect();
    let spec = Lines {
        title: format!("Busy CPUs per cluster: {}", plot.policy),
        x_desc: "time (s)",
        y_desc: "busy CPUs (bucket average)",
        x_max: end_s,
        y_max: max_y * 1.5,
    };
    line_chart(svg, &spec, series)
}

fn fps(svg: &mut String, plots: &[PolicyPlot]) -> anyhow::Result<()> {
    let series: Vec<(String, Vec<(f64, f64)>)> = plots
        .iter()
        .filter_map(|p| {
            let f = p.frames.as_ref()?;
            let scale = 1e9 / f.window_ns as f64;
            let w_s = f.window_ns as f64 / 1e9;
            Some((
                p.policy.clone(),
                f.per_window
                    .iter()
                    .enumerate()
                    .map(|(i, n)| ((i as f64 + 0.5) * w_s, f64::from(*n) * scale))
                    .collect(),
            ))
        })
        .collect();
    let max_x = series
        .iter()
        .flat_map(|s| s.1.iter().map(|p| p.0))
        .fold(0.0f64, f64::max)
        .max(1.0);
    let max_y = series
        .iter()
        .flat_map(|s| s.1.iter().map(|p| p.1))
        .fold(0.0f64, f64::max)
        .max(1.0);
    let spec = Lines {
        title: "Frames per second".to_owned(),
        x_desc: "time (s)",
        y_desc: "fps (per window)",
        x_max: max_x * 1.02,
        y_max: max_y * 1.3,
    };
    line_chart(svg, &spec, series)
}

/// One policy's latency CDF: `(latency in us, share of wake-ups served within it)`, rising
/// to exactly 1 at the largest latency; empty when the replay had no wake-up.
fn cdf_points(latency: &[u64]) -> Vec<(f64, f64)> {
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

/// The decades a log axis shows for latencies up to `max_us`, the smallest positive one
/// being `min_us`: from the decade at or below `min_us` to the one at or above `max_us`, at
/// least one decade wide, and never below 1 ns.
fn decades(min_us: f64, max_us: f64) -> Vec<f64> {
    let lo = min_us.max(1e-3).log10().floor() as i32;
    let hi = (max_us.max(min_us).log10().ceil() as i32).max(lo + 1);
    (lo..=hi).map(|e| 10f64.powi(e)).collect()
}

/// A decade as a tick label: `1 ns`, `10 us`, `1 ms`, `10 s`.
fn decade_label(us: f64) -> String {
    let (value, unit) = if us >= 1e6 {
        (us / 1e6, "s")
    } else if us >= 1e3 {
        (us / 1e3, "ms")
    } else if us >= 1.0 {
        (us, "us")
    } else {
        (us * 1e3, "ns")
    };
    format!("{} {unit}", value.round() as u64)
}

fn latency_cdf(svg: &mut String, plots: &[PolicyPlot]) -> anyhow::Result<()> {
    let series: Vec<(String, Vec<(f64, f64)>)> = plots
        .iter()
        .map(|p| (p.policy.clone(), cdf_points(&p.latency)))
        .collect();
    let positive = || {
        series
            .iter()
            .flat_map(|s| s.1.iter().map(|p| p.0))
            .filter(|x| *x > 0.0)
    };
    let min_us = positive().fold(f64::INFINITY, f64::min);
    let max_us = positive().fold(0.0f64, f64::max);
    let ticks = if min_us.is_finite() {
        decades(min_us, max_us)
    } else {
        // Every wake-up served at once: one decade around 1 us shows the step at the left.
        vec![0.1, 1.0]
    };
    let (x_lo, x_hi) = (ticks[0], ticks[ticks.len() - 1]);
    // Light grid lines at 2x..9x each decade, the look of log paper.
    let minor: Vec<f64> = ticks
        .iter()
        .flat_map(|d| (2..10).map(move |m| d * f64::from(m)))
        .filter(|x| *x < x_hi)
        .collect();
    let root = SVGBackend::with_string(svg, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption("Wake-up latency CDF", ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d(
            (x_lo..x_hi)
                .log_scale()
                .with_key_points(ticks)
                .with_light_points(minor),
            0f64..1f64,
        )
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_label_formatter(&|x| decade_label(*x))
        .y_label_formatter(&|y| format!("{y:.1}"))
        .x_desc("wake-up latency (log scale; no wait at the left edge)")
        .y_desc("share of wake-ups served within")
        .draw()
        .map_err(err)?;
    let colours = palette(series.len());
    for (i, (name, points)) in series.into_iter().enumerate() {
        let col = colours[i];
        // A wake-up served at once (0 ns) has no place on a log axis: it counts at the left
        // edge, where the line starts.
        let mut line = Vec::with_capacity(points.len() + 1);
        let at_edge = points
            .iter()
            .take_while(|p| p.0 <= x_lo)
            .map(|p| p.1)
            .last()
            .unwrap_or(0.0);
        line.push((x_lo, at_edge));
        line.extend(points.into_iter().filter(|p| p.0 > x_lo));
        // A CDF stays flat after its last sample: drawn to the right edge, so a policy whose
        // every wake-up was served at once shows as a line along 1.
        if let Some(&(x, y)) = line.last() {
            if x < x_hi && y > 0.0 {
                line.push((x_hi, y));
            }
        }
        let label = if line.len() == 1 && at_edge == 0.0 {
            format!("{name} (no wake-ups)")
        } else {
            name
        };
        chart
            .draw_series(LineSeries::new(line, col.stroke_width(2)))
            .map_err(err)?
            .label(label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], col));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)?;
    Ok(())
}

/// A line chart's title and axes; both axes start at 0.
struct Lines {
    title: String,
    x_desc: &'static str,
    y_desc: &'static str,
    x_max: f64,
    y_max: f64,
}

/// Draws one line per named series, with a legend.
fn line_chart(
    svg: &mut String,
    spec: &Lines,
    series: Vec<(String, Vec<(f64, f64)>)>,
) -> anyhow::Result<()> {
    let root = SVGBackend::with_string(svg, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(&spec.title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d(0f64..spec.x_max, 0f64..spec.y_max)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc(spec.x_desc)
        .y_desc(spec.y_desc)
        .draw()
        .map_err(err)?;
    let colours = palette(series.len());
    for (i, (name, points)) in series.into_iter().enumerate() {
        let col = colours[i];
        chart
            .draw_series(LineSeries::new(points, col.stroke_width(2)))
            .map_err(err)?
            .label(name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], col));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)?;
    Ok(())
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
        assert!(f.window_ns > 1_000_000 && f.window_ns % 1_000_000 == 0);
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
    fn palettes_never_repeat_a_colour() {
        for n in 0..=1100 {
            let p = palette(n);
            assert_eq!(p.len(), n);
            let distinct: std::collections::BTreeSet<(u8, u8, u8)> =
                p.iter().map(|c| (c.0, c.1, c.2)).collect();
            assert_eq!(distinct.len(), n, "{n} colours");
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
    fn decades_cover_the_data() {
        assert_eq!(
            decades(1.5, 2000.0),
            vec![1.0, 10.0, 100.0, 1000.0, 10000.0]
        );
        assert_eq!(decades(10.0, 10.0), vec![10.0, 100.0]);
        assert_eq!(decade_label(0.01), "10 ns");
        assert_eq!(decade_label(100.0), "100 us");
        assert_eq!(decade_label(1e4), "10 ms");
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
