//! The wake-up fast path's table: what `src/bpf/fast_wake.bpf.h` tests in the kernel, built
//! from [`Policy::fast_wake`] (the policy crate says which wake-ups it may decide alone; this
//! module only lays that out as the BPF side reads it).
//!
//! Only hybridland's policy has a table: the other policies, `--fifo` and `--no-fast-wake`
//! switch the fast path off, and every wake-up goes to user space as before.

use crate::bpf_skel::types::{bss_hl_fast, hl_fast_cpu};
use core::sync::atomic::{Ordering, fence};
use hybridland_policy::{BalanceRange, CpuSet, Policy, Topology};

/// Words of a CPU mask the BPF side holds (`HL_MAX_WORDS`): 1,024 CPUs, the policy's limit.
const WORDS: usize = 16;

/// The fast path's settings for one policy on one machine.
#[derive(Clone, Debug)]
pub(crate) struct FastWakeTable {
    /// One per CPU id up to the machine's highest.
    entries: Vec<hybridland_policy::FastWake>,
    machine: CpuSet,
    nr_machine: u32,
    balance: BalanceRange,
    slice_ns: u64,
    helper: Option<u32>,
}

impl FastWakeTable {
    /// The table for `policy` on `topo`; dispatches get `slice_ns`; the nudge helper `helper`
    /// is left to the core.
    pub(crate) fn new(
        topo: &Topology,
        policy: &Policy,
        slice_ns: u64,
        helper: Option<u32>,
    ) -> Self {
        let entries = policy.fast_wake_table(topo).collect();
        Self {
            entries,
            machine: *topo.cpus(),
            nr_machine: topo.nr_cpus() as u32,
            balance: policy.balance_range(topo),
            slice_ns,
            helper,
        }
    }

    /// The busy counts at which cluster balance is active, as the table has them.
    #[cfg(test)]
    pub(crate) fn balance(&self) -> BalanceRange {
        self.balance
    }

    /// How many CPUs a task may be kept on (for the start-up line).
    pub(crate) fn nr_keep(&self) -> usize {
        self.entries.iter().filter(|e| e.keep).count()
    }

    /// Builds the table again in place for `policy` (a knob changed), on the same machine:
    /// the same number of entries, so the storage reserved at start is reused and the loop
    /// allocates nothing.
    pub(crate) fn refill(&mut self, topo: &Topology, policy: &Policy) {
        self.entries.clear();
        self.entries.extend(policy.fast_wake_table(topo));
        self.balance = policy.balance_range(topo);
    }

    /// CPU `i`'s entry as the BPF side reads it; CPUs past the machine's are never kept.
    fn cpu(&self, i: usize) -> hl_fast_cpu {
        match self.entries.get(i) {
            Some(e) => hl_fast_cpu {
                core: words(&e.core),
                beaten: words(&e.beaten_if_idle),
                keep: u32::from(e.keep),
                balance_matters: u32::from(e.balance_matters),
                step: e.step.index() as u32,
                pad: 0,
            },
            None => hl_fast_cpu::default(),
        }
    }

    /// The globals the BPF side reads besides the per-CPU entries, in its layout.
    fn layout(&self) -> Layout {
        Layout {
            machine: words(&self.machine),
            nr_cpu_ids: self.entries.len() as u32,
            nr_words: self.entries.len().div_ceil(64) as u32,
            nr_machine: self.nr_machine,
            balance: (self.balance.from, self.balance.until),
            helper: self.helper.unwrap_or(0),
            slice_ns: self.slice_ns,
        }
    }

    /// Writes the table into the BPF globals and switches the fast path on; `None` switches it
    /// off. The switch is off while entries change, so the kernel side never starts reading a
    /// table half written.
    pub(crate) fn install(table: Option<&Self>, bss: &mut bss_hl_fast) {
        bss.hl_fast_on = 0;
        fence(Ordering::SeqCst);
        let Some(t) = table else {
            return;
        };
        let l = t.layout();
        for (i, slot) in bss.hl_fast_cpus.iter_mut().enumerate() {
            *slot = t.cpu(i);
        }
        bss.hl_machine_words = l.machine;
        bss.hl_nr_cpu_ids = l.nr_cpu_ids;
        bss.hl_nr_words = l.nr_words;
        bss.hl_nr_machine_cpus = l.nr_machine;
        (bss.hl_balance_from, bss.hl_balance_until) = l.balance;
        bss.hl_helper_pid = l.helper;
        bss.hl_fast_slice_ns = l.slice_ns;
        fence(Ordering::SeqCst);
        bss.hl_fast_on = 1;
    }
}

