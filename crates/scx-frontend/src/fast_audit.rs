//! `--audit-fast-wake`: every wake-up the kernel's fast path placed (`src/bpf/fast_wake.bpf.h`)
//! comes back with what it was decided on (the free CPUs, the task's allowed CPUs, its previous
//! CPU and class, the homes) and is held against the idle order's answer on those inputs
//! ([`Policy::check_fast_wake`]). The VM check runs with it; it costs a record per placement,
//! so it is off by default. The records are a ring of slots (`crate::slot_ring`).

#![forbid(unsafe_code)]

use crate::bpf_skel::types::{bss_hl_fast, hl_fast_audit_rec};
use crate::fast_wake::set;
use crate::slot_ring::{Numbered, SlotReader};
use hybridland_policy::{CpuId, CpuSet, Policy, TaskClass, Topology, WakeQuestion, pinned_cpu};
use tracing::warn;

/// Disagreements logged in full; the rest are counted.
const LOG_MAX: u64 = 5;

impl Numbered for hl_fast_audit_rec {
    fn seq(&self) -> u64 {
        self.seq
    }
}

/// One placement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Placed {
    pub(crate) pid: i32,
    pub(crate) cpu: CpuId,
    pub(crate) prev: Option<CpuId>,
    pub(crate) class: TaskClass,
    pub(crate) free: CpuSet,
    pub(crate) allowed: CpuSet,
    pub(crate) homes: CpuSet,
    /// The CPU of a synchronous waker with nothing else waiting there, if any.
    pub(crate) sync_waker: Option<CpuId>,
}

/// The audit's running totals.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct AuditCounts {
    /// Placements checked.
    pub(crate) checked: u64,
    /// Of them, placements on another CPU than the task's previous one.
    pub(crate) moved: u64,
    /// Of them, placements of a task allowed on one CPU (the kernel asks no select_cpu about
    /// those: the framework's enqueue asks the fast path).
    pub(crate) pinned: u64,
    /// Of them, placements on a busy CPU the task alone may use (the pinned rule).
    pub(crate) busy_pinned: u64,
    /// Of them, placements on a synchronous waker's CPU (the wake-affine rule).
    pub(crate) affine: u64,
    /// Of them, ones the idle order would have placed elsewhere.
    pub(crate) disagreed: u64,
    /// Records overwritten before they were read, or malformed.
    pub(crate) lost: u64,
    /// The classes checked placements were made at, one bit each (classes 63 and up: bit 63).
    pub(crate) classes: u64,
}

impl AuditCounts {
    /// The classes placements were checked at, as `0,2`.
    pub(crate) fn class_list(&self) -> String {
        let list: Vec<String> = (0..64)
            .filter(|b| self.classes & (1 << b) != 0)
            .map(|b| b.to_string())
            .collect();
        if list.is_empty() {
            "none".into()
        } else {
            list.join(",")
        }
    }
}

impl AuditCounts {
    /// Checks one record against `policy` on `topo`, counting it (and logging the first few
    /// disagreements).
    pub(crate) fn check(
        &mut self,
        topo: &Topology,
        policy: &Policy,
        rec: Option<Placed>,
    ) -> Option<hybridland_policy::Placement> {
        let Some(k) = rec else {
            self.lost += 1;
            return None;
        };
        self.checked += 1;
        self.moved += u64::from(k.prev != Some(k.cpu));
        self.pinned += u64::from(k.allowed.count() == 1);
        self.affine += u64::from(k.sync_waker == Some(k.cpu));
        self.classes |= 1 << k.class.0.min(63);
        let busy_pinned = pinned_cpu(&k.allowed) == Some(k.cpu) && !k.free.contains(k.cpu);
        self.busy_pinned += u64::from(busy_pinned);
        let q = WakeQuestion {
            free: &k.free,
            allowed: &k.allowed,
            prev: k.prev,
            class: k.class,
            homes: &k.homes,
            sync_waker: k.sync_waker,
        };
        let answer = policy.check_fast_wake(topo, &q, k.cpu).err()?;
        self.disagreed += 1;
        if self.disagreed <= LOG_MAX {
            warn!(
                "fast-path audit: pid {} placed on CPU {} (previous {:?}, class {}) with free {} (allowed {}, homes {}); the policy says {:?}",
                k.pid, k.cpu.0, k.prev, k.class.0, k.free, k.allowed, k.homes, answer
            );
        }
        Some(answer)
    }
}

