//! The charts drawn from the replays' data with plotters' SVG backend: CPU time per core
//! kind as grouped bars, busy CPUs per cluster and frames per second as lines, and the wake-up
//! latency CDF on a log axis.

use super::PolicyPlot;
use super::colours::palette;
use super::data::{MAX_BUCKETS, cdf_points};
use plotters::coord::Shift;
use plotters::prelude::*;

fn err<E: core::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow::anyhow!("{e:?}")
}

/// A chart's title: what it shows, then the trace and the machine the replays ran
/// (`Wake-up latency CDF: seed004-webgl on i7-13800h`). Every policy of a chart replayed the
/// same trace on the same machine.
pub(super) fn title(what: &str, plots: &[PolicyPlot]) -> String {
    match plots.first() {
        Some(p) => format!("{what}: {} on {}", p.trace, p.machine),
        None => what.to_owned(),
    }
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

pub(super) fn cpu_time(svg: &mut String, plots: &[PolicyPlot]) -> anyhow::Result<()> {
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
        .caption(title("CPU time per core kind", plots), ("sans-serif", 22))
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
    legend_and_present(&root, &mut chart, SeriesLabelPosition::UpperRight)
}

pub(super) fn occupancy(svg: &mut String, plot: &PolicyPlot) -> anyhow::Result<()> {
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
        title: title(
            &format!("Busy CPUs per cluster under {}", plot.policy),
            core::slice::from_ref(plot),
        ),
        x_desc: "time (s)",
        y_desc: "busy CPUs (bucket average)",
        x_max: end_s,
        y_max: max_y * 1.5,
    };
    line_chart(svg, &spec, series)
}

pub(super) fn fps(svg: &mut String, plots: &[PolicyPlot]) -> anyhow::Result<()> {
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
        title: title(
            &match plots.iter().find_map(|p| p.frame_task.as_deref()) {
                Some(task) => format!("Frames per second of {task}"),
                None => "Frames per second".to_owned(),
            },
            plots,
        ),
        x_desc: "time (s)",
        y_desc: "fps (per window)",
        x_max: max_x * 1.02,
        y_max: max_y * 1.3,
    };
    line_chart(svg, &spec, series)
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

pub(super) fn latency_cdf(svg: &mut String, plots: &[PolicyPlot]) -> anyhow::Result<()> {
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
        .caption(title("Wake-up latency CDF", plots), ("sans-serif", 22))
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
    let mut lines = Vec::with_capacity(series.len());
    for (name, points) in series {
        let line = cdf_steps(&points, x_lo, x_hi);
        let label = if line.len() == 1 && line[0].1 == 0.0 {
            format!("{name} (no wake-ups)")
        } else {
            name
        };
        lines.push((label, line));
    }
    draw_lines(&mut chart, lines)?;
    legend_and_present(&root, &mut chart, SeriesLabelPosition::LowerRight)
}

/// One policy's CDF as the line drawn: a step function. The histogram knows the share served
/// within each bucket's top and nothing between tops, so the line stays flat up to a bucket's
/// top and rises there (drawing no wake-up sooner than it was served); joining the tops with
/// slopes would draw latencies that never happened. A wake-up served at once (0 ns) has no
/// place on a log axis: it counts at the left edge `x_lo`, where the line starts. After its
/// last sample a CDF stays flat: drawn to the right edge `x_hi`, so a policy whose every
/// wake-up was served at once shows as a line along 1.
pub(super) fn cdf_steps(points: &[(f64, f64)], x_lo: f64, x_hi: f64) -> Vec<(f64, f64)> {
    let at_edge = points
        .iter()
        .take_while(|p| p.0 <= x_lo)
        .map(|p| p.1)
        .last()
        .unwrap_or(0.0);
    let mut line = Vec::with_capacity(2 * points.len() + 2);
    line.push((x_lo, at_edge));
    let mut share = at_edge;
    for &(x, y) in points.iter().filter(|p| p.0 > x_lo) {
        line.push((x, share));
        line.push((x, y));
        share = y;
    }
    if let Some(&(x, y)) = line.last()
        && x < x_hi
        && y > 0.0
    {
        line.push((x_hi, y));
    }
    line
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
    draw_lines(&mut chart, series)?;
    legend_and_present(&root, &mut chart, SeriesLabelPosition::UpperRight)
}

