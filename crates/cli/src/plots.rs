//! `replay --plot DIR`: SVG charts of a replay for people who would rather look than read,
//! drawn with plotters' SVG backend (text as SVG `<text>`, no font files read):
//!
//! - `cpu-time-by-kind.svg`: CPU seconds per core kind, a group of bars per policy, each
//!   group labelled with its policy under it;
//! - `cluster-occupancy-POLICY.svg`: busy CPUs per L2 cluster over time, one line each;
//! - `fps.svg`: the first frame task's frames per second per fps window, a line per policy
//!   (only when the trace has a frame task);
//! - `wakeup-latency-cdf.svg`: the share of wake-ups served within a latency, a step line per
//!   policy (the latencies are a histogram's), on a log latency axis with a tick per decade
//!   and the share axis from 0 to 1.
//!
//! Every title ends with the trace and the machine. Within one chart no two series share a
//! colour, however many there are ([`palette`](colours::palette)), and a line drawn exactly
//! over an earlier one says so in the legend while the earlier shows round it. Each chart is drawn into memory and written in one go, so
//! a write that fails is an output error naming the file.
//!
//! The data comes from the engine's observer hooks as the replay runs and is kept in bounded
//! form ([`data`]); [`charts`] draws it, in colours from [`colours`]; this module names the
//! files and writes them.

use crate::failure::Failure;
use anyhow::anyhow;
use std::path::Path;

mod charts;
mod colours;
mod data;

pub(crate) use data::PolicyPlot;

/// Creates `dir` (and its parents) if missing: done before any replay runs, so a `--plot`
/// that cannot be written costs nothing first.
pub(crate) fn create_dir(dir: &Path) -> Result<(), Failure> {
    std::fs::create_dir_all(dir)
        .map_err(|e| Failure::Output(anyhow!("{}: cannot create: {e}", dir.display())))
}

/// Writes every chart into `dir` (created if missing); returns the files written.
pub(crate) fn write_all(dir: &Path, plots: &[PolicyPlot]) -> Result<Vec<String>, Failure> {
    create_dir(dir)?;
    let mut written = Vec::new();
    let mut out = |name: String, draw: &dyn Fn(&mut String) -> anyhow::Result<()>| {
        let path = dir.join(&name);
        let mut svg = String::new();
        draw(&mut svg)
            .map_err(|e| Failure::Internal(anyhow!("{}: cannot draw: {e:#}", path.display())))?;
        crate::output::write_file(&path, &svg)?;
        written.push(name);
        Ok::<(), Failure>(())
    };
    out("cpu-time-by-kind.svg".into(), &|svg| {
        charts::cpu_time(svg, plots)
    })?;
    for plot in plots {
        out(
            format!("cluster-occupancy-{}.svg", file_part(&plot.policy)),
            &|svg| charts::occupancy(svg, plot),
        )?;
    }
    if plots.iter().any(|p| p.frames.is_some()) {
        out("fps.svg".into(), &|svg| charts::fps(svg, plots))?;
    }
    out("wakeup-latency-cdf.svg".into(), &|svg| {
        charts::latency_cdf(svg, plots)
    })?;
    Ok(written)
}

/// A policy name as a file name part: `hybridland:primary_domain=powersave` ->
/// `hybridland_primary_domain_powersave`.
fn file_part(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}
