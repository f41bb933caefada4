//! The core's alphabet: every input is one [`Input`] value handed to
//! [`SchedCore::handle`](super::SchedCore::handle) with the time it happened, every decision one
//! [`Output`] value polled back. [`OwnedInput`] is an input that owns its CPU sets, for a log
//! to keep and hand back again ([`OwnedInput::as_input`]).

use super::io::{LastRun, Life, Queued, Snapshot, TaskId};
use super::{Dispatch, Nudge};
use crate::ClusterBalance;
use crate::cpu_set::{CpuId, CpuSet};
use crate::fast_wake::TaskClass;
use crate::sched_core::io::{Affinity, Arrival, UtilSource};

/// A time on the caller's clock, in nanoseconds.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(transparent))]
pub struct TimeNs(pub u64);

impl TimeNs {
    /// The nanoseconds.
    #[inline]
    pub const fn ns(self) -> u64 {
        self.0
    }
}

impl From<u64> for TimeNs {
    fn from(ns: u64) -> Self {
        Self(ns)
    }
}

impl core::fmt::Display for TimeNs {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{} ns", self.0)
    }
}

/// How the core learns which CPUs are free: part of its configuration
/// ([`CoreConfig::occupancy`](super::CoreConfig::occupancy)). An input of the other kind is
/// refused with [`InputError::WrongOccupancy`].
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Occupancy {
    /// The caller reads the machine's idle CPUs and hands them over per batch
    /// ([`Input::Snapshot`](InputOf::Snapshot), [`Input::SnapshotFailed`](InputOf::SnapshotFailed), [`Input::Recheck`](InputOf::Recheck)); runs arrive with the
    /// queued task ([`Queued::last_run`]). The live loop.
    #[default]
    Snapshots,
    /// The caller reports every start and stop as it happens ([`Input::Started`](InputOf::Started),
    /// [`Input::Stopped`](InputOf::Stopped)) and the core tracks occupancy itself. The simulator.
    Tracked,
}

/// One thing that happened, for [`SchedCore::handle`](super::SchedCore::handle).
pub type Input<'a> = InputOf<Queued<'a>, Snapshot<'a>>;

/// An [`Input`] that owns its CPU sets, for a log to keep. With the `serde` feature it is
/// externally tagged by the input's [name](InputOf::name): `"tick"`, `{"exit": {"task": 7}}`.
pub type OwnedInput = InputOf<OwnedQueued, OwnedSnapshot>;

/// The core's inputs over how a queued task (`Q`) and a snapshot (`S`) are held: borrowed in
/// an [`Input`], owned in an [`OwnedInput`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum InputOf<Q, S> {
    /// A task to dispatch: decided by the next snapshot (or the next poll, when tracked).
    /// Refused with [`InputError::BatchFull`] when [`BATCH_MAX`](super::BATCH_MAX) tasks are
    /// pending.
    Queued(Q),
    /// (Snapshots.) The caller read the idle CPUs: the core's view becomes these (homes kept)
    /// and the pending batch is decided against it.
    Snapshot(S),
    /// (Snapshots.) The caller could not read the idle CPUs: the pending batch goes to the
    /// shared queue.
    SnapshotFailed,
    /// (Snapshots.) The caller's second look, when
    /// [`wants_recheck`](super::SchedCore::wants_recheck): each unpolled dispatch to a CPU that
    /// is no longer free goes to the shared queue instead. Its `caller_cpu` is not read.
    Recheck(S),
    /// Tasks waiting for a CPU besides those handed over since the last poll (the slice
    /// divisor counts both).
    Backlog {
        /// How many.
        waiting: u64,
    },
    /// Time passed: the up-migration scan and the age prune run when due
    /// ([`poll_timeout`](super::SchedCore::poll_timeout) says when).
    Tick,
    /// The task exited: it is forgotten at once, with its home. An exit of another life than
    /// the one the core holds for the id ([`Life`]) is of a task already ended by the new
    /// one's hand-over, and is ignored.
    Exit {
        /// The task.
        task: TaskId,
        /// Which life of it ([`Life::UNKNOWN`]: whichever the core holds).
        #[cfg_attr(
            feature = "serde",
            serde(default, skip_serializing_if = "Life::is_unknown")
        )]
        life: Life,
    },
    /// (Tracked.) The task starts running on `cpu`: the CPU is busy, and the task's home moves
    /// there.
    Started {
        /// The task.
        task: TaskId,
        /// Its CPU.
        cpu: CpuId,
    },
    /// (Tracked.) The task stopped running on `cpu` after `run`: the CPU is idle, and the run
    /// is counted.
    Stopped {
        /// The task.
        task: TaskId,
        /// Its CPU.
        cpu: CpuId,
        /// The run.
        run: LastRun,
        /// Its weight (100 for nice 0).
        weight: u32,
    },
    /// A wake-up the caller placed itself, at the time it woke (live: the in-kernel fast
    /// path, reported at the loop's next round; simulated: its model): `woken` is the task as
    /// it would have been handed over (its previous CPU, the run before, its weight and
    /// affinity), `cpu` the CPU it was put on and `class` the class the placement walked
    /// with. The core counts it as a wake-up it decided itself (the run, the wake-up, the
    /// home, the vtime, a class change as an [`Output::Class`]) and notes the task on `cpu`
    /// for the up-migration scan and wake-up preemption, as it notes a dispatch there; no
    /// dispatch comes out. A `class` other than the one the core last gave out, when that
    /// was given at least [`CLASS_HOLD_NS`](super::CLASS_HOLD_NS) earlier (or never: a task
    /// the core forgot), means the caller holds another class than the core: the core takes
    /// the caller's and gives its own out again.
    ///
    /// Handed over when the caller learns of it, which can be later than the wake-up (live,
    /// at the loop's next round): the wake-up's own time is `woke`, the input's the time the
    /// caller learned of it, when a class change the core gives for it is written.
    Placed {
        /// The woken task.
        woken: Q,
        /// Its CPU.
        cpu: CpuId,
        /// The class the placement read.
        class: TaskClass,
        /// When it woke and was placed (at most the input's time).
        woke: TimeNs,
    },
    /// Hybridland's cluster-balance knob changed. Refused with [`InputError::NoSuchKnob`] by a
    /// policy without it.
    ClusterBalance {
        /// The new mode.
        mode: ClusterBalance,
    },
    /// One of the policy's own knobs changed
    /// ([`PlacementPolicy::set_knob`](crate::PlacementPolicy::set_knob)). Refused with
    /// [`InputError::UnknownKnob`] for an index the policy does not declare and with
    /// [`InputError::KnobOutOfRange`] for a value outside the knob's range.
    Knob {
        /// The knob's place in the policy's [`knobs`](crate::PlacementPolicy::knobs).
        index: u16,
        /// Its new value ([`KnobSpec`](crate::KnobSpec)).
        value: i64,
    },
}

