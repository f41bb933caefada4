//! Command-line arguments.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// Deterministic simulator for hybrid-CPU placement policies.
///
/// Replays a workload trace on a model of a real part (P-cores with SMT, E-core clusters,
/// big.LITTLE) under the hybridland policy and under baselines that reproduce what the kernel
/// once got wrong, and prints what each did to throughput, latency, frame rate and power.
/// The same trace, topology and knobs always give byte-identical output.
///
/// Exit status: 0 done; 1 a replay failed for a reason that is not the input's; 2 bad input or
/// usage; 3 an output could not be written (standard output, -o, --live, --timeline, --plot).
#[derive(Debug, Parser)]
#[command(name = "hybrid-sim", version, propagate_version = true)]
pub(crate) struct Opts {
    /// More log output on stderr: -v says what each replay did, -vv adds a line per placement
    /// decision (time, task, reason, CPU, step), -vvv the idle CPUs each decision saw. Colour
    /// only on a terminal (and not with NO_COLOR). `RUST_LOG` overrides the level.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub(crate) verbose: u8,

    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Replay a trace under one or more policies and print their metrics.
    ///
    /// With one policy, prints its metrics; with several, a side-by-side table where every
    /// figure after the first column also shows its ratio to the first.
    Replay(ReplayArgs),
    /// Check a trace, an rt-app file or a machine file without running anything, and say
    /// which of the three it is.
    ///
    /// A trace (or rt-app file) is checked against the machine a replay would use: --topology,
    /// else the trace's `machine`, else i7-13800h; the line says which. A machine file's line
    /// gives its CPUs, cores, clusters and kinds; kinds whose capacities contradict them (a
    /// performance CPU slower than an efficiency one) warn.
    Validate(ValidateArgs),
    /// List the bundled topology presets, or show one.
    #[command(subcommand)]
    Topology(TopologyCommand),
    /// List the policies `replay --policy` accepts, with the seed each baseline reproduces.
    Policies,
    /// Replay one trace over a grid of knob values, copy counts and policies, in parallel,
    /// and print one row per replay.
    ///
    /// Rows run through every combination of --copies (outermost), each --set key in the
    /// order given, and --policy (innermost). The last column is the throughput gain over the
    /// row that differs only in the first --set key's first value (or the first policy):
    /// reference makespan / makespan - 1. A policy runs once for all the values of a key it
    /// does not read (a baseline and cluster_balance): `-` in that column, no gain. A progress
    /// bar with the time left shows on a terminal.
    Sweep(SweepArgs),
    /// Turn another tool's workload file into a trace.
    #[command(subcommand)]
    Import(ImportCommand),
    /// Replay a recorded trace (`scx_hybridland --record FILE`, or `import ftrace`) and set it
    /// beside what was measured live over the same window (FILE.live.json, or `import ftrace
    /// --live`).
    ///
    /// Prints, sim against live: the share of CPU time per core kind, the share of placements
    /// per step of the idle order (percentage points apart; the fidelity target is 10), the
    /// average number of tasks running in each L2 cluster and migrations per second (with
    /// their ratio, sim over live). The replay uses the live scheduler's knobs (the live file's
    /// `settings`), then --set over them, and gives the policy's own draws the live run's
    /// --seed (the live file's `policy_seed`). A machine whose clusters and core kinds are not
    /// the live file's is refused (exit status 2). docs/FIDELITY.md reads one run.
    Compare(CompareArgs),
    /// Feed a live run's decision log (`scx_hybridland --record FILE` writes
    /// FILE.decisions.jsonl) through the same scheduler core again and compare each dispatch
    /// and nudge with what the loop sent.
    ///
    /// No machine model is involved: every input is the one the live loop handed over, so the
    /// replay must agree exactly. Prints how many agree and, at the first difference, its time,
    /// task and the inputs before it. Exit status 0 when everything agrees, 1 at a difference,
    /// 2 for a file that cannot be read. docs/decision-log.md describes the file.
    Decisions(DecisionsArgs),
    /// Write a crate of your own for a placement policy named NAME, which builds outside this
    /// repository: the policy (src/lib.rs, a starting point to edit), NAME-sim (hybrid-sim
    /// with it beside the built-in policies; no BPF toolchain needed), scx_NAME (the live
    /// scheduler, with `--features live`) and a test that replays a bundled trace under it.
    ///
    /// hybridland is not published to a registry: the crate depends on a hybridland checkout
    /// by path (its Cargo.toml says how to use git instead), and its Cargo.lock starts as the
    /// checkout's. Nothing is overwritten: DIR must not exist or be empty.
    NewPolicy(NewPolicyArgs),
}

