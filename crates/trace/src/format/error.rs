//! Why a trace cannot be replayed: every error names the source (file) and the place.

use crate::json_error::JsonSyntax;

/// Why a trace cannot be replayed. Every variant names the source (file) and the place.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TraceError {
    /// The text is larger than [`MAX_TRACE_BYTES`](super::MAX_TRACE_BYTES); nothing was parsed.
    #[error("{source_name}: trace is {bytes} bytes, more than the {max} accepted")]
    TooLarge {
        /// File name.
        source_name: String,
        /// Size given.
        bytes: usize,
        /// The limit.
        max: usize,
    },
    /// Not JSON, truncated, a wrong type, a negative number or an unknown field.
    #[error(transparent)]
    Syntax(JsonSyntax),
    /// `version` is not one this crate reads.
    #[error(
        "{source_name}: trace version {version} is not supported (this build reads versions 1 to {supported})"
    )]
    UnsupportedVersion {
        /// File name.
        source_name: String,
        /// Version given.
        version: String,
        /// Version supported.
        supported: u32,
    },
    /// Two tasks would share a name in reports: a name written twice, or a copy's `NAME.N`
    /// equal to another task's name.
    #[error(
        "{source_name}: tasks[{index}]: task name \"{name}\" is already used by tasks[{first_index}] (names must differ once `copies` has appended .0, .1, ...)"
    )]
    DuplicateTaskName {
        /// File name.
        source_name: String,
        /// Position in `tasks` of the task whose name repeats.
        index: usize,
        /// The repeated name as reports show it (a copy's with its `.N`).
        name: String,
        /// Position in `tasks` of the earlier task with that name.
        first_index: usize,
    },
    /// Valid, but a replay would certainly pass one of its limits
    /// (the simulator's event or simulated-time limit).
    #[error(
        "{source_name}: tasks[{index}] \"{name}\": needs {needs}, more than the replay limit of {limit}"
    )]
    ExceedsReplayLimit {
        /// File name.
        source_name: String,
        /// Position in `tasks` of the task that needs the most.
        index: usize,
        /// Its name.
        name: String,
        /// What it needs, with the unit.
        needs: String,
        /// The limit, with the unit.
        limit: String,
    },
    /// Well-formed but not a valid workload.
    #[error("{source_name}: {place}: `{field}` {message}")]
    Invalid {
        /// File name.
        source_name: String,
        /// The task (`tasks[3] "render"`) or top-level item.
        place: String,
        /// The field.
        field: String,
        /// What is wrong.
        message: String,
    },
}
