//! Seed 002's figures: copies of mcf sharing L2 clusters, with cluster balance on and off.

use super::util::{load_trace, pct_slower, replay};
use super::{Figure, Status, fig};
use hybridland_sim::presets;

fn mcf_makespan(copies: usize, knobs: &[&str]) -> u64 {
    let trace = load_trace(&format!("seed002-mcf-{copies}.json"));
    replay(&trace, "hybridland", knobs, None)
        .summary
        .makespan_ns
}

pub(super) fn seed_002() -> Vec<Figure> {
    let l2 = presets::lookup("atom24").unwrap().model.l2_contention_pct;
    let gain = |copies: usize| {
        pct_slower(
            mcf_makespan(copies, &["cluster_balance=off"]),
            mcf_makespan(copies, &["cluster_balance=on"]),
        )
    };
    let (g1, g6, g12, g24) = (gain(1), gain(6), gain(12), gain(24));
    // Against the kernel's path, whose fork placement follows the launcher's CPU (drawn from
    // the seed): the trace's seed, and the mean over 100.
    let kernel_gain = |copies: usize, seed: Option<u64>| {
        let trace = load_trace(&format!("seed002-mcf-{copies}.json"));
        pct_slower(
            replay(&trace, "kernel-default", &[], seed)
                .summary
                .makespan_ns,
            mcf_makespan(copies, &["cluster_balance=on"]),
        )
    };
    let k: Vec<String> = [1, 6, 12, 24]
        .iter()
        .map(|&n| format!("{:+.1}% at {n}", kernel_gain(n, None)))
        .collect();
    let k6: Vec<f64> = (0..100).map(|seed| kernel_gain(6, Some(seed))).collect();
    let (k6_min, k6_max) = k6
        .iter()
        .fold((f64::MAX, f64::MIN), |(lo, hi), g| (lo.min(*g), hi.max(*g)));
    let k6_mean = k6.iter().sum::<f64>() / k6.len() as f64;
    let auto_matches = [1, 6, 12, 24].iter().all(|&n| {
        mcf_makespan(n, &["cluster_balance=auto"]) == mcf_makespan(n, &["cluster_balance=on"])
    });
    let ends = if format!("{g1:.1}") == format!("{g24:.1}") {
        format!("{g1:+.1}% at 1 and 24")
    } else {
        format!("{g1:+.1}% at 1, {g24:+.1}% at 24")
    };
    vec![
        fig(
            "002",
            "cluster balance on 24 Atoms: +25.1% at 6 copies",
            format!("{g6:+.1}% at 6"),
            Status::Calibrated,
            format!(
                "`l2_contention_pct = {l2}` was chosen from it: off packs 4 copies in a cluster (3 co-runners x {l2}%), on gives each its own"
            ),
        ),
        fig(
            "002",
            "+18.8% at 12",
            format!("{g12:+.1}% at 12"),
            Status::Predicted,
            format!("(1 + 3 x {l2}%) / (1 + {l2}%): 4 per cluster against 2"),
        ),
        fig(
            "002",
            "-0.1% at 1, +0.3% at 24",
            ends,
            Status::Predicted,
            "0 for any `l2_contention_pct`: one copy has nobody to collide with, 24 fill every cluster either way",
        ),
        fig(
            "002",
            "(an automatic mode should take the gain and skip full load)",
            if auto_matches {
                "`auto` matches `on` at 1, 6, 12 and 24".to_owned()
            } else {
                "`auto` differs from `on`".to_owned()
            },
            Status::ByConstruction,
            "auto balances while fewer than 75% of CPUs are busy",
        ),
        fig(
            "002",
            "the same, against the baseline kernel",
            format!(
                "`on` against `kernel-default`: {}; at 6 over 100 seeds {k6_min:+.1}% to {k6_max:+.1}%, mean {k6_mean:+.1}%",
                k.join(", ")
            ),
            Status::Predicted,
            format!(
                "the kernel's fork path fills consecutive CPUs from the launcher's, so 6 copies span 2 or 3 clusters; `l2_contention_pct = {l2}` sets the size"
            ),
        ),
    ]
}
