//! Command-line flags, in the style of the scx schedulers.

#![forbid(unsafe_code)]

#[cfg(test)]
mod tests;

use clap::{CommandFactory, FromArgMatches, Parser};
use core::fmt::Write as _;
use hybridland_policy::{
    Builtin, ClusterBalance, CoreConfig, CustomPolicy, PolicyConfig, PrimaryDomain,
};
use std::path::PathBuf;

/// scx_hybridland: a sched_ext scheduler for hybrid CPUs (P-cores with SMT, E-core clusters,
/// big.LITTLE). Wake-ups go to a fully idle P-core first, then an idle E-core (spread across
/// L2 clusters), then an idle SMT sibling of a busy core; the policy is the `hybridland-policy`
/// crate, fed the kernel's real idle masks.
///
/// Stop it with Ctrl-C, SIGINT or SIGTERM; if it dies the kernel falls back to its default
/// scheduler. Change cluster balance while it runs with
/// `echo off > /run/scx_hybridland/cluster_balance` (off, on or auto).
#[derive(Debug, Parser)]
#[command(name = "scx_hybridland", version, verbatim_doc_comment)]
pub(crate) struct Opts {
    /// Where tasks go first: `performance` (P-cores), `powersave` (E-cores), `all`, `none` (no
    /// preference, as `all`), `turbo` (the fastest-ranked CPUs only), `auto` (follow
    /// power-profiles-daemon: performance -> P-cores, power-saver -> E-cores, else all), a CPU
    /// list (`0-5,12`) or a hex mask (`0xff000`). Other CPUs are used only when none of these
    /// is idle.
    #[arg(short = 'm', long, default_value_t = DomainArg::Policy(PolicyConfig::DEFAULT.primary_domain))]
    pub(crate) primary_domain: DomainArg,

    /// Spread work across L2 clusters: `off`, `on`, or `auto` (only at moderate load). Can be
    /// changed at run time through the control file.
    #[arg(long, default_value_t = PolicyConfig::DEFAULT.cluster_balance)]
    pub(crate) cluster_balance: ClusterBalance,

    /// `auto` cluster balance stops once this percentage of CPUs is busy.
    #[arg(long, default_value_t = PolicyConfig::DEFAULT.auto_high_busy_pct, value_parser = clap::value_parser!(u8).range(0..=100))]
    pub(crate) auto_high_busy_pct: u8,

    /// A task fits a CPU when its utilisation is at most this percentage of the CPU's capacity.
    #[arg(long, default_value_t = PolicyConfig::DEFAULT.fit_margin_pct, value_parser = clap::value_parser!(u8).range(1..=100))]
    pub(crate) fit_margin_pct: u8,

    /// Turn off wake-affine: without it, a task woken synchronously (its waker sleeps right
    /// after, as a pipe writer that then reads) goes where the idle order puts it instead of
    /// to the waker's CPU, and each such wake-up wakes an idle CPU.
    #[arg(long)]
    pub(crate) no_wake_affine: bool,

    /// A knob of the policy's own, `KEY=VALUE` (repeatable): a policy registered by a
    /// program that runs this crate as a library declares them (`hybrid-sim policies` lists
    /// them); hybridland's knobs are the flags above.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub(crate) set: Vec<String>,

    /// Maximum time slice in microseconds; shortened when many tasks wait.
    #[arg(short = 's', long, default_value_t = CoreConfig::DEFAULT.slice_ns / 1_000, value_parser = clap::value_parser!(u64).range(100..=1_000_000))]
    pub(crate) slice_us: u64,

    /// Read the machine from this TOML file instead of sysfs (see the crate README).
    #[arg(long, value_name = "FILE")]
    pub(crate) topology: Option<PathBuf>,

    /// Root of the sysfs tree to detect the topology from and to check for sched_ext [default:
    /// `$SCX_SYSFS_PREFIX/sys` when that is set, as scx_utils reads it, else `/sys`].
    #[arg(long, value_name = "DIR")]
    pub(crate) sysfs_root: Option<PathBuf>,

    /// Log statistics every SECS seconds (0: never), read from this scheduler's scx_stats
    /// socket as `--monitor` reads them.
    #[arg(long, value_name = "SECS", default_value_t = 0.0, value_parser = seconds)]
    pub(crate) stats: f64,

    /// Do not schedule: print the figures of the scx_hybridland already running, a line every
    /// SECS seconds, from the scx_stats socket /var/run/scx/root/stats. Loads nothing; needs
    /// root, as the socket is root's (mode 0600).
    #[arg(long, value_name = "SECS", value_parser = positive_seconds, conflicts_with_all = ["stats", "dry_run", "fifo"])]
    pub(crate) monitor: Option<f64>,

