//! The kernel's sched_ext watchdog timeout, as `--watchdog-timeout-ms` sets it. The generated
//! connector reads it through [`timeout_ms`] while it fills the struct_ops before load (the one
//! line `build.rs` adds to it), so the value travels through a static rather than through the
//! framework's `init` arguments, which are not ours to change.

#![forbid(unsafe_code)]

use core::sync::atomic::{AtomicU32, Ordering};

/// Default timeout: three times the framework's 5000 ms, half the kernel's 30 s ceiling. A stuck
/// scheduler still goes within 15 s, and an emulated guest on a busy host, where the kernel's
/// watchdog work item itself went 5 s without a CPU, keeps its scheduler.
pub(crate) const DEFAULT_TIMEOUT_MS: u32 = 15_000;

static TIMEOUT_MS: AtomicU32 = AtomicU32::new(DEFAULT_TIMEOUT_MS);

/// Sets the timeout the next load uses.
pub(crate) fn set_timeout_ms(ms: u32) {
    TIMEOUT_MS.store(ms, Ordering::Relaxed);
}

/// The timeout the connector puts in the struct_ops.
pub(crate) fn timeout_ms() -> u32 {
    TIMEOUT_MS.load(Ordering::Relaxed)
}
