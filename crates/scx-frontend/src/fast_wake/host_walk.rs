//! The kernel's walk (`src/bpf/fast_wake_walk.h`) built for the host (`src/bpf/host_walk.c`,
//! compiled by build.rs), for the test that holds it to the policy's walk. Its one call into C
//! is the crate's only `unsafe` outside the generated bindings, and it is in tests alone.
#![allow(unsafe_code)]

use super::{FastWakeTable, words};
use crate::bpf_skel::types::hl_table;
use hybridland_policy::{CpuId, Step, WakeQuestion};

unsafe extern "C" {
    /// `src/bpf/host_walk.c`: a task's class as the kernel's fast path reads it from the
    /// table by pid (`HL_CLASS_SLOTS` words).
    fn hl_host_class(classes: *const u64, pid: i32) -> u32;

    /// `src/bpf/host_walk.c`: the slice the kernel's fast path gives a placement.
    fn hl_host_slice(base: u64, waiting: u64, scaled: bool) -> u64;

    /// `src/bpf/host_walk.c`: the kernel's walk (`src/bpf/fast_wake_walk.h`) built for the
    /// host. Reads `t`, `homes`, `free` and `allowed` (`WORDS` words each) and writes `step`.
    fn hl_host_walk(
        t: *const hl_table,
        homes: *const u64,
        free: *const u64,
        allowed: *const u64,
        prev: i32,
        sync_waker: i32,
        class: u32,
        step: *mut u32,
    ) -> i32;
}

/// The kernel's walk's answer to `q` over the table `fast` writes: the CPU and its step.
pub(super) fn kernel_walk(
    fast: &FastWakeTable,
    q: &WakeQuestion<'_>,
) -> (Option<CpuId>, Option<Step>) {
    let mut table = Box::<hl_table>::default();
    fast.write(&mut table);
    let (homes, free, allowed) = (words(q.homes), words(q.free), words(q.allowed));
    let id = |c: Option<CpuId>| c.map_or(-1, |c| i32::from(c.0));
    let mut step = u32::MAX;
    // SAFETY: every pointer is to a live value of the size the C side reads (one hl_table,
    // `WORDS` words each), and `step` to a u32 it writes.
    let cpu = unsafe {
        hl_host_walk(
            &*table,
            homes.as_ptr(),
            free.as_ptr(),
            allowed.as_ptr(),
            id(q.prev),
            id(q.sync_waker),
            u32::from(q.class.0),
            &mut step,
        )
    };
    let cpu = u16::try_from(cpu).ok().map(CpuId);
    (cpu, cpu.and_then(|_| Step::ALL.get(step as usize).copied()))
}

/// The slice the kernel's fast path gives a placement with base `base` and `waiting` tasks
/// waiting (itself included), scaled or not.
pub(super) fn kernel_slice(base: u64, waiting: u64, scaled: bool) -> u64 {
    // SAFETY: plain values in and out.
    unsafe { hl_host_slice(base, waiting, scaled) }
}

/// Task `pid`'s class as the kernel's fast path reads it from the class table `classes`.
///
/// # Panics
/// When `classes` is shorter than the C side's `HL_CLASS_SLOTS`.
pub(super) fn kernel_class(classes: &[u64], pid: i32) -> u32 {
    assert_eq!(classes.len(), 8192, "HL_CLASS_SLOTS");
    // SAFETY: the table is `HL_CLASS_SLOTS` words, which the C side indexes within.
    unsafe { hl_host_class(classes.as_ptr(), pid) }
}
