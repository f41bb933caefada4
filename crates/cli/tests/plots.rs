//! `replay --plot DIR`: every chart is an SVG that resvg renders to a non-empty PNG, with the
//! series the replay had.

use resvg::{tiny_skia, usvg};
use std::path::{Path, PathBuf};

mod common;
use common::hybrid_sim;

/// Renders an SVG (without text: no fonts are loaded) and counts the pixels that are neither
/// transparent nor white; the PNG goes beside it for a person to look at.
fn rendered_ink(svg_path: &Path) -> usize {
    let text = std::fs::read_to_string(svg_path).unwrap();
    let tree = usvg::Tree::from_str(&text, &usvg::Options::default())
        .unwrap_or_else(|e| panic!("{}: {e}", svg_path.display()));
    let size = tree.size().to_int_size();
    assert_eq!((size.width(), size.height()), (800, 480));
    let mut pixmap = tiny_skia::Pixmap::new(size.width(), size.height()).unwrap();
    resvg::render(&tree, tiny_skia::Transform::default(), &mut pixmap.as_mut());
    pixmap.save_png(svg_path.with_extension("png")).unwrap();
    pixmap
        .pixels()
        .iter()
        .filter(|p| p.alpha() > 0 && (p.red() < 250 || p.green() < 250 || p.blue() < 250))
        .count()
}

#[test]
fn every_chart_renders_with_ink_and_names_its_series() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("plots-webgl");
    let _ = std::fs::remove_dir_all(&dir);
    let o = hybrid_sim(&[
        "replay",
        "examples/traces/seed004-webgl.json",
        "--policy",
        "hybridland,spread",
        "--plot",
        dir.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let charts = [
        ("cpu-time-by-kind.svg", vec!["performance", "efficiency"]),
        (
            "cluster-occupancy-hybridland.svg",
            vec!["cluster 0 (performance)", "cluster 7 (efficiency)"],
        ),
        (
            "cluster-occupancy-spread.svg",
            vec!["cluster 6 (efficiency)"],
        ),
        ("fps.svg", vec!["hybridland", "spread"]),
        ("wakeup-latency-cdf.svg", vec!["hybridland", "spread"]),
    ];
    for (name, labels) in charts {
        let path = dir.join(name);
        let svg = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        for label in labels {
            assert!(svg.contains(label), "{name} has no series `{label}`");
        }
        let ink = rendered_ink(&path);
        // Axes, a legend box and at least one series: thousands of pixels on 800x480.
        assert!(ink > 2_000, "{name}: only {ink} non-white pixels");
    }
}

#[test]
fn no_frame_task_no_fps_chart() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("plots-openmp");
    let _ = std::fs::remove_dir_all(&dir);
    let o = hybrid_sim(&[
        "replay",
        "examples/traces/seed003-openmp.json",
        "--plot",
        dir.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!dir.join("fps.svg").exists());
    assert!(rendered_ink(&dir.join("wakeup-latency-cdf.svg")) > 2_000);
}

/// The text of every `<text>` element, trimmed.
fn texts(svg: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = svg;
    while let Some(start) = rest.find("<text") {
        let body = &rest[start..];
        let open_end = body.find('>').unwrap() + 1;
        let close = body.find("</text>").unwrap();
        out.push(body[open_end..close].trim().to_owned());
        rest = &body[close..];
    }
    out
}

/// Every element `<NAME ...>` of the SVG, as its tag text.
fn elements<'a>(svg: &'a str, name: &str) -> Vec<&'a str> {
    let open = format!("<{name} ");
    svg.match_indices(&open)
        .map(|(i, _)| {
            let end = svg[i..].find('>').unwrap();
            &svg[i..=i + end]
        })
        .collect()
}

fn attr<'a>(element: &'a str, name: &str) -> Option<&'a str> {
    let key = format!(" {name}=\"");
    let start = element.find(&key)? + key.len();
    let len = element[start..].find('"')?;
    Some(&element[start..start + len])
}

/// The series lines of a line chart (plotters draws axes and ticks 1 px wide, series 2 px or
/// wider, a line that another series draws over being wider).
fn series_lines(svg: &str) -> Vec<&str> {
    elements(svg, "polyline")
        .into_iter()
        .filter(|p| attr(p, "stroke-width").and_then(|w| w.parse::<u32>().ok()) >= Some(2))
        .collect()
}

/// A polyline's points, in pixels.
fn points(line: &str) -> Vec<(i64, i64)> {
    attr(line, "points")
        .unwrap()
        .split_whitespace()
        .map(|p| {
            let (x, y) = p.split_once(',').unwrap();
            (x.parse().unwrap(), y.parse().unwrap())
        })
        .collect()
}