#[derive(Debug, Args)]
pub(crate) struct NewPolicyArgs {
    /// The policy's name, also the package's (`--policy NAME`): lowercase letters, digits and
    /// single hyphens, starting with a letter.
    pub(crate) name: String,

    /// Where to write the crate [default: ./NAME].
    pub(crate) dir: Option<PathBuf>,

    /// The hybridland checkout to depend on [default: the one this hybrid-sim was built from].
    #[arg(long, value_name = "DIR")]
    pub(crate) hybridland: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct DecisionsArgs {
    /// The decision log (at most 256 MiB).
    pub(crate) log: PathBuf,

    /// Change a hybridland knob over the log's own (as `replay --set`), to see which decisions
    /// it would change. Repeatable.
    #[arg(short, long = "set", value_name = "KEY=VALUE")]
    pub(crate) set: Vec<String>,
}

#[derive(Debug, Args)]
pub(crate) struct CompareArgs {
    /// The recorded trace.
    pub(crate) trace: PathBuf,

    /// The live figures (`scx_hybridland --record FILE` writes FILE.live.json).
    pub(crate) live: PathBuf,

    /// The machine it was recorded on: a preset name or a machine file (what `scx_hybridland
    /// --dry-run --emit-topology` wrote). Default as for `replay`.
    #[arg(short, long, value_name = "NAME|FILE")]
    pub(crate) topology: Option<String>,

    /// The policy to replay [default: the one the live file names (`scx_hybridland --policy`),
    /// else hybridland]: `kernel-default` against the kernel's default scheduler.
    #[arg(short, long, value_name = "NAME")]
    pub(crate) policy: Option<String>,

    /// Override a knob, over the live file's settings (as `replay --set`). Repeatable.
    #[arg(short, long = "set", value_name = "KEY=VALUE")]
    pub(crate) set: Vec<String>,

    /// Print the comparison as JSON: every row with sim, live, difference, ratio and whether a
    /// share is within the target.
    #[arg(long)]
    pub(crate) json: bool,

    /// Stop the replay after this many seconds of wall-clock time; 0 for no limit.
    #[arg(long, value_name = "SECS", default_value_t = 600)]
    pub(crate) max_wall_secs: u64,
}

#[derive(Debug, Args)]
// The machine, policies and knobs as `replay` takes them, in `sweep`'s words.
#[command(mut_arg("topology", |a| a.help("A preset name or topology file; default as for `replay`")))]
#[command(mut_arg("policy", |a| a.help("Policies, comma-separated; each is a dimension of the grid")))]
#[command(mut_arg("set", |a| a
    .value_name("KEY=V1[,V2...]")
    .help("A knob and the values to sweep it over, e.g. `cluster_balance=off,on,auto`; any \
        `replay --set` key. Repeatable, one --set per key. Values are split at commas, so give \
        a primary domain as a hex mask, not a CPU list")))]
pub(crate) struct SweepArgs {
    /// The trace file, or an rt-app workload file.
    pub(crate) trace: PathBuf,

    #[command(flatten)]
    pub(crate) run: PolicyRun,

    /// Replicate the trace's tasks: each task gets N times its copies, for each N listed.
    #[arg(long, value_name = "N[,N...]", value_delimiter = ',')]
    pub(crate) copies: Vec<u32>,

    /// Seed for every replay (default: the trace's `seed`); printed in the report.
    #[arg(long, value_name = "N")]
    pub(crate) seed: Option<u64>,

    /// Replays run at once (worker threads).
    #[arg(short, long, value_name = "N", default_value_t = 2)]
    pub(crate) jobs: usize,

    /// CSV instead of a table: one row per replay, raw figures, a header row.
    #[arg(long, conflicts_with = "json")]
    pub(crate) csv: bool,

    /// JSON instead of a table: an array with one object per replay (its grid point, seed,
    /// gain and full report).
    #[arg(long)]
    pub(crate) json: bool,

    /// With an rt-app file: refuse one with anything the simulator drops or approximates.
    #[arg(long)]
    pub(crate) strict: bool,

