//! `scx_hybridland`: the hybridland placement policy as a live sched_ext scheduler on
//! scx_rustland_core. See the crate README for how to run it.
//!
//! The scheduler is also a library, so a program can run a placement policy of its own live
//! under `--policy NAME`: [`main_with`] (see the repository's `examples/my-policy`).
//!
//! `main` in the order users of the scx schedulers know (scx_bpfland): parse the flags (clap
//! answers `-V`/`--version` and `--help` and exits); set up the logger; then [`init`] (detect
//! the topology, build the policy; `--dry-run` prints and exits; check that sched_ext can be
//! used here; load the idle-snapshot program and the scheduler), [`run`] (the loop until
//! SIGINT/SIGTERM or the kernel ends it; Ctrl-C is caught by scx_rustland_core's connector,
//! the one handler the `ctrlc` crate allows per process, and the loop sees it through
//! `exited()`), report the kernel's exit info, and if the kernel asked for a restart, re-exec
//! with the same arguments ([`restart`] says why not in-process).

// No `unsafe` in this crate's own code. The generated bindings need it (the BPF skeletons'
// accessors, and scx_rustland_core's connector `bpf.rs` for its ring-buffer copy, its
// `sched_param` call and its `Plain` impl), so they live in `bindings` below, the one place
// that allows it; every other module says `#![forbid(unsafe_code)]` itself (a crate-level
// `forbid` could not be lifted for `bindings`).
#![deny(unsafe_code)]

mod dry_run;
mod emit_topology;
mod fast_audit;
mod fast_wake;
mod fifo;
mod idle_snapshot;
mod knobs;
mod ops;
mod opts;
mod policy_choice;
mod preflight;
mod record;
mod restart;
mod safe_file;
mod scheduler;
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

use anyhow::{Context, Result, bail};
use clap::Parser;
use core::mem::MaybeUninit;
use core::sync::atomic::{AtomicBool, Ordering};
use core::time::Duration;
pub use hybridland_policy::CustomPolicy;
use hybridland_policy::{Policy, PolicyConfig};
use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use tracing::{error, info, warn};

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

