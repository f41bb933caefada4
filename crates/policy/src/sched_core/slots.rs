//! The core's per-task memory, in storage the caller provides (smoltcp's way: the caller
//! chooses the capacity and where the memory comes from; the core never allocates).
//!
//! An open-addressing table keyed by [`TaskId`], linear probing, deletion by backward shift
//! (no tombstones, so a long-running scheduler's probes never lengthen with churn). At most
//! seven eighths of the slots are used, so a lookup that misses stops within a few probes
//! even when the table is as full as it gets: a thread storm cannot turn each wake-up into a
//! walk of the whole table.

use super::{Life, TaskId};
use crate::cpu_set::CpuId;
use crate::fast_wake::TaskClass;
use crate::task_state::{NICE_0_WEIGHT, TaskState};

/// One slot of the core's task storage. Create storage with
/// `vec![Slot::EMPTY; Slot::count_for(max_tasks)]` (or an array of them).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Slot {
    key: TaskId,
    pub(super) rec: Record,
}

/// What the core remembers about one task.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) struct Record {
    pub(super) state: TaskState,
    /// The latest time the task was heard of (caller's clock), for the age prune.
    pub(super) seen_ns: u64,
    /// The CPU whose core is its home.
    pub(super) home: Option<CpuId>,
    /// The class last given out ([`Classed`](super::Classed)), and when (0: never).
    pub(super) class: TaskClass,
    pub(super) class_ns: u64,
    /// Its weight as last handed over ([`Queued::weight`](super::Queued::weight) or a
    /// stopped run's); [`NICE_0_WEIGHT`] until then.
    pub(super) weight: u32,
    /// Which life of its id it is of ([`Life`]), as the caller last told.
    pub(super) life: Life,
    /// Which record of its id this is ([`TaskKey::generation`](super::TaskKey)); 0 until the
    /// core stamps it.
    pub(super) generation: u32,
    /// The policy's own value for the task ([`View::task_value`](crate::View::task_value)),
    /// 0 at the start.
    pub(super) value: u64,
}

impl Record {
    /// A task the core knows nothing of.
    pub(super) const EMPTY: Self = Self {
        state: TaskState::new(),
        seen_ns: 0,
        home: None,
        weight: NICE_0_WEIGHT,
        life: Life::UNKNOWN,
        generation: 0,
        value: 0,
        class: TaskClass(0),
        class_ns: 0,
    };
}

impl Default for Record {
    fn default() -> Self {
        Self::EMPTY
    }
}

/// `key` of a free slot: no task id the frontends produce (pids are at most 2^22, simulator
/// task indices at most the trace limit).
const FREE: TaskId = TaskId::UNTRACKABLE;

impl Slot {
    /// A free slot.
    pub const EMPTY: Self = Self {
        key: FREE,
        rec: Record::EMPTY,
    };

    /// The number of slots that holds `max_tasks` tasks: the next power of two at or above
    /// `max_tasks * 8 / 7` (at least 8).
    #[must_use]
    pub const fn count_for(max_tasks: usize) -> usize {
        let want = max_tasks.saturating_add(max_tasks / 7).saturating_add(1);
        let n = if want < 8 { 8 } else { want };
        match n.checked_next_power_of_two() {
            Some(n) => n,
            None => 1 << (usize::BITS - 1),
        }
    }

    /// How many tasks `slots` slots hold.
    #[must_use]
    pub const fn capacity_of(slots: usize) -> usize {
        slots / 8 * 7
    }
}

/// Storage the caller handed over that the core cannot use.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum StorageError {
    /// The number of slots is not a power of two of at least 8 ([`Slot::count_for`] gives
    /// one).
    BadSlotCount {
        /// The number given.
        slots: usize,
    },
}

impl core::fmt::Display for StorageError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::BadSlotCount { slots } => write!(
                f,
                "task storage of {slots} slots: need a power of two of at least 8 (Slot::count_for)"
            ),
        }
    }
}

/// The table over the caller's slots.
pub(super) struct Slots<S> {
    slots: S,
    len: usize,
    capacity: usize,
    high_water: usize,
}

impl<S: AsRef<[Slot]> + AsMut<[Slot]>> Slots<S> {
    pub(super) fn new(mut slots: S) -> Result<Self, StorageError> {
        let n = slots.as_ref().len();
        if n < 8 || !n.is_power_of_two() {
            return Err(StorageError::BadSlotCount { slots: n });
        }
        slots.as_mut().fill(Slot::EMPTY);
        Ok(Self {
            slots,
            len: 0,
            capacity: Slot::capacity_of(n),
            high_water: 0,
        })
    }

    fn mask(&self) -> usize {
        self.slots.as_ref().len() - 1
    }

    /// Fibonacci hashing: sequential ids (pids, task indices) spread over the table.
    fn home_of(&self, key: TaskId) -> usize {
        (key.0.wrapping_mul(0x9E37_79B9) as usize) & self.mask()
    }

    /// Where `key` is, or the free slot where it would go.
    fn probe(&self, key: TaskId) -> (usize, bool) {
        let slots = self.slots.as_ref();
        let mut i = self.home_of(key);
        loop {
            match slots[i].key {
                k if k == key => return (i, true),
                FREE => return (i, false),
                _ => i = (i + 1) & self.mask(),
            }
        }
    }

    pub(super) fn get(&self, key: TaskId) -> Option<&Record> {
        let (i, found) = self.probe(key);
        found.then(|| &self.slots.as_ref()[i].rec)
    }

