//! `hybrid-sim sweep`: one trace replayed over a grid of knob values, copy counts and
//! policies, in parallel, as one table (or CSV, or JSON).
//!
//! The grid is every combination of `--copies` (outermost), each `--set KEY=V1,V2...` in the
//! order given, and `--policy` (innermost), which is also the order of the rows. The *compared
//! dimension* is the first `--set` key (else the policy, when there are several): each row's
//! gain is its gain over the row that differs from it only in that dimension's first value, on
//! one [`GainFigure`] for the whole sweep, named in the column's header: on-time frames for a
//! trace with frame tasks, else throughput (`reference makespan / makespan - 1`, the measure
//! seed 002 reports for cluster balance) when every replay finished, else the mean wake-up
//! latency, so that a trace that runs to its horizon does not read +0.0% everywhere.
//!
//! A policy runs once for all the values of a key it does not read (a baseline and
//! hybridland's `cluster_balance`, or a key its name already sets, `hybridland:cluster_balance=on`):
//! its row shows `-` (CSV: an empty field; JSON: the key left out of `set`) and has no gain.
//!
//! [`grid`](mod@grid) lays out the points and their gains, [`run`] replays them, [`output`]
//! writes the table and the CSV; this module ties them together and writes the JSON.

use crate::failure::Failure;
use crate::inputs::{self, DEFAULT_TOPOLOGY};
use crate::opts::SweepArgs;
use anyhow::anyhow;
use core::time::Duration;
use grid::{Compared, GainFigure, gains, grid, parse_sets, reads_knob};
use hybridland_sim::{Report, SimOptions};
use output::{csv, table};
use run::{prepare, run_all};
use serde::Serialize;

mod grid;
mod output;
mod run;

/// One replay of the grid.
#[derive(Clone, Debug, Serialize)]
struct Point {
    /// `--copies` factor, when swept.
    copies: Option<u32>,
    /// `KEY=VALUE` settings of the swept `--set` keys, in `--set` order; `None` for a key the
    /// policy does not read.
    settings: Vec<(String, Option<String>)>,
    policy: String,
}

/// A point and what its replay gave.
#[derive(Serialize)]
struct Outcome<'a> {
    copies: Option<u32>,
    set: std::collections::BTreeMap<&'a str, &'a str>,
    /// The same settings in `--set` order, for the table's columns.
    #[serde(skip)]
    settings: &'a [(String, Option<String>)],
    policy: &'a str,
    seed: u64,
    /// Gain over the compared dimension's first value, percent, on `gain_figure`.
    gain_pct: Option<f64>,
    /// What the gain is measured on, the same for every row of a sweep.
    gain_figure: GainFigure,
    report: &'a Report,
}

pub(crate) fn sweep(args: &SweepArgs) -> Result<String, Failure> {
    let trace = inputs::trace(&args.trace, args.strict)?;
    let source = args.trace.display().to_string();
    let machine = match (&args.run.topology, &trace.machine) {
        (Some(topology), _) => inputs::machine(topology)?,
        (None, Some(named)) => inputs::trace_machine(named, &args.trace)?,
        (None, None) => inputs::machine(DEFAULT_TOPOLOGY)?,
    };
    if args.run.policy.is_empty() {
        return Err(Failure::Input(anyhow!("--policy needs at least one name")));
    }
    let swept = parse_sets(&args.run.set)?;
    for (key, _) in &swept {
        hybridland_sim::knobs::check_key(key).map_err(|e| Failure::Input(anyhow!("--set: {e}")))?;
        if !args.run.policy.iter().any(|p| reads_knob(p, key)) {
            return Err(Failure::Input(anyhow!(
                "--set {key}: none of the policies swept ({}) reads it",
                args.run.policy.join(", ")
            )));
        }
    }
    let mut fixed = Vec::new();
    if let Some(seed) = args.seed {
        fixed.push(format!("seed={seed}"));
    }
    let points = grid(&args.copies, &swept, &args.run.policy);
    let base = SimOptions {
        max_wall: (args.max_wall_secs > 0).then(|| Duration::from_secs(args.max_wall_secs)),
        ..SimOptions::default()
    };
    // Everything is checked before the first replay: a typo in the last value must not cost
    // the whole grid first.
    let mut jobs = Vec::new();
    for p in &points {
        jobs.push(prepare(p, &trace, &machine, &fixed, &base, &source)?);
    }
    let reports = run_all(&machine, &jobs, &points, &base, args.jobs.max(1), &source)?;
    let compared = if !swept.is_empty() {
        Compared::Key(0)
    } else if args.run.policy.len() > 1 {
        Compared::Policy
    } else {
        Compared::None
    };
    let figure = GainFigure::of(&reports);
    let gains = gains(
        &points,
        &reports,
        compared,
        figure,
        &swept,
        &args.run.policy,
    );
    let outcomes: Vec<Outcome<'_>> = points
        .iter()
        .zip(&reports)
        .zip(&gains)
        .map(|((p, r), g)| Outcome {
            copies: p.copies,
            set: p
                .settings
                .iter()
                .filter_map(|(k, v)| Some((k.as_str(), v.as_deref()?)))
                .collect(),
            settings: &p.settings,
            policy: &p.policy,
            seed: r.seed,
            gain_pct: *g,
            gain_figure: figure,
            report: r,
        })
        .collect();
    if args.json {
        let text =
            serde_json::to_string_pretty(&outcomes).map_err(|e| Failure::Internal(e.into()))?;
        return Ok(text + "\n");
    }
    if args.csv {
        return Ok(csv(&outcomes, &swept));
    }
    Ok(table(&outcomes, &swept, compared, figure, args, &machine))
}