/// A CPU set's words as the BPF side holds them.
fn words(set: &CpuSet) -> [u64; WORDS] {
    let mut out = [0u64; WORDS];
    out.copy_from_slice(&set.words()[..WORDS]);
    out
}

/// The BPF side's globals (`src/bpf/fast_wake.bpf.h`), apart from the per-CPU entries, the
/// switch and the counters.
#[derive(Debug)]
struct Layout {
    machine: [u64; WORDS],
    nr_cpu_ids: u32,
    nr_words: u32,
    nr_machine: u32,
    balance: (u32, u32),
    helper: u32,
    slice_ns: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use hybridland_policy::{ClusterBalance, PolicyConfig};

    fn vm() -> Topology {
        crate::test_machines::vm()
    }

    #[test]
    fn the_table_lays_out_the_policys_entries_as_the_bpf_side_reads_them() {
        let topo = vm();
        let config = PolicyConfig {
            cluster_balance: ClusterBalance::Auto,
            ..PolicyConfig::default()
        };
        let policy = Policy::new(&topo, &config).unwrap();
        let table = FastWakeTable::new(&topo, &policy, 5_000_000, Some(77));
        assert_eq!(table.nr_keep(), 8);
        let l = table.layout();
        assert_eq!((l.nr_cpu_ids, l.nr_words, l.nr_machine), (8, 1, 8));
        assert_eq!(l.balance, (0, 6));
        assert_eq!((l.helper, l.slice_ns), (77, 5_000_000));
        assert_eq!(l.machine[0], 0xff);
        assert!(l.machine[1..].iter().all(|w| *w == 0));
        // P-CPU 6: its core 6-7, nothing beats it, load never decides.
        let p = table.cpu(6);
        assert_eq!(
            (p.core[0], p.beaten[0], p.keep, p.balance_matters),
            (0xc0, 0, 1, 0)
        );
        assert_eq!(p.step as usize, hybridland_policy::Step::IdlePCore.index());
        // E-CPU 2: alone in its core, beaten by any idle P-CPU, load decides among E-cores.
        let e = table.cpu(2);
        assert_eq!(
            (e.core[0], e.beaten[0], e.keep, e.balance_matters),
            (0x04, 0xf0, 1, 1)
        );
        assert_eq!(e.step as usize, hybridland_policy::Step::IdleECore.index());
    }

    #[test]
    fn a_refill_for_other_knobs_equals_a_new_table_in_the_same_storage() {
        let topo = vm();
        let policy = |balance| {
            let config = PolicyConfig {
                cluster_balance: balance,
                ..PolicyConfig::default()
            };
            Policy::new(&topo, &config).unwrap()
        };
        let (on, off) = (policy(ClusterBalance::On), policy(ClusterBalance::Off));
        let mut table = FastWakeTable::new(&topo, &on, 5_000_000, None);
        let storage = (table.entries.as_ptr(), table.entries.capacity());
        table.refill(&topo, &off);
        let fresh = FastWakeTable::new(&topo, &off, 5_000_000, None);
        assert_ne!(on.balance_range(&topo), off.balance_range(&topo));
        assert_eq!(table.balance(), fresh.balance());
        assert_eq!(
            format!("{:?}", table.entries),
            format!("{:?}", fresh.entries)
        );
        assert_eq!((table.entries.as_ptr(), table.entries.capacity()), storage);
    }

    #[test]
    fn cpus_outside_the_primary_domain_are_never_kept() {
        let topo = vm();
        let config = PolicyConfig {
            primary_domain: "performance".parse().unwrap(),
            ..PolicyConfig::default()
        };
        let policy = Policy::new(&topo, &config).unwrap();
        let table = FastWakeTable::new(&topo, &policy, 5_000_000, None);
        assert_eq!(table.nr_keep(), 4);
        assert_eq!(table.cpu(0).keep, 0);
        assert_eq!(table.cpu(4).keep, 1);
        assert_eq!(table.cpu(8).keep, 0, "past the machine");
    }
}
