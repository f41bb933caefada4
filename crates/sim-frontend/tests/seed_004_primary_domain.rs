//! Seed 004, scx_bpfland's `--primary-domain`: a steady WebGL render loop on an i7-13800H ran
//! 33.5 fps (stdev 0.29, 3.5 W) on P-cores only, 31.0 fps (stdev 1.73, 3.5 W) spread over all
//! cores by EEVDF and 25.5 fps (2.2 W) on E-cores only. Acceptance: primary domain
//! `performance` gives higher, steadier fps than `spread`; `powersave` gives lower fps and at
//! least 30% lower power.

mod util;

use util::{load_trace, replay};

#[test]
fn performance_domain_is_faster_and_steadier_powersave_is_frugal() {
    let trace = load_trace("seed004-webgl.json");
    let perf = replay(&trace, "hybridland", &["primary_domain=performance"], None);
    let save = replay(&trace, "hybridland", &["primary_domain=powersave"], None);
    let spread = replay(&trace, "spread", &[], None);
    for (name, r) in [
        ("performance", &perf),
        ("spread", &spread),
        ("powersave", &save),
    ] {
        let f = r.fps.as_ref().expect("the trace has a render loop");
        println!(
            "seed 004: {name:11}: {:.1} fps (min {:.0}, max {:.0}, stdev {:.2}), {} missed, {:.2} W",
            f.fps_mean,
            f.fps_min,
            f.fps_max,
            f.fps_stdev,
            f.missed_deadlines,
            r.summary.avg_power_w
        );
        assert!(f.windows >= 15, "{name}: {} windows", f.windows);
    }
    let (p, s, e) = (
        perf.fps.as_ref().unwrap(),
        spread.fps.as_ref().unwrap(),
        save.fps.as_ref().unwrap(),
    );
    assert!(
        p.fps_mean > s.fps_mean,
        "performance {} <= spread {}",
        p.fps_mean,
        s.fps_mean
    );
    assert!(p.fps_stdev < s.fps_stdev, "performance is not steadier");
    assert_eq!(p.missed_deadlines, 0);
    assert!(e.fps_mean < p.fps_mean);
    assert!(
        save.summary.avg_power_w <= 0.7 * perf.summary.avg_power_w,
        "powersave {:.2} W vs performance {:.2} W",
        save.summary.avg_power_w,
        perf.summary.avg_power_w
    );
    // The render thread really lives on the domain's cores.
    let render = |r: &hybridland_sim::Report| r.task("render").unwrap().clone();
    assert_eq!(render(&perf).ran_efficiency_ns, 0);
    assert_eq!(render(&save).ran_performance_ns, 0);
    let mixed = render(&spread);
    assert!(mixed.ran_performance_ns > 0 && mixed.ran_efficiency_ns > 0);
}
