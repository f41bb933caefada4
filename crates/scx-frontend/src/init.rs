//! Start-up as named steps, from the flags to a loaded scheduler: the machine and the policy,
//! `--dry-run`, the checks, the run-time control file, the stats server and the helper threads
//! (all started before the framework's seccomp filter forbids more), the BPF programs, the
//! loop with what the flags add to it (`--record`); then [`run`].

#![forbid(unsafe_code)]

mod threads;

use crate::policy_choice::Choice;
use crate::topology_detect::Detected;
use crate::{Objects, Outcome, bpf, run};
use crate::{
    dry_run, emit_topology, fast_audit, idle_snapshot, ops, opts, policy_choice, preflight, record,
    scheduler, stats, sys, sysfs, task_events, topology_detect, watchdog,
};
use anyhow::{Context, Result, bail};
use core::mem::MaybeUninit;
use core::sync::atomic::{AtomicBool, Ordering};
use hybridland_policy::{CustomPolicy, PlacementPolicy, Policy, PolicyConfig, Topology};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use threads::{Helpers, control_watcher, start_stats};
use tracing::{error, info, warn};

/// Everything up to a loaded scheduler, then [`run`]. `--dry-run` and a refusal to start end
/// here.
pub(crate) fn init(
    opts: &opts::Opts,
    objects: Objects<'_>,
    custom: &[CustomPolicy],
) -> Result<Outcome> {
    let choice = policy_choice::resolve(&opts.policy, custom)?;
    let sysfs_root = opts.sysfs_root();
    let (desc, topo) = topology_detect::detect(opts.topology.as_deref(), &sysfs_root)?;
    let config = policy_config(opts);
    let policy = Policy::new(&topo, &config).context("the knobs do not fit this machine")?;
    let own_knobs = choice.knob_values(&opts.set)?;
    let mut placement = choice.build(&topo, &config, opts.seed, &own_knobs)?;
    let hybridland = placement.hybridland().is_some();
    if opts.dry_run {
        return dry_run(opts, &desc, &topo, &choice, &mut *placement);
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
    check_online(&sysfs_root, &topo)?;
    let control = control_watcher(opts, &config, hybridland, (choice.knobs(), &own_knobs));

    let stop_stats = Arc::new(AtomicBool::new(false));
    let (stats_server, stats_link) = start_stats(opts, &topo, &stop_stats);

    // Start the helper threads and load the idle-snapshot program first: BpfScheduler::init
    // forbids mmap afterwards.
    let helpers = Helpers::spawn(opts);
    let idle = idle_snapshot::IdleSnapshot::load(objects.idle, objects.idle_fallback)?;
    let fast_wake = !opts.no_fast_wake && placement.wake_table(&topo).is_some();
    let events = task_events(opts, fast_wake, objects.events, objects.events_fallback);
    let slice_ns = opts.slice_us * 1000;
    let nr_possible = sys::nr_possible_cpus(&sysfs_root, topo.nr_cpus() as u64);
    watchdog::set_timeout_ms(opts.watchdog_timeout_ms);
    let mut bpf = load_scheduler(opts, objects.sched, slice_ns)?;
    say_running(opts, &choice, hybridland, &config, &policy);

    let audit = fast_audit(opts, &mut bpf);
    let sched = scheduler::Scheduler::new(
        ops::Live {
            bpf,
            idle,
            events,
            audit,
            placements: crate::fast_placements::FastPlacements::default(),
        },
        topo,
        placement,
        loop_config(opts, slice_ns, nr_possible),
        control,
        helpers.nudger,
    )?;
    let sched = match stats_link {
        Some(link) => sched.with_stats(link),
        None => sched,
    };
    let sched = match &opts.record {
        Some(path) => with_recording(
            sched,
            opts,
            path,
            (&choice, &own_knobs),
            &config,
            &desc,
            helpers.tail_reader,
        ),
        None => sched,
    };
    let sched = match helpers.own_lock {
        Some(lock) => sched.with_own_lock(lock),
        None => sched,
    };
    let outcome = run(sched, helpers.restarter);
    // The `--stats` thread stops asking before the server goes.
    stop_stats.store(true, Ordering::Relaxed);
    drop(stats_server);
    outcome
}

/// The policy's knobs as the flags set them.
fn policy_config(opts: &opts::Opts) -> PolicyConfig {
    PolicyConfig {
        primary_domain: opts
            .primary_domain
            .resolve(opts::ppd_profile(opts::PPD_STATE).as_deref()),
        cluster_balance: opts.cluster_balance,
        auto_high_busy_pct: opts.auto_high_busy_pct,
        fit_margin_pct: opts.fit_margin_pct,
        wake_affine: !opts.no_wake_affine,
        ..PolicyConfig::default()
    }
}

/// `--dry-run`: the machine file (`--emit-topology`), then the report on `policy` (built for
/// it: its fill order asks it) unless the file went to standard output.
fn dry_run(
    opts: &opts::Opts,
    desc: &Detected,
    topo: &Topology,
    choice: &Choice,
    policy: &mut dyn PlacementPolicy,
) -> Result<Outcome> {
    if let Some(path) = &opts.emit_topology {
        emit_topology::write(desc, path)?;
        if emit_topology::is_stdout(path) {
            return Ok(Outcome::Exit(ExitCode::SUCCESS));
        }
    }
    print!(
        "{}",
        dry_run::report(desc, topo, choice.name(), policy, opts.slice_us)
    );
    Ok(Outcome::Exit(ExitCode::SUCCESS))
}

/// Refuses a topology that names CPUs not online here, and warns of online CPUs it leaves out.
fn check_online(sysfs_root: &Path, topo: &Topology) -> Result<()> {
    let online = sysfs::SysfsMachine::read(sysfs_root).map(|m| {
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
    Ok(())
}

/// The task-event source (exits, wakers, slice refills); none in FIFO mode, or when the kernel
/// refuses it. Wakers only for a recording or without the wake-up fast path (`fast_wake`): a
/// probe on every wake-up in the kernel costs as much as the fast path's own walk, and with the
/// fast path on almost every wake-up is placed in the kernel, where the waker is not used;
/// hybridland's rules read no waker (the kernel's sync flag, which they do read, reaches only
/// the fast path).
fn task_events<'obj>(
    opts: &opts::Opts,
    fast_wake: bool,
    object: &'obj mut MaybeUninit<libbpf_rs::OpenObject>,
    fallback: &'obj mut MaybeUninit<libbpf_rs::OpenObject>,
) -> Option<task_events::TaskEventSource<'obj>> {
    let own_tgid = i32::try_from(std::process::id()).unwrap_or(0);
    // Not in FIFO mode: the probes cost every wake-up in the kernel, and there is no task
    // table to keep (scx_rlfifo pays for none).
    if opts.fifo {
        return None;
    }
    let wakers = !fast_wake || opts.record.is_some();
    match task_events::TaskEventSource::load(object, fallback, own_tgid, wakers) {
        Ok(events) => {
            info!(
                "task events: exits{}{}",
                if wakers {
                    ", wakers"
                } else {
                    " (wakers only with --record or --no-fast-wake)"
                },
                if events.refills() {
                    ", slice refills"
                } else {
                    " (slice refills unseen on this kernel)"
                }
            );
            Some(events)
        }
        Err(e) => {
            warn!("no task events ({e:#}): exited tasks leave the task table after 30 s unseen");
            None
        }
    }
}

/// Loads scx_rustland_core's scheduler into the kernel.
fn load_scheduler<'obj>(
    opts: &opts::Opts,
    object: &'obj mut MaybeUninit<libbpf_rs::OpenObject>,
    slice_ns: u64,
) -> Result<bpf::BpfScheduler<'obj>> {
    bpf::BpfScheduler::init(
        object,
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
    )
}

