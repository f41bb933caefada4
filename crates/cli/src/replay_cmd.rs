//! `hybrid-sim replay`, `validate` and `policies`.

use crate::decision_log;
use crate::failure::Failure;
use crate::inputs::{self, DEFAULT_TOPOLOGY, FileKind};
use crate::opts::{ReplayArgs, ValidateArgs};
use crate::plots::PolicyPlot;
use crate::table::Table;
use anyhow::anyhow;
use core::time::Duration;
use hybridland_sim::timeline::TimelineWriter;
use hybridland_sim::{
    DecisionObserver, DecisionRecord, OccupancyRecord, ReplayLimits, Report, RunRecord, SimError,
    SimOptions, policy_by_name,
};
use std::fs::File;
use std::io::BufWriter;
use std::time::Instant;

pub(crate) fn replay(args: &ReplayArgs) -> Result<String, Failure> {
    let trace = inputs::trace(&args.trace, args.strict)?;
    let machine = match (&args.run.topology, &trace.machine) {
        (Some(topology), _) => inputs::machine(topology)?,
        (None, Some(named)) => inputs::trace_machine(named, &args.trace)?,
        (None, None) => inputs::machine(DEFAULT_TOPOLOGY)?,
    };
    let mut items = args.run.set.clone();
    if let Some(seed) = args.seed {
        items.push(format!("seed={seed}"));
    }
    let knobs = inputs::knobs(&items)?;
    let source = args.trace.display().to_string();
    trace
        .validate_for(&machine.topology, &source)
        .map_err(|e| Failure::Input(e.into()))?;
    if args.run.policy.is_empty() {
        return Err(Failure::Input(anyhow!("--policy needs at least one name")));
    }
    // Every policy is built before any replay runs, so a typo in the third name does not
    // cost two replays first.
    for name in &args.run.policy {
        policy_by_name(name, &knobs).map_err(|e| Failure::Input(e.into()))?;
    }
    let base = SimOptions {
        max_wall: (args.max_wall_secs > 0).then(|| Duration::from_secs(args.max_wall_secs)),
        ..SimOptions::default()
    };
    let mut timeline = match &args.timeline {
        None => None,
        Some(path) => Some(
            File::create(path)
                .and_then(|f| TimelineWriter::new(BufWriter::new(f)))
                .map_err(|e| Failure::Output(anyhow!("{}: cannot create: {e}", path.display())))?,
        ),
    };
    // The replay would refuse these too, but naming the trace only by its `name` field.
    let options = knobs
        .sim_options(&base)
        .map_err(|e| Failure::Input(e.into()))?;
    trace
        .check_replay_limits(&options, &source)
        .map_err(|e| Failure::Input(e.into()))?;
    if let Some(dir) = &args.plot {
        crate::plots::create_dir(dir)?;
    }
    let mut plots = Vec::new();
    let mut reports = Vec::new();
    for (index, name) in args.run.policy.iter().enumerate() {
        let started = Instant::now();
        tracing::info!(policy = %name, machine = %machine.name, trace = %source, "replay starts");
        if let Some(t) = &mut timeline {
            t.begin_policy(index, name, &machine.topology);
        }
        let mut plot = args
            .plot
            .as_ref()
            .map(|_| PolicyPlot::new(name, &machine.topology, &trace, options.fps_window_ns));
        let mut observer = ReplayObserver {
            // -vv: a line per decision; the check keeps a plain replay free of the formatting.
            log_decisions: tracing::enabled!(tracing::Level::DEBUG),
            timeline: timeline.as_mut(),
            plot: plot.as_mut(),
        };
        let report =
            hybridland_sim::replay_observed(&machine, &trace, name, &knobs, &base, &mut observer)
                .map_err(|e| classify(e, &source))?;
        if let Some(mut p) = plot {
            p.finish(&report);
            plots.push(p);
        }
        tracing::info!(
            policy = %name,
            events = report.summary.events,
            wall_ms = started.elapsed().as_millis() as u64,
            "replay done"
        );
        reports.push(report);
    }
    if let (Some(t), Some(path)) = (timeline, &args.timeline) {
        t.finish()
            .map_err(|e| Failure::Output(anyhow!("{}: cannot write: {e}", path.display())))?;
    }
    if let Some(dir) = &args.plot {
        let files = crate::plots::write_all(dir, &plots)?;
        tracing::info!(dir = %dir.display(), files = %files.join(" "), "charts written");
    }
    if args.json {
        // Always an array, one report per policy in --policy order, so a program reads one
        // shape whatever the command line.
        let text =
            serde_json::to_string_pretty(&reports).map_err(|e| Failure::Internal(e.into()))?;
        return Ok(text + "\n");
    }
    Ok(render(&args.run.policy, &reports))
}