/// Everything up to a loaded scheduler, then [`run`]. `--dry-run` and a refusal to start end
/// here.
fn init(opts: &opts::Opts, objects: Objects<'_>, custom: &[CustomPolicy]) -> Result<Outcome> {
    let choice = policy_choice::resolve(&opts.policy, custom)?;
    let sysfs_root = opts.sysfs_root();
    let (desc, topo) = topology_detect::detect(opts.topology.as_deref(), &sysfs_root)?;
    let config = PolicyConfig {
        primary_domain: opts
            .primary_domain
            .resolve(opts::ppd_profile(opts::PPD_STATE).as_deref()),
        cluster_balance: opts.cluster_balance,
        auto_high_busy_pct: opts.auto_high_busy_pct,
        fit_margin_pct: opts.fit_margin_pct,
        ..PolicyConfig::default()
    };
    let policy = Policy::new(&topo, &config).context("the knobs do not fit this machine")?;
    let placement = choice.build(&topo, &config, opts.seed)?;
    let hybridland = placement.hybridland().is_some();
    if opts.dry_run {
        if let Some(path) = &opts.emit_topology {
            emit_topology::write(&desc, path)?;
            if emit_topology::is_stdout(path) {
                return Ok(Outcome::Exit(ExitCode::SUCCESS));
            }
        }
        let shown = hybridland.then_some(&policy);
        print!(
            "{}",
            dry_run::report(&desc, &topo, choice.name(), shown, opts.slice_us)
        );
        return Ok(Outcome::Exit(ExitCode::SUCCESS));
    }

    // Before anything touches BPF: one clear line if this cannot work here.
    if let Err(refusal) = preflight::check(&sysfs_root, preflight::running_as_root()) {
        error!("{refusal}");
        return Ok(Outcome::Exit(ExitCode::FAILURE));
    }

    info!(
        "topology ({}): {} CPUs, performance {}, efficiency {}, {} clusters",
        desc.source,
        topo.nr_cpus(),
        topo.kind_mask(hybridland_policy::CoreKind::Performance),
        topo.kind_mask(hybridland_policy::CoreKind::Efficiency),
        topo.nr_clusters()
    );
    let online = sysfs::SysfsMachine::read(&sysfs_root).map(|m| {
        m.cpus
            .iter()
            .map(|c| hybridland_policy::CpuId(c.cpu))
            .collect::<hybridland_policy::CpuSet>()
    });
    if let Ok(online) = online {
        let missing = online.and_not(topo.cpus());
        let extra = topo.cpus().and_not(&online);
        if !extra.is_empty() {
            bail!("the topology names CPUs {extra} that are not online here");
        }
        if !missing.is_empty() {
            warn!("online CPUs {missing} are not in the topology: only the shared queue uses them");
        }
    }

    let control = match knobs::ControlFile::create(&opts.control_dir, config.cluster_balance) {
        // The knob is hybridland's: no file (and no watcher thread waking ten times a second)
        // to change what another policy or --fifo does not have.
        _ if opts.fifo || !hybridland => None,
        Ok(c) => {
            info!(
                "cluster balance {}: change it with `echo off|on|auto > {}`",
                config.cluster_balance,
                c.path().display()
            );
            Some(c)
        }
        Err(e) => {
            warn!(
                "no run-time control file in {}: {e}",
                opts.control_dir.display()
            );
            None
        }
    };

    // Watched by a thread of ours, started now: the loop does no file I/O.
    let control = control.and_then(|file| {
        knobs::Watcher::spawn(file, config.cluster_balance)
            .inspect_err(|e| {
                warn!("no watcher for the run-time control file ({e}): the knob is fixed")
            })
            .ok()
    });

    let stop_stats = Arc::new(AtomicBool::new(false));
    let (stats_server, stats_link) = start_stats(opts, &topo, &stop_stats);

    // Start the nudge helper (not in FIFO mode: no policy, nothing to re-place) and load the
    // idle-snapshot program first: BpfScheduler::init forbids mmap afterwards.
    let nudger = if opts.fifo {
        None
    } else {
        scheduler::Nudger::spawn()
            .inspect_err(|e| {
                warn!(
                    "no nudge helper ({e:#}): tasks left on E-cores move only when they next wake"
                );
            })
            .ok()
    };
    // `--record`'s /proc reader, so the loop never reads /proc itself (see `record`).
    let tail_reader = if opts.record.is_some() {
        record::TailReader::spawn()
            .inspect_err(|e| {
                warn!("no /proc reader for --record ({e:#}): the recording will end without the tasks still running then");
            })
            .ok()
    } else {
        None
    };
    // Started before the scheduler's seccomp filter, so it can re-exec (see `restart`).
    let restarter = restart::Restarter::spawn()
        .inspect_err(|e| warn!("no restart helper ({e:#}): a restart request ends the scheduler"))
        .ok();
    let idle = idle_snapshot::IdleSnapshot::load(objects.idle, objects.idle_fallback)?;
    let own_tgid = i32::try_from(std::process::id()).unwrap_or(0);
    // Not in FIFO mode: the probes cost every wake-up in the kernel, and there is no task
    // table to keep (scx_rlfifo pays for none).
    let events = if opts.fifo {
        None
    } else {
        match task_events::TaskEventSource::load(objects.events, objects.events_fallback, own_tgid)
        {
            Ok(events) => {
                info!(
                    "task events: exits, wakers{}",
                    if events.refills() {
                        ", slice refills"
                    } else {
                        " (slice refills unseen on this kernel)"
                    }
                );
                Some(events)
            }
            Err(e) => {
                warn!(
                    "no task events ({e:#}): exited tasks leave the task table after 30 s unseen"
                );
                None
            }
        }
    };
    let slice_ns = opts.slice_us * 1000;
    let nr_possible = sys::nr_possible_cpus(&sysfs_root, topo.nr_cpus() as u64);
    watchdog::set_timeout_ms(opts.watchdog_timeout_ms);
    let mut bpf = bpf::BpfScheduler::init(
        objects.sched,
        None,
        opts.exit_dump_len,
        false, // partial: no, every task
        opts.verbose > 1,
        // builtin_idle: only in FIFO mode, as scx_rlfifo: a wake-up that finds an idle CPU is
        // dispatched there by the framework's BPF code. The policy decides every placement.
        opts.fifo,
        false, // numa_local
        slice_ns,
        "hybridland",
    )
    .context(
        "loading the sched_ext scheduler (root and a kernel with CONFIG_SCHED_CLASS_EXT=y needed)",
    )?;
    if opts.fifo {
        info!(
            "scx_hybridland running in FIFO mode (no policy): idle CPU by the framework, else shared queue, slice {} us, watchdog {} ms",
            opts.slice_us,
            watchdog::timeout_ms()
        );
    } else if !hybridland {
        info!(
            "scx_hybridland running policy {} (seed {}): slice {} us, watchdog {} ms, wake-up preemption {}",
            choice.name(),
            opts.seed,
            opts.slice_us,
            watchdog::timeout_ms(),
            on_off(opts.wake_preempt)
        );
    } else {
        info!(
            "scx_hybridland running: primary domain {} ({}), cluster balance {}, slice {} us, watchdog {} ms, wake-up preemption {}",
            config.primary_domain,
            policy.primary(),
            config.cluster_balance,
            opts.slice_us,
            watchdog::timeout_ms(),
            on_off(opts.wake_preempt)
        );
    }

    let audit = if opts.audit_fast_wake {
        if let Some(bss) = bpf.skel.maps.bss_hl_fast_data.as_deref_mut() {
            bss.hl_fast_audit_on = 1;
        }
        info!("--audit-fast-wake: every wake-up the fast path keeps is checked against the policy");
        Some(fast_audit::FastAudit::default())
    } else {
        None
    };
    let sched = scheduler::Scheduler::new(
        ops::Live {
            bpf,
            idle,
            events,
            audit,
        },
        topo,
        placement,
        scheduler::LoopConfig {
            slice_ns,
            mode: if opts.fifo {
                scheduler::Mode::Fifo
            } else {
                scheduler::Mode::Policy
            },
            slice: if opts.fixed_slice {
                hybridland_policy::SliceMode::Fixed
            } else {
                hybridland_policy::SliceMode::Scaled
            },
            nr_possible,
            max_tasks: opts.max_tasks,
            fast_wake: !opts.no_fast_wake,
            wake_preempt: opts.wake_preempt,
        },
        control,
        nudger,
    )?;
    let sched = match stats_link {
        Some(link) => sched.with_stats(link),
        None => sched,
    };
    let sched = match &opts.record {
        Some(path) => {
            let cfg = record::RecordConfig {
                trace: path.clone(),
                live: record::RecordConfig::live_path(path, opts.record_live.as_deref()),
                max_events: usize::try_from(opts.record_max_events)
                    .unwrap_or(record::DEFAULT_MAX_EVENTS),
                max_tasks: record::RecordConfig::tasks_for(opts.max_tasks),
                policy: choice.name().to_owned(),
                policy_seed: opts.seed,
                settings: vec![
                    format!("primary_domain={}", config.primary_domain),
                    format!("cluster_balance={}", config.cluster_balance),
                    format!("auto_high_busy_pct={}", config.auto_high_busy_pct),
                    format!("fit_margin_pct={}", config.fit_margin_pct),
                    format!("slice_us={}", opts.slice_us),
                ],
                machine_source: desc.source.to_string(),
            };
            info!(
                "record: up to {} events, written at exit to {} and {}",
                cfg.max_events,
                cfg.trace.display(),
                cfg.live.display()
            );
            // Every thread of ours exists by now: the framework forbids starting more.
            let own = record::own_threads();
            let sched = sched.with_recorder(
                record::Recorder::new(cfg, sys::now_ns(), stats::Counters::default(), own),
                tail_reader,
            );
            if opts.fifo {
                // No core decides under --fifo: there is nothing to replay.
                sched
            } else {
                let at = record::RecordConfig::decisions_path(path);
                info!(
                    "record: the decision log (up to {} MiB) goes to {} (hybrid-sim decisions)",
                    hybridland_trace::decisions::DEFAULT_MAX_BYTES >> 20,
                    at.display()
                );
                sched.with_decision_log(
                    at,
                    emit_topology::text(&desc),
                    opts.seed,
                    &config,
                    hybridland_trace::decisions::DEFAULT_MAX_BYTES,
                )
            }
        }
        None => sched,
    };
    let outcome = run(sched, restarter);
    // The `--stats` thread stops asking before the server goes.
    stop_stats.store(true, Ordering::Relaxed);
    drop(stats_server);
    outcome
}