impl<Q, S> InputOf<Q, S> {
    /// Its name, as errors and logs give it.
    pub const fn name(&self) -> &'static str {
        match self {
            Self::Queued(_) => "queued",
            Self::Snapshot(_) => "snapshot",
            Self::SnapshotFailed => "snapshot_failed",
            Self::Recheck(_) => "recheck",
            Self::Backlog { .. } => "backlog",
            Self::Tick => "tick",
            Self::Exit { .. } => "exit",
            Self::Started { .. } => "started",
            Self::Stopped { .. } => "stopped",
            Self::Placed { .. } => "placed",
            Self::ClusterBalance { .. } => "cluster_balance",
            Self::Knob { .. } => "knob",
        }
    }

    /// The occupancy mode it belongs to, when only one.
    pub const fn occupancy(&self) -> Option<Occupancy> {
        match self {
            Self::Snapshot(_) | Self::SnapshotFailed | Self::Recheck(_) => {
                Some(Occupancy::Snapshots)
            }
            Self::Started { .. } | Self::Stopped { .. } => Some(Occupancy::Tracked),
            _ => None,
        }
    }

    /// The same input with its queued task and snapshots turned by `q` and `s`: the one place
    /// that lists every input.
    pub fn map_ref<'a, Q2, S2>(
        &'a self,
        q: impl FnOnce(&'a Q) -> Q2,
        s: impl FnOnce(&'a S) -> S2,
    ) -> InputOf<Q2, S2> {
        match self {
            Self::Queued(x) => InputOf::Queued(q(x)),
            Self::Snapshot(x) => InputOf::Snapshot(s(x)),
            Self::SnapshotFailed => InputOf::SnapshotFailed,
            Self::Recheck(x) => InputOf::Recheck(s(x)),
            Self::Backlog { waiting } => InputOf::Backlog { waiting: *waiting },
            Self::Tick => InputOf::Tick,
            Self::Exit { task, life } => InputOf::Exit {
                task: *task,
                life: *life,
            },
            Self::Started { task, cpu } => InputOf::Started {
                task: *task,
                cpu: *cpu,
            },
            Self::Stopped {
                task,
                cpu,
                run,
                weight,
            } => InputOf::Stopped {
                task: *task,
                cpu: *cpu,
                run: *run,
                weight: *weight,
            },
            Self::Placed {
                woken,
                cpu,
                class,
                woke,
            } => InputOf::Placed {
                woken: q(woken),
                cpu: *cpu,
                class: *class,
                woke: *woke,
            },
            Self::ClusterBalance { mode } => InputOf::ClusterBalance { mode: *mode },
            Self::Knob { index, value } => InputOf::Knob {
                index: *index,
                value: *value,
            },
        }
    }
}

impl Input<'_> {
    /// The same input owning its CPU sets (for a log).
    pub fn to_owned(&self) -> OwnedInput {
        self.map_ref(OwnedQueued::from, OwnedSnapshot::from)
    }
}

