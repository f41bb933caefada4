//! The sweep's replays: each point checked and made ready before any runs, then all of them
//! on worker threads, with a progress bar for a person watching a terminal.

use super::Point;
use crate::failure::Failure;
use crate::inputs;
use anyhow::anyhow;
use core::sync::atomic::{AtomicUsize, Ordering};
use hybridland_sim::{Machine, ReplayLimits, Report, SimOptions, Trace, policy_by_name};
use std::io::IsTerminal;
use std::sync::Mutex;

/// The progress bar: replays done, time so far and indicatif's estimate of the time left
/// (from the rate replays have finished at so far).
const BAR_TEMPLATE: &str =
    "{spinner} sweep [{bar:30}] {pos}/{len} replays, {elapsed} gone, about {eta} to go";

/// A point ready to run: its trace (copies applied) and knobs, both checked.
pub(super) struct Job {
    trace: Trace,
    knobs: hybridland_sim::Knobs,
}

pub(super) fn prepare(
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
pub(super) fn run_all(
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

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn the_bar_shows_an_estimate_of_the_time_left() {
        assert!(BAR_TEMPLATE.contains("{eta}"));
        assert!(indicatif::ProgressStyle::with_template(BAR_TEMPLATE).is_ok());
    }
}
