//! `hybrid-sim compare`: a replay of a recorded trace beside the live scheduler's own figures.

use crate::failure::Failure;
use crate::inputs::{self, DEFAULT_TOPOLOGY};
use crate::opts::CompareArgs;
use crate::table::Table;
use anyhow::anyhow;
use core::fmt::Write as _;
use core::time::Duration;
use hybridland_policy::parse_cpu_list;
use hybridland_sim::compare::{Comparison, Row, TARGET_POINTS, compare};
use hybridland_sim::live::MAX_LIVE_BYTES;
use hybridland_sim::{LiveStats, Machine, SimOptions};

pub(crate) fn run(args: &CompareArgs) -> Result<String, Failure> {
    let trace = inputs::trace(&args.trace, false)?;
    let live_name = args.live.display().to_string();
    let text = inputs::read(&args.live, MAX_LIVE_BYTES, "live file")?;
    let live = LiveStats::from_json_str(&text, &live_name).map_err(|e| Failure::Input(e.into()))?;
    let machine = match (&args.topology, &trace.machine) {
        (Some(topology), _) => inputs::machine(topology)?,
        (None, Some(named)) => inputs::trace_machine(named, &args.trace)?,
        (None, None) => inputs::machine(DEFAULT_TOPOLOGY)?,
    };
    let source = args.trace.display().to_string();
    trace
        .validate_for(&machine.topology, &source)
        .map_err(|e| Failure::Input(e.into()))?;
    fits_recording(&live, &live_name, &machine)?;
    // The live scheduler's knobs, then the command line's over them.
    let mut items = live.settings.clone();
    items.extend(args.set.iter().cloned());
    let knobs = inputs::knobs(&items)?;
    let policy = args
        .policy
        .clone()
        .or_else(|| live.policy.clone())
        .unwrap_or_else(|| "hybridland".to_owned());
    let base = SimOptions {
        max_wall: (args.max_wall_secs > 0).then(|| Duration::from_secs(args.max_wall_secs)),
        // The policy draws what it drew live; the engine's own draws keep the trace's seed.
        policy_seed: live.policy_seed,
        ..SimOptions::default()
    };
    let report = hybridland_sim::replay_observed(
        &machine,
        &trace,
        &policy,
        &knobs,
        &base,
        &mut hybridland_sim::Unobserved,
    )
    .map_err(|e| Failure::Input(anyhow!("{source}: {e}")))?;
    let comparison = compare(&report, &live);
    if args.json {
        let text =
            serde_json::to_string_pretty(&comparison).map_err(|e| Failure::Internal(e.into()))?;
        return Ok(text + "\n");
    }
    Ok(render(&comparison, &live))
}

/// Refuses a machine the recording was not made on: every cluster the live figures name must
/// be one of the machine's (same CPUs, same kind), every kind they count must have as many
/// CPUs there. Otherwise the replay's clusters and kinds have nothing to line up with, and the
/// table would compare zeros.
fn fits_recording(live: &LiveStats, live_name: &str, machine: &Machine) -> Result<(), Failure> {
    let topo = &machine.topology;
    let clusters: Vec<(String, &str)> = (0..topo.nr_clusters())
        .map(|c| {
            let cpus = topo.cluster_cpus(c);
            let list: Vec<String> = cpus.iter().map(|cpu| cpu.0.to_string()).collect();
            // The kernel's list form (`12-15`), as the live file writes it.
            let list = parse_cpu_list(&list.join(","))
                .map_or_else(|_| list.join(","), |set| set.to_string());
            let kind = cpus
                .first()
                .and_then(|cpu| topo.info(*cpu))
                .map_or("?", |i| i.kind.name());
            (list, kind)
        })
        .collect();
    let refuse = |what: String| {
        Failure::Input(anyhow!(
            "{live_name}: {what}, so the recording was not made on {} ({} CPUs; clusters {}): \
             give --topology the machine it was recorded on (`scx_hybridland --dry-run \
             --emit-topology` writes it)",
            machine.name,
            topo.nr_cpus(),
            clusters
                .iter()
                .map(|(cpus, kind)| format!("{cpus} {kind}"))
                .collect::<Vec<_>>()
                .join(", ")
        ))
    };
    for lc in &live.clusters {
        let set = parse_cpu_list(&lc.cpus)
            .map_err(|e| Failure::Input(anyhow!("{live_name}: cluster cpus {:?}: {e}", lc.cpus)))?;
        let cpus = set.to_string();
        match clusters.iter().find(|(c, _)| *c == cpus) {
            None => {
                return Err(refuse(format!(
                    "its cluster of CPUs {} ({}) is not a cluster of the machine",
                    lc.cpus, lc.kind
                )));
            }
            Some((_, kind)) if *kind != lc.kind => {
                return Err(refuse(format!(
                    "its cluster of CPUs {} is {} there but {kind} here",
                    lc.cpus, lc.kind
                )));
            }
            Some(_) => {}
        }
    }
    for lk in live.kinds.iter().filter(|k| k.cpus > 0) {
        let here = topo
            .cpus()
            .iter()
            .filter(|c| topo.info(*c).is_some_and(|i| i.kind.name() == lk.kind))
            .count();
        if here != lk.cpus {
            return Err(refuse(format!(
                "it counts {} {} CPU(s), the machine {here}",
                lk.cpus, lk.kind
            )));
        }
    }
    Ok(())
}

