//! Importers: workloads written for other tools, turned into a [`Trace`](crate::Trace).
//!
//! - [`rt_app`]: rt-app's JSON workload description (`tasks`, `phases`, `run`/`sleep`/`timer`
//!   events), as the scheduler community writes it;
//! - [`ftrace`]: scheduler recordings, as `trace-cmd report`, tracefs and `perf sched script`
//!   print them;
//! - [`timeline`]: the builder the ftrace importer and `scx_hybridland --record` share:
//!   per-task runs, preemptions, sleeps and wake-ups into trace tasks.

pub mod ftrace;
mod json_tree;
pub mod rt_app;
/// The builder, in the trace crate (the live recorder shares it), at its old path.
pub use hybridland_trace::builder as timeline;