/// A series' line as drawn: its points in pixels, with repeats and points in the middle of a
/// straight run left out, so two series that draw the same line compare equal.
fn drawn_path<X, Y>(
    chart: &ChartContext<'_, SVGBackend<'_>, Cartesian2d<X, Y>>,
    points: &[(f64, f64)],
) -> Vec<(i32, i32)>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    let mut path: Vec<(i32, i32)> = Vec::with_capacity(points.len());
    for p in points {
        let c = chart.backend_coord(p);
        if path.last() == Some(&c) {
            continue;
        }
        // b between a and c on one straight line: a to c draws it already.
        if let [.., a, b] = path[..] {
            let (d1, d2) = ((b.0 - a.0, b.1 - a.1), (c.0 - b.0, c.1 - b.1));
            let cross = i64::from(d1.0) * i64::from(d2.1) - i64::from(d1.1) * i64::from(d2.0);
            let ahead = i64::from(d1.0) * i64::from(d2.0) + i64::from(d1.1) * i64::from(d2.1);
            if cross == 0 && ahead > 0 {
                path.pop();
            }
        }
        path.push(c);
    }
    path
}

/// For each series, the earlier series whose line it draws exactly (same pixels), if any.
pub(super) fn same_as(paths: &[Vec<(i32, i32)>]) -> Vec<Option<usize>> {
    paths
        .iter()
        .enumerate()
        .map(|(i, p)| paths[..i].iter().position(|q| q == p))
        .collect()
}

/// Stroke width of a line: 2 px, wider for a line that later series draw over exactly, so
/// its colour shows round theirs as a border (3 px more per line drawn over it, up to three).
fn stroke_width(index: usize, same: &[Option<usize>]) -> u32 {
    let group = same[index].unwrap_or(index);
    let over = same[index + 1..]
        .iter()
        .filter(|s| **s == Some(group))
        .count();
    2 + 3 * over.min(3) as u32
}

/// Draws one line per named series in colours of their own, with a legend. A series whose line
/// is the same as an earlier one's (an identical CDF, two idle clusters) would hide it: the
/// earlier is drawn wider so it shows as a border, and the legend says
/// `NAME, same as EARLIER`.
fn draw_lines<X, Y>(
    chart: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<X, Y>>,
    series: Vec<(String, Vec<(f64, f64)>)>,
) -> anyhow::Result<()>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    let paths: Vec<Vec<(i32, i32)>> = series.iter().map(|s| drawn_path(chart, &s.1)).collect();
    let same = same_as(&paths);
    let names: Vec<String> = series.iter().map(|s| s.0.clone()).collect();
    let colours = palette(series.len());
    for (i, (name, points)) in series.into_iter().enumerate() {
        let colour = colours[i];
        let label = match same[i] {
            Some(j) => format!("{name}, same as {}", names[j]),
            None => name,
        };
        chart
            .draw_series(LineSeries::new(
                points,
                colour.stroke_width(stroke_width(i, &same)),
            ))
            .map_err(err)?
            .label(label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], colour));
    }
    Ok(())
}

/// The tail every chart shares: the legend of its labelled series at `position`, on a
/// translucent white box with a black border, then the SVG completed.
fn legend_and_present<'a, 'b: 'a, CT: CoordTranslate>(
    root: &DrawingArea<SVGBackend<'b>, Shift>,
    chart: &mut ChartContext<'a, SVGBackend<'b>, CT>,
    position: SeriesLabelPosition,
) -> anyhow::Result<()> {
    chart
        .configure_series_labels()
        .position(position)
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
    fn the_cdf_rises_only_at_bucket_tops() {
        let points = [(0.0, 0.25), (12.3, 0.5), (17.0, 1.0)];
        let line = cdf_steps(&points, 1.0, 100.0);
        assert_eq!(
            line,
            vec![
                (1.0, 0.25),
                (12.3, 0.25),
                (12.3, 0.5),
                (17.0, 0.5),
                (17.0, 1.0),
                (100.0, 1.0)
            ]
        );
        // Every segment is flat or upright.
        assert!(
            line.windows(2)
                .all(|w| w[0].0 == w[1].0 || w[0].1 == w[1].1)
        );
        assert_eq!(cdf_steps(&[], 1.0, 10.0), vec![(1.0, 0.0)]);
    }

    #[test]
    fn a_line_drawn_over_another_is_named_and_the_other_shows_round_it() {
        let paths = vec![
            vec![(0, 0), (5, 5)],
            vec![(0, 0), (5, 6)],
            vec![(0, 0), (5, 5)],
            vec![(0, 0), (5, 5)],
        ];
        let same = same_as(&paths);
        assert_eq!(same, vec![None, None, Some(0), Some(0)]);
        let widths: Vec<u32> = (0..4).map(|i| stroke_width(i, &same)).collect();
        assert_eq!(widths, vec![8, 2, 5, 2]);
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
}
