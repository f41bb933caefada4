//! Importers: workloads written for other tools, turned into a [`Trace`](crate::Trace).
//!
//! - [`rt_app`]: rt-app's JSON workload description (`tasks`, `phases`, `run`/`sleep`/`timer`
//!   events), as the scheduler community writes it.

mod json_tree;
pub mod rt_app;
