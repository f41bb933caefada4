//! `hybrid-sim sweep`: one trace replayed over a grid of knob values, copy counts and
//! policies, in parallel, as one table (or CSV, or JSON).
//!
//! The grid is every combination of `--copies` (outermost), each `--set KEY=V1,V2...` in the
//! order given, and `--policy` (innermost), which is also the order of the rows. The *compared
//! dimension* is the first `--set` key (else the policy, when there are several): each row's
//! gain is the throughput gain over the row that differs from it only in that dimension's first
//! value, `reference makespan / makespan - 1`, the measure seed 002 reports for cluster balance.
//!
//! A policy runs once for all the values of a key it does not read (a baseline and
//! hybridland's `cluster_balance`, or a key its name already sets, `hybridland:cluster_balance=on`):
//! its row shows `-` (CSV: an empty field; JSON: the key left out of `set`) and has no gain.

use crate::failure::Failure;
use crate::inputs::{self, DEFAULT_TOPOLOGY};
use crate::opts::SweepArgs;
use crate::table::Table;
use anyhow::anyhow;
use core::sync::atomic::{AtomicUsize, Ordering};
use core::time::Duration;
use hybridland_sim::{Machine, ReplayLimits, Report, SimOptions, Trace, policy_by_name};
use serde::Serialize;
use std::io::IsTerminal;
use std::sync::Mutex;

/// The progress bar: replays done, time so far and indicatif's estimate of the time left
/// (from the rate replays have finished at so far).
const BAR_TEMPLATE: &str =
    "{spinner} sweep [{bar:30}] {pos}/{len} replays, {elapsed} gone, about {eta} to go";

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
    /// Throughput gain over the compared dimension's first value, percent.
    gain_pct: Option<f64>,
    report: &'a Report,
}

pub(crate) fn sweep(args: &SweepArgs) -> Result<String, Failure> {
    let trace = inputs::trace(&args.trace, args.strict)?;
    let source = args.trace.display().to_string();
    let machine = match (&args.topology, &trace.machine) {
        (Some(topology), _) => inputs::machine(topology)?,
        (None, Some(named)) => inputs::trace_machine(named, &args.trace)?,
        (None, None) => inputs::machine(DEFAULT_TOPOLOGY)?,
    };
    if args.policy.is_empty() {
        return Err(Failure::Input(anyhow!("--policy needs at least one name")));
    }
    let swept = parse_sets(&args.set)?;
    for (key, _) in &swept {
        if !args.policy.iter().any(|p| reads_knob(p, key)) {
            return Err(Failure::Input(anyhow!(
                "--set {key}: none of the policies swept ({}) reads it",
                args.policy.join(", ")
            )));
        }
    }
    let mut fixed = Vec::new();
    if let Some(seed) = args.seed {
        fixed.push(format!("seed={seed}"));
    }
    let points = grid(&args.copies, &swept, &args.policy);
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
    } else if args.policy.len() > 1 {
        Compared::Policy
    } else {
        Compared::None
    };
    let gains = gains(&points, &reports, compared, &swept, &args.policy);
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
    Ok(table(&outcomes, &swept, compared, args, &machine, &reports))
}

/// `KEY=V1,V2` items; a key given twice is refused.
fn parse_sets(items: &[String]) -> Result<Vec<(String, Vec<String>)>, Failure> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for item in items {
        let Some((key, values)) = item.split_once('=') else {
            return Err(Failure::Input(anyhow!(
                "--set {item}: expected KEY=VALUE[,VALUE...]"
            )));
        };
        let key = key.trim();
        let values: Vec<String> = values.split(',').map(|v| v.trim().to_owned()).collect();
        if key.is_empty() || values.iter().any(String::is_empty) {
            return Err(Failure::Input(anyhow!(
                "--set {item}: expected KEY=VALUE[,VALUE...] with no empty value"
            )));
        }
        if out.iter().any(|(k, _)| k == key) {
            return Err(Failure::Input(anyhow!(
                "--set {key} is given twice: list every value in one --set {key}=V1,V2"
            )));
        }
        out.push((key.to_owned(), values));
    }
    Ok(out)
}

/// Whether a replay under `policy` (a name, perhaps with its own `:KEY=VALUE` knobs) depends
/// on `key` from `--set`. An unknown name is taken to read everything: building it fails later
/// with the error that names it.
fn reads_knob(policy: &str, key: &str) -> bool {
    let mut parts = policy.split(':');
    let base = parts.next().unwrap_or("").trim();
    let set_by_name = parts.any(|item| item.split_once('=').is_some_and(|(k, _)| k.trim() == key));
    !set_by_name && hybridland_sim::PolicyKind::from_name(base).is_none_or(|k| k.has_knob(key))
}