fn replay_plots(dir_name: &str, args: &[&str]) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(dir_name);
    let _ = std::fs::remove_dir_all(&dir);
    let mut all = vec!["replay"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--plot", dir.to_str().unwrap()]);
    let o = hybrid_sim(&all);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    dir
}

#[test]
fn every_bar_group_has_one_label_and_every_kind_its_own_fill() {
    let policies = ["hybridland", "spread", "kernel-default", "capacity-blind"];
    let dir = replay_plots(
        "plots-groups",
        &[
            "examples/traces/seed000-10-threads.json",
            "--policy",
            &policies.join(","),
        ],
    );
    let svg = std::fs::read_to_string(dir.join("cpu-time-by-kind.svg")).unwrap();
    let texts = texts(&svg);
    for p in policies {
        let n = texts.iter().filter(|t| *t == p).count();
        assert_eq!(n, 1, "policy {p} labelled {n} times: {texts:?}");
    }
    // The bars: every filled rectangle that is not the white background or legend box.
    let fills: std::collections::BTreeMap<&str, usize> = elements(&svg, "rect")
        .into_iter()
        .filter_map(|r| attr(r, "fill"))
        .filter(|f| !["#FFFFFF", "#000000", "none"].contains(f))
        .fold(Default::default(), |mut m, f| {
            *m.entry(f).or_default() += 1;
            m
        });
    // Two kinds on the laptop: two fills, each on one bar per policy plus its legend swatch.
    assert_eq!(fills.len(), 2, "{fills:?}");
    assert!(
        fills.values().all(|n| *n == policies.len() + 1),
        "{fills:?}"
    );
}

#[test]
fn a_machine_of_twelve_clusters_gets_twelve_colours() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("plots-twelve");
    std::fs::create_dir_all(&dir).unwrap();
    let clusters: Vec<String> = (0..12)
        .map(|c| format!("\"{}-{}\"", c * 2, c * 2 + 1))
        .collect();
    let machine = dir.join("twelve.toml");
    std::fs::write(
        &machine,
        format!(
            "name = \"twelve\"\nclusters = [{}]\n\n[[cpus]]\nlist = \"0-23\"\n\
             kind = \"efficiency\"\ncapacity = 512\n",
            clusters.join(", ")
        ),
    )
    .unwrap();
    let out = replay_plots(
        "plots-twelve/charts",
        &[
            "examples/traces/seed003-openmp.json",
            "--topology",
            machine.to_str().unwrap(),
        ],
    );
    let svg = std::fs::read_to_string(out.join("cluster-occupancy-hybridland.svg")).unwrap();
    let lines = series_lines(&svg);
    assert_eq!(lines.len(), 12);
    let colours: std::collections::BTreeSet<&str> =
        lines.iter().filter_map(|l| attr(l, "stroke")).collect();
    assert_eq!(colours.len(), 12, "{colours:?}");
    // Idle clusters draw the same line: the legend names the one each is drawn over.
    assert!(
        texts(&svg)
            .iter()
            .any(|t| t.starts_with("cluster 11 (efficiency)"))
    );
}

#[test]
fn the_latency_cdf_has_decade_ticks_and_stays_within_one() {
    // 24 copies of mcf on TC2's 5 CPUs: most wake-ups wait, for milliseconds.
    let dir = replay_plots(
        "plots-cdf",
        &[
            "examples/traces/seed002-mcf-24.json",
            "--topology",
            "tc2",
            "--policy",
            "hybridland,spread",
        ],
    );
    let svg = std::fs::read_to_string(dir.join("wakeup-latency-cdf.svg")).unwrap();
    let texts = texts(&svg);
    let scale = |unit: &str| match unit {
        "ns" => 1e-3,
        "us" => 1.0,
        "ms" => 1e3,
        "s" => 1e6,
        other => panic!("unit {other}"),
    };
    let ticks: Vec<f64> = texts
        .iter()
        .filter_map(|t| {
            let (v, unit) = t.split_once(' ')?;
            let v: f64 = v.parse().ok()?;
            ["ns", "us", "ms", "s"]
                .contains(&unit)
                .then(|| v * scale(unit))
        })
        .collect();
    assert!(ticks.len() >= 2, "{texts:?}");
    for w in ticks.windows(2) {
        assert!(
            (w[1] / w[0] - 10.0).abs() < 1e-9,
            "ticks not a decade apart: {ticks:?}"
        );
    }
    assert!((ticks[0].log10() - ticks[0].log10().round()).abs() < 1e-9);
    // The share axis: 0.0 to 1.0, nothing above.
    let shares: Vec<f64> = texts.iter().filter_map(|t| t.parse().ok()).collect();
    assert_eq!(shares.iter().copied().fold(0.0, f64::max), 1.0, "{texts:?}");
    // Every point of every line lies at or below the 1.0 grid line (SVG y grows downwards).
    let top = elements(&svg, "line")
        .into_iter()
        .filter_map(|l| attr(l, "y1")?.parse::<i64>().ok())
        .min()
        .unwrap();
    let lines = series_lines(&svg);
    assert_eq!(lines.len(), 2);
    for l in lines {
        for (x, y) in points(l) {
            assert!(y >= top, "point {x},{y} above the 1.0 line at y={top}");
        }
    }
}

