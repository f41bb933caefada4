//! The few system calls the loop makes itself, through `rustix` (no `unsafe` here): the
//! monotonic clock, this thread's CPU time, the CPU this thread runs on, a task's affinity, this thread's
//! id.

#![forbid(unsafe_code)]

use hybridland_policy::{CpuId, CpuSet, Topology, parse_cpu_list};
use rustix::thread::Pid;
use rustix::time::{ClockId, clock_gettime};

/// `CLOCK_MONOTONIC` in nanoseconds (a vDSO call). Not the clock of the framework's task
/// timestamps: the loop hands the core [`crate::clock::KernelClock`]'s translation of it.
pub(crate) fn now_ns() -> u64 {
    let ts = clock_gettime(ClockId::Monotonic);
    u64::try_from(ts.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(ts.tv_nsec).unwrap_or(0)
}

/// CPU time the calling thread has used, in nanoseconds (`CLOCK_THREAD_CPUTIME_ID`: a system
/// call, so the loop reads it only when answering stats, not per batch).
pub(crate) fn thread_cpu_ns() -> u64 {
    let ts = clock_gettime(ClockId::ThreadCPUTime);
    u64::try_from(ts.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(ts.tv_nsec).unwrap_or(0)
}

/// The CPU the calling thread runs on.
pub(crate) fn current_cpu() -> Option<CpuId> {
    u16::try_from(rustix::thread::sched_getcpu())
        .ok()
        .map(CpuId)
}

/// The calling thread's id.
pub(crate) fn gettid() -> i32 {
    rustix::thread::gettid().as_raw_nonzero().get()
}

/// The task's allowed CPUs: the whole machine when it may run anywhere (`nr_allowed` at least
/// the number of possible CPUs), else its affinity. `None` when the task is gone.
pub(crate) fn allowed_cpus(
    pid: i32,
    nr_allowed: u64,
    nr_possible: u64,
    topo: &Topology,
) -> Option<CpuSet> {
    if nr_allowed >= nr_possible {
        return Some(*topo.cpus());
    }
    // `Pid::from_raw` asserts a non-negative id.
    let pid = Pid::from_raw(pid.max(0))?;
    let set = rustix::thread::sched_getaffinity(Some(pid)).ok()?;
    Some(
        topo.cpus()
            .iter()
            .filter(|c| set.is_set(c.index()))
            .collect(),
    )
}

/// How many CPUs the kernel counts as possible (`devices/system/cpu/possible` under
/// `sysfs_root`): a task allowed on that many may run anywhere. `fallback` when unreadable.
pub(crate) fn nr_possible_cpus(sysfs_root: &std::path::Path, fallback: u64) -> u64 {
    std::fs::read_to_string(sysfs_root.join("devices/system/cpu/possible"))
        .ok()
        .and_then(|s| parse_cpu_list(s.trim()).ok())
        .map_or(fallback, |set| set.count() as u64)
        .max(1)
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn clock_cpu_affinity_and_tid_answer() {
        let a = now_ns();
        assert!(now_ns() >= a && a > 0);
        // This thread's CPU time grows while it works.
        let t0 = thread_cpu_ns();
        let mut x = 0u64;
        while thread_cpu_ns() == t0 {
            x = core::hint::black_box(x.wrapping_add(1));
        }
        assert!(thread_cpu_ns() > t0);
        let me = gettid();
        assert!(me > 0);
        let mut b = hybridland_policy::TopologyBuilder::new();
        b.add_cpu(CpuId(0), hybridland_policy::CoreKind::Performance, 1024, 0)
            .unwrap();
        let topo = b.build().unwrap();
        // Allowed on everything possible: no system call, the whole machine.
        assert_eq!(allowed_cpus(me, 8, 8, &topo), Some(*topo.cpus()));
        // Restricted: read from the kernel (this thread may run on CPU 0 of a real machine or
        // not, but the answer stays inside the topology).
        let got = allowed_cpus(me, 1, 8, &topo).unwrap();
        assert!(got.and_not(topo.cpus()).is_empty());
        // A pid that cannot exist.
        assert_eq!(allowed_cpus(-5, 1, 8, &topo), None);
        assert!(current_cpu().is_some());
    }

    #[test]
    fn possible_cpus_from_the_fixture() {
        let root =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/i7-13800h");
        assert_eq!(nr_possible_cpus(&root, 1), 20);
        assert_eq!(nr_possible_cpus(std::path::Path::new("/nonexistent"), 7), 7);
    }
}
