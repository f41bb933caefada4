//! `--test-own-lock`, for vm-check's `own-rescue` check: a thread of the scheduler's own holds
//! a lock, spinning for [`HOLD`] at a time, and the loop takes the same lock at the start of
//! each round, as both can take the framework's allocator lock. Beside CPU hogs the thread is
//! preempted at slice ends while it holds the lock and waits in the loop's queue, and the loop
//! then blocks on it: the scheduler stays loaded only because the kernel hands such a thread
//! over itself (`src/bpf/own_threads.bpf.h`).

#![forbid(unsafe_code)]

use core::time::Duration;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// How long the thread holds the lock each time: twice the default slice, so a slice ends
/// while it holds it.
const HOLD: Duration = Duration::from_millis(10);
/// How long it sleeps between holds: the loop has the lock for two thirds of the time, and
/// keeps the machine running beside the hogs.
const GAP: Duration = Duration::from_millis(20);

/// The loop's side of the lock.
pub(crate) struct OwnLock {
    lock: Arc<Mutex<()>>,
}

impl OwnLock {
    /// Starts the holding thread (before the scheduler loads: the framework forbids new
    /// threads' stacks after).
    pub(crate) fn spawn() -> std::io::Result<Self> {
        let lock = Arc::new(Mutex::new(()));
        let held = Arc::clone(&lock);
        std::thread::Builder::new()
            .name("hl-own-lock".into())
            .spawn(move || {
                loop {
                    {
                        let _guard = held.lock().unwrap_or_else(|e| e.into_inner());
                        let start = Instant::now();
                        while start.elapsed() < HOLD {
                            core::hint::spin_loop();
                        }
                    }
                    std::thread::sleep(GAP);
                }
            })?;
        Ok(Self { lock })
    }

    /// Takes the lock and lets it go: the loop waits while the thread holds it.
    pub(crate) fn touch(&self) {
        let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
    }
}
