//! The one error a machine description can give: which file, which field or entry, what is
//! wrong.

use hybridland_policy::{CoreKind, CpuId, CpuListError, CpuSet, MAX_CPUS, TopologyError};

use crate::MAX_MACHINE_FILE_BYTES;

/// A machine description that could not be read or does not describe a machine.
#[derive(Debug, thiserror::Error)]
#[error("{source_name}: {problem}")]
pub struct MachineError {
    /// The file (or where the description came from, e.g. `sysfs at /sys`).
    pub source_name: String,
    /// What is wrong.
    pub problem: Problem,
}

impl MachineError {
    pub(crate) fn new(source_name: &str, problem: Problem) -> Self {
        Self {
            source_name: source_name.to_owned(),
            problem,
        }
    }
}

/// What is wrong with a machine description. Entries are named as the file writes them:
/// `cpus[1]` is the second `[[cpus]]` run, `clusters[0]` the first list of `clusters`.
#[derive(Debug, thiserror::Error)]
pub enum Problem {
    /// The file could not be read.
    #[error("cannot read: {error}")]
    Io {
        /// The OS error.
        error: std::io::Error,
    },
    /// Larger than any machine needs.
    #[error("file is {bytes} bytes, more than the {MAX_MACHINE_FILE_BYTES} accepted")]
    TooLarge {
        /// Its size.
        bytes: u64,
    },
    /// A directory, FIFO, device or socket: refused before it is opened for reading.
    #[error("is {what}, not a regular file; give a machine file")]
    NotRegular {
        /// What it is, e.g. "a FIFO (named pipe)".
        what: &'static str,
    },
    /// A `.json` file: the JSON machine form is gone.
    #[error(
        "machine descriptions are TOML files now (the JSON form is gone; docs/machine-model.md shows the TOML)"
    )]
    Json,
    /// Not TOML, or a field of the wrong type or name.
    #[error("{message}")]
    Syntax {
        /// The TOML parser's message, with line and column.
        message: String,
    },
    /// Both the `groups` sugar and the CPU lists it expands into.
    #[error(
        "`groups` numbers the CPUs and forms cores and clusters itself: give [[groups]] or [[cpus]] with `cores`/`clusters`, not both"
    )]
    MixedForms,
    /// No CPU described.
    #[error("no CPUs: give [[cpus]] runs (or [[groups]])")]
    NoCpus,
    /// A kind that is not a core kind.
    #[error(
        "{entry}: unknown core kind `{name}` (expected performance, efficiency or low-power-efficiency)"
    )]
    UnknownKind {
        /// The entry, e.g. `cpus[2]`.
        entry: String,
        /// The kind given.
        name: String,
    },
    /// A CPU list that does not parse.
    #[error("{entry}: bad CPU list `{text}`: {error}")]
    CpuList {
        /// The entry.
        entry: String,
        /// The list given.
        text: String,
        /// The parser's error.
        error: CpuListError,
    },
    /// A list with no CPUs.
    #[error("{entry}: no CPUs")]
    EmptyEntry {
        /// The entry.
        entry: String,
    },
    /// A group naming a CPU no `[[cpus]]` run describes.
    #[error("{entry}: cpu {cpu} is in no [[cpus]] run")]
    UndescribedCpu {
        /// The entry.
        entry: String,
        /// The CPU.
        cpu: CpuId,
    },
    /// A CPU in two entries of one field.
    #[error("{entry}: cpu {cpu} is already in {other}")]
    Overlap {
        /// The later entry.
        entry: String,
        /// The CPU.
        cpu: CpuId,
        /// The earlier entry holding it.
        other: String,
    },
    /// A CPU the policy cannot take (capacity out of 1..=1024).
    #[error("{entry}: {error}")]
    Cpu {
        /// The `[[cpus]]` run.
        entry: String,
        /// The builder's error.
        error: TopologyError,
    },
    /// A `[[groups]]` entry with a zero count.
    #[error("{entry}: cores, smt and cores_per_cluster must be at least 1")]
    ZeroCount {
        /// The entry.
        entry: String,
    },
    /// More CPUs than the policy supports.
    #[error("{cpus} CPUs, more than the {MAX_CPUS} supported")]
    TooManyCpus {
        /// How many the groups describe.
        cpus: usize,
    },
    /// Groups that contradict each other (a core split across clusters, SMT siblings of two
    /// kinds, ...).
    #[error("invalid topology: {error}")]
    Topology {
        /// The builder's error.
        error: TopologyError,
    },
    /// A `[model]` value out of range.
    #[error("[model] {field} = {value}: must be at most {max}")]
    ModelValue {
        /// The field.
        field: &'static str,
        /// The value given.
        value: u64,
        /// The largest accepted.
        max: u64,
    },
}

/// What a machine file leaves to a default that looks like a slip: the file is read as the
/// format says, and the warning names what it left out and what was assumed. From
/// [`parse_with_warnings`](crate::parse_with_warnings) and
/// [`load_with_warnings`](crate::load_with_warnings); a frontend shows them to its user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    /// The file.
    pub source_name: String,
    /// What it left out.
    pub left_out: LeftOut,
}

impl core::fmt::Display for Warning {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}: {}", self.source_name, self.left_out)
    }
}

/// CPUs a file's `cores` or `clusters` lists leave out while listing CPUs of the same kind
/// and capacity in larger groups: each left-out core (CPU) became a cluster (core) of its own,
/// as the format says of CPUs in no list, which for CPUs like ones the file groups is more
/// likely a forgotten list than a machine whose like CPUs share nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeftOut {
    /// `cores` or `clusters`.
    pub field: &'static str,
    /// The CPUs in none of its lists.
    pub cpus: CpuSet,
    /// Their kind.
    pub kind: CoreKind,
    /// Their capacity.
    pub capacity: u16,
    /// The first list holding CPUs like them, e.g. `clusters[0]`, and its CPUs.
    pub like: (String, CpuSet),
    /// What each became: one core (`clusters`) or one CPU (`cores`) a group.
    pub assumed: Vec<CpuSet>,
}

impl core::fmt::Display for LeftOut {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let (group, own, with) = if self.field == "clusters" {
            (
                "cluster",
                "each of their cores was taken as an L2 cluster of its own",
                "the CPUs it shares an L2 with",
            )
        } else {
            (
                "core",
                "each was taken as a core of its own, with no SMT sibling",
                "its SMT siblings",
            )
        };
        let assumed: Vec<String> = self.assumed.iter().map(CpuSet::to_string).collect();
        write!(
            f,
            "`{}` leaves out CPUs {}, {} CPUs of capacity {} as in {} ({}), so {own} ({} {group}{}: \
             {}); list them in `{}`, each with {with} (alone in its list to keep it apart)",
            self.field,
            self.cpus,
            self.kind,
            self.capacity,
            self.like.0,
            self.like.1,
            self.assumed.len(),
            if self.assumed.len() == 1 { "" } else { "s" },
            assumed.join(", "),
            self.field,
        )
    }
}
