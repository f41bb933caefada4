//! `--audit-fast-wake`: every wake-up the kernel's fast path kept on its previous CPU
//! (`src/bpf/fast_wake.bpf.h`) comes back with the idle CPUs it was decided on and the task's
//! allowed CPUs, and is held against the policy's own answer for that state
//! ([`Policy::check_fast_wake`]). The VM check runs with it; it costs a record per kept
//! wake-up, so it is off by default.
//!
//! The records are a ring of slots in the scheduler's `.bss.hl_fast` (the framework forbids new
//! memory mappings once it is loaded, so a BPF ring buffer cannot be mapped): the kernel side
//! numbers them, and a slot whose number is not the one expected was overwritten before it was
//! read (counted as lost) or is being written (read next time).

#![forbid(unsafe_code)]

use crate::bpf_skel::types::{bss_hl_fast, hl_fast_audit_rec};
use core::sync::atomic::{Ordering, fence};
use hybridland_policy::{CpuId, CpuSet, Policy, Topology};
use tracing::warn;

/// Slots in the kernel's ring (`HL_AUDIT_SLOTS`).
const SLOTS: u64 = 256;
/// Disagreements logged in full; the rest are counted.
const LOG_MAX: u64 = 5;

/// One kept wake-up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Kept {
    pub(crate) pid: i32,
    pub(crate) cpu: CpuId,
    pub(crate) idle: CpuSet,
    pub(crate) allowed: CpuSet,
}

/// The audit's running totals.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct AuditCounts {
    /// Kept wake-ups checked.
    pub(crate) checked: u64,
    /// Of them, ones the policy would have placed elsewhere.
    pub(crate) disagreed: u64,
    /// Records overwritten before they were read, or malformed.
    pub(crate) lost: u64,
}

impl AuditCounts {
    /// Checks one record against `policy` on `topo`, counting it (and logging the first few
    /// disagreements).
    pub(crate) fn check(
        &mut self,
        topo: &Topology,
        policy: &Policy,
        rec: Option<Kept>,
    ) -> Option<hybridland_policy::Placement> {
        let Some(k) = rec else {
            self.lost += 1;
            return None;
        };
        self.checked += 1;
        let answer = policy
            .check_fast_wake(topo, &k.idle, &k.allowed, k.cpu)
            .err()?;
        self.disagreed += 1;
        if self.disagreed <= LOG_MAX {
            warn!(
                "fast-path audit: pid {} kept on CPU {} with idle {} (allowed {}); the policy says {:?}",
                k.pid, k.cpu.0, k.idle, k.allowed, answer
            );
        }
        Some(answer)
    }
}

/// A slot as the kernel wrote it, if it holds a CPU the policy can name.
fn kept(rec: &hl_fast_audit_rec) -> Option<Kept> {
    let set = |words: &[u64; 16]| {
        let mut all = [0u64; CpuSet::WORDS];
        all[..16].copy_from_slice(words);
        CpuSet::from_words(all)
    };
    Some(Kept {
        pid: rec.pid,
        cpu: CpuId(u16::try_from(rec.cpu).ok()?),
        idle: set(&rec.idle),
        allowed: set(&rec.allowed),
    })
}

/// Where the audit has read up to, and its totals.
#[derive(Debug, Default)]
pub(crate) struct FastAudit {
    /// The number of the next record to read.
    next: u64,
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
        let head = bss.hl_audit_head;
        fence(Ordering::Acquire);
        if head.saturating_sub(self.next) > SLOTS {
            self.counts.lost += head - self.next - SLOTS;
            self.next = head - SLOTS;
        }
        while self.next < head {
            let slot = &bss.hl_audit_recs[(self.next % SLOTS) as usize];
            let seq = slot.seq;
            if seq == 0 {
                // Being written: next time.
                break;
            }
            fence(Ordering::Acquire);
            let copy = *slot;
            fence(Ordering::Acquire);
            let rec = (seq == self.next + 1 && slot.seq == seq)
                .then(|| kept(&copy))
                .flatten();
            self.counts.check(topo, policy, rec);
            self.next += 1;
        }
        self.counts
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hybridland_policy::PolicyConfig;

    fn record(pid: i32, cpu: i32, idle: u64, allowed: u64) -> hl_fast_audit_rec {
        let words = |w0: u64| {
            let mut w = [0u64; 16];
            w[0] = w0;
            w
        };
        hl_fast_audit_rec {
            seq: 1,
            pid,
            cpu,
            idle: words(idle),
            allowed: words(allowed),
        }
    }

    #[test]
    fn records_parse_and_are_held_against_the_policy() {
        let topo = crate::test_machines::vm();
        let policy = Policy::new(&topo, &PolicyConfig::default()).unwrap();
        let mut counts = AuditCounts::default();
        let p_kept = kept(&record(42, 6, 0xc3, 0xff)).unwrap();
        assert_eq!((p_kept.pid, p_kept.cpu), (42, CpuId(6)));
        assert_eq!(
            p_kept.idle.iter().map(|c| c.0).collect::<Vec<_>>(),
            [0, 1, 6, 7]
        );
        assert!(counts.check(&topo, &policy, Some(p_kept)).is_none());
        // An E-core kept while a whole P-core is idle: the policy disagrees.
        let wrong = kept(&record(43, 2, 0xf4, 0xff)).unwrap();
        assert!(counts.check(&topo, &policy, Some(wrong)).is_some());
        assert!(kept(&record(44, -1, 0, 0)).is_none());
        counts.check(&topo, &policy, None);
        assert_eq!(
            counts,
            AuditCounts {
                checked: 2,
                disagreed: 1,
                lost: 1
            }
        );
    }
}