/// What `replay` watches a replay for: decisions for `-vv`, runs for `--timeline`.
struct ReplayObserver<'w> {
    log_decisions: bool,
    timeline: Option<&'w mut TimelineWriter<BufWriter<File>>>,
    plot: Option<&'w mut PolicyPlot>,
}

impl DecisionObserver for ReplayObserver<'_> {
    fn on_decision(&mut self, r: &DecisionRecord<'_>) {
        if self.log_decisions {
            decision_log::log_decision(r);
        }
    }

    fn wants_decisions(&self) -> bool {
        self.log_decisions
    }

    fn wants_runs(&self) -> bool {
        self.timeline.is_some() || self.plot.is_some()
    }

    fn on_run(&mut self, r: &RunRecord<'_>) {
        if let Some(t) = &mut self.timeline {
            t.run(r);
        }
        if let Some(p) = &mut self.plot {
            p.run(r);
        }
    }

    fn on_occupancy(&mut self, o: &OccupancyRecord) {
        if let Some(t) = &mut self.timeline {
            t.occupancy(o);
        }
        if let Some(p) = &mut self.plot {
            p.occupancy(o);
        }
    }
}

/// Whose fault a failed replay is. The limits name the trace file too: a trace's own `name`
/// may not say which file it came from.
fn classify(e: SimError, source: &str) -> Failure {
    match e {
        SimError::Trace(_) | SimError::Policy(_) => Failure::Input(e.into()),
        SimError::TooManyEvents { .. }
        | SimError::WallTimeExceeded { .. }
        | SimError::Blocked { .. } => {
            Failure::Input(anyhow::Error::from(e).context(source.to_owned()))
        }
        SimError::InvalidDecision { .. } | SimError::Stalled { .. } => Failure::Internal(e.into()),
    }
}

/// Checks a trace, an rt-app file or a machine file without running anything, and says
/// which of the three it read. A trace (or rt-app file) is checked against the machine a
/// replay would use: `--topology`, else the trace's `machine`, else the default.
pub(crate) fn validate(args: &ValidateArgs) -> Result<String, Failure> {
    let source = args.trace.display().to_string();
    let kind = inputs::file_kind(&args.trace)?;
    if kind == FileKind::Machine {
        if args.topology.is_some() {
            return Err(Failure::Input(anyhow!(
                "{source}: a machine file, not a trace: --topology checks a trace against a \
                 machine"
            )));
        }
        let machine = inputs::machine_file_or_unknown(&args.trace)?;
        return Ok(format!(
            "{source}: ok: machine file, {}\n",
            describe_machine(&machine)
        ));
    }
    let trace = inputs::trace(&args.trace, args.strict)?;
    // The limits a replay would certainly hit are refused here too, not minutes into it.
    trace
        .check_replay_limits(&SimOptions::default(), &source)
        .map_err(|e| Failure::Input(e.into()))?;
    let (machine, whose) = match (&args.topology, &trace.machine) {
        (Some(topology), _) => (inputs::machine(topology)?, "--topology"),
        (None, Some(named)) => (
            inputs::trace_machine(named, &args.trace)?,
            "the trace's machine",
        ),
        (None, None) => (inputs::machine(DEFAULT_TOPOLOGY)?, "the default machine"),
    };
    trace
        .validate_for(&machine.topology, &source)
        .map_err(|e| Failure::Input(e.into()))?;
    let what = match kind {
        FileKind::RtApp => format!(
            "rt-app file, {} task(s) once imported (trace version {})",
            trace.nr_tasks(),
            trace.version
        ),
        _ => format!(
            "trace version {}, {} task(s)",
            trace.version,
            trace.nr_tasks()
        ),
    };
    Ok(format!(
        "{source}: ok: {what}; fits {} ({} CPUs, {whose})\n",
        machine.name,
        machine.topology.nr_cpus()
    ))
}

