//! What goes into the core ([`Queued`], [`Snapshot`], [`LastRun`]) and what comes out
//! ([`Dispatch`], [`Nudge`]).

use crate::cpu_set::{CpuId, CpuSet};
use crate::fast_wake::TaskClass;
use crate::idle_order::{Placement, Step};
use crate::migration::SliceEnd;
pub use crate::task_id::{Life, TaskId};

/// Why a task is handed to the core.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Arrival {
    /// It became runnable after a sleep, or is new.
    Wakeup {
        /// The task whose action woke it and that task's CPU, when the caller knows (a
        /// wake-up from an interrupt has none).
        waker: Option<Waker>,
    },
    /// Its slice ended while it still wants to run; `waiting` says who waits for its CPU.
    SliceEnd {
        /// Who waits.
        waiting: Waiting,
    },
}

/// The task that woke another.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Waker {
    /// Its id, when the caller knows it (the simulator knows only the waker's CPU).
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub task: Option<TaskId>,
    /// The CPU it ran on when it woke the other.
    pub cpu: CpuId,
    /// It sleeps right after the wake-up (a synchronous wake-up: live, the kernel's sync
    /// flag; simulated, a waker that blocked right after its wake step), so its CPU is about
    /// to free up. Read by the wake-affine rule ([`PolicyConfig::wake_affine`](crate::PolicyConfig::wake_affine)).
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "core::ops::Not::not")
    )]
    pub sync: bool,
}

/// Who waits for the CPU of a task whose slice ended: the typed account the slice-end rule
/// reads as "contended" or not.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Waiting {
    /// Nobody: the task could go on where it is.
    Nobody,
    /// Tasks wait in that CPU's own queue.
    OwnQueue,
    /// Tasks wait in the shared queue that may run on this CPU and on no idle one (the
    /// simulator's shared queue this CPU serves; live, the idle snapshot reads the allowed
    /// CPUs of the shared queue's tasks).
    SharedQueue,
}

impl Waiting {
    /// Whether somebody waits.
    pub const fn contended(self) -> bool {
        !matches!(self, Self::Nobody)
    }
}

/// The CPUs a task may run on.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Affinity<'a> {
    /// These.
    Cpus(&'a CpuSet),
    /// The caller could not read them (the task is exiting, or the read failed): the core
    /// sends the task to the shared queue, where the kernel applies its real affinity.
    Unknown,
}

/// A finished stretch of running, in the caller's clock.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct LastRun {
    /// When it started.
    pub start_ns: u64,
    /// When it stopped.
    pub stop_ns: u64,
}

/// Where the utilisation a decision reads comes from.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum UtilSource {
    /// The core's estimate from the runs it was told of.
    #[default]
    Estimate,
    /// This value, 0..=1024 (a trace's hint, for replays that test the rules apart from the
    /// estimator).
    Hint(u16),
}

impl UtilSource {
    /// Whether it is the core's estimate.
    pub const fn is_estimate(&self) -> bool {
        matches!(self, Self::Estimate)
    }
}

/// A task handed to the core to be dispatched.
#[derive(Copy, Clone, Debug)]
pub struct Queued<'a> {
    /// The task.
    pub task: TaskId,
    /// Which life of `task` it is ([`Life`]; [`Life::UNKNOWN`] when the caller cannot tell).
    pub life: Life,
    /// The caller's handle for it, given back with its [`Dispatch`] so the caller finds what
    /// it holds for the task without a search (the live loop: its place in the batch). The
    /// core never reads it.
    pub token: u32,
    /// Why it is here.
    pub arrival: Arrival,
    /// The CPU it last ran on (a wake-up) or was running on until now (a slice end); `None`
    /// when it never ran.
    pub cpu: Option<CpuId>,
    /// Its last run on `cpu`, when the caller reports runs this way (the live loop: the
    /// kernel's timestamps of the last run). A run reported twice counts once.
    pub last_run: Option<LastRun>,
    /// Its weight (100 for nice 0).
    pub weight: u32,
    /// Where it may run.
    pub affinity: Affinity<'a>,
    /// Where its utilisation comes from.
    pub util: UtilSource,
}