fn grid(copies: &[u32], swept: &[(String, Vec<String>)], policies: &[String]) -> Vec<Point> {
    let copies: Vec<Option<u32>> = if copies.is_empty() {
        vec![None]
    } else {
        copies.iter().copied().map(Some).collect()
    };
    let mut settings: Vec<Vec<(String, String)>> = vec![Vec::new()];
    for (key, values) in swept {
        settings = settings
            .into_iter()
            .flat_map(|prefix| {
                values.iter().map(move |v| {
                    let mut s = prefix.clone();
                    s.push((key.clone(), v.clone()));
                    s
                })
            })
            .collect();
    }
    let mut points = Vec::new();
    for c in &copies {
        for s in &settings {
            for policy in policies {
                let point = Point {
                    copies: *c,
                    settings: s
                        .iter()
                        .map(|(k, v)| (k.clone(), reads_knob(policy, k).then(|| v.clone())))
                        .collect(),
                    policy: policy.clone(),
                };
                // The keys it does not read: one replay stands for all their values.
                let same = |q: &Point| {
                    q.copies == point.copies
                        && q.policy == point.policy
                        && q.settings == point.settings
                };
                if !points.iter().any(same) {
                    points.push(point);
                }
            }
        }
    }
    points
}

/// A point ready to run: its trace (copies applied) and knobs, both checked.
struct Job {
    trace: Trace,
    knobs: hybridland_sim::Knobs,
}

fn prepare(
    p: &Point,
    trace: &Trace,
    machine: &Machine,
    fixed: &[String],
    base: &SimOptions,
    source: &str,
) -> Result<Job, Failure> {
    let mut items: Vec<String> = fixed.to_vec();
    items.extend(
        p.settings
            .iter()
            .filter_map(|(k, v)| Some(format!("{k}={}", v.as_ref()?))),
    );
    let knobs = inputs::knobs(&items)?;
    policy_by_name(&p.policy, &knobs).map_err(|e| Failure::Input(e.into()))?;
    let mut t = trace.clone();
    if let Some(n) = p.copies {
        if n == 0 {
            return Err(Failure::Input(anyhow!("--copies 0: a count starts at 1")));
        }
        for task in &mut t.tasks {
            task.copies = task.copies.checked_mul(n).ok_or_else(|| {
                Failure::Input(anyhow!(
                    "--copies {n}: task \"{}\" would have more than {} copies",
                    task.name,
                    u32::MAX
                ))
            })?;
        }
        let at = format!("{source} with --copies {n}");
        t.validate(&at).map_err(|e| Failure::Input(e.into()))?;
    }
    t.validate_for(&machine.topology, source)
        .map_err(|e| Failure::Input(e.into()))?;
    let options = knobs
        .sim_options(base)
        .map_err(|e| Failure::Input(e.into()))?;
    t.check_replay_limits(&options, source)
        .map_err(|e| Failure::Input(e.into()))?;
    Ok(Job { trace: t, knobs })
}

/// Runs every job on `threads` worker threads, each taking the next job in grid order;
/// reports come back in grid order whatever finished first.
fn run_all(
    machine: &Machine,
    jobs: &[Job],
    points: &[Point],
    base: &SimOptions,
    threads: usize,
    source: &str,
) -> Result<Vec<Report>, Failure> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<Report, String>>>> =
        Mutex::new((0..jobs.len()).map(|_| None).collect());
    // A bar only for a person watching a terminal; a pipe or a log gets nothing, and -v's
    // lines would tear it.
    let bar = if std::io::stderr().is_terminal() && !tracing::enabled!(tracing::Level::INFO) {
        let bar = indicatif::ProgressBar::new(jobs.len() as u64);
        if let Ok(style) = indicatif::ProgressStyle::with_template(BAR_TEMPLATE) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar
    } else {
        indicatif::ProgressBar::hidden()
    };
    std::thread::scope(|s| {
        for _ in 0..threads.min(jobs.len()) {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(job) = jobs.get(i) else { break };
                    let p = &points[i];
                    let started = std::time::Instant::now();
                    tracing::info!(point = %describe(p), trace = %source, "replay starts");
                    let r = hybridland_sim::replay_observed(
                        machine,
                        &job.trace,
                        &p.policy,
                        &job.knobs,
                        base,
                        &mut hybridland_sim::Unobserved,
                    )
                    .map_err(|e| format!("{source}: {}: {e}", describe(p)));
                    if let Ok(report) = &r {
                        tracing::info!(
                            point = %describe(p),
                            seed = report.seed,
                            events = report.summary.events,
                            wall_ms = started.elapsed().as_millis() as u64,
                            "replay done"
                        );
                    }
                    let failed = r.is_err();
                    if let Ok(mut all) = results.lock() {
                        all[i] = Some(r);
                    }
                    bar.inc(1);
                    if failed {
                        // The others stop taking jobs: the sweep fails anyway.
                        next.store(jobs.len(), Ordering::Relaxed);
                    }
                }
            });
        }
    });
    bar.finish_and_clear();
    let all = results
        .into_inner()
        .map_err(|_| Failure::Internal(anyhow!("a sweep worker panicked")))?;
    let mut reports = Vec::with_capacity(all.len());
    for (i, r) in all.into_iter().enumerate() {
        match r {
            Some(Ok(report)) => reports.push(report),
            Some(Err(e)) => return Err(Failure::Internal(anyhow!("{e}"))),
            None => {
                return Err(Failure::Internal(anyhow!(
                    "{source}: {} did not run: another replay of the sweep failed first",
                    describe(&points[i])
                )));
            }
        }
    }
    Ok(reports)
}

