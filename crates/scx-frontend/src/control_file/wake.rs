//! What the control files' watcher sleeps on between two looks at them.

use super::POLL_NS;
use core::mem::MaybeUninit;
use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::fd::OwnedFd;
use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};
use std::io::{PipeReader, PipeWriter};
use std::path::Path;
use tracing::warn;

/// The control directory's inotify events (a file in it written and closed, replaced or
/// removed) and the reading end of a pipe whose writing end the loop's side holds: closing
/// that ends the watch. Without an inotify watch (the user's inotify instances or watches used
/// up, or the directory removed under us) the watcher looks every [`POLL_NS`] instead.
pub(super) struct Wake {
    inotify: Option<OwnedFd>,
    stop: PipeReader,
}

/// What ended a wait.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Woke {
    /// Something may have changed: look at the files.
    Look,
    /// The loop's side closed the pipe: end the watch.
    Stop,
}

impl Wake {
    /// Watches `dir`; gives the pipe's writing end with it (drop it to stop the watcher).
    pub(super) fn new(dir: &Path) -> std::io::Result<(Self, PipeWriter)> {
        let (stop, writer) = std::io::pipe()?;
        let inotify = watch(dir)
            .inspect_err(|e| {
                warn!(
                    "control files: no inotify watch on {} ({e}): looking at them every {} ms instead",
                    dir.display(),
                    POLL_NS / 1_000_000
                );
            })
            .ok();
        Ok((Self { inotify, stop }, writer))
    }

    /// Whether the watch is event-driven (false: it looks every [`POLL_NS`]).
    pub(super) fn has_inotify(&self) -> bool {
        self.inotify.is_some()
    }

    /// Sleeps until the directory changes or the pipe closes (with no watch, at most
    /// [`POLL_NS`]), and drains the events that woke it.
    pub(super) fn wait(&mut self) -> Woke {
        let poll_every = Timespec {
            tv_sec: 0,
            tv_nsec: POLL_NS as _,
        };
        let (stopped, woke_by_inotify) = match &self.inotify {
            Some(fd) => {
                let mut fds = [
                    PollFd::new(&self.stop, PollFlags::IN),
                    PollFd::new(fd, PollFlags::IN),
                ];
                match poll(&mut fds, None) {
                    Ok(_) => (!fds[0].revents().is_empty(), !fds[1].revents().is_empty()),
                    Err(e) => return self.poll_failed(e),
                }
            }
            None => {
                let mut fds = [PollFd::new(&self.stop, PollFlags::IN)];
                match poll(&mut fds, Some(&poll_every)) {
                    Ok(_) => (!fds[0].revents().is_empty(), false),
                    Err(e) => return self.poll_failed(e),
                }
            }
        };
        // Readable or hung up: the writing end is closed (nothing is ever written to it).
        if stopped {
            return Woke::Stop;
        }
        if woke_by_inotify && !self.drain() {
            warn!(
                "control files: the directory's inotify watch ended (the directory was removed or moved): looking every {} ms",
                POLL_NS / 1_000_000
            );
            self.inotify = None;
        }
        Woke::Look
    }

    /// A failed poll: interrupted, look; else never spin on it, but look at intervals from now.
    fn poll_failed(&mut self, e: rustix::io::Errno) -> Woke {
        if e != rustix::io::Errno::INTR {
            warn!(
                "control files: poll failed ({e}): looking at them every {} ms instead",
                POLL_NS / 1_000_000
            );
            self.inotify = None;
            std::thread::sleep(core::time::Duration::from_nanos(POLL_NS));
        }
        Woke::Look
    }

    /// Reads the pending events; false when one says the watch is gone.
    fn drain(&self) -> bool {
        let Some(fd) = &self.inotify else {
            return false;
        };
        let mut buf = [MaybeUninit::<u8>::uninit(); 1024];
        let mut reader = inotify::Reader::new(fd, &mut buf);
        loop {
            match reader.next() {
                Ok(ev) if ev.events().contains(ReadFlags::IGNORED) => return false,
                Ok(_) => {}
                // EAGAIN: nothing more to read now. Any other error: the next poll says.
                Err(_) => return true,
            }
        }
    }
}

/// An inotify instance watching `dir` (not followed if it is a link) for a file in it written
/// and closed, replaced, removed or touched, and for its own removal. Not for each write: a
/// shell's `echo on > file` truncates the file before it writes, and a look in between would
/// read it empty.
fn watch(dir: &Path) -> rustix::io::Result<OwnedFd> {
    let fd = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK)?;
    inotify::add_watch(
        &fd,
        dir,
        WatchFlags::CLOSE_WRITE
            | WatchFlags::ATTRIB
            | WatchFlags::DELETE
            | WatchFlags::MOVED_FROM
            | WatchFlags::MOVED_TO
            | WatchFlags::DELETE_SELF
            | WatchFlags::MOVE_SELF
            | WatchFlags::ONLYDIR
            | WatchFlags::DONT_FOLLOW,
    )?;
    Ok(fd)
}
