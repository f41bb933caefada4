//! How a trace is read from JSON: every struct of the format only from an object, with the
//! defaults of `docs/trace-format.md` and no unknown field.
//!
//! Each reader below mirrors a public struct of [`crate::trace`] field for field (the derive
//! builds the public struct, so a field missing here or there does not compile); the public
//! structs get their `Deserialize` from [`object_only!`], which refuses arrays.

use super::{FrameSpec, LoopSpec, Phase, PoolSpec, TaskSpec, Trace};
use crate::object_only::object_only;
use serde::Deserialize;

#[derive(Deserialize)]
#[serde(remote = "LoopSpec", deny_unknown_fields)]
struct LoopReader {
    times: u64,
    phases: Vec<Phase>,
}

object_only!(LoopSpec, LoopReader, "a loop: a JSON object");

#[derive(Deserialize)]
#[serde(remote = "FrameSpec", deny_unknown_fields)]
struct FrameReader {
    period_ns: u64,
    work_ns: u64,
    #[serde(default)]
    deadline_ns: Option<u64>,
    count: u64,
}

object_only!(FrameSpec, FrameReader, "a frame loop: a JSON object");

#[derive(Deserialize)]
#[serde(remote = "PoolSpec", deny_unknown_fields)]
struct PoolReader {
    name: String,
    chunks: u64,
    chunk_ns: u64,
}

object_only!(PoolSpec, PoolReader, "a pool: a JSON object");

#[derive(Deserialize)]
#[serde(remote = "TaskSpec", deny_unknown_fields)]
struct TaskReader {
    name: String,
    #[serde(default = "one")]
    copies: u32,
    #[serde(default)]
    start_ns: u64,
    #[serde(default = "hundred")]
    weight: u32,
    #[serde(default)]
    allowed_cpus: Option<String>,
    #[serde(default)]
    util: Option<u16>,
    #[serde(default)]
    cache_sensitivity_pct: u8,
    #[serde(default)]
    phases: Vec<Phase>,
    #[serde(default)]
    frames: Option<FrameSpec>,
}

object_only!(TaskSpec, TaskReader, "a task: a JSON object");

fn one() -> u32 {
    1
}

fn hundred() -> u32 {
    100
}

#[derive(Deserialize)]
#[serde(remote = "Trace", deny_unknown_fields)]
struct TraceReader {
    version: u32,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    machine: Option<String>,
    #[serde(default)]
    seed: u64,
    #[serde(default)]
    duration_ns: Option<u64>,
    #[serde(default)]
    pools: Vec<PoolSpec>,
    tasks: Vec<TaskSpec>,
}

object_only!(Trace, TraceReader, "a trace: a JSON object");

/// The `version` field alone, read before the rest because it decides how to read the rest.
#[derive(Deserialize)]
#[serde(remote = "Self")]
pub(super) struct VersionProbe {
    #[serde(default)]
    pub(super) version: Option<serde_json::Value>,
}

object_only!(VersionProbe, VersionProbe, "a trace: a JSON object");