fn label(r: &Row) -> String {
    match r.group.as_str() {
        "cpu-time" => format!("CPU time {} (%)", r.name),
        "placements" => format!("placements {} (%)", r.name),
        "occupancy" => format!("running in {} (tasks)", r.name),
        "migrations" => "migrations (/s)".into(),
        other => format!("{other} {}", r.name),
    }
}

fn figure(r: &Row, v: f64) -> String {
    match r.unit.as_str() {
        "tasks" => format!("{v:.2}"),
        _ => format!("{v:.1}"),
    }
}

fn difference(r: &Row) -> String {
    match r.unit.as_str() {
        "%" => format!("{:+.1} pts", r.diff),
        _ => match r.ratio {
            Some(x) => format!("{:+.2} (x{x:.2})", r.diff),
            None => format!("{:+.2}", r.diff),
        },
    }
}

/// The table for people: one row per figure, sim, live, the difference and, for shares, the
/// target.
pub(crate) fn render(c: &Comparison, live: &LiveStats) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "trace {} on {}: {} (sim) vs {} (live), window {:.2} s{}",
        c.trace,
        c.machine,
        c.policy,
        c.scheduler,
        c.window_ns as f64 / 1e9,
        if live.capped {
            " (recording stopped at its event cap)"
        } else {
            ""
        }
    );
    if let Some(seed) = live.policy_seed {
        let _ = writeln!(
            out,
            "the policy's draws: seed {seed}, the live run's --seed (--set policy_seed= overrides)"
        );
    }
    let _ = writeln!(out);
    let mut t = Table::new(vec![
        "figure".into(),
        "sim".into(),
        "live".into(),
        "sim - live".into(),
        "target".into(),
    ]);
    for r in &c.rows {
        t.row(vec![
            label(r),
            figure(r, r.sim),
            figure(r, r.live),
            difference(r),
            match r.within_target {
                Some(true) => "ok".into(),
                Some(false) => "MISSED".into(),
                None => String::new(),
            },
        ]);
    }
    out.push_str(&t.render());
    let _ = writeln!(out);
    let total = c.rows.iter().filter(|r| r.within_target.is_some()).count();
    let missed = c
        .rows
        .iter()
        .filter(|r| r.within_target == Some(false))
        .count();
    let verdict = match (total, missed) {
        (0, _) => "no shares to compare".to_owned(),
        (_, 0) => format!("all {total} shares within {TARGET_POINTS} points"),
        _ => format!(
            "{} of {total} shares within {TARGET_POINTS} points, {missed} missed",
            total - missed
        ),
    };
    let _ = writeln!(
        out,
        "placements: sim {}, live {}; {verdict}",
        c.placements.0, c.placements.1
    );
    out
}