/// A machine in one line: CPUs, cores, clusters, and each kind's CPUs and capacities.
fn describe_machine(machine: &hybridland_sim::Machine) -> String {
    let topo = &machine.topology;
    let mut kinds: Vec<(usize, &str, usize, u16, u16)> = Vec::new();
    for cpu in topo.cpus().iter() {
        let Some(info) = topo.info(cpu) else { continue };
        match kinds.iter_mut().find(|k| k.0 == info.kind.index()) {
            Some(k) => {
                k.2 += 1;
                k.3 = k.3.min(info.capacity);
                k.4 = k.4.max(info.capacity);
            }
            None => kinds.push((
                info.kind.index(),
                info.kind.name(),
                1,
                info.capacity,
                info.capacity,
            )),
        }
    }
    kinds.sort_unstable();
    let kinds: Vec<String> = kinds
        .iter()
        .map(|(_, name, n, lo, hi)| {
            if lo == hi {
                format!("{n} {name} (capacity {lo})")
            } else {
                format!("{n} {name} (capacity {lo}-{hi})")
            }
        })
        .collect();
    format!(
        "{}: {} CPUs in {} cores and {} clusters; {}",
        machine.name,
        topo.nr_cpus(),
        topo.nr_cores(),
        topo.nr_clusters(),
        kinds.join(", ")
    )
}

/// Up to four names, then how many more: `a, b, c, d and 12 more`.
fn summarise_names(names: &[&str]) -> String {
    if names.len() <= 4 {
        return names.join(", ");
    }
    format!("{} and {} more", names[..4].join(", "), names.len() - 4)
}

fn secs(ns: u64) -> String {
    format!("{:.3}", ns as f64 / 1e9)
}

fn millis(ns: u64) -> String {
    format!("{:.2}", ns as f64 / 1e6)
}

fn micros(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1e3)
}

/// A figure as a number (for ratios) and as text; `None` when the report has no such figure.
/// A number that is not finite (NaN) marks words (`none finished`): no ratio is drawn to or
/// from it.
type Figure = Option<(f64, String)>;

/// The most frame tasks the table gives rows to (four rows each); the others are counted
/// under the table.
const MAX_FRAME_TASKS: usize = 8;

/// The frame tasks of a replay, in trace order with copies expanded: (index in
/// [`Report::tasks`], name).
fn frame_tasks(report: &Report) -> Vec<(usize, String)> {
    report
        .tasks
        .iter()
        .enumerate()
        .filter(|(_, t)| t.frames.is_some())
        .map(|(i, t)| (i, t.name.clone()))
        .collect()
}

/// Four rows per frame task (up to [`MAX_FRAME_TASKS`]), each labelled with the task's name:
/// its fps mean, stdev and range over the fps windows and its missed deadlines. Every policy
/// replays the same trace, so a task has the same index in each report.
fn frame_rows(first: &Report) -> Vec<Row> {
    let mut rows = Vec::new();
    for (index, name) in frame_tasks(first).into_iter().take(MAX_FRAME_TASKS) {
        let frames = move |r: &Report| r.tasks.get(index).and_then(|t| t.frames.clone());
        rows.push(row(&format!("{name}: fps mean"), move |r| {
            frames(r).map(|f| (f.fps_mean, format!("{:.2}", f.fps_mean)))
        }));
        rows.push(row(&format!("{name}: fps stdev"), move |r| {
            frames(r).map(|f| (f.fps_stdev, format!("{:.2}", f.fps_stdev)))
        }));
        rows.push(row(&format!("{name}: fps min-max"), move |r| {
            frames(r).map(|f| (f.fps_min, format!("{:.1}-{:.1}", f.fps_min, f.fps_max)))
        }));
        rows.push(row(&format!("{name}: missed deadlines"), move |r| {
            frames(r).map(|f| (f.missed_deadlines as f64, f.missed_deadlines.to_string()))
        }));
    }
    rows
}

/// One table row: a label and how to read the figure from a report.
struct Row {
    label: String,
    value: Box<dyn Fn(&Report) -> Figure>,
}

fn row(label: &str, f: impl Fn(&Report) -> Figure + 'static) -> Row {
    Row {
        label: label.to_owned(),
        value: Box::new(f),
    }
}

