//! The wake-up fast path's tables: what `src/bpf/fast_wake.bpf.h` walks in the kernel, laid
//! out from the policy's [`WakeTable`] (the policy crate says how a wake-up is placed; this
//! module only writes that as the BPF side reads it).
//!
//! Only a policy with a table (hybridland's) has a fast path: the other policies, `--fifo` and
//! `--no-fast-wake` switch it off, and every wake-up goes to user space as before.

use crate::bpf_skel::types::{bss_hl_fast, hl_cpu, hl_table};
use core::sync::atomic::{Ordering, fence};
use hybridland_policy::{CpuSet, SliceMode, TaskClass, WakeTable};

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
    scaled: bool,
    helper: Option<u32>,
}

impl FastWakeTable {
    /// The fast path for `table`; placements get the slice the core would give with base
    /// `slice_ns` (divided by the tasks waiting when `slice` scales it); the nudge helper
    /// `helper` is left to the core.
    pub(crate) fn new(
        table: WakeTable,
        slice_ns: u64,
        slice: SliceMode,
        helper: Option<u32>,
    ) -> Self {
        Self {
            table: Box::new(table),
            slice_ns,
            scaled: slice == SliceMode::Scaled,
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

    /// The table as the walk reads it (`struct hl_table`, `src/bpf/fast_wake_walk.h`).
    fn write(&self, out: &mut hl_table) {
        let w = &self.table;
        for (i, slot) in out.cpus.iter_mut().enumerate() {
            *slot = self.cpu(i);
        }
        for (slot, cpu) in out.ranked.iter_mut().zip(w.ranked.iter()) {
            *slot = cpu.0;
        }
        out.cluster_size = w.cluster_size;
        out.nr_ids = u32::from(w.nr_ids);
        out.nr_ranked = u32::from(w.nr_cpus);
        out.nr_levels = u32::from(w.nr_levels);
        (out.balance_from, out.balance_until) = (w.balance.from, w.balance.until);
        out.wake_affine = u32::from(w.wake_affine);
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
        t.write(&mut bss.hl_table);
        bss.hl_helper_pid = t.helper.unwrap_or(0);
        bss.hl_fast_slice_ns = t.slice_ns;
        bss.hl_fast_slice_scaled = u32::from(t.scaled);
        fence(Ordering::SeqCst);
        bss.hl_fast_on = 1;
    }

    /// Writes task `pid`'s class into `classes`, the table the kernel side reads by pid
    /// (`hl_classes`):
    /// one 64-bit store of the pid and the class, so a reader never pairs one with the other's
    /// neighbour. A slot another live task shares goes to the later write.
    pub(crate) fn set_class(classes: &mut [u64], pid: u32, class: TaskClass) {
        if let Some(slot) = classes.get_mut(pid as usize % classes.len().max(1)) {
            *slot = class_entry(pid, class);
        }
    }

    /// Takes task `pid`'s class out of `classes` (it exited), unless the slot holds another's.
    pub(crate) fn forget_class(classes: &mut [u64], pid: u32) {
        if let Some(slot) = classes.get_mut(pid as usize % classes.len().max(1))
            && *slot >> 32 == u64::from(pid)
        {
            *slot = 0;
        }
    }

    /// Mirrors the core's homes into the kernel (plain stores: the walk reads whichever words
    /// it finds, and the audit records the ones it read).
    pub(crate) fn set_homes(homes: &CpuSet, bss: &mut bss_hl_fast) {
        bss.hl_homes = words(homes);
    }
}

/// A class table's entry (`hl_classes`): the pid above, the class below.
fn class_entry(pid: u32, class: TaskClass) -> u64 {
    u64::from(pid) << 32 | u64::from(class.0)
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
mod host_walk;
#[cfg(test)]
mod tests;
