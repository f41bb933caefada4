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
