//! The one machine description both hybridland frontends and the tests read: kernel CPU lists
//! for SMT cores, L2 clusters, LLCs and NUMA nodes, `[[cpus]]` runs with each CPU's kind,
//! capacity and rank, and an optional `[model]` table with the simulator's constants (the live
//! scheduler ignores it).
//!
//! ```toml
//! name = "vm-2p-smt-4e"
//! description = "4 E-cores in two L2 clusters, 2 P-cores with SMT"
//! cores = ["4-5", "6-7"]     # SMT siblings; a CPU in none is a core of its own
//! clusters = ["0,2", "1,3"]  # CPUs sharing an L2; a core in none is a cluster of its own
//! llcs = ["0-7"]             # optional; CPUs in none share one
//! nodes = ["0-7"]            # optional; CPUs in none share one
//!
//! [[cpus]]
//! list = "0-3"
//! kind = "efficiency"        # performance | efficiency | low-power-efficiency
//! capacity = 640             # 1..=1024
//! rank = 0                   # optional; higher is preferred among equal capacities
//!
//! [[cpus]]
//! list = "4-7"
//! kind = "performance"
//! capacity = 1024
//!
//! [model]                    # optional, for the simulator
//! smt_slowdown_pct = 40
//! ```
//!
//! A file that leaves CPUs out of `cores` or `clusters` while it groups CPUs of the same kind
//! and capacity there is read as the format says (each left-out CPU a core, each left-out core
//! a cluster of its own) with a [`Warning`] that names the CPUs and what was assumed:
//! [`parse_with_warnings`], [`load_with_warnings`].
//!
//! `[[groups]]` runs of identical cores (`kind`, `capacity`, `cores`, `smt`,
//! `cores_per_cluster`, `rank`), numbered consecutively from CPU 0 with SMT siblings on
//! consecutive ids, are sugar for the runs, cores and clusters they describe.
//!
//! Groups are numbered by their lowest CPU whatever order the file lists them in, so the
//! [`Topology`] depends only on which CPUs share what, and
//! [`to_toml_string`](MachineDesc::to_toml_string) writes the shortest file that reads back
//! to it.
//!
//! ```
//! let text = "cores = [\"0-1\"]\n[[cpus]]\nlist = \"0-1\"\nkind = \"p\"\ncapacity = 1024\n\
//!             [[cpus]]\nlist = \"2-3\"\nkind = \"e\"\ncapacity = 512\n";
//! let machine = hybridland_machine::parse(text, "box.toml").unwrap();
//! assert_eq!(machine.topology.nr_cores(), 3);
//! let again = hybridland_machine::parse(&machine.to_toml_string(), "again.toml").unwrap();
//! assert_eq!(again, machine);
//! ```

#![forbid(unsafe_code)]

mod error;
mod file;
pub mod input_file;
mod layout;
mod left_out;
mod model;
pub mod sysfs;
pub mod sysfs_detect;
mod write;

pub use error::{LeftOut, MachineError, Problem, Warning};
pub use file::{load, load_with_warnings, parse, parse_with_warnings};
pub use layout::{CpuRun, Layout};
pub use model::{
    CorePower, IdleExitTable, MAX_L2_CONTENTION_PCT, MAX_SMT_SLOWDOWN_PCT, ModelTable,
};

use hybridland_policy::Topology;

/// Largest machine file accepted; real machines need a few kilobytes.
pub const MAX_MACHINE_FILE_BYTES: usize = 1 << 20;

/// A checked machine description.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MachineDesc {
    /// Short name, if the file gives one.
    pub name: Option<String>,
    /// What the machine is and where its shape comes from.
    pub description: Option<String>,
    /// The topology. Boxed: it is tens of kilobytes.
    pub topology: Box<Topology>,
    /// The `[model]` table, if any.
    pub model: Option<ModelTable>,
}
