//! The nudge helper thread: what the loop sends to a CPU to make its task come back at its
//! next slice end.

use super::*;
use core::sync::atomic::{AtomicU64, Ordering};
use rustix::event::{PollFd, PollFlags};
use rustix::fd::OwnedFd;
use rustix::time::{
    Itimerspec, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags, Timespec, timerfd_create,
    timerfd_settime,
};
use std::sync::Arc;

/// A helper thread of ours that sleeps on a pipe and a timer. It has two jobs.
///
/// **Nudges.** scx_rustland_core refills the slice of a task nothing else competes with, so a
/// task placed on an E-core (or an SMT sibling) while every P-core was busy would stay there
/// after a P-core idles. To re-place it, the loop wakes this thread and sends it to that CPU's
/// queue: at the task's next slice end the CPU has other work, the task comes back to user
/// space and the policy places it again. The framework's BPF puts the helper into the CPU's
/// local queue (`hl_dispatch_helper` in `src/bpf/fast_wake.bpf.h`), which nothing else queued
/// can keep it out of.
///
/// **The core's timer.** The loop runs only when the framework wakes it, which on a quiet
/// machine can be a second apart; the core's up-migration scan and prune are due at
/// [`SchedCore::poll_timeout`]. The loop arms a timer file at that time ([`Nudger::arm`]); when
/// it expires the helper wakes, the framework hands the woken helper to the loop, and the loop
/// ticks the core. Re-arming is one system call, made only when the core's next time changes,
/// and it never wakes the helper early.
///
/// Not started in `--fifo` mode. Dropping it closes the pipe's writing end; the thread reads
/// end-of-file, closes the reading end and ends as soon as it next runs.
pub(crate) struct Nudger {
    pub(super) tid: i32,
    pub(super) pipe: std::io::PipeWriter,
    /// The timer (`CLOCK_MONOTONIC`, one-shot, absolute) the helper also sleeps on; dropped
    /// after it failed to arm once.
    timer: Option<OwnedFd>,
    /// What the timer is armed at, ns (`None`: disarmed).
    armed: Option<u64>,
    /// Times the timer woke the helper (written by the helper, read by the loop).
    timer_wakes: Arc<AtomicU64>,
    #[cfg_attr(not(test), expect(dead_code, reason = "joined only by tests"))]
    pub(super) thread: Option<std::thread::JoinHandle<()>>,
}

impl Nudger {
    /// The helper thread's id as the core knows tasks.
    pub(super) fn task_id(&self) -> Option<TaskId> {
        u32::try_from(self.tid).ok().map(TaskId)
    }

    /// Starts the helper. Call before `BpfScheduler::init` (a thread stack needs `mmap`).
    pub(crate) fn spawn() -> Result<Self> {
        let (reader, writer) = std::io::pipe()?;
        // The loop must never block on it: a full pipe means the helper has enough to read.
        rustix::io::ioctl_fionbio(&writer, true)?;
        let timer = timerfd_create(
            TimerfdClockId::Monotonic,
            TimerfdFlags::CLOEXEC | TimerfdFlags::NONBLOCK,
        )
        .context("timerfd_create")?;
        let helper_timer = timer.try_clone()?;
        let timer_wakes = Arc::new(AtomicU64::new(0));
        let wakes = Arc::clone(&timer_wakes);
        let (tx, rx) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("hl-nudge".into())
            .stack_size(64 * 1024)
            .spawn(move || {
                let _ = tx.send(crate::sys::gettid());
                helper_loop(reader, &helper_timer, &wakes);
            })?;
        let tid = rx.recv()?;
        Ok(Self {
            tid,
            pipe: writer,
            timer: Some(timer),
            armed: None,
            timer_wakes,
            thread: Some(thread),
        })
    }

    /// Wakes the helper; the core sends it to the nudged CPU when it is queued.
    pub(super) fn wake(&mut self) {
        // A full pipe (WouldBlock) wakes the helper just as well.
        let _ = self.pipe.write(&[1]);
    }

    /// Arms the timer at `at` (ns on the monotonic clock; a time already past fires at once),
    /// or disarms it. A system call only when `at` changed. After a failure the timer is
    /// given up (the error is returned once).
    pub(super) fn arm(&mut self, at: Option<u64>) -> Result<()> {
        let Some(timer) = self.timer.as_ref().filter(|_| at != self.armed) else {
            return Ok(());
        };
        // Zero disarms a timer: a time at zero is armed one nanosecond later.
        let ns = at.map_or(0, |ns| ns.max(1));
        let value = Timespec {
            tv_sec: i64::try_from(ns / 1_000_000_000).unwrap_or(i64::MAX),
            tv_nsec: i64::try_from(ns % 1_000_000_000).unwrap_or(0),
        };
        let zero = Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        let set = Itimerspec {
            it_interval: zero,
            it_value: value,
        };
        if let Err(e) = timerfd_settime(timer, TimerfdTimerFlags::ABSTIME, &set) {
            self.timer = None;
            return Err(e).context("timerfd_settime");
        }
        self.armed = at;
        Ok(())
    }

    /// What the timer is armed at.
    #[cfg(test)]
    pub(super) fn armed(&self) -> Option<u64> {
        self.armed
    }

    /// Times the timer has woken the helper.
    pub(super) fn timer_wakes(&self) -> u64 {
        self.timer_wakes.load(Ordering::Relaxed)
    }

    /// Closes the pipe and waits for the helper to end (only once nothing needs this
    /// scheduler to run it: tests, or after the scheduler is detached).
    #[cfg(test)]
    pub(super) fn close_and_join(mut self) {
        let thread = self.thread.take();
        drop(self);
        if let Some(t) = thread {
            t.join().unwrap();
        }
    }
}

/// The helper's life: sleep on the pipe and the timer; a byte or an expiry is a wake (the
/// framework then hands the helper to the loop); end-of-file on the pipe ends it.
fn helper_loop(mut reader: std::io::PipeReader, timer: &OwnedFd, timer_wakes: &AtomicU64) {
    let mut buf = [0u8; 64];
    loop {
        let mut fds = [
            PollFd::new(&reader, PollFlags::IN),
            PollFd::new(timer, PollFlags::IN),
        ];
        match rustix::event::poll(&mut fds, None) {
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => return,
        }
        let (pipe_ready, timer_ready) =
            (!fds[0].revents().is_empty(), !fds[1].revents().is_empty());
        // Non-blocking: a timer re-armed since it expired reads nothing, which is fine.
        if timer_ready && rustix::io::read(timer, &mut [0u8; 8]).is_ok() {
            timer_wakes.fetch_add(1, Ordering::Relaxed);
        }
        if pipe_ready {
            match reader.read(&mut buf) {
                Ok(0) => return,
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return,
            }
        }
    }
}
