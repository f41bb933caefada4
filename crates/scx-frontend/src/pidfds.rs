//! The pidfds the loop writes task classes through (a task-storage map's key from user space
//! is a pidfd), kept open per task so that a class write is one `bpf()` call, not three
//! (`pidfd_open`, the update, `close`). Bounded: each is an open file, under the process's
//! file limit; a full cache is emptied and refilled as tasks are written again. An entry
//! leaves at the task's exit, and when a write through it fails (a task whose exit was not
//! reported: the next write opens the thread's id again, which may name a new thread).

#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::os::fd::{BorrowedFd, OwnedFd};

/// Most pidfds held at once.
pub(crate) const PIDFDS_MAX: usize = 256;

/// Open pidfds by thread id.
#[derive(Debug, Default)]
pub(crate) struct Pidfds {
    open: HashMap<i32, OwnedFd>,
    /// `pidfd_open` calls made, for the tests.
    opened: u64,
}

impl Pidfds {
    /// The pidfd of thread `tid`, opened if not held; `None` when the thread is gone.
    pub(crate) fn get(&mut self, tid: i32) -> Option<BorrowedFd<'_>> {
        if !self.open.contains_key(&tid) {
            let fd = crate::sys::pidfd(tid)?;
            self.opened += 1;
            if self.open.len() >= PIDFDS_MAX {
                self.open.clear();
            }
            self.open.insert(tid, fd);
        }
        self.open.get(&tid).map(std::os::fd::AsFd::as_fd)
    }

    /// Closes thread `tid`'s pidfd, if held.
    pub(crate) fn forget(&mut self, tid: i32) {
        self.open.remove(&tid);
    }

    /// How many are held.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.open.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_is_opened_once_and_forgotten_at_its_exit() {
        let mut fds = Pidfds::default();
        let me = crate::sys::gettid();
        // A thread that is not its process's leader: the test's own, and one more.
        let other = std::thread::spawn(crate::sys::gettid).join().unwrap();
        assert!(fds.get(me).is_some());
        assert!(fds.get(me).is_some());
        assert_eq!((fds.opened, fds.len()), (1, 1));
        // The spawned thread is gone.
        assert!(fds.get(other).is_none());
        fds.forget(me);
        assert_eq!(fds.len(), 0);
        assert!(fds.get(-3).is_none());
    }
}