/// A slot as the kernel wrote it, if it holds CPUs the policy can name.
fn placed(rec: &hl_fast_audit_rec) -> Option<Placed> {
    Some(Placed {
        pid: rec.pid,
        cpu: CpuId(u16::try_from(rec.cpu).ok()?),
        prev: u16::try_from(rec.prev).ok().map(CpuId),
        class: TaskClass(u8::try_from(rec.class).ok()?),
        sync_waker: u16::try_from(rec.sync_waker).ok().map(CpuId),
        free: set(&rec.free),
        allowed: set(&rec.allowed),
        homes: set(&rec.homes),
    })
}

/// Where the audit has read up to, and its totals.
#[derive(Debug, Default)]
pub(crate) struct FastAudit {
    reader: SlotReader,
    counts: AuditCounts,
}

impl FastAudit {
    /// Checks the records written since the last call against `policy`; returns the totals.
    pub(crate) fn drain(
        &mut self,
        bss: &bss_hl_fast,
        topo: &Topology,
        policy: &Policy,
    ) -> AuditCounts {
        let counts = &mut self.counts;
        self.reader
            .drain(bss.hl_audit_head, &bss.hl_audit_recs, &mut |rec| {
                counts.check(topo, policy, rec.as_ref().and_then(placed));
            });
        self.counts
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fast_wake::words;
    use hybridland_policy::PolicyConfig;

    fn record(cpu: i32, prev: i32, class: u32, free: &[u16]) -> hl_fast_audit_rec {
        let set: CpuSet = free.iter().map(|&c| CpuId(c)).collect();
        hl_fast_audit_rec {
            seq: 1,
            pid: 42,
            cpu,
            prev,
            class,
            free: words(&set),
            allowed: words(&crate::test_machines::vm().cpus().clone()),
            homes: [0; 16],
            sync_waker: -1,
            pad: 0,
        }
    }

    #[test]
    fn records_parse_and_are_held_against_the_policy() {
        let topo = crate::test_machines::vm();
        let policy = Policy::new(&topo, &PolicyConfig::default()).unwrap();
        let mut counts = AuditCounts::default();
        // VM machine: E-CPUs 0-3, P-cores 4-5 and 6-7. P-core 6-7 whole: the answer.
        let good = placed(&record(6, 6, 0, &[0, 1, 6, 7])).unwrap();
        assert_eq!(
            (good.pid, good.cpu, good.prev),
            (42, CpuId(6), Some(CpuId(6)))
        );
        assert!(counts.check(&topo, &policy, Some(good)).is_none());
        // An E-core while a whole P-core is free: the policy disagrees.
        let wrong = placed(&record(2, 2, 0, &[2, 4, 5, 6, 7])).unwrap();
        assert!(counts.check(&topo, &policy, Some(wrong)).is_some());
        // The class is an input: a P-sibling is right for class 1 and wrong for class 0.
        let heavy = placed(&record(5, 5, 1, &[0, 2, 5])).unwrap();
        assert!(counts.check(&topo, &policy, Some(heavy)).is_none());
        let light = placed(&record(5, 5, 0, &[0, 2, 5])).unwrap();
        assert!(counts.check(&topo, &policy, Some(light)).is_some());
        // A synchronous waker's busy CPU is the answer while a CPU is free; without the sync
        // flag it is wrong.
        let affine = hl_fast_audit_rec {
            sync_waker: 1,
            ..record(1, 3, 0, &[3, 4, 5])
        };
        assert!(counts.check(&topo, &policy, placed(&affine)).is_none());
        let unsynced = placed(&record(1, 3, 0, &[3, 4, 5])).unwrap();
        assert!(counts.check(&topo, &policy, Some(unsynced)).is_some());
        // A busy CPU is right for a task allowed on it alone (the pinned rule), and only then.
        let only = |cpu: u16| words(&[CpuId(cpu)].into_iter().collect());
        let pinned = hl_fast_audit_rec {
            allowed: only(5),
            ..record(5, 5, 0, &[0, 1])
        };
        assert!(counts.check(&topo, &policy, placed(&pinned)).is_none());
        let elsewhere = hl_fast_audit_rec {
            allowed: only(4),
            ..record(5, 5, 0, &[0, 1])
        };
        assert!(counts.check(&topo, &policy, placed(&elsewhere)).is_some());
        assert!(placed(&record(-1, 0, 0, &[])).is_none());
        assert_eq!(placed(&record(3, -1, 0, &[3])).unwrap().prev, None);
        counts.check(&topo, &policy, None);
        assert_eq!(
            counts,
            AuditCounts {
                checked: 8,
                moved: 2,
                pinned: 2,
                busy_pinned: 1,
                affine: 1,
                disagreed: 4,
                lost: 1,
                classes: 0b11,
            }
        );
        assert_eq!(counts.class_list(), "0,1");
        assert_eq!(AuditCounts::default().class_list(), "none");
    }
}
