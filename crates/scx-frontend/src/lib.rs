//! `scx_hybridland`: the hybridland placement policy as a live sched_ext scheduler on
//! scx_rustland_core. See the crate README for how to run it.
//!
//! The scheduler is also a library, so a program can run a placement policy of its own live
//! under `--policy NAME`: [`main_with`] (see the repository's `examples/my-policy`). Such a
//! program goes by its own name: its messages, `--help` and `--dry-run` say the name it was
//! started as, `--help` lists its policies beside the built-in ones, and `--dry-run` shows the
//! fill order of whichever policy `--policy` names.
//!
//! `main` in the order users of the scx schedulers know (scx_bpfland): parse the flags (clap
//! answers `-V`/`--version` and `--help` and exits); set up the logger; then `init` (detect
//! the topology, build the policy; `--dry-run` prints and exits; check that sched_ext can be
//! used here; load the idle-snapshot program and the scheduler), `run` (the loop until
//! SIGINT/SIGTERM or the kernel ends it; Ctrl-C is caught by scx_rustland_core's connector,
//! the one handler the `ctrlc` crate allows per process, and the loop sees it through
//! `exited()`), report the kernel's exit info, and if the kernel asked for a restart, re-exec
//! with the same arguments (`restart` says why not in-process).

// No `unsafe` in this crate's own code. The generated bindings need it (the BPF skeletons'
// accessors, and scx_rustland_core's connector `bpf.rs` for its ring-buffer copy, its
// `sched_param` call and its `Plain` impl), so they live in `bindings` below, the one place
// that allows it, with, in tests alone, the one call into the host build of the kernel's
// walk (`fast_wake::host_walk`); every other module says `#![forbid(unsafe_code)]` itself (a
// crate-level `forbid` could not be lifted for those two).
#![deny(unsafe_code)]

mod clock;
mod control_file;
mod dry_run;
mod emit_topology;
mod fast_audit;
mod fast_placements;
mod fast_wake;
mod fifo;
mod idle_snapshot;
mod init;
mod ops;
mod opts;
mod own_lock;
mod policy_choice;
mod preflight;
mod record;
mod restart;
mod safe_file;
mod scheduler;
mod slot_ring;
mod stats;
mod sys;
mod sysfs;
mod task_events;
#[cfg(test)]
mod test_machines;
mod topology_detect;
mod wakers;
mod watchdog;

mod bindings;
// The connector refers to `crate::bpf_intf` and `crate::bpf_skel`.
use bindings::{bpf, bpf_intf, bpf_skel, idle_skel, task_events_skel};

use anyhow::Result;
use core::mem::MaybeUninit;
use core::sync::atomic::{AtomicBool, Ordering};
use core::time::Duration;
pub use hybridland_policy::CustomPolicy;
use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;
use std::sync::{Arc, OnceLock};
use tracing::{error, info, warn};

/// The name this program goes by when `argv[0]` gives none.
const DEFAULT_PROGRAM: &str = "scx_hybridland";

static PROGRAM: OnceLock<String> = OnceLock::new();

/// The name this program goes by in its messages, `--help` and `--dry-run`: the file name it
/// was started as, so a binary built on this library says its own name; `scx_hybridland`
/// until [`main_with`] has read it, or when `argv[0]` gives none.
pub(crate) fn program() -> &'static str {
    PROGRAM.get().map_or(DEFAULT_PROGRAM, String::as_str)
}

/// The file name of `arg0` (`/usr/local/bin/scx_my_policy` -> `scx_my_policy`), or
/// [`DEFAULT_PROGRAM`] when it has none or is not UTF-8.
fn program_name(arg0: Option<&std::ffi::OsStr>) -> String {
    arg0.map(Path::new)
        .and_then(Path::file_name)
        .and_then(|n| n.to_str())
        .filter(|n| !n.is_empty())
        .unwrap_or(DEFAULT_PROGRAM)
        .to_owned()
}

fn setup_logging(verbose: u8) {
    let level = match verbose {
        0 => "info",
        1 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colour codes only on a terminal: not in the journal (the service) or a log file.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .init();
}

/// Storage for the BPF objects (they outlive the skeletons that borrow them).
struct Objects<'a> {
    idle: &'a mut MaybeUninit<libbpf_rs::OpenObject>,
    idle_fallback: &'a mut MaybeUninit<libbpf_rs::OpenObject>,
    events: &'a mut MaybeUninit<libbpf_rs::OpenObject>,
    events_fallback: &'a mut MaybeUninit<libbpf_rs::OpenObject>,
    sched: &'a mut MaybeUninit<libbpf_rs::OpenObject>,
}

/// `--monitor SECS`: print the running scheduler's figures, a line every SECS seconds, until
/// Ctrl-C. Only the socket is needed: no BPF, access to the socket, which is root's (mode 0600).
fn monitor(every: f64) -> ExitCode {
    let stop = Arc::new(AtomicBool::new(false));
    // This process loads no connector, so this is the one Ctrl-C handler.
    let flag = Arc::clone(&stop);
    if let Err(e) = ctrlc::set_handler(move || flag.store(true, Ordering::Relaxed)) {
        warn!("no Ctrl-C handler ({e}): stop with SIGKILL");
    }
    let result = stats::monitor(
        Path::new(stats::SOCKET),
        Duration::from_secs_f64(every),
        || stop.load(Ordering::Relaxed),
        |m| {
            let mut out = std::io::stdout().lock();
            writeln!(out, "{}", m.line())?;
            out.flush()?;
            Ok(())
        },
    );
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            error!("{e}");
            ExitCode::FAILURE
        }
    }
}

