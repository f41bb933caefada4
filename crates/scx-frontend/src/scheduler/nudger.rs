//! The nudge helper thread: what the loop sends to a CPU to make its task come back at its
//! next slice end.

use super::*;

/// A helper thread of ours that sleeps on a pipe. scx_rustland_core refills the slice of a
/// task nothing else competes with, so a task placed on an E-core (or an SMT sibling) while
/// every P-core was busy would stay there after a P-core idles. To re-place it, the loop wakes
/// this thread and sends it to that CPU's queue: at the task's next slice end the CPU has
/// other work, the task comes back to user space and the policy places it again.
///
/// Not started in `--fifo` mode. Dropping it closes the pipe's writing end; the thread reads
/// end-of-file, closes the reading end and ends as soon as it next runs.
pub(crate) struct Nudger {
    pub(super) tid: i32,
    pub(super) pipe: std::io::PipeWriter,
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
        let (mut reader, writer) = std::io::pipe()?;
        // The loop must never block on it: a full pipe means the helper has enough to read.
        rustix::io::ioctl_fionbio(&writer, true)?;
        let (tx, rx) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("hl-nudge".into())
            .stack_size(64 * 1024)
            .spawn(move || {
                let _ = tx.send(crate::sys::gettid());
                let mut buf = [0u8; 64];
                loop {
                    match reader.read(&mut buf) {
                        Ok(0) => break,
                        Ok(_) => {}
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(_) => break,
                    }
                }
            })?;
        let tid = rx.recv()?;
        Ok(Self {
            tid,
            pipe: writer,
            thread: Some(thread),
        })
    }

    /// Wakes the helper; the core sends it to the nudged CPU when it is queued.
    pub(super) fn wake(&mut self) {
        // A full pipe (WouldBlock) wakes the helper just as well.
        let _ = self.pipe.write(&[1]);
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
