//! Restarting when the kernel asks (a CPU went on- or offline: the kernel ends the scheduler
//! with `SCX_ECODE_ACT_RESTART`).
//!
//! scx_rustland_core cannot restart in-process: `BpfScheduler::init` installs a seccomp filter
//! that refuses `mmap(NULL, ..)` for good, and loading the BPF objects again needs `mmap`;
//! its Ctrl-C handler is also installed once per process. So the scheduler re-executes itself
//! with the same arguments. The filter is per thread and inherited across `execve`, and the
//! dynamic loader of the new image needs `mmap`, so the `execve` is made by a thread started
//! before the filter was installed ([`Restarter::spawn`]), which therefore has none. The
//! process id stays the same (a service manager sees no exit).

#![forbid(unsafe_code)]

use anyhow::Result;
use std::ffi::OsString;
use std::os::unix::process::CommandExt as _;
use std::path::PathBuf;
use std::sync::mpsc;

/// A thread waiting to replace the process with a fresh copy of it.
pub(crate) struct Restarter {
    go: mpsc::Sender<()>,
}

impl Restarter {
    /// Starts the thread. Call before `BpfScheduler::init` (its filter must not apply to it).
    pub(crate) fn spawn() -> Result<Self> {
        let (exe, args) = command_line()?;
        let (go, wait) = mpsc::channel::<()>();
        std::thread::Builder::new()
            .name("hl-restart".into())
            .stack_size(256 * 1024)
            .spawn(move || {
                // A closed channel (the process is exiting normally) ends the thread.
                if wait.recv().is_ok() {
                    let err = std::process::Command::new(&exe).args(&args).exec();
                    tracing::error!("re-executing {}: {err}", exe.display());
                    std::process::exit(1);
                }
            })?;
        Ok(Self { go })
    }

    /// Replaces the process with a fresh copy of itself, with the same arguments. Call once
    /// the scheduler is detached. Does not return.
    pub(crate) fn restart(self) -> ! {
        let _ = self.go.send(());
        loop {
            std::thread::park();
        }
    }
}

/// The program to run again and its arguments: this executable (through `/proc/self/exe` when
/// the file was replaced or removed since start, e.g. by a package upgrade, so the same
/// version restarts) and the arguments it was given.
fn command_line() -> Result<(PathBuf, Vec<OsString>)> {
    let exe = std::env::current_exe()?;
    let exe = if exe.exists() {
        exe
    } else {
        PathBuf::from("/proc/self/exe")
    };
    Ok((exe, std::env::args_os().skip(1).collect()))
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn the_same_program_and_arguments() {
        let (exe, args) = command_line().unwrap();
        assert_eq!(exe, std::env::current_exe().unwrap());
        assert_eq!(args, std::env::args_os().skip(1).collect::<Vec<_>>());
        // Dropping it without a restart ends the waiting thread quietly.
        drop(Restarter::spawn().unwrap());
    }
}