    pub(super) fn get_mut(&mut self, key: TaskId) -> Option<&mut Record> {
        let (i, found) = self.probe(key);
        found.then(move || &mut self.slots.as_mut()[i].rec)
    }

    /// The record of `key`, created when there is room; `None` when the table is full and
    /// does not hold it.
    pub(super) fn entry(&mut self, key: TaskId) -> Option<&mut Record> {
        if key == FREE {
            return None;
        }
        let (i, found) = self.probe(key);
        if !found {
            if self.len >= self.capacity {
                return None;
            }
            self.len += 1;
            self.high_water = self.high_water.max(self.len);
            self.slots.as_mut()[i] = Slot { key, ..Slot::EMPTY };
        }
        Some(&mut self.slots.as_mut()[i].rec)
    }

    /// Removes `key`; returns its record.
    pub(super) fn remove(&mut self, key: TaskId) -> Option<Record> {
        let (mut hole, found) = self.probe(key);
        if !found {
            return None;
        }
        let mask = self.mask();
        let removed = self.slots.as_ref()[hole].rec;
        // Backward shift: pull later members of the probe run into the hole when their home
        // does not lie (cyclically) between the hole and where they sit.
        let mut i = (hole + 1) & mask;
        loop {
            let key = self.slots.as_ref()[i].key;
            if key == FREE {
                break;
            }
            let home = self.home_of(key);
            let dist_now = i.wrapping_sub(home) & mask;
            let dist_hole = i.wrapping_sub(hole) & mask;
            if dist_now >= dist_hole {
                let slots = self.slots.as_mut();
                slots[hole] = slots[i];
                hole = i;
            }
            i = (i + 1) & mask;
        }
        self.slots.as_mut()[hole] = Slot::EMPTY;
        self.len -= 1;
        Some(removed)
    }

    /// Removes every record `keep` refuses, handing each to `gone`. Costs a walk of
    /// the slots.
    pub(super) fn retain(
        &mut self,
        mut keep: impl FnMut(&Record) -> bool,
        mut gone: impl FnMut(&Record),
    ) {
        let mut i = 0;
        let n = self.slots.as_ref().len();
        while i < n {
            let slot = self.slots.as_ref()[i];
            if slot.key != FREE && !keep(&slot.rec) {
                gone(&slot.rec);
                // The shift may pull an unvisited member into `i`: look at `i` again.
                let _ = self.remove(slot.key);
                continue;
            }
            i += 1;
        }
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn capacity(&self) -> usize {
        self.capacity
    }

    pub(super) fn high_water(&self) -> usize {
        self.high_water
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;
    use std::vec;
    use std::vec::Vec;

    /// The live scheduler keeps its task storage within a fixed share of the framework's heap
    /// (`scx_hybridland`'s `STORAGE_BUDGET`: 16 MiB for 65,536 tasks, so 128 bytes a slot at
    /// most): what a slot holds grows only with a look at that budget. 120 bytes since the
    /// record keeps its task's life (15 MiB at 65,536 tasks).
    #[test]
    fn a_slot_stays_within_the_live_storage_budget() {
        assert!(size_of::<Slot>() <= 120, "{} bytes", size_of::<Slot>());
        assert!(Slot::count_for(65_536) * size_of::<Slot>() <= 16 << 20);
    }

    #[test]
    fn slot_counts_are_powers_of_two_with_room() {
        for want in [0usize, 1, 7, 8, 100, 32_768, 4_194_304] {
            let n = Slot::count_for(want);
            assert!(n.is_power_of_two() && n >= 8);
            assert!(Slot::capacity_of(n) >= want, "{want} -> {n}");
        }
        assert!(Slots::new(vec![Slot::EMPTY; 12]).is_err());
        assert!(Slots::new(vec![Slot::EMPTY; 4]).is_err());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]

        /// The table answers as a map would, whatever the order of inserts and removals, and
        /// never holds more than its capacity.
        #[test]
        fn behaves_as_a_bounded_map(ops in proptest::collection::vec((0u32..40, 0u8..3), 1..300)) {
            let mut table = Slots::new(vec![Slot::EMPTY; 16]).unwrap();
            let mut model: HashMap<u32, u64> = HashMap::new();
            for (step, (key, op)) in ops.into_iter().enumerate() {
                let step = step as u64;
                match op {
                    0 => {
                        let room = model.len() < table.capacity() || model.contains_key(&key);
                        match table.entry(TaskId(key)) {
                            Some(rec) => {
                                prop_assert!(room);
                                rec.seen_ns = step;
                                model.insert(key, step);
                            }
                            None => prop_assert!(!room),
                        }
                    }
                    1 => prop_assert_eq!(table.remove(TaskId(key)).map(|r| r.seen_ns), model.remove(&key)),
                    _ => {
                        let cut = step / 2;
                        table.retain(|r| r.seen_ns >= cut, |_| {});
                        model.retain(|_, v| *v >= cut);
                    }
                }
                prop_assert_eq!(table.len(), model.len());
                prop_assert!(table.len() <= table.capacity());
                for k in 0u32..40 {
                    prop_assert_eq!(table.get(TaskId(k)).map(|r| r.seen_ns), model.get(&k).copied());
                }
            }
            let mut keys: Vec<u32> = model.keys().copied().collect();
            keys.sort_unstable();
            for k in keys {
                prop_assert!(table.get_mut(TaskId(k)).is_some());
            }
        }
    }
}