    /// Describe each statistic (`--stats`, `--monitor`, the scx_stats socket) and exit.
    #[arg(long)]
    pub(crate) help_stats: bool,

    /// Directory of the run-time control file `cluster_balance`.
    #[arg(long, default_value = "/run/scx_hybridland", value_name = "DIR")]
    pub(crate) control_dir: PathBuf,

    /// Print the detected topology, the knobs and the idle order, then exit without loading
    /// anything (no root needed).
    #[arg(long)]
    pub(crate) dry_run: bool,

    /// With --dry-run (and only then: it is refused otherwise): also write the machine as
    /// detected (from sysfs, `--sysfs-root`, `SCX_SYSFS_PREFIX` or `--topology`) to FILE, as a
    /// machine file `--topology` and `hybrid-sim replay TRACE --topology FILE` read. `-` is
    /// standard output, which then holds the file alone.
    #[arg(long, value_name = "FILE", requires = "dry_run")]
    pub(crate) emit_topology: Option<PathBuf>,

    /// The placement policy: hybridland (the default), a built-in baseline, or one of the
    /// program's own. Its help is written at start by [`command`], which lists them all.
    #[arg(
        long,
        value_name = "NAME",
        default_value = "hybridland",
        conflicts_with = "fifo"
    )]
    pub(crate) policy: String,

    /// Seed for the policies that draw at random (capacity-blind's start CPU, spread's
    /// picks): the same seed, the same draws.
    #[arg(long, default_value_t = 0)]
    pub(crate) seed: u64,

    /// Benchmark baseline: no policy, scx_rlfifo's setup. A wake-up that finds an idle CPU is
    /// dispatched there by the framework's BPF code (its built-in idle selection); every other
    /// queued task goes to an idle CPU that selection picks (until it finds none in a batch),
    /// else to the shared queue, in arrival order with the full slice (`--slice-us`), to the
    /// first CPU that frees up. No idle snapshot, no nudges, no task events: what the
    /// framework costs at its cheapest (scripts/vm-bench.sh).
    #[arg(long)]
    pub(crate) fifo: bool,

    /// Send every wake-up to user space. By default a wake-up that finds an allowed CPU free
    /// is placed in the kernel, without the round trip, on the CPU the policy's idle order
    /// chooses: the kernel walks tables the policy exports, with the task's class (which CPUs
    /// its utilisation fits) as the core last wrote it (the `fast` stats counters). The
    /// answer is the one the loop would give; policies without tables (the baselines and
    /// custom policies) send every wake-up to user space anyway.
    #[arg(long)]
    pub(crate) no_fast_wake: bool,

    /// Preempt on wake-up: a woken task that finds no CPU idle takes a busy CPU whose task is
    /// at least a base slice ahead of it in vtime (its previous CPU when that qualifies); it
    /// goes first in that CPU's queue and the task there ends its slice at once (the `preempt`
    /// stats counter). Without it, such a task waits in the shared queue for some CPU's slice
    /// to end; one allowed on a single CPU takes that CPU all the same (the pinned rule). Off by default: in the VM it moved no latency figure beyond the spread between
    /// boots and cost hackbench about 10% (BENCHMARKS.md).
    #[arg(long, conflicts_with = "fifo")]
    pub(crate) wake_preempt: bool,

    /// No up-migration scan: the core no longer looks, every 20 ms, for a running task that
    /// an idle CPU would now serve better (a P-core freed while it runs on an E-core) to
    /// nudge it there; such a task moves only when the loop next decides for it (its next
    /// wake-up, or a slice end that reaches user space). The scan's nudges interrupt running
    /// tasks: in the VM's frame load the frame task missed about half as many frames without
    /// them, with about as much of its work on P-cores (BENCHMARKS.md).
    #[arg(long, conflicts_with = "fifo")]
    pub(crate) no_up_scan: bool,

    /// Hold every wake-up the fast path keeps against the policy's own answer for the idle
    /// CPUs it was decided on, and log the count at exit (and the first disagreements as they
    /// happen). For checking the kernel side; it costs a record per kept wake-up.
    #[arg(long, conflicts_with_all = ["no_fast_wake", "fifo"])]
    pub(crate) audit_fast_wake: bool,

    /// Give every task the full slice (`--slice-us`), as `--fifo` does, instead of dividing it
    /// by the number of waiting tasks: compares the policy's placement with `--fifo` under one
    /// slice rule (scripts/vm-bench.sh).
    #[arg(long)]
    pub(crate) fixed_slice: bool,

    /// Record what the scheduler sees (per task: wake-ups, runs from the kernel's run times
    /// turned into reference work by the capacity of the CPU they ran on, sleeps, allowed
    /// CPUs) and write it at exit (Ctrl-C, SIGTERM, or the kernel ending the scheduler) as a
    /// hybrid-sim trace to FILE, with the scheduler's own figures over the same window beside
    /// it (see --record-live): `hybrid-sim compare FILE FILE.live.json` sets a replay beside
    /// them. Also the decision log, FILE.decisions.jsonl: the core's inputs and the dispatches
    /// sent, which `hybrid-sim decisions` replays exactly (not with --fifo: no core decides).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["dry_run", "monitor"])]
    pub(crate) record: Option<PathBuf>,

    /// With --record: where to write the live figures (CPU time per core kind and cluster,
    /// placements per step, migrations) [default: FILE.live.json].
    #[arg(long, value_name = "FILE", requires = "record")]
    pub(crate) record_live: Option<PathBuf>,

    /// With --record: the most scheduling events to record (40 bytes each, and as many
    /// wake-ups by a task at 16 bytes, taken up front; at most 150000, so that the trace built
    /// from them at exit fits the framework's 64 MiB heap). A recording also keeps at most
    /// 8192 tasks (or --max-tasks, if lower).
    /// Once either is reached, recording stops with one log line and scheduling goes on; the
    /// files cover the window up to then.
    #[arg(long, value_name = "N", default_value_t = crate::record::DEFAULT_MAX_EVENTS as u64,
          value_parser = clap::value_parser!(u64).range(1..=crate::record::MAX_MAX_EVENTS as u64))]
    pub(crate) record_max_events: u64,

    /// Most tasks the loop keeps state for (utilisation, vtime, home), reserved at start; a
    /// task beyond them is placed from a fresh state each time (counted as `untracked`).
    #[arg(long, default_value_t = crate::scheduler::DEFAULT_MAX_TASKS,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(64..=crate::scheduler::MAX_MAX_TASKS as u64))]
    pub(crate) max_tasks: usize,

    /// The kernel's watchdog: a runnable task not run for this long ejects the scheduler,
    /// in ms (1000-30000; the framework's own default is 5000, which a loaded host can pass).
    #[arg(long, default_value_t = crate::watchdog::DEFAULT_TIMEOUT_MS,
          value_parser = clap::value_parser!(u32).range(1000..=30000))]
    pub(crate) watchdog_timeout_ms: u32,

    /// For testing the kernel's rescue of the scheduler's own threads (vm-check): a thread of
    /// ours holds a lock the loop takes each round, 10 ms out of every 30.
    #[arg(long, hide = true)]
    pub(crate) test_own_lock: bool,

    /// Size of the kernel's exit dump buffer, in bytes (0: none).
    #[arg(long, default_value_t = 0)]
    pub(crate) exit_dump_len: u32,

    /// Log more: -v for each decision's summary, -vv for everything.
    #[arg(short = 'v', long, action = clap::ArgAction::Count)]
    pub(crate) verbose: u8,
}

