//! Importers: workloads written for other tools, turned into a [`Trace`](crate::Trace).
//!
//! - [`rt_app`]: rt-app's JSON workload description (`tasks`, `phases`, `run`/`sleep`/`timer`
//!   events), as the scheduler community writes it;
//! - [`ftrace`]: scheduler recordings, as `trace-cmd report`, tracefs and `perf sched script`
//!   print them.

pub mod ftrace;
mod json_tree;
pub mod rt_app;