fn describe(p: &Point) -> String {
    let mut parts = Vec::new();
    if let Some(c) = p.copies {
        parts.push(format!("--copies {c}"));
    }
    parts.extend(
        p.settings
            .iter()
            .filter_map(|(k, v)| Some(format!("{k}={}", v.as_ref()?))),
    );
    parts.push(format!("policy {}", p.policy));
    parts.join(", ")
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Compared {
    None,
    Policy,
    /// Index into the swept keys.
    Key(usize),
}

fn gains(
    points: &[Point],
    reports: &[Report],
    compared: Compared,
    swept: &[(String, Vec<String>)],
    policies: &[String],
) -> Vec<Option<f64>> {
    let reference = |p: &Point| -> Option<usize> {
        points.iter().position(|q| match compared {
            Compared::None => false,
            Compared::Policy => {
                q.copies == p.copies && q.settings == p.settings && q.policy == policies[0]
            }
            // A row that does not read the compared key has nothing to be compared with.
            Compared::Key(k) => {
                p.settings[k].1.is_some()
                    && q.copies == p.copies
                    && q.policy == p.policy
                    && q.settings.iter().zip(&p.settings).enumerate().all(
                        |(i, ((qk, qv), (_, pv)))| {
                            if i == k {
                                qv.as_ref() == Some(&swept[k].1[0]) && *qk == swept[k].0
                            } else {
                                qv == pv
                            }
                        },
                    )
            }
        })
    };
    points
        .iter()
        .zip(reports)
        .map(|(p, r)| {
            let base = &reports[reference(p)?];
            (r.summary.makespan_ns > 0).then(|| {
                (base.summary.makespan_ns as f64 / r.summary.makespan_ns as f64 - 1.0) * 100.0
            })
        })
        .collect()
}

fn table(
    outcomes: &[Outcome<'_>],
    swept: &[(String, Vec<String>)],
    compared: Compared,
    args: &SweepArgs,
    machine: &Machine,
    reports: &[Report],
) -> String {
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
    let fps = reports.iter().any(|r| r.fps.is_some());
    let mut header = Vec::new();
    if !args.copies.is_empty() {
        header.push("copies".to_owned());
    }
    header.extend(swept.iter().map(|(k, _)| k.clone()));
    if args.policy.len() > 1 {
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
    if fps {
        header.extend(["fps mean".to_owned(), "missed".to_owned()]);
    }
    match compared {
        Compared::Key(k) => header.push(format!("gain vs {}={}", swept[k].0, swept[k].1[0])),
        Compared::Policy => header.push(format!("gain vs {}", args.policy[0])),
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
        if args.policy.len() > 1 {
            row.push(o.policy.to_owned());
        }
        row.push(format!("{:.3}", r.summary.makespan_ns as f64 / 1e9));
        row.push(format!("{}/{}", r.summary.tasks_finished, r.summary.tasks));
        row.push(format!("{:.1}", r.wake_latency.p99_ns as f64 / 1e3));
        row.push(r.summary.migrations.to_string());
        row.push(format!("{:.2}", r.summary.energy_j));
        row.push(format!("{:.2}", r.summary.avg_power_w));
        if fps {
            match &r.fps {
                Some(f) => {
                    row.push(format!("{:.2}", f.fps_mean));
                    row.push(f.missed_deadlines.to_string());
                }
                None => row.extend(["-".to_owned(), "-".to_owned()]),
            }
        }
        if compared != Compared::None {
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

fn csv(outcomes: &[Outcome<'_>], swept: &[(String, Vec<String>)]) -> String {
    // Every row's settings follow `swept`'s order (`grid` builds them so).
    let mut out = String::from("copies");
    for (k, _) in swept {
        out += ",";
        out += &csv_field(k);
    }
    out += ",policy,seed,makespan_ns,tasks,tasks_finished,throughput_per_s,mean_turnaround_ns,\
            wake_p50_ns,wake_p99_ns,wake_max_ns,fps_mean,fps_stdev,missed_deadlines,migrations,\
            energy_j,avg_power_w,gain_pct\n";
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
        row.push(s.mean_turnaround_ns.to_string());
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

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn the_bar_shows_an_estimate_of_the_time_left() {
        assert!(BAR_TEMPLATE.contains("{eta}"));
        assert!(indicatif::ProgressStyle::with_template(BAR_TEMPLATE).is_ok());
    }

    #[test]
    fn a_policy_reads_its_own_knobs_and_the_replays() {
        assert!(reads_knob("hybridland", "cluster_balance"));
        assert!(!reads_knob(
            "hybridland:cluster_balance=on",
            "cluster_balance"
        ));
        assert!(!reads_knob("spread", "cluster_balance"));
        assert!(reads_knob("spread", "slice_us"));
        assert!(reads_knob("spread", "smt_slowdown_pct"));
        assert!(reads_knob("kernel-default", "kernel_asym_capacity"));
        assert!(!reads_knob("hybridland", "kernel_asym_capacity"));
        assert!(reads_knob("no-such-policy", "cluster_balance"));
    }
}