/// The flags as `program` shows them: under its name, `--policy`'s help listing the built-in
/// policies and `custom` with their descriptions, and an about line naming the program (and
/// its own policies, when it has some).
pub(crate) fn command(program: &'static str, custom: &[CustomPolicy]) -> clap::Command {
    let names: Vec<&str> = Builtin::ALL
        .iter()
        .map(|b| b.name())
        .chain(custom.iter().map(|c| c.name))
        .collect();
    let short = format!(
        "The placement policy: {} (--help says what each does)",
        names.join(", ")
    );
    let mut cmd = Opts::command()
        .name(program)
        .mut_arg("policy", |a| a.help(short).long_help(policy_help(custom)));
    if custom.is_empty() {
        // Hybridland's own scheduler, perhaps under another name: its description, so named.
        if program != crate::DEFAULT_PROGRAM {
            let renamed = |text: Option<&clap::builder::StyledStr>| {
                let text = text.map(ToString::to_string).unwrap_or_default();
                match text.strip_prefix(crate::DEFAULT_PROGRAM) {
                    Some(rest) => format!("{program}{rest}"),
                    None => text,
                }
            };
            let (about, long) = (renamed(cmd.get_about()), renamed(cmd.get_long_about()));
            cmd = cmd.about(about).long_about(long);
        }
        return cmd;
    }
    let own: Vec<&str> = custom.iter().map(|c| c.name).collect();
    let own = own.join(", ");
    cmd.about(format!(
        "{program}: a sched_ext scheduler built on the scx_hybridland library, with the \
         placement policies {own} beside hybridland's"
    ))
    .long_about(format!(
        "{program}: a sched_ext scheduler built on the scx_hybridland library. Its placement \
         policies: {own}, beside hybridland and its baselines (--policy says what each does; \
         hybridland runs unless --policy names another). --dry-run shows where the policy \
         places new tasks on this machine, without loading anything.\n\n\
         Stop it with Ctrl-C, SIGINT or SIGTERM; if it dies the kernel falls back to its \
         default scheduler."
    ))
}

