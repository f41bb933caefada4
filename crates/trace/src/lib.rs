//! The hybridland trace format and what a recording keeps, shared by both frontends.
//!
//! - [`format`](mod@format): workload traces (JSON, versioned, with limits and validation whose errors name
//!   the place), as `hybrid-sim` replays them and every importer and recorder writes them;
//! - [`builder`]: per-task runs, preemptions, sleeps and wake-ups turned into trace tasks: the
//!   one builder behind `hybrid-sim import ftrace` and `scx_hybridland --record`;
//! - [`decisions`]: the decision log, the scheduler core's inputs and the dispatches sent, which
//!   `hybrid-sim decisions` feeds through the same core again;
//! - [`live`]: the figures a live run keeps beside its trace (CPU time per kind and cluster,
//!   placements per step), which `hybrid-sim compare` sets beside a replay;
//! - [`recording`]: what `scx_hybridland --record` saw (the tasks its loop dequeued, the
//!   wake-ups by a task, the tasks still running at the end) made into a trace and its live
//!   figures.
//!
//! The live scheduler links this crate and not the simulator: a recording is a trace in the
//! one format without the machine model, the engine or the baselines in a root daemon.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod builder;
pub mod decisions;
pub mod format;
pub mod json_error;
pub mod live;
mod object_only;
pub mod recording;
mod step_count;

pub use format::{Phase, TaskSpec, Trace, TraceError};
pub use json_error::JsonSyntax;
pub use live::{LiveError, LiveStats};
pub use step_count::StepCount;