/// How a run ended.
enum Outcome {
    /// Exit with this code.
    Exit(ExitCode),
    /// The kernel asked for a restart.
    Restart(restart::Restarter),
}

/// Runs the loop, detaches, reports why it ended.
fn run(
    mut sched: scheduler::Scheduler<ops::Live<'_, '_>>,
    restarter: Option<restart::Restarter>,
) -> Result<Outcome> {
    let result = sched.run();
    sched.finish_recording();
    let scheduler::Parts {
        ops,
        recording,
        decisions,
        control,
    } = sched.into_parts();
    let mut bpf = ops.bpf;
    let ejected = scx_utils::uei_exited!(&bpf.skel, uei);
    let report = bpf.shutdown_and_report();
    drop(bpf);
    // Detached: the watcher thread runs under the kernel's scheduler again, and its end
    // removes the control file.
    drop(control);
    // The decision log first, and dropped before the trace is built: both live in the
    // framework's fixed heap arena, and the trace's building needs the room.
    if let Some((path, log)) = decisions {
        match record::write_decisions(&path, &log) {
            Ok(()) => info!(
                "record: wrote {} ({} decision-log entries{})",
                path.display(),
                log.len(),
                if log.header().truncated {
                    ", truncated: the log was full"
                } else {
                    ""
                }
            ),
            Err(e) => error!("record: {e:#}"),
        }
    }
    if let Some((recorder, topo)) = recording {
        // Only now that the scheduler is detached: nobody waits for this loop while the trace
        // is built and written.
        if let Err(e) = recorder.write(&topo) {
            error!("record: {e:#}");
        }
    }
    match (result, report) {
        (Err(e), _) => Err(
            e.context("the scheduling loop failed; the kernel fell back to its default scheduler")
        ),
        (_, Err(e)) => {
            error!("the kernel ejected {}: {e}", program());
            Ok(Outcome::Exit(ExitCode::from(2)))
        }
        (Ok(()), Ok(uei)) if uei.should_restart() => match restarter {
            Some(r) => Ok(Outcome::Restart(r)),
            None => {
                error!("the kernel asked for a restart, and re-executing is not possible");
                Ok(Outcome::Exit(ExitCode::from(2)))
            }
        },
        (Ok(()), Ok(uei)) if ejected => {
            error!(
                "the kernel ended {} (exit code {:?})",
                program(),
                uei.exit_code()
            );
            Ok(Outcome::Exit(ExitCode::from(2)))
        }
        (Ok(()), Ok(_)) => {
            info!("{} unloaded", program());
            Ok(Outcome::Exit(ExitCode::SUCCESS))
        }
    }
}

/// Runs `scx_hybridland` with the process's command line, `policies` taking their names
/// beside the built-in ones under `--policy`, and returns the exit status to end with. The
/// program goes by the name it was started as (`argv[0]`'s file name): a binary
/// `scx_my_policy` says `scx_my_policy` in its messages and `--help`, and its `--help` lists
/// `policies` with their descriptions.
pub fn main_with(policies: &[CustomPolicy]) -> ExitCode {
    let program = PROGRAM.get_or_init(|| program_name(std::env::args_os().next().as_deref()));
    let opts = opts::parse(program.as_str(), policies);
    if opts.help_stats {
        return match stats::describe() {
            Ok(text) => {
                print!("{text}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("{e:#}");
                ExitCode::FAILURE
            }
        };
    }
    setup_logging(opts.verbose);
    if let Some(every) = opts.monitor {
        return monitor(every);
    }
    let mut idle_object = MaybeUninit::uninit();
    let mut idle_fallback = MaybeUninit::uninit();
    let mut events_object = MaybeUninit::uninit();
    let mut events_fallback = MaybeUninit::uninit();
    let mut sched_object = MaybeUninit::uninit();
    let objects = Objects {
        idle: &mut idle_object,
        idle_fallback: &mut idle_fallback,
        events: &mut events_object,
        events_fallback: &mut events_fallback,
        sched: &mut sched_object,
    };
    match init::init(&opts, objects, policies) {
        Ok(Outcome::Exit(code)) => code,
        Ok(Outcome::Restart(r)) => {
            info!("the kernel asked for a restart: re-executing with the same arguments");
            r.restart()
        }
        Err(e) => {
            error!("{e:#}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn the_program_is_named_as_it_was_started() {
        let name = |s: &str| program_name(Some(OsStr::new(s)));
        assert_eq!(name("/usr/local/bin/scx_my_policy"), "scx_my_policy");
        assert_eq!(name("./target/debug/scx_hybridland"), "scx_hybridland");
        assert_eq!(name("scx_lf"), "scx_lf");
        for nothing in ["", "/", ".."] {
            assert_eq!(name(nothing), DEFAULT_PROGRAM, "{nothing:?}");
        }
        assert_eq!(program_name(None), DEFAULT_PROGRAM);
    }
}