    /// Stop any replay that has run this many seconds of wall-clock time; 0 for no limit.
    #[arg(long, value_name = "SECS", default_value_t = 600)]
    pub(crate) max_wall_secs: u64,
}

#[derive(Debug, Subcommand)]
pub(crate) enum ImportCommand {
    /// An rt-app JSON workload (rt-app's doc/tutorial.txt format, read as rt-app reads it:
    /// comments, trailing commas, repeated keys, the `"suspend",` shorthand), one file or
    /// several merged as rt-app's merge.py merges them: tasks, phases, run / runtime / sleep /
    /// timer / fork / mem / iorun / memrun events, loops, instances, delays, cpus, priorities,
    /// uclamps, and the older exec / period grammar. suspend / resume, signal / broad / wait /
    /// sync and sem_post / sem_wait become the trace's wake-up relation (wait_for / wake), so
    /// wake chains block as they do under rt-app.
    ///
    /// What the model cannot carry exactly (lock contention, barrier waits, a signal waking
    /// one of several waiters, a wait nobody can answer, taskgroup, ...) is printed on
    /// standard error as one line per task, whatever RUST_LOG says; --strict refuses the file
    /// instead.
    /// `hybrid-sim replay` reads an rt-app file directly too.
    RtApp(ImportRtAppArgs),
    /// A scheduler recording: the text /sys/kernel/tracing/trace or `trace-cmd report`
    /// prints (current sched plugin form, older `prev_comm=` form, `-N`, `-R` with numeric
    /// prev_state), or `perf script` / `perf sched script` output with or without call chains
    /// (sched_switch, sched_wakeup, sched_wakeup_new, sched_waking, sched_migrate_task,
    /// sched_process_exit).
    ///
    /// Each task's run bursts become reference work by the capacity of the CPU they ran on
    /// (from --topology), its blocked stretches sleeps; a switch-out as R, R+ or a number
    /// without the kernel's TASK_REPORT bits (0, 256, 4096) is a preemption, not a sleep. A
    /// wake-up reported from another running task (not the idle task, not an interrupt where
    /// the flags column says so) is a wait for that task (the trace's wake-up relation).
    /// Other events are skipped and counted; a line that cannot be read is an error naming
    /// its number and what was expected. What the trace does not carry exactly as recorded
    /// (a task with more bursts than a trace task holds, folded into a loop; a sched_switch
    /// the recording lacks; the tracer's lost-events marks) is printed on standard error,
    /// whatever RUST_LOG says.
    Ftrace(ImportFtraceArgs),
}

#[derive(Debug, Args)]
pub(crate) struct ImportFtraceArgs {
    /// The recording (text, at most 256 MiB).
    pub(crate) file: PathBuf,

    /// The machine it was recorded on: a preset name or a topology file (default
    /// i7-13800h). Its capacities scale the bursts; the trace names it (a file only when it
    /// is beside the output, as a trace's `machine` must be).
    #[arg(short, long, value_name = "NAME|FILE")]
    pub(crate) topology: Option<String>,

    /// Where to write the trace; standard output when not given.
    #[arg(short, long, value_name = "TRACE")]
    pub(crate) output: Option<PathBuf>,

    /// Restrict each task to the CPUs it was seen running on (a recording cannot tell a
    /// pinned task from one that never moved, so this is off by default).
    #[arg(long)]
    pub(crate) pin_observed: bool,

    /// Also write what the recording shows about placement (CPU time per core kind and L2
    /// cluster, migrations) as live figures for `hybrid-sim compare`: the recorded scheduler
    /// measured against a replay.
    #[arg(long, value_name = "FILE")]
    pub(crate) live: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct ImportRtAppArgs {
    /// The rt-app file, or the files of one workload (merged in the order given: a later
    /// file's global key, resource or task replaces an earlier one of the same name); at most
    /// 16 MiB, the files together.
    #[arg(required = true, num_args = 1..)]
    pub(crate) files: Vec<PathBuf>,

    /// The run's length in seconds, replacing global.duration: what `loop: -1` runs until
    /// when the file gives no duration (rt-app runs it until stopped).
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub(crate) duration: Option<u64>,

    /// Where to write the trace; standard output when not given.
    #[arg(short, long, value_name = "TRACE")]
    pub(crate) output: Option<PathBuf>,

    /// Refuse (exit status 2) a file with anything the simulator drops or approximates,
    /// naming the file, the task and the feature.
    #[arg(long)]
    pub(crate) strict: bool,
}

#[derive(Debug, Args)]
pub(crate) struct ReplayArgs {
    /// The trace file (JSON; see docs/trace-format.md), or an rt-app workload file, which is
    /// imported first (see `hybrid-sim import rt-app`).
    pub(crate) trace: PathBuf,