/// The machine's idle CPUs, as the caller read them.
#[derive(Copy, Clone, Debug)]
pub struct Snapshot<'a> {
    /// Idle CPUs.
    pub idle: &'a CpuSet,
    /// CPUs with tasks waiting in their own queue, when the caller can tell; when it cannot,
    /// the core counts a CPU it dispatched to within [`CoreConfig::claim_ns`] as such.
    ///
    /// [`CoreConfig::claim_ns`]: super::CoreConfig::claim_ns
    pub queued: Option<&'a CpuSet>,
    /// The CPU the caller itself runs on, if it yields that CPU right after the batch (the
    /// live loop): offered as idle, unless a task of the batch was running there until its
    /// slice ended (it gets its CPU back first).
    pub caller_cpu: Option<CpuId>,
}

/// Where a dispatched task goes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// This CPU's own queue (the CPU was idle when decided).
    Cpu(CpuId),
    /// The shared queue, in vtime order, taken by whichever allowed CPU frees up first.
    Shared,
    /// This busy CPU's own queue, and the task running there ends its slice now so the CPU
    /// takes it next ([`WakePreempt`](super::WakePreempt)).
    Preempt(CpuId),
}

impl Target {
    /// The CPU it names, if any.
    pub const fn cpu(self) -> Option<CpuId> {
        match self {
            Self::Cpu(c) | Self::Preempt(c) => Some(c),
            Self::Shared => None,
        }
    }
}

/// Why a dispatch goes where it goes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Why {
    /// A wake-up placed by the idle order (to the shared queue when its step is
    /// [`Step::NoIdle`]).
    Placed(Placement),
    /// A slice end: the rule answered [`SliceEnd::Move`] with this placement.
    Moved(Placement),
    /// A slice end: it keeps its CPU.
    Kept,
    /// A slice end: others wait and no other allowed CPU is idle, so it queues behind them.
    Yielded,
    /// The last idle snapshot failed: every task of the batch goes to the shared queue.
    Blind,
    /// Its affinity could not be read.
    AffinityUnknown,
    /// Placed on this CPU, which the caller's second look found no longer free.
    Stale(CpuId),
    /// The nudge helper, sent to the CPU it is to free.
    Helper,
}

impl Why {
    /// The idle order's placement behind the dispatch, if any.
    pub const fn placement(self) -> Option<Placement> {
        match self {
            Self::Placed(p) | Self::Moved(p) => Some(p),
            _ => None,
        }
    }

    /// The step that placed the task, for per-step counts.
    pub fn step(self) -> Option<Step> {
        self.placement().map(|p| p.step)
    }

    /// The slice-end rule's answer, for a slice end decided by the rule.
    pub const fn slice_end(self) -> Option<SliceEnd> {
        match self {
            Self::Moved(p) => Some(SliceEnd::Move(p)),
            Self::Kept => Some(SliceEnd::Keep),
            Self::Yielded => Some(SliceEnd::Yield),
            _ => None,
        }
    }
}

/// One decided task, to be sent to its target.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Dispatch {
    /// The task.
    pub task: TaskId,
    /// The [`Queued::token`] it was handed over with.
    pub token: u32,
    /// Where to.
    pub target: Target,
    /// Its slice.
    pub slice_ns: u64,
    /// Its place in the shared queue (the bounded-credit vtime).
    pub vtime: u64,
    /// The utilisation the decision read.
    pub util: u16,
    /// Why.
    pub why: Why,
}

/// A task that an idle CPU would now serve strictly better (up-migration): the caller makes
/// it come back at its next slice end with its CPU contended (live: the helper thread is sent
/// there), and the slice-end rule moves it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Nudge {
    /// The CPU it runs on.
    pub cpu: CpuId,
    /// The task the core last sent there.
    pub task: TaskId,
    /// Where the idle order would put it now.
    pub better: Placement,
}

/// A task's [`TaskClass`] moved: the in-kernel fast path must walk with the new one from now
/// on (live: written into the task's BPF storage). Given for tracked tasks of a policy with a
/// [`WakeTable`](crate::WakeTable), at most once per [`CLASS_HOLD_NS`](super::CLASS_HOLD_NS)
/// per task; a task never classed is class 0.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct Classed {
    /// The task.
    pub task: TaskId,
    /// Its class from now on.
    pub class: TaskClass,
}