impl OwnedInput {
    /// The input to hand over again.
    pub fn as_input(&self) -> Input<'_> {
        self.map_ref(OwnedQueued::as_queued, OwnedSnapshot::as_snapshot)
    }
}

/// One decision, from [`SchedCore::poll`](super::SchedCore::poll).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Output {
    /// Send a task.
    Dispatch(Dispatch),
    /// Make a task come back at its next slice end (up-migration).
    Nudge(Nudge),
    /// A task's class for the in-kernel fast path changed.
    Class(super::Classed),
}

/// An input the core refused; nothing of it was applied.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum InputError {
    /// [`BATCH_MAX`](super::BATCH_MAX) tasks are pending: poll the decided batch first.
    BatchFull,
    /// An input of the other occupancy mode than the core's.
    WrongOccupancy {
        /// The input's name ([`Input::name`](InputOf::name)).
        input: &'static str,
        /// The core's mode.
        core: Occupancy,
    },
    /// A knob change for a knob the policy does not have.
    NoSuchKnob {
        /// The input's name.
        input: &'static str,
    },
    /// A change of knob `index`, which the policy does not declare.
    UnknownKnob {
        /// The index.
        index: u16,
    },
    /// A knob value outside the knob's range.
    KnobOutOfRange {
        /// The knob.
        knob: &'static str,
        /// The value.
        value: i64,
    },
}

impl core::fmt::Display for InputError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::BatchFull => write!(
                f,
                "the batch holds {} tasks: poll it before handing over more",
                super::BATCH_MAX
            ),
            Self::WrongOccupancy { input, core } => write!(
                f,
                "input `{input}` is for a core that {}, and this one {}",
                match core {
                    Occupancy::Snapshots => "tracks occupancy itself",
                    Occupancy::Tracked => "reads idle snapshots",
                },
                match core {
                    Occupancy::Snapshots => "reads idle snapshots",
                    Occupancy::Tracked => "tracks occupancy itself",
                },
            ),
            Self::NoSuchKnob { input } => write!(f, "the policy has no `{input}` knob"),
            Self::UnknownKnob { index } => write!(f, "the policy declares no knob {index}"),
            Self::KnobOutOfRange { knob, value } => {
                write!(f, "knob `{knob}`: {value} is out of its range")
            }
        }
    }
}

impl core::error::Error for InputError {}

/// A [`Queued`] that owns its allowed CPUs. The caller's
/// [`token`](Queued::token) is not kept: it is the caller's handle, never part of a decision,
/// and a task handed over again gets token 0.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
#[allow(missing_docs)] // each field is the `Queued` field of the same name
pub struct OwnedQueued {
    pub task: TaskId,
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Life::is_unknown")
    )]
    pub life: Life,
    pub arrival: Arrival,
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub cpu: Option<CpuId>,
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub last_run: Option<LastRun>,
    pub weight: u32,
    /// The allowed CPUs; `None`: [`Affinity::Unknown`].
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub allowed: Option<CpuSet>,
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "UtilSource::is_estimate")
    )]
    pub util: UtilSource,
}

impl From<&Queued<'_>> for OwnedQueued {
    fn from(q: &Queued<'_>) -> Self {
        Self {
            task: q.task,
            life: q.life,
            arrival: q.arrival,
            cpu: q.cpu,
            last_run: q.last_run,
            weight: q.weight,
            allowed: match q.affinity {
                Affinity::Cpus(set) => Some(*set),
                Affinity::Unknown => None,
            },
            util: q.util,
        }
    }
}

impl OwnedQueued {
    /// The input, borrowing the allowed CPUs.
    pub fn as_queued(&self) -> Queued<'_> {
        Queued {
            task: self.task,
            life: self.life,
            token: 0,
            arrival: self.arrival,
            cpu: self.cpu,
            last_run: self.last_run,
            weight: self.weight,
            affinity: self
                .allowed
                .as_ref()
                .map_or(Affinity::Unknown, Affinity::Cpus),
            util: self.util,
        }
    }
}

/// A [`Snapshot`] that owns its CPU sets.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
#[allow(missing_docs)] // each field is the `Snapshot` field of the same name
pub struct OwnedSnapshot {
    pub idle: CpuSet,
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub queued: Option<CpuSet>,
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub caller_cpu: Option<CpuId>,
}

impl From<&Snapshot<'_>> for OwnedSnapshot {
    fn from(s: &Snapshot<'_>) -> Self {
        Self {
            idle: *s.idle,
            queued: s.queued.copied(),
            caller_cpu: s.caller_cpu,
        }
    }
}

impl OwnedSnapshot {
    /// The input, borrowing the sets.
    pub fn as_snapshot(&self) -> Snapshot<'_> {
        Snapshot {
            idle: &self.idle,
            queued: self.queued.as_ref(),
            caller_cpu: self.caller_cpu,
        }
    }
}
