//! Placement policy for hybrid and heterogeneous CPUs: P-cores with SMT beside clusters of
//! E-cores, Arm big.LITTLE, any mix of capacities.
//!
//! The crate is sans-IO. Its entry point is the scheduler core, [`SchedCore`]: the caller
//! hands it what happened (a task queued, an idle snapshot, a run, an exit, time passing) and
//! polls out what to do (dispatch this task there with this slice and vtime; nudge that CPU;
//! call again at this time). The core runs the whole per-task sequence and asks each rule
//! (the idle order, the slice-end rule, up-migration, the estimator, the vtime credit) at its
//! moment; the rules themselves are private to the crate. It reads no clock, no sysfs and no
//! BPF map, allocates nothing (task storage is the caller's) and uses no randomness, which is
//! what lets the very same sequence run in the `scx_hybridland` live scheduler, in the
//! `hybrid-sim` simulator, and under one set of property tests.
//!
//! ```
//! use hybridland_policy::*;
//!
//! // 2 P-cores with SMT (CPUs 0-3) and one cluster of 4 E-cores (CPUs 4-7).
//! let mut b = TopologyBuilder::new();
//! for cpu in 0..8u16 {
//!     let (kind, cap) = if cpu < 4 { (CoreKind::Performance, 1024) } else { (CoreKind::Efficiency, 600) };
//!     b.add_cpu(CpuId(cpu), kind, cap, 0)?;
//! }
//! b.add_core(&[CpuId(0), CpuId(1)])?;
//! b.add_core(&[CpuId(2), CpuId(3)])?;
//! b.add_cluster(&[CpuId(4), CpuId(5), CpuId(6), CpuId(7)])?;
//! let topo = b.build()?;
//! let all = *topo.cpus();
//!
//! let storage = vec![Slot::EMPTY; Slot::count_for(1000)];
//! let mut core = SchedCore::new(topo, &PolicyConfig::default(), CoreConfig::DEFAULT, storage)?;
//! let woke = Queued {
//!     task: TaskId(42),
//!     life: Life::UNKNOWN,
//!     token: 0,
//!     arrival: Arrival::Wakeup { waker: None },
//!     cpu: None,
//!     last_run: None,
//!     weight: 100,
//!     affinity: Affinity::Cpus(&all),
//!     util: UtilSource::Estimate,
//! };
//! let now = TimeNs(1_000);
//! core.handle(now, Input::Queued(woke))?;
//! core.handle(now, Input::Snapshot(Snapshot { idle: &all, queued: Some(&CpuSet::EMPTY), caller_cpu: None }))?;
//! let Some(Output::Dispatch(d)) = core.poll() else { panic!("one dispatch") };
//! assert_eq!(d.target, Target::Cpu(CpuId(0)));
//! assert_eq!(d.why.step(), Some(Step::IdlePCore));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The policy the core runs is any [`PlacementPolicy`]: hybridland's ([`Policy`], the
//! default) or one of the built-in baselines ([`policies`]), or your own.
//!
//! Features: `serde` derives (de)serialisation for the configuration types and the owned
//! inputs ([`OwnedInput`]) without needing std or alloc; `alloc` lets a boxed policy (`Box<dyn PlacementPolicy>`) run in a core (the crate
//! still allocates nothing itself); `testkit` adds [`testkit`], the shared invariants, proptest strategies and the
//! individual rules (`testkit::rules`) for property tests (it pulls in std).
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

#[cfg(any(test, feature = "testkit"))]
extern crate std;

#[cfg(feature = "alloc")]
extern crate alloc;

mod cluster_balance;
mod config;
mod cpu_list;
mod cpu_set;
mod cpu_state;
mod fast_wake;
mod fill_order;
mod idle_order;
mod knob;
mod migration;
mod placement_policy;
pub mod policies;
pub mod rng;
mod sched_core;
mod task_id;
mod task_state;
mod topology;
mod util_estimate;

#[cfg(feature = "testkit")]
pub mod testkit;

pub use cluster_balance::ClusterLoad;
pub use config::{ClusterBalance, ConfigError, PolicyConfig, PrimaryDomain, UnknownClusterBalance};
pub use cpu_list::{CpuListError, parse_cpu_list, parse_cpu_mask};
pub use cpu_set::{BitSet, CpuId, CpuSet, Iter as CpuSetIter, MAX_CPUS};
pub use cpu_state::CpuState;
pub use fast_wake::{BalanceRange, TaskClass, WakeCpu, WakeQuestion, WakeTable, pinned_cpu};
pub use fill_order::fill_order_of;
pub use idle_order::{Placement, Policy, Reach, Step, TaskHints};
pub use knob::{
    KnobError, KnobKind, KnobRange, KnobSpec, KnobText, KnobValues, MAX_KNOBS, check_knobs,
    knob_index, nearest_name,
};
pub use migration::SliceEnd;
#[cfg(feature = "alloc")]
pub use placement_policy::{BuildPolicy, CustomPolicy};
pub use placement_policy::{PlacementPolicy, View};
pub use policies::{Builtin, BuiltinPolicy};
#[cfg(feature = "testkit")]
pub use sched_core::Audit;
pub use sched_core::{
    Affinity, Arrival, BATCH_MAX, CLASS_HOLD_NS, Classed, CoreConfig, CoreError, CoreStats,
    Dispatch, Input, InputError, InputOf, LastRun, Life, Nudge, Nudging, Occupancy, Output,
    OwnedInput, OwnedQueued, OwnedSnapshot, Queued, SchedCore, SliceMode, Slot, Snapshot,
    StorageError, Target, TaskId, TaskKey, TimeNs, UtilSource, Waiting, WakePreempt, Waker, Why,
};
pub use task_state::{
    MIN_SLICE_DIVISOR, NICE_0_WEIGHT, Run, RunAccount, TaskState, VtimeClock, slice_ns,
};
pub use topology::{
    CoreKind, CpuInfo, GroupLevel, MAX_CAPACITY, MAX_CAPACITY_LEVELS, MAX_LOAD_LEVELS, Topology,
    TopologyBuilder, TopologyError, UnknownCoreKind,
};
pub use util_estimate::{UTIL_PERIOD_NS, UtilEstimate};
