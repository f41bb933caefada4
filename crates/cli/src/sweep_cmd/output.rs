//! The sweep's results as text: a table for people, CSV (RFC 4180) for programs.

use super::Outcome;
use super::grid::{Compared, GainFigure, on_time_frames};
use crate::opts::SweepArgs;
use crate::table::Table;
use hybridland_sim::Machine;

pub(super) fn table(
    outcomes: &[Outcome<'_>],
    swept: &[(String, Vec<String>)],
    compared: Compared,
    figure: GainFigure,
    args: &SweepArgs,
    machine: &Machine,
) -> String {
    let reports: Vec<_> = outcomes.iter().map(|o| o.report).collect();
    let seeds: std::collections::BTreeSet<u64> = reports.iter().map(|r| r.seed).collect();
    let seed_text = seeds
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    let trace_name = reports.first().map_or("?", |r| r.trace.as_str());
    let mut out = format!(
        "sweep {trace_name} on {} (seed {seed_text}): {} replay(s), {} at a time\n\n",
        machine.name,
        outcomes.len(),
        args.jobs.max(1).min(outcomes.len().max(1)),
    );
    // The fps columns are the first frame task's, named; the gain's own figure gets a column
    // where no other column shows it (throughput's is the makespan).
    let fps = reports.iter().find_map(|r| r.fps.as_ref()).map(|f| &f.task);
    let mut header = Vec::new();
    if !args.copies.is_empty() {
        header.push("copies".to_owned());
    }
    header.extend(swept.iter().map(|(k, _)| k.clone()));
    if args.run.policy.len() > 1 {
        header.push("policy".into());
    }
    header.extend(
        [
            "makespan (s)",
            "finished",
            "wake p99 (us)",
            "migrations",
            "energy (J)",
            "power (W)",
        ]
        .map(str::to_owned),
    );
    if let Some(task) = fps {
        header.extend([format!("{task} fps"), format!("{task} missed")]);
    }
    let shown = compared != Compared::None;
    match figure {
        GainFigure::OnTimeFrames if shown => header.push("on-time frames".into()),
        GainFigure::WakeLatency if shown => header.push("wake mean (us)".into()),
        _ => {}
    }
    match compared {
        Compared::Key(k) => header.push(format!(
            "gain vs {}={} ({})",
            swept[k].0,
            swept[k].1[0],
            figure.name()
        )),
        Compared::Policy => header.push(format!(
            "gain vs {} ({})",
            args.run.policy[0],
            figure.name()
        )),
        Compared::None => {}
    }
    let mut t = Table::new(header);
    for o in outcomes {
        let r = o.report;
        let mut row = Vec::new();
        if let Some(c) = o.copies {
            row.push(c.to_string());
        }
        row.extend(
            o.settings
                .iter()
                .map(|(_, v)| v.clone().unwrap_or_else(|| "-".to_owned())),
        );
        if args.run.policy.len() > 1 {
            row.push(o.policy.to_owned());
        }
        row.push(format!("{:.3}", r.summary.makespan_ns as f64 / 1e9));
        row.push(format!("{}/{}", r.summary.tasks_finished, r.summary.tasks));
        row.push(format!("{:.1}", r.wake_latency.p99_ns as f64 / 1e3));
        row.push(r.summary.migrations.to_string());
        row.push(format!("{:.2}", r.summary.energy_j));
        row.push(format!("{:.2}", r.summary.avg_power_w));
        if fps.is_some() {
            match &r.fps {
                Some(f) => {
                    row.push(format!("{:.2}", f.fps_mean));
                    row.push(f.missed_deadlines.to_string());
                }
                None => row.extend(["-".to_owned(), "-".to_owned()]),
            }
        }
        match figure {
            GainFigure::OnTimeFrames if shown => row.push(on_time_frames(r).to_string()),
            GainFigure::WakeLatency if shown => {
                row.push(format!("{:.1}", r.wake_latency.mean_ns as f64 / 1e3));
            }
            _ => {}
        }
        if shown {
            row.push(
                o.gain_pct
                    .map_or_else(|| "-".into(), |g| format!("{g:+.1}%")),
            );
        }
        t.row(row);
    }
    out += &t.render();
    out
}

pub(super) fn csv(outcomes: &[Outcome<'_>], swept: &[(String, Vec<String>)]) -> String {
    // Every row's settings follow `swept`'s order (`grid` builds them so).
    let mut out = String::from("copies");
    for (k, _) in swept {
        out += ",";
        out += &csv_field(k);
    }
    out += ",policy,seed,makespan_ns,tasks,tasks_finished,throughput_per_s,mean_turnaround_ns,\
            wake_p50_ns,wake_p99_ns,wake_max_ns,fps_mean,fps_stdev,missed_deadlines,migrations,\
            energy_j,avg_power_w,gain_pct,gain_figure\n";
    for o in outcomes {
        let r = o.report;
        let s = &r.summary;
        let mut row = vec![o.copies.map_or_else(String::new, |c| c.to_string())];
        row.extend(
            o.settings
                .iter()
                .map(|(_, v)| v.as_deref().map_or_else(String::new, csv_field)),
        );
        row.push(csv_field(o.policy));
        row.push(o.seed.to_string());
        row.push(s.makespan_ns.to_string());
        row.push(s.tasks.to_string());
        row.push(s.tasks_finished.to_string());
        row.push(s.throughput_per_s.to_string());
        // No finished task, no mean: an empty field, not a 0 that reads as instant.
        row.push(if s.tasks_finished == 0 {
            String::new()
        } else {
            s.mean_turnaround_ns.to_string()
        });
        row.push(r.wake_latency.p50_ns.to_string());
        row.push(r.wake_latency.p99_ns.to_string());
        row.push(r.wake_latency.max_ns.to_string());
        match &r.fps {
            Some(f) => {
                row.push(f.fps_mean.to_string());
                row.push(f.fps_stdev.to_string());
                row.push(f.missed_deadlines.to_string());
            }
            None => row.extend([String::new(), String::new(), String::new()]),
        }
        row.push(s.migrations.to_string());
        row.push(s.energy_j.to_string());
        row.push(s.avg_power_w.to_string());
        row.push(o.gain_pct.map_or_else(String::new, |g| format!("{g:.3}")));
        row.push(o.gain_figure.id().to_owned());
        out += &row.join(",");
        out.push('\n');
    }
    out
}

/// RFC 4180: a field with a comma, quote or newline is quoted, quotes doubled.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}
