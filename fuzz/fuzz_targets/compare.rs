//! `hybrid-sim compare`'s core: a replay of a small arbitrary trace on a preset beside an
//! arbitrary live-figures file (raw text, or figures built from the input and written as the
//! recorder writes them, so the checks past the parser are reached: many kinds, clusters and
//! steps, counts and busy times up to `u64::MAX`). A file the parser accepts compares without
//! a panic: shares are finite percentages that add up to 100 (or are all 0), every
//! difference is `sim - live`, a ratio exactly when the live figure is not 0, one occupancy
//! row per cluster of the replay, placement rows exactly when both sides placed tasks.
#![no_main]

use arbitrary::Arbitrary;
use hybridland_fuzz::small_trace::{SmallTrace, preset_machine, read_trace};
use hybridland_sim::{Knobs, LiveStats, SimOptions, compare::compare};
use libfuzzer_sys::fuzz_target;
use serde_json::json;

/// Copies one task entry may ask for: the comparison is the subject, not the task limit
/// (the `replay` target reaches that).
const MAX_COPIES: usize = 256;

/// Events the replay may take: the comparison is the subject, not the engine.
const MAX_EVENTS: u64 = 5_000;

#[derive(Debug, Arbitrary)]
enum Big {
    Small(u16),
    Any(u64),
    Max,
}

impl Big {
    fn get(&self) -> u64 {
        match self {
            Self::Small(v) => u64::from(*v),
            Self::Any(v) => *v,
            Self::Max => u64::MAX,
        }
    }
}

#[derive(Debug, Arbitrary)]
struct LiveIn {
    window: Big,
    kinds: Vec<(u8, Big, Big)>,
    clusters: Vec<(u8, u8, u8, Big)>,
    steps: Vec<(u8, Big, Big)>,
    migrations: Big,
    capped: bool,
    settings: Vec<String>,
}

#[derive(Debug, Arbitrary)]
enum LiveText {
    Raw(String),
    Built(LiveIn),
}

#[derive(Debug, Arbitrary)]
struct Input {
    preset: u8,
    trace: SmallTrace,
    live: LiveText,
}

const KINDS: [&str; 4] = ["performance", "efficiency", "low-power-efficiency", "turbo"];
const STEPS: [&str; 5] = [
    "idle-p-core",
    "idle-e-core",
    "busy-sibling",
    "no-idle",
    "prev-cpu",
];

fn live_json(l: &LiveIn) -> String {
    let kinds: Vec<_> = l
        .kinds
        .iter()
        .take(8)
        .map(|(k, cpus, busy)| {
            json!({ "kind": KINDS[usize::from(*k) % 4], "cpus": cpus.get(), "busy_ns": busy.get() })
        })
        .collect();
    let clusters: Vec<_> = l
        .clusters
        .iter()
        .take(1_024)
        .map(|(k, lo, len, busy)| {
            let lo = u16::from(*lo) * 4;
            json!({
                "cpus": format!("{lo}-{}", lo + u16::from(len % 8)),
                "kind": KINDS[usize::from(*k) % 4],
                "busy_ns": busy.get(),
            })
        })
        .collect();
    let steps: Vec<_> = l
        .steps
        .iter()
        .take(16)
        .map(|(s, count, overflow)| {
            json!({ "step": STEPS[usize::from(*s) % STEPS.len()], "count": count.get(),
                    "overflow": overflow.get() % count.get().saturating_add(1) })
        })
        .collect();
    json!({
        "version": 1, "scheduler": "fuzz", "settings": l.settings.iter().take(4).collect::<Vec<_>>(),
        "window_ns": l.window.get(), "events": 1, "capped": l.capped, "tasks": 1,
        "kinds": kinds, "clusters": clusters, "steps": steps,
        "kept": 0, "stale": 0, "nudges": 0, "migrations": l.migrations.get(),
    })
    .to_string()
}

fuzz_target!(|input: Input| {
    let text = match &input.live {
        LiveText::Raw(s) => s.clone(),
        LiveText::Built(l) => live_json(l),
    };
    let live = match LiveStats::from_json_str(&text, "fuzz.live.json") {
        Ok(live) => live,
        Err(e) => {
            assert!(e.to_string().starts_with("fuzz.live.json"), "{e}");
            return;
        }
    };
    let machine = preset_machine(input.preset);
    let Some(trace) = read_trace(&input.trace, &machine, MAX_COPIES) else {
        return;
    };
    let base = SimOptions {
        max_events: MAX_EVENTS,
        ..SimOptions::default()
    };
    let Ok(report) = hybridland_sim::replay_observed(
        &machine,
        &trace,
        "hybridland",
        &Knobs::new(),
        &base,
        &mut |_: &hybridland_sim::DecisionRecord<'_>| {},
    ) else {
        return;
    };
    let c = compare(&report, &live);
    for r in &c.rows {
        for v in [r.sim, r.live, r.diff] {
            assert!(v.is_finite(), "{r:?}");
        }
        assert_eq!(r.diff, r.sim - r.live, "{r:?}");
        assert_eq!(r.ratio.is_some(), r.live != 0.0, "{r:?}");
        if r.unit == "%" {
            // Within a rounding of 100: `part * 100 / whole` of a part equal to the whole
            // can come out an ulp above it.
            let share = 0.0..=100.0 + 1e-9;
            assert!(share.contains(&r.sim) && share.contains(&r.live), "{r:?}");
            assert!(r.within_target.is_some(), "{r:?}");
        }
    }
    for group in ["cpu-time", "placements"] {
        for side in [0, 1] {
            let sum: f64 = c
                .rows
                .iter()
                .filter(|r| r.group == group)
                .map(|r| if side == 0 { r.sim } else { r.live })
                .sum();
            let rows = c.rows.iter().filter(|r| r.group == group).count();
            assert!(
                rows == 0 || sum == 0.0 || (sum - 100.0).abs() < 1e-6,
                "{group} shares add up to {sum}: {:?}",
                c.rows
            );
        }
    }
    let occupancy = c.rows.iter().filter(|r| r.group == "occupancy").count();
    assert_eq!(occupancy, report.clusters.len());
    let placed = c.rows.iter().any(|r| r.group == "placements");
    assert_eq!(placed, c.placements.0 > 0 && c.placements.1 > 0);
    let _ = c.within_target();
});