fn rows(reports: &[Report]) -> Vec<Row> {
    let mut rows = vec![
        row("makespan (s)", |r| {
            Some((r.summary.makespan_ns as f64, secs(r.summary.makespan_ns)))
        }),
        row("tasks finished", |r| {
            let n = r.summary.tasks_finished;
            Some((n as f64, format!("{n}/{}", r.summary.tasks)))
        }),
        row("throughput (tasks/s)", |r| {
            let t = r.summary.throughput_per_s;
            Some((t, format!("{t:.3}")))
        }),
        row("mean turnaround (ms)", |r| {
            // A mean of no turnarounds is no figure: 0.00 would read as instant.
            Some(if r.summary.tasks_finished == 0 {
                (f64::NAN, "none finished".to_owned())
            } else {
                (
                    r.summary.mean_turnaround_ns as f64,
                    millis(r.summary.mean_turnaround_ns),
                )
            })
        }),
        row("wake-up latency p50 (us)", |r| {
            Some((r.wake_latency.p50_ns as f64, micros(r.wake_latency.p50_ns)))
        }),
        row("wake-up latency p99 (us)", |r| {
            Some((r.wake_latency.p99_ns as f64, micros(r.wake_latency.p99_ns)))
        }),
        row("wake-up latency max (us)", |r| {
            Some((r.wake_latency.max_ns as f64, micros(r.wake_latency.max_ns)))
        }),
    ];
    rows.extend(frame_rows(&reports[0]));
    rows.push(row("migrations", |r| {
        Some((
            r.summary.migrations as f64,
            r.summary.migrations.to_string(),
        ))
    }));
    let kinds: Vec<String> = reports[0].kinds.iter().map(|k| k.kind.clone()).collect();
    for kind in kinds {
        let k = kind.clone();
        rows.push(row(&format!("{kind} busy (%)"), move |r| {
            r.kinds
                .iter()
                .find(|x| x.kind == k)
                .map(|x| (x.utilisation_pct, format!("{:.1}", x.utilisation_pct)))
        }));
    }
    rows.push(row("energy (J)", |r| {
        Some((r.summary.energy_j, format!("{:.2}", r.summary.energy_j)))
    }));
    rows.push(row("average power (W)", |r| {
        Some((
            r.summary.avg_power_w,
            format!("{:.2}", r.summary.avg_power_w),
        ))
    }));
    rows
}

/// Metrics side by side; every column after the first also gives its ratio to the first.
fn render(names: &[String], reports: &[Report]) -> String {
    let first = &reports[0];
    let mut out = format!(
        "trace {} on {} (seed {})\n\n",
        first.trace, first.machine, first.seed
    );
    let mut header = vec!["metric".to_owned()];
    header.extend(names.iter().cloned());
    let mut t = Table::new(header);
    t.figures_from(1);
    for r in rows(reports) {
        let base = (r.value)(first);
        let mut cells = vec![r.label.clone()];
        for (i, report) in reports.iter().enumerate() {
            let cell = match ((r.value)(report), &base) {
                (None, _) => "-".to_owned(),
                (Some((_, text)), _) if i == 0 => text,
                (Some((v, text)), Some((b, _))) if v.is_finite() && b.is_finite() && *b != 0.0 => {
                    format!("{text} (x{:.2})", v / b)
                }
                (Some((_, text)), _) => text,
            };
            cells.push(cell);
        }
        t.row(cells);
    }
    out += &t.render();
    let frame_tasks = frame_tasks(first);
    if frame_tasks.len() > MAX_FRAME_TASKS {
        let hidden: Vec<&str> = frame_tasks[MAX_FRAME_TASKS..]
            .iter()
            .map(|(_, name)| name.as_str())
            .collect();
        out += &format!(
            "\n{} more frame task(s) not in the table ({}); --json gives each one's `frames`\n",
            hidden.len(),
            summarise_names(&hidden)
        );
    }
    for (name, report) in names.iter().zip(reports) {
        if report.steps.iter().any(|s| s.count > 0) {
            let steps: Vec<String> = report
                .steps
                .iter()
                .map(|s| {
                    if s.overflow > 0 {
                        format!("{} {} ({} overflow)", s.step, s.count, s.overflow)
                    } else {
                        format!("{} {}", s.step, s.count)
                    }
                })
                .collect();
            out += &format!("\n{name} placements by step: {}\n", steps.join(", "));
        }
    }
    if reports.len() == 1 {
        out.push('\n');
        let mut t = Table::new(vec![
            "cluster".into(),
            "kind".into(),
            "cpus".into(),
            "avg running".into(),
        ]);
        for c in &first.clusters {
            t.row(vec![
                c.index.to_string(),
                c.kind.clone(),
                c.cpus.clone(),
                format!("{:.2}", c.avg_running),
            ]);
        }
        out += &t.render();
    }
    out
}