#[test]
fn the_latency_cdf_is_drawn_as_steps_and_every_title_names_trace_and_machine() {
    let dir = replay_plots(
        "plots-steps",
        &[
            "examples/traces/seed004-webgl.json",
            "--policy",
            "hybridland,spread",
        ],
    );
    let svg = std::fs::read_to_string(dir.join("wakeup-latency-cdf.svg")).unwrap();
    let lines = series_lines(&svg);
    assert_eq!(lines.len(), 2);
    for l in lines {
        let p = points(l);
        // spread's wake-ups wait 12 us on a P-core and 17 us on an E-core: two steps at least.
        let rises = p.windows(2).filter(|w| w[1].1 < w[0].1).count();
        assert!(rises >= 1, "no step: {p:?}");
        for w in p.windows(2) {
            let ((x0, y0), (x1, y1)) = (w[0], w[1]);
            // A histogram's CDF: flat, then straight up at a bucket's top; never a slope that
            // would draw latencies between buckets (SVG's y grows downwards).
            assert!(
                (y0 == y1 && x1 >= x0) || (x0 == x1 && y1 <= y0),
                "{:?} to {:?} is neither flat nor a rise: {p:?}",
                w[0],
                w[1]
            );
        }
    }
    // The title (the first text plotters writes) says what the chart shows, of which trace, on
    // which machine; so does every other chart's.
    let mut charts = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "svg") {
            let svg = std::fs::read_to_string(&path).unwrap();
            let title = texts(&svg).into_iter().next().unwrap_or_default();
            assert!(
                title.ends_with(": seed004-webgl on i7-13800h"),
                "{}: title `{title}`",
                path.display()
            );
            charts += 1;
        }
    }
    assert_eq!(charts, 5);
    let fps = std::fs::read_to_string(dir.join("fps.svg")).unwrap();
    assert!(
        texts(&fps)[0].starts_with("Frames per second of render:"),
        "{:?}",
        texts(&fps)
    );
}

#[test]
fn a_series_drawn_over_another_is_marked() {
    // kernel-default keeps every thread of the WebGL trace where hybridland does: the same fps
    // line, the same CDF.
    let dir = replay_plots(
        "plots-overlap",
        &[
            "examples/traces/seed004-webgl.json",
            "--policy",
            "hybridland,spread,kernel-default",
        ],
    );
    for chart in ["fps.svg", "wakeup-latency-cdf.svg"] {
        let svg = std::fs::read_to_string(dir.join(chart)).unwrap();
        let texts = texts(&svg);
        assert!(
            texts.contains(&"kernel-default, same as hybridland".to_owned()),
            "{chart}: {texts:?}"
        );
        // spread's line is its own, unmarked.
        assert!(texts.contains(&"spread".to_owned()), "{chart}: {texts:?}");
        // hybridland's line shows round kernel-default's, which is drawn over it.
        let lines = series_lines(&svg);
        assert_eq!(lines.len(), 3, "{chart}");
        let width = |l: &str| attr(l, "stroke-width").unwrap().parse::<u32>().unwrap();
        assert_eq!(points(lines[0]), points(lines[2]), "{chart}");
        assert!(width(lines[0]) > width(lines[2]), "{chart}");
        assert_eq!(width(lines[1]), 2, "{chart}");
    }
}

#[test]
fn the_documented_chart_is_what_the_tool_draws() {
    let committed = "docs/charts/seed004-webgl-cpu-time-by-kind.svg";
    let dir = replay_plots(
        "plots-docs",
        &[
            "examples/traces/seed004-webgl.json",
            "--policy",
            "hybridland,spread,kernel-default",
        ],
    );
    let drawn = std::fs::read_to_string(dir.join("cpu-time-by-kind.svg")).unwrap();
    let file = std::fs::read_to_string(common::root().join(committed)).unwrap();
    assert!(
        drawn == file,
        "{committed} is stale: copy {} over it",
        dir.join("cpu-time-by-kind.svg").display()
    );
    let doc = std::fs::read_to_string(common::root().join("docs/cli.md")).unwrap();
    let link = committed.strip_prefix("docs/").unwrap();
    assert!(
        doc.contains(&format!("]({link})")),
        "docs/cli.md shows no {committed}"
    );
}
