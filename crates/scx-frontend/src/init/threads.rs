//! The threads start-up begins before the scheduler loads, since the framework's seccomp
//! filter forbids starting more: the control file's watcher, the stats server and `--stats`'s
//! reader, and the helpers (nudges, `--record`'s /proc reader, restarts).

use crate::{control_file, opts, own_lock, record, restart, scheduler, stats};
use core::sync::atomic::{AtomicBool, Ordering};
use core::time::Duration;
use hybridland_policy::{KnobSpec, KnobValues, PolicyConfig, Topology};
use std::path::Path;
use std::sync::Arc;
use tracing::{info, warn};

/// The run-time control files, watched by a thread of ours started now (the loop does no file
/// I/O): hybridland's cluster-balance knob, and a file per knob of a registered policy's own
/// (`own`: the declarations and the values in force); none under `--fifo` or for a policy
/// with neither.
pub(super) fn control_watcher(
    opts: &opts::Opts,
    config: &PolicyConfig,
    hybridland: bool,
    own: (&'static [KnobSpec], &KnobValues),
) -> Option<control_file::Watcher> {
    if opts.fifo {
        return None;
    }
    // The knob is hybridland's: no file (and no watcher thread) to change what another
    // policy does not have.
    let cluster = match control_file::ControlFile::create(&opts.control_dir, config.cluster_balance)
    {
        _ if !hybridland => None,
        Ok(c) => {
            info!(
                "cluster balance {}: change it with `echo off|on|auto > {}`",
                config.cluster_balance,
                c.path().display()
            );
            Some((c, config.cluster_balance))
        }
        Err(e) => {
            warn!(
                "no run-time control file in {}: {e}",
                opts.control_dir.display()
            );
            None
        }
    };
    let (files, created_dir) = own_knob_files(&opts.control_dir, own);
    if cluster.is_none() && files.is_empty() {
        return None;
    }
    control_file::Watcher::spawn_all(cluster, files, own.1.as_slice(), created_dir)
        .inspect_err(|e| {
            warn!("no watcher for the run-time control files ({e}): the knobs are fixed")
        })
        .ok()
}

/// A file per knob of the policy's own in `dir`, and `dir` when this made it.
fn own_knob_files(
    dir: &Path,
    (specs, values): (&'static [KnobSpec], &KnobValues),
) -> (Vec<control_file::KnobFile>, Option<std::path::PathBuf>) {
    if specs.is_empty() {
        return (Vec::new(), None);
    }
    let created = match control_file::ensure_dir(dir) {
        Ok(created) => created.then(|| dir.to_owned()),
        Err(e) => {
            warn!("no run-time control files in {}: {e}", dir.display());
            return (Vec::new(), None);
        }
    };
    let mut files = Vec::new();
    for (i, (spec, value)) in specs.iter().zip(values.as_slice()).enumerate() {
        let Ok(index) = u16::try_from(i) else { break };
        match control_file::KnobFile::create(dir, *spec, index, *value) {
            Ok(f) => {
                info!(
                    "{} {}: change it with `echo VALUE > {}` ({})",
                    spec.name,
                    spec.show(*value),
                    f.path().display(),
                    spec.range()
                );
                files.push(f);
            }
            Err(e) => warn!("no run-time control file for {}: {e}", spec.name),
        }
    }
    (files, created)
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
    /// `--test-own-lock`'s thread.
    pub(super) own_lock: Option<own_lock::OwnLock>,
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
        let own_lock = opts
            .test_own_lock
            .then(|| {
                own_lock::OwnLock::spawn()
                    .inspect_err(|e| warn!("no --test-own-lock thread ({e})"))
                    .ok()
            })
            .flatten();
        Self {
            nudger,
            tail_reader,
            restarter,
            own_lock,
        }
    }
}