/// The one line that says what runs.
fn say_running(
    opts: &opts::Opts,
    choice: &Choice,
    hybridland: bool,
    config: &PolicyConfig,
    policy: &Policy,
) {
    if opts.fifo {
        info!(
            "{} running in FIFO mode (no policy): idle CPU by the framework, else shared queue, slice {} us, watchdog {} ms",
            crate::program(),
            opts.slice_us,
            watchdog::timeout_ms()
        );
    } else if !hybridland {
        info!(
            "{} running policy {} (seed {}): slice {} us, watchdog {} ms, wake-up preemption {}, up-migration scan {}",
            crate::program(),
            choice.name(),
            opts.seed,
            opts.slice_us,
            watchdog::timeout_ms(),
            on_off(opts.wake_preempt),
            scan(opts)
        );
    } else {
        info!(
            "{} running: primary domain {} ({}), cluster balance {}, slice {} us, watchdog {} ms, wake-up preemption {}, up-migration scan {}",
            crate::program(),
            config.primary_domain,
            policy.primary(),
            config.cluster_balance,
            opts.slice_us,
            watchdog::timeout_ms(),
            on_off(opts.wake_preempt),
            scan(opts)
        );
    }
}

fn on_off(on: bool) -> &'static str {
    if on { "on (--wake-preempt)" } else { "off" }
}

