//! `hybrid-sim`: replay workload traces on models of hybrid CPUs.
//!
//! The command is also a library, so a program can add policies of its own and get every
//! command (`replay`, `sweep`, `compare`, plots, timelines) for them: see [`main_with`] and
//! the repository's `examples/my-policy`.
//!
//! Exit status (the README's table): 0 on success, 1 when a replay fails for a reason that is
//! not the input's, 2 when the input or the command line is at fault, 3 when an output could
//! not be written.

mod compare_cmd;
mod decision_log;
mod decisions_cmd;
mod failure;
mod inputs;
mod new_policy;
mod opts;
mod output;
mod plots;
mod policies_cmd;
mod replay_cmd;
mod sweep_cmd;
mod table;
mod topology_cmd;

use clap::Parser;
use failure::Failure;
use opts::{Command, ImportCommand, Opts, TopologyCommand};
use std::io::IsTerminal;
use std::process::ExitCode;

/// Runs `hybrid-sim` with the process's command line, `policies` taking their names beside
/// the built-in ones, and returns the exit status to end with.
pub fn main_with(policies: &[hybridland_sim::core_policy::CustomPolicy]) -> ExitCode {
    if let Err(e) = hybridland_sim::registry::register(policies.to_vec()) {
        eprintln!("hybrid-sim: error: {e}");
        return ExitCode::from(Failure::Internal(e.into()).exit_code());
    }
    let opts = Opts::parse();
    init_logging(opts.verbose);
    match run(opts).and_then(|text| output::write_stdout(&text)) {
        Ok(output::Stdout::Written) => ExitCode::SUCCESS,
        Ok(output::Stdout::Closed) => {
            ExitCode::from(Failure::Output(anyhow::anyhow!("closed pipe")).exit_code())
        }
        Err(failure) => {
            eprintln!("hybrid-sim: error: {}", failure.message());
            ExitCode::from(failure.exit_code())
        }
    }
}

fn init_logging(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    // Colour codes only for a person at a terminal, never into a log file or pipe; NO_COLOR
    // (no-color.org) turns them off there too.
    let ansi = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .init();
}

