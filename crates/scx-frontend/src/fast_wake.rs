//! The wake-up fast path's tables: what `src/bpf/fast_wake.bpf.h` walks in the kernel, laid
//! out from the policy's [`WakeTable`] (the policy crate says how a wake-up is placed; this
//! module only writes that as the BPF side reads it).
//!
//! Only a policy with a table (hybridland's) has a fast path: the other policies, `--fifo` and
//! `--no-fast-wake` switch it off, and every wake-up goes to user space as before.

use crate::bpf_skel::types::{bss_hl_fast, hl_cpu};
use core::sync::atomic::{Ordering, fence};
use hybridland_policy::{CpuSet, WakeTable};

/// Words of a CPU mask the BPF side holds (`HL_MAX_WORDS`): 1,024 CPUs, the policy's limit.
pub(crate) const WORDS: usize = 16;

/// Why the kernel's fast path left a wake-up that had an allowed CPU free to the loop
/// (`HL_DECLINE_*`).
#[allow(
    dead_code,
    reason = "named in the stats; kept beside the BPF numbering"
)]
pub(crate) const DECLINES: [&str; 2] = ["shared-queue", "race"];

/// The fast path's settings for one policy on one machine.
#[derive(Clone, Debug)]
pub(crate) struct FastWakeTable {
    table: Box<WakeTable>,
    slice_ns: u64,
    helper: Option<u32>,
}

impl FastWakeTable {
    /// The fast path for `table`; placements get `slice_ns`; the nudge helper `helper` is left
    /// to the core.
    pub(crate) fn new(table: WakeTable, slice_ns: u64, helper: Option<u32>) -> Self {
        Self {
            table: Box::new(table),
            slice_ns,
            helper,
        }
    }

    /// The table.
    pub(crate) fn table(&self) -> &WakeTable {
        &self.table
    }

    /// Takes `table` in place (a knob changed), in the storage reserved at start: the loop
    /// allocates nothing.
    pub(crate) fn refill(&mut self, table: WakeTable) {
        *self.table = table;
    }

    /// CPU `i` as the BPF side reads it.
    fn cpu(&self, i: usize) -> hl_cpu {
        let c = &self.table.cpus[i];
        hl_cpu {
            present: u8::from(c.present),
            level: c.level,
            p_core: u8::from(c.p_core),
            primary: u8::from(c.primary),
            core: c.core,
            cluster: c.cluster,
        }
    }

    /// Writes the tables into the BPF globals and switches the fast path on; `None` switches
    /// it off. The switch is off while they change, so the kernel side never starts a walk of
    /// tables half written.
    pub(crate) fn install(table: Option<&Self>, bss: &mut bss_hl_fast) {
        bss.hl_fast_on = 0;
        fence(Ordering::SeqCst);
        let Some(t) = table else {
            return;
        };
        let w = &t.table;
        for (i, slot) in bss.hl_cpus.iter_mut().enumerate() {
            *slot = t.cpu(i);
        }
        for (slot, cpu) in bss.hl_ranked.iter_mut().zip(w.ranked.iter()) {
            *slot = cpu.0;
        }
        bss.hl_cluster_size = w.cluster_size;
        bss.hl_nr_ids = u32::from(w.nr_ids);
        bss.hl_nr_ranked = u32::from(w.nr_cpus);
        bss.hl_nr_levels = u32::from(w.nr_levels);
        (bss.hl_balance_from, bss.hl_balance_until) = (w.balance.from, w.balance.until);
        bss.hl_wake_affine = u32::from(w.wake_affine);
        bss.hl_helper_pid = t.helper.unwrap_or(0);
        bss.hl_fast_slice_ns = t.slice_ns;
        fence(Ordering::SeqCst);
        bss.hl_fast_on = 1;
    }

    /// Mirrors the core's homes into the kernel (plain stores: the walk reads whichever words
    /// it finds, and the audit records the ones it read).
    pub(crate) fn set_homes(homes: &CpuSet, bss: &mut bss_hl_fast) {
        bss.hl_homes = words(homes);
    }
}

/// A CPU set's words as the BPF side holds them.
pub(crate) fn words(set: &CpuSet) -> [u64; WORDS] {
    let mut out = [0u64; WORDS];
    out.copy_from_slice(&set.words()[..WORDS]);
    out
}