/// Starts the stats server on the standard socket and, with `--stats SECS`, a thread of ours
/// that reads it like `--monitor` does and logs each line. Both before the scheduler loads:
/// threads cannot be started after the framework's seccomp filter (see [`stats::serve`]).
/// Without the server the scheduler still runs: statistics are not worth refusing to schedule.
fn start_stats(
    opts: &opts::Opts,
    topo: &hybridland_policy::Topology,
    stop: &Arc<AtomicBool>,
) -> (
    Option<scx_stats::StatsServer<(), stats::Sample>>,
    Option<stats::StatsLink>,
) {
    let (server, link) = match stats::serve(stats::Kinds::new(topo), Path::new(stats::SOCKET)) {
        Ok((server, link)) => (server, link),
        Err(e) => {
            warn!("no stats server ({e:#}): --stats and --monitor will show nothing");
            return (None, None);
        }
    };
    if opts.stats > 0.0 {
        let every = Duration::from_secs_f64(opts.stats);
        let stop = Arc::clone(stop);
        let spawned = std::thread::Builder::new()
            .name("stats".into())
            .spawn(move || {
                let result = stats::monitor(
                    Path::new(stats::SOCKET),
                    every,
                    || stop.load(Ordering::Relaxed),
                    |m| {
                        info!("{}", m.line());
                        Ok(())
                    },
                );
                if let Err(e) = result {
                    warn!("--stats stopped: {e}");
                }
            });
        if let Err(e) = spawned {
            warn!("no --stats thread: {e}");
        }
    }
    (Some(server), Some(link))
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
            error!("the kernel ejected scx_hybridland: {e}");
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
                "the kernel ended scx_hybridland (exit code {:?})",
                uei.exit_code()
            );
            Ok(Outcome::Exit(ExitCode::from(2)))
        }
        (Ok(()), Ok(_)) => {
            info!("scx_hybridland unloaded");
            Ok(Outcome::Exit(ExitCode::SUCCESS))
        }
    }
}

/// Runs `scx_hybridland` with the process's command line, `policies` taking their names
/// beside the built-in ones under `--policy`, and returns the exit status to end with.
pub fn main_with(policies: &[CustomPolicy]) -> ExitCode {
    let opts = opts::Opts::parse();
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
    match init(&opts, objects, policies) {
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

fn on_off(on: bool) -> &'static str {
    if on { "on (--wake-preempt)" } else { "off" }
}
