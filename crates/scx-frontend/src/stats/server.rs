//! The stats server on the standard socket, `--help-stats`'s description of it, and the client
//! behind `--monitor` and `--stats`.

use super::Sample;
use super::metrics::Metrics;
use super::proc_stat::{KindBusy, Kinds};
use anyhow::{Context as _, Result};
use core::time::Duration;
use crossbeam::channel::{Receiver, Sender};
use scx_stats::prelude::*;
use std::path::Path;
use tracing::info;

/// The standard scx_stats socket, where every scx scheduler serves its statistics (one
/// sched_ext scheduler runs at a time).
pub(crate) const SOCKET: &str = "/var/run/scx/root/stats";

/// The loop's end of the stats server: requests in, samples out.
pub(crate) struct StatsLink {
    pub(crate) samples: Sender<Sample>,
    pub(crate) requests: Receiver<()>,
}

/// The server's description: one `top` target whose reader keeps, per client, the previous
/// sample and `/proc/stat` reading, so each client sees its own intervals.
pub(crate) fn server_data(kinds: Kinds) -> StatsServerData<(), Sample> {
    let open: Box<dyn StatsOpener<(), Sample>> = Box::new(move |(req, res)| {
        req.send(())?;
        let mut prev = res.recv()?;
        let mut busy = KindBusy::new();
        let kinds = kinds.clone();
        let read: Box<dyn StatsReader<(), Sample>> = Box::new(move |_args, (req, res)| {
            req.send(())?;
            let now = res.recv()?;
            let metrics = Metrics::between(&prev, &now, &busy.sample(&kinds));
            prev = now;
            metrics.to_json()
        });
        Ok(read)
    });
    StatsServerData::new()
        .add_meta(Metrics::meta())
        .add_ops("top", StatsOps { open, close: None })
}

/// `--help-stats`: every figure and what it means.
pub(crate) fn describe() -> Result<String> {
    let mut out = Vec::new();
    // The description does not depend on the machine.
    server_data(Kinds::default()).describe_meta(&mut out, None)?;
    Ok(String::from_utf8(out)?)
}

/// Mode of the stats socket: only its owner (root, when scheduling) may connect. scx_stats
/// 1.1.4 reads a request line with no size limit and starts a thread per connection, so
/// whoever can connect can make the scheduler allocate and spawn; that is kept to root.
pub(crate) const SOCKET_MODE: u32 = 0o600;

/// Starts the stats server on `path` (replacing a stale socket there); the loop answers
/// through the returned link. Its threads must start before the framework's seccomp filter
/// (they need `mmap` for their stacks), so this runs before the scheduler loads.
///
/// scx_stats creates the socket with a plain `bind`, whose mode comes from the umask, and
/// starts accepting at once. So the umask is 077 around the launch: the socket is born
/// `srwx------` and nobody but its owner can connect at any moment; the `chmod` after it only
/// drops the meaningless execute bit. Directories scx_stats creates on the way (`/var/run/scx`,
/// `/var/run/scx/root` when missing) are 0700 for the same reason. The umask is per process:
/// this runs before the scheduler's other threads that create files exist.
pub(crate) fn serve(kinds: Kinds, path: &Path) -> Result<(StatsServer<(), Sample>, StatsLink)> {
    use rustix::fs::Mode;
    let old = rustix::process::umask(Mode::from_raw_mode(0o077));
    let server = StatsServer::new(server_data(kinds)).set_path(path).launch();
    rustix::process::umask(old);
    let server = server?;
    rustix::fs::chmod(path, Mode::from_raw_mode(SOCKET_MODE))
        .with_context(|| format!("{}: setting the stats socket's mode", path.display()))?;
    let (samples, requests) = server.channels();
    Ok((server, StatsLink { samples, requests }))
}

/// Why [`monitor`] stopped.
#[derive(Debug)]
pub(crate) enum MonitorError {
    /// The socket answers with something that is not scx_hybridland's figures.
    NotOurs(String),
    /// Printing failed.
    Output(anyhow::Error),
}

impl core::fmt::Display for MonitorError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::NotOurs(why) => write!(
                f,
                "the stats socket does not serve scx_hybridland's figures (is another sched_ext scheduler loaded?): {why}"
            ),
            Self::Output(e) => write!(f, "writing the figures: {e:#}"),
        }
    }
}

impl core::error::Error for MonitorError {}

/// The client behind `--monitor` and `--stats`: asks the server at `path` for the figures every
/// `every`, hands each set to `out`, until `should_exit`. While there is no server (not started
/// yet, restarting, gone) it says so once and keeps trying, as the scx schedulers' monitors do.
pub(crate) fn monitor(
    path: &Path,
    every: Duration,
    mut should_exit: impl FnMut() -> bool,
    mut out: impl FnMut(&Metrics) -> Result<()>,
) -> Result<(), MonitorError> {
    let mut said_waiting = false;
    while !should_exit() {
        let mut client = match StatsClient::new().set_path(path).connect(None) {
            Ok(c) => c,
            Err(e) => {
                if !said_waiting {
                    info!(
                        "no scx_hybridland stats at {} ({e}): is it running? Trying again every second",
                        path.display()
                    );
                    said_waiting = true;
                }
                std::thread::sleep(
                    Duration::from_secs(1).min(every.max(Duration::from_millis(100))),
                );
                continue;
            }
        };
        said_waiting = false;
        while !should_exit() {
            match client.request::<Metrics>("stats", vec![]) {
                Ok(m) => out(&m).map_err(MonitorError::Output)?,
                Err(e) if e.downcast_ref::<serde_json::Error>().is_some() => {
                    return Err(MonitorError::NotOurs(format!("{e:#}")));
                }
                Err(e) => {
                    info!("the stats connection ended ({e:#}); reconnecting");
                    break;
                }
            }
            std::thread::sleep(every);
        }
    }
    Ok(())
}