/// The CPU set the BPF side's words hold.
pub(crate) fn set(words: &[u64; WORDS]) -> CpuSet {
    let mut all = [0u64; CpuSet::WORDS];
    all[..WORDS].copy_from_slice(words);
    CpuSet::from_words(all)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hybridland_policy::{ClusterBalance, CpuId, Policy, PolicyConfig, TaskClass, WakeQuestion};

    fn vm() -> hybridland_policy::Topology {
        crate::test_machines::vm()
    }

    #[test]
    fn the_tables_lay_out_the_policys_walk_as_the_bpf_side_reads_it() {
        let topo = vm();
        let config = PolicyConfig {
            cluster_balance: ClusterBalance::Auto,
            ..PolicyConfig::default()
        };
        let policy = Policy::new(&topo, &config).unwrap();
        let fast = FastWakeTable::new(policy.wake_table(&topo), 5_000_000, Some(77));
        let w = fast.table();
        assert_eq!((w.nr_ids, w.nr_cpus, w.nr_levels), (8, 8, 2));
        assert_eq!((w.balance.from, w.balance.until), (0, 6));
        assert_eq!((fast.helper, fast.slice_ns), (Some(77), 5_000_000));
        // P-CPUs 4-7 first, then the E-CPUs.
        let ranked: Vec<u16> = w.ranked[..8].iter().map(|c| c.0).collect();
        assert_eq!(ranked, [4, 5, 6, 7, 0, 1, 2, 3]);
        let p = fast.cpu(6);
        assert_eq!((p.present, p.level, p.p_core, p.primary), (1, 1, 1, 1));
        let e = fast.cpu(2);
        assert_eq!((e.present, e.level, e.p_core, e.cluster), (1, 0, 0, 0));
        assert_eq!(fast.cpu(8).present, 0, "past the machine");
        assert_eq!(w.cluster_size[..2], [2, 2]);
    }

    /// A class change moves the live tables' answer and the simulator's model the same way:
    /// both walk the one table with the class the core gave out.
    #[test]
    fn a_class_change_moves_the_walk() {
        let topo = vm();
        let policy = Policy::new(&topo, &PolicyConfig::default()).unwrap();
        let fast = FastWakeTable::new(policy.wake_table(&topo), 5_000_000, None);
        // E-core 0 whole and free, P-CPU 5 free beside a busy sibling.
        let free: CpuSet = [CpuId(0), CpuId(2), CpuId(5)].into_iter().collect();
        let ask = |class| {
            fast.table()
                .decide(&WakeQuestion {
                    free: &free,
                    allowed: topo.cpus(),
                    prev: Some(CpuId(5)),
                    class,
                    homes: &CpuSet::EMPTY,
                    sync_waker: None,
                })
                .cpu
        };
        assert_eq!(ask(TaskClass(0)), Some(CpuId(0)));
        assert_eq!(ask(policy.class_of(&topo, 600)), Some(CpuId(5)));
    }

    /// A synchronous wake-up goes to its waker's busy CPU while some allowed CPU is free and
    /// that CPU fits the task; the knob turns the rule off.
    #[test]
    fn a_synchronous_wake_up_follows_its_waker() {
        let topo = vm();
        let table = |wake_affine| {
            let config = PolicyConfig {
                wake_affine,
                ..PolicyConfig::default()
            };
            Policy::new(&topo, &config).unwrap().wake_table(&topo)
        };
        let (on, off) = (table(true), table(false));
        assert_eq!((on.wake_affine, off.wake_affine), (true, false));
        let free: CpuSet = [CpuId(0), CpuId(2), CpuId(5)].into_iter().collect();
        let heavy = Policy::new(&topo, &PolicyConfig::default())
            .unwrap()
            .class_of(&topo, 600);
        let ask = |t: &WakeTable, free: &CpuSet, class, waker| {
            let p = t.decide(&WakeQuestion {
                free,
                allowed: topo.cpus(),
                prev: Some(CpuId(5)),
                class,
                homes: &CpuSet::EMPTY,
                sync_waker: Some(CpuId(waker)),
            });
            (
                p.cpu.map(|c| c.0),
                p.step == hybridland_policy::Step::WakerCpu,
            )
        };
        // P-CPU 6 and E-CPU 1 are busy (their wakers run there).
        assert_eq!(ask(&on, &free, TaskClass(0), 6), (Some(6), true));
        assert_eq!(ask(&on, &free, TaskClass(0), 1), (Some(1), true));
        // A task that needs a P-core does not follow its waker onto an E-core.
        assert_eq!(ask(&on, &free, heavy, 1), (Some(5), false));
        assert_eq!(ask(&off, &free, TaskClass(0), 6), (Some(0), false));
        // Nothing free: the core decides.
        assert_eq!(ask(&on, &CpuSet::EMPTY, TaskClass(0), 6), (None, false));
    }

    #[test]
    fn a_refill_for_other_knobs_equals_a_new_table() {
        let topo = vm();
        let policy = |balance| {
            let config = PolicyConfig {
                cluster_balance: balance,
                ..PolicyConfig::default()
            };
            Policy::new(&topo, &config).unwrap()
        };
        let (on, off) = (policy(ClusterBalance::On), policy(ClusterBalance::Off));
        let mut fast = FastWakeTable::new(on.wake_table(&topo), 5_000_000, None);
        fast.refill(off.wake_table(&topo));
        assert_ne!(on.balance_range(&topo), off.balance_range(&topo));
        assert_eq!(fast.table().balance, off.balance_range(&topo));
    }

    #[test]
    fn cpus_outside_the_primary_domain_are_laid_out_as_such() {
        let topo = vm();
        let config = PolicyConfig {
            primary_domain: "performance".parse().unwrap(),
            ..PolicyConfig::default()
        };
        let policy = Policy::new(&topo, &config).unwrap();
        let fast = FastWakeTable::new(policy.wake_table(&topo), 5_000_000, None);
        assert_eq!(fast.cpu(0).primary, 0);
        assert_eq!(fast.cpu(4).primary, 1);
    }
}