    /// With an rt-app file: refuse (exit status 2) one with anything the simulator drops or
    /// approximates, instead of warning.
    #[arg(long)]
    pub(crate) strict: bool,

    #[command(flatten)]
    pub(crate) run: PolicyRun,

    /// Seed for every random choice of the replay (default: the trace's `seed`; the same as
    /// `--set seed=N`). Every report prints the seed it ran with.
    #[arg(long, value_name = "N")]
    pub(crate) seed: Option<u64>,

    /// Print JSON instead of a table: always an array with one report per policy, in
    /// --policy order.
    #[arg(long)]
    pub(crate) json: bool,

    /// Stop a replay that has run this many seconds of wall-clock time, with an error naming
    /// the limit (exit status 2); 0 for no limit. The event and simulated-time limits still
    /// apply (docs/trace-format.md, "Limits").
    #[arg(long, value_name = "SECS", default_value_t = 600)]
    pub(crate) max_wall_secs: u64,

    /// Also write the replay as a Chrome trace-event JSON file for Perfetto or
    /// chrome://tracing: one process per policy, one track per CPU (sorted by core kind and
    /// cluster) with a slice per run named by its task (its category the idle-order step that
    /// placed it, `queued` when it waited in a queue, else `placed`), one track per task,
    /// wake-up arrows from the run before a sleep to the run after, counters for busy CPUs per
    /// cluster and power (one sample per timestamp). Written as the replay runs, not held in
    /// memory.
    #[arg(long, value_name = "FILE.json")]
    pub(crate) timeline: Option<PathBuf>,

    /// Also draw SVG charts into this directory (created if missing, before any replay):
    /// CPU time per core kind per policy, busy CPUs per cluster over time, fps over time for a
    /// frame task, and the wake-up latency CDF on a log latency axis.
    #[arg(long, value_name = "DIR")]
    pub(crate) plot: Option<PathBuf>,
}

/// The machine, the policies and the knobs of a replay: `replay`'s arguments, which `sweep`
/// takes too (with its own help text).
#[derive(Debug, Args)]
pub(crate) struct PolicyRun {
    /// A preset name (see `hybrid-sim topology list`) or a machine file (TOML, as
    /// scx_hybridland --emit-topology writes it; docs/machine-model.md). Default:
    /// the trace's `machine` field (a file there is taken from the trace's directory and must
    /// stay in it), else i7-13800h.
    #[arg(short, long, value_name = "NAME|FILE")]
    pub(crate) topology: Option<String>,

    /// Policies to compare, comma-separated; the first is the reference for ratios.
    #[arg(
        short,
        long,
        value_name = "NAME[,NAME...]",
        value_delimiter = ',',
        default_value = "hybridland"
    )]
    pub(crate) policy: Vec<String>,

    /// Override a knob for every policy that has it, e.g. `primary_domain=performance`,
    /// `cluster_balance=on`, `slice_us=5000`, or a machine-model parameter such as
    /// `smt_slowdown_pct=30`. Repeatable. `hybrid-sim policies` lists the keys.
    #[arg(short, long = "set", value_name = "KEY=VALUE")]
    pub(crate) set: Vec<String>,
}

#[derive(Debug, Args)]
pub(crate) struct ValidateArgs {
    /// The trace file, or an rt-app workload file.
    pub(crate) trace: PathBuf,

    /// With an rt-app file: refuse one with anything the simulator drops or approximates.
    #[arg(long)]
    pub(crate) strict: bool,

    /// Check the trace against this preset or machine file instead of its own machine.
    #[arg(short, long, value_name = "NAME|FILE")]
    pub(crate) topology: Option<String>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum TopologyCommand {
    /// List the presets.
    List {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Show a preset or topology file: CPUs, cores, clusters, kinds, capacities, and the
    /// order in which the policy would fill the idle machine.
    Show {
        /// Preset name or TOML/JSON file.
        #[arg(value_name = "NAME|FILE")]
        topology: String,

        /// Knobs for the fill order, e.g. `primary_domain=powersave`, `cluster_balance=off`.
        #[arg(short, long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,

        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}
