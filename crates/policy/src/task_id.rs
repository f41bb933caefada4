//! How the core and a policy tell tasks apart: the caller's id ([`TaskId`]) and which life of
//! that id a task is ([`TaskKey`]). A leaf module: the core and the policy interface both use
//! it.

/// A task's id in the caller's world: a thread id live; in the simulator an id taken at the
/// task's first hand-over and given back at its end, reused as pids are. The caller's
/// [`Queued::token`](crate::Queued::token) is its handle for one hand-over; the id is the
/// task's for its life, and the key of its state in the core's storage. A reused id is a new
/// task: [`TaskKey`].
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(transparent))]
pub struct TaskId(pub u32);

impl TaskId {
    /// The one id the core's storage cannot hold (it marks a free slot): a task with it is
    /// decided from a fresh state every time, as when the storage is full. The live loop gives
    /// it to a pid that does not fit a `u32`.
    pub const UNTRACKABLE: Self = Self(u32::MAX);
}

impl core::fmt::Display for TaskId {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.0.fmt(f)
    }
}

/// Which life of a [`TaskId`] a hand-over is of, as the caller tells them apart: live, the
/// kernel's start time of the thread (`task_struct->start_time`); in the simulator, its task's
/// index plus one. [`Life::UNKNOWN`] when the caller cannot tell.
///
/// A pid is reused by the kernel as soon as its thread is released, and the thread's exit
/// reaches the live core later (after an RCU grace period and a ring), so a new thread's first
/// wake-up can arrive while the old thread's record is still held. A hand-over of another life
/// than the record's ends that record there, as its exit would ([`CoreStats::renewed`]), and
/// the exit of the old life that comes after is ignored ([`CoreStats::stale_exits`]): a new
/// task never reads the old one's estimate, home, class or policy value.
///
/// [`CoreStats::renewed`]: crate::CoreStats::renewed
/// [`CoreStats::stale_exits`]: crate::CoreStats::stale_exits
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(transparent))]
pub struct Life(pub u64);

impl Life {
    /// The caller cannot tell lives apart: the id alone is the key.
    pub const UNKNOWN: Self = Self(0);

    /// Whether it is [`Life::UNKNOWN`].
    #[inline]
    pub const fn is_unknown(&self) -> bool {
        self.0 == 0
    }

    /// Whether `self` and `other` are known to be different lives.
    #[inline]
    pub const fn differs(self, other: Self) -> bool {
        self.0 != 0 && other.0 != 0 && self.0 != other.0
    }
}

/// A task's stable key: its id ([`TaskId`]) and the
/// generation of the core's record of it, so an id used again (a pid the kernel reused after
/// the thread exited) is a new task with a new key.
///
/// The generation is the core's own: a counter stamped on a record when the core starts one,
/// at a task's first hand-over after it had none: first sight, after an
/// [`Input::Exit`](crate::InputOf::Exit), after a hand-over of another [`Life`], or after the
/// age prune forgot it. How the end of a
/// task reaches the core is therefore how the generation reaches it:
/// - live, the task-event ring's exits are handed over as [`Input::Exit`](crate::InputOf::Exit);
///   an exit lost to a full ring leaves the old record (and key) until the age prune
///   ([`CoreConfig::forget_after_ns`](crate::CoreConfig::forget_after_ns)) forgets it;
/// - in the simulator every task's end is an [`Input::Exit`](crate::InputOf::Exit), and its
///   id goes to the next task to start (the simulator's ids are reused as pids are), so a
///   replay exercises the same path.
///
/// A task the full storage does not hold has generation 0 (no record, no memory between
/// decisions).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TaskKey {
    /// The caller's id.
    pub id: TaskId,
    /// Which record of `id`: 1 and up, 0 for a task the storage does not hold.
    pub generation: u32,
}
