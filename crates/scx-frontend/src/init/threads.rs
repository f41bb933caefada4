//! The threads start-up begins before the scheduler loads, since the framework's seccomp
//! filter forbids starting more: the control file's watcher, the stats server and `--stats`'s
//! reader, and the helpers (nudges, `--record`'s /proc reader, restarts).

use crate::{control_file, opts, record, restart, scheduler, stats};
use core::sync::atomic::{AtomicBool, Ordering};
use core::time::Duration;
use hybridland_policy::{PolicyConfig, Topology};
use std::path::Path;
use std::sync::Arc;
use tracing::{info, warn};

/// The run-time control file of the cluster-balance knob, watched by a thread of ours started
/// now (the loop does no file I/O); none for a policy without the knob or `--fifo`.
pub(super) fn control_watcher(
    opts: &opts::Opts,
    config: &PolicyConfig,
    hybridland: bool,
) -> Option<control_file::Watcher> {
    let control = match control_file::ControlFile::create(&opts.control_dir, config.cluster_balance)
    {
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
    control.and_then(|file| {
        control_file::Watcher::spawn(file, config.cluster_balance)
            .inspect_err(|e| {
                warn!("no watcher for the run-time control file ({e}): the knob is fixed")
            })
            .ok()
    })
}

/// Starts the stats server on the standard socket and, with `--stats SECS`, a thread of ours
/// that reads it like `--monitor` does and logs each line. Both before the scheduler loads:
/// threads cannot be started after the framework's seccomp filter (see [`stats::serve`]).
/// Without the server the scheduler still runs: statistics are not worth refusing to schedule.
pub(super) fn start_stats(
    opts: &opts::Opts,
    topo: &Topology,
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

/// The helper threads, started before the scheduler's seccomp filter forbids more; each one
/// that cannot start is said and done without.
pub(super) struct Helpers {
    /// Wakes CPUs the core nudges (not in FIFO mode: no policy, nothing to re-place).
    pub(super) nudger: Option<scheduler::Nudger>,
    /// `--record`'s /proc reader, so the loop never reads /proc itself (see `record`).
    pub(super) tail_reader: Option<record::TailReader>,
    /// Re-executes the scheduler on a restart request (see `restart`).
    pub(super) restarter: Option<restart::Restarter>,
}

impl Helpers {
    pub(super) fn spawn(opts: &opts::Opts) -> Self {
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
        let tail_reader = if opts.record.is_some() {
            record::TailReader::spawn()
                .inspect_err(|e| {
                    warn!("no /proc reader for --record ({e:#}): the recording will end without the tasks still running then");
                })
                .ok()
        } else {
            None
        };
        let restarter = restart::Restarter::spawn()
            .inspect_err(|e| {
                warn!("no restart helper ({e:#}): a restart request ends the scheduler")
            })
            .ok();
        Self {
            nudger,
            tail_reader,
            restarter,
        }
    }
}