/// `--policy`'s long help: every policy `--policy` takes, a line each, then the ones it cannot.
fn policy_help(custom: &[CustomPolicy]) -> String {
    let rows: Vec<(&str, &str)> = Builtin::ALL
        .iter()
        .map(|b| (b.name(), b.description()))
        .chain(custom.iter().map(|c| (c.name, c.description)))
        .collect();
    let mut s = String::from("The placement policy (hybridland unless given), one of:\n");
    for (name, description) in rows {
        let _ = writeln!(s, "- {name}: {description}");
    }
    let _ = write!(
        s,
        "The baselines reproduce the seed documents' complaints, to compare with hybridland \
         live. hybrid-sim's kernel-default and summed-capacity cannot run here: they balance \
         per-CPU queues by pulling tasks between CPUs, and this framework hands every decision \
         to user space through one shared queue with no such pull (for the kernel's own \
         scheduler, unload this one). The knobs above (-m, --cluster-balance, \
         --auto-high-busy-pct, --fit-margin-pct) and the control file are hybridland's only."
    );
    s
}

/// Parses the process's command line as [`command`] shows it; a bad flag, `--help` or
/// `--version` ends the process there, as clap's own `parse` does.
pub(crate) fn parse(program: &'static str, custom: &[CustomPolicy]) -> Opts {
    let mut cmd = command(program, custom);
    let mut matches = cmd.clone().get_matches();
    Opts::from_arg_matches_mut(&mut matches).unwrap_or_else(|e| e.format(&mut cmd).exit())
}

/// A number of seconds, 0 or more.
fn seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..=86_400.0).contains(&v) => Ok(v),
        _ => Err(format!("`{s}` is not a number of seconds from 0 to 86400")),
    }
}

/// A number of seconds above 0.
fn positive_seconds(s: &str) -> Result<f64, String> {
    match seconds(s) {
        Ok(v) if v > 0.0 => Ok(v),
        _ => Err(format!(
            "`{s}` is not a number of seconds above 0 (up to 86400)"
        )),
    }
}

/// `-m/--primary-domain` as given: `auto` (power-profiles-daemon's profile, read at start) or
/// one of the policy crate's [`PrimaryDomain`]s, which the simulator takes by the same names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum DomainArg {
    /// Follow the power profile (read from power-profiles-daemon's state at start).
    Auto,
    /// A domain the policy names itself (`turbo` and `none` included).
    Policy(PrimaryDomain),
}

impl core::fmt::Display for DomainArg {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Auto => f.write_str("auto"),
            Self::Policy(domain) => domain.fmt(f),
        }
    }
}

impl core::str::FromStr for DomainArg {
    type Err = hybridland_policy::CpuListError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "auto" => Ok(Self::Auto),
            other => other.parse().map(Self::Policy),
        }
    }
}

/// Where power-profiles-daemon keeps its active profile.
pub(crate) const PPD_STATE: &str = "/var/lib/power-profiles-daemon/state.ini";

/// The `Profile=` of power-profiles-daemon's state file (`performance`, `balanced`,
/// `power-saver`), if there is one.
pub(crate) fn ppd_profile(state_ini: &str) -> Option<String> {
    std::fs::read_to_string(state_ini)
        .ok()?
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("Profile=")
                .map(|p| p.trim().to_owned())
        })
}

impl DomainArg {
    /// The policy's domain; `profile` is power-profiles-daemon's, if read. The mapping is the
    /// policy crate's, so the simulator resolves a profile the same way.
    pub(crate) fn resolve(&self, profile: Option<&str>) -> PrimaryDomain {
        match self {
            Self::Policy(d) => *d,
            Self::Auto => PrimaryDomain::for_power_profile(profile),
        }
    }
}

impl Opts {
    /// The sysfs root in force: `--sysfs-root`, else `$SCX_SYSFS_PREFIX/sys`, else `/sys`.
    pub(crate) fn sysfs_root(&self) -> PathBuf {
        sysfs_root(
            self.sysfs_root.as_deref(),
            std::env::var_os("SCX_SYSFS_PREFIX").as_deref(),
        )
    }
}

fn sysfs_root(flag: Option<&std::path::Path>, prefix: Option<&std::ffi::OsStr>) -> PathBuf {
    match (flag, prefix) {
        (Some(root), _) => root.to_owned(),
        (None, Some(prefix)) if !prefix.is_empty() => PathBuf::from(prefix).join("sys"),
        (None, _) => PathBuf::from("/sys"),
    }
}