fn scan(opts: &opts::Opts) -> &'static str {
    if opts.no_up_scan {
        "off (--no-up-scan)"
    } else {
        "on"
    }
}

/// `--audit-fast-wake`: the fast path reports every wake-up it keeps, for the loop to check.
fn fast_audit(opts: &opts::Opts, bpf: &mut bpf::BpfScheduler<'_>) -> Option<fast_audit::FastAudit> {
    if opts.audit_fast_wake {
        if let Some(bss) = bpf.skel.maps.bss_hl_fast_data.as_deref_mut() {
            bss.hl_fast_audit_on = 1;
        }
        info!("--audit-fast-wake: every wake-up the fast path keeps is checked against the policy");
        Some(fast_audit::FastAudit::default())
    } else {
        None
    }
}

/// The loop's settings from the flags.
fn loop_config(opts: &opts::Opts, slice_ns: u64, nr_possible: u64) -> scheduler::LoopConfig {
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
        up_scan: !opts.no_up_scan,
    }
}

/// `--record PATH`: the loop records into a [`record::Recorder`] and, unless under `--fifo`,
/// keeps the decision log beside the trace.
fn with_recording<'a, 'b>(
    sched: scheduler::Scheduler<ops::Live<'a, 'b>>,
    opts: &opts::Opts,
    path: &Path,
    (choice, own_knobs): (&Choice, &hybridland_policy::KnobValues),
    config: &PolicyConfig,
    desc: &Detected,
    tail_reader: Option<record::TailReader>,
) -> scheduler::Scheduler<ops::Live<'a, 'b>> {
    let policy_knobs = choice.knob_map(own_knobs);
    let cfg = record::RecordConfig {
        trace: path.to_path_buf(),
        live: record::RecordConfig::live_path(path, opts.record_live.as_deref()),
        max_events: usize::try_from(opts.record_max_events).unwrap_or(record::DEFAULT_MAX_EVENTS),
        max_tasks: record::RecordConfig::tasks_for(opts.max_tasks),
        policy: choice.name().to_owned(),
        policy_seed: opts.seed,
        settings: vec![
            format!("primary_domain={}", config.primary_domain),
            format!("cluster_balance={}", config.cluster_balance),
            format!("auto_high_busy_pct={}", config.auto_high_busy_pct),
            format!("fit_margin_pct={}", config.fit_margin_pct),
            format!(
                "wake_affine={}",
                if config.wake_affine { "on" } else { "off" }
            ),
            format!("slice_us={}", opts.slice_us),
        ]
        .into_iter()
        .chain(opts.set.iter().cloned())
        .collect(),
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
    let mut sched = sched;
    let start = sched.now();
    let sched = sched.with_recorder(
        record::Recorder::new(cfg, start, stats::Counters::default(), own),
        tail_reader,
    );
    if opts.fifo {
        // No core decides under --fifo: there is nothing to replay.
        return sched;
    }
    let at = record::RecordConfig::decisions_path(path);
    info!(
        "record: the decision log (up to {} MiB) goes to {} (hybrid-sim decisions)",
        hybridland_trace::decisions::DEFAULT_MAX_BYTES >> 20,
        at.display()
    );
    sched.with_decision_log(
        at,
        emit_topology::text(desc),
        opts.seed,
        (config, policy_knobs),
        hybridland_trace::decisions::DEFAULT_MAX_BYTES,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn the_loop_takes_its_switches_from_the_flags() {
        let parse = |args: &[&str]| opts::Opts::try_parse_from(args).unwrap();
        let c = loop_config(&parse(&["x"]), 5_000_000, 8);
        assert!(c.up_scan && c.fast_wake && !c.wake_preempt);
        let flags = ["x", "--no-up-scan", "--no-fast-wake", "--wake-preempt"];
        let c = loop_config(&parse(&flags), 5_000_000, 8);
        assert!(!c.up_scan && !c.fast_wake && c.wake_preempt);
        // FIFO mode has no policy, so nothing to scan for.
        assert!(opts::Opts::try_parse_from(["x", "--no-up-scan", "--fifo"]).is_err());
    }
}