/// `import rt-app`: the trace to a file (with one line saying so) or to standard output.
fn import_rt_app(args: &opts::ImportRtAppArgs) -> Result<String, Failure> {
    let options = hybridland_sim::import::rt_app::RtAppOptions {
        duration_ns: args.duration.map(|s| s.saturating_mul(1_000_000_000)),
    };
    let trace = inputs::rt_app_files(&args.files, args.strict, options)?;
    let text = trace.to_json_string() + "\n";
    match &args.output {
        None => Ok(text),
        Some(out) => {
            output::write_file(out, &text)?;
            Ok(format!(
                "{}: {} task(s) from rt-app file(s) {}\n",
                out.display(),
                trace.nr_tasks(),
                args.files
                    .iter()
                    .map(|f| f.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        }
    }
}

/// `import ftrace`: like `import rt-app`, with what was skipped said.
fn import_ftrace(args: &opts::ImportFtraceArgs) -> Result<String, Failure> {
    let name = args.file.display().to_string();
    let text = inputs::read(
        &args.file,
        hybridland_sim::import::ftrace::MAX_FTRACE_BYTES,
        "recording",
    )?;
    let topology = args
        .topology
        .clone()
        .unwrap_or_else(|| inputs::DEFAULT_TOPOLOGY.to_owned());
    let machine = inputs::machine(&topology)?;
    let stem = args.file.file_stem().map_or_else(
        || "recording".to_owned(),
        |s| s.to_string_lossy().into_owned(),
    );
    let imported = hybridland_sim::import::ftrace::import(
        &text,
        &name,
        &stem,
        &machine.topology,
        args.pin_observed,
    )
    .map_err(|e| Failure::Input(e.into()))?;
    let notes = imported.note_lines();
    let mut trace = imported.trace;
    // A trace names its machine file relative to its own directory (`replay` reads it so).
    // A trace may name only a preset or a machine file beside it (`replay` refuses any other
    // path), so a file elsewhere is left out and said.
    trace.machine = match &args.output {
        Some(out) if std::path::Path::new(&topology).is_file() => {
            let beside = relative_to(std::path::Path::new(&topology), out)
                .filter(|rel| !rel.split('/').any(|c| c == ".."));
            if beside.is_none() {
                eprintln!(
                    "hybrid-sim: note: {topology} is not beside {}, so the trace does not name \
                     it; replay it with --topology {topology}",
                    out.display()
                );
            }
            beside
        }
        _ => Some(topology),
    };
    let skipped: Vec<String> = imported
        .skipped
        .iter()
        .map(|(event, n)| format!("{event} {n}"))
        .collect();
    let skipped = if skipped.is_empty() {
        "none".to_owned()
    } else {
        skipped.join(", ")
    };
    inputs::print_import_notes(
        &format!("ftrace import of {name}: what the trace does not carry exactly as recorded"),
        &notes,
    );
    if let Some(path) = &args.live {
        let (kinds, clusters) =
            hybridland_sim::live::busy_by_kind_and_cluster(&machine.topology, &imported.busy_ns);
        let live = hybridland_sim::LiveStats {
            version: hybridland_sim::live::LIVE_VERSION,
            scheduler: format!("the scheduler recorded in {name}"),
            policy: None,
            policy_seed: None,
            settings: Vec::new(),
            window_ns: trace.duration_ns.unwrap_or(1),
            events: 0,
            capped: false,
            tasks: trace.tasks.len() as u64,
            kinds,
            clusters,
            steps: Vec::new(),
            kept: 0,
            stale: 0,
            nudges: 0,
            migrations: imported.migrations,
        };
        output::write_file(path, &(live.to_json_string() + "\n"))?;
    }
    let text = trace.to_json_string() + "\n";
    match &args.output {
        None => {
            tracing::info!("{name}: events skipped: {skipped}");
            Ok(text)
        }
        Some(out) => {
            output::write_file(out, &text)?;
            Ok(format!(
                "{}: {} task(s) from recording {name} on {}; {} wake-up(s) by a task kept as \
                 relations; events skipped: {skipped}\n",
                out.display(),
                trace.nr_tasks(),
                machine.name,
                imported.relations
            ))
        }
    }
}

/// `file`'s path as seen from the directory `beside` is in, when both resolve.
fn relative_to(file: &std::path::Path, beside: &std::path::Path) -> Option<String> {
    let file = std::fs::canonicalize(file).ok()?;
    let dir = match beside.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let dir = std::fs::canonicalize(dir).ok()?;
    let common = file
        .components()
        .zip(dir.components())
        .take_while(|(a, b)| a == b)
        .count();
    let mut rel = std::path::PathBuf::new();
    for _ in dir.components().skip(common) {
        rel.push("..");
    }
    for c in file.components().skip(common) {
        rel.push(c);
    }
    Some(rel.to_string_lossy().into_owned())
}

fn run(opts: Opts) -> Result<String, Failure> {
    match opts.command {
        Command::Replay(args) => replay_cmd::replay(&args),
        Command::Validate(args) => replay_cmd::validate(&args),
        Command::Policies => Ok(policies_cmd::policies()),
        Command::Sweep(args) => sweep_cmd::sweep(&args),
        Command::Import(ImportCommand::RtApp(args)) => import_rt_app(&args),
        Command::Import(ImportCommand::Ftrace(args)) => import_ftrace(&args),
        Command::Compare(args) => compare_cmd::run(&args),
        Command::Decisions(args) => decisions_cmd::run(&args),
        Command::NewPolicy(args) => new_policy::run(&args),
        Command::Topology(TopologyCommand::List { json }) => {
            topology_cmd::list(json).map_err(Failure::Internal)
        }
        Command::Topology(TopologyCommand::Show {
            topology,
            set,
            json,
        }) => {
            let machine = inputs::machine(&topology)?;
            let knobs = inputs::knobs(&set)?;
            let config = knobs
                .policy_config()
                .map_err(|e| Failure::Input(e.into()))?;
            topology_cmd::show(&machine, &config, json).map_err(Failure::Input)
        }
    }
}
