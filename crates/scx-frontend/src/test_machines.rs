//! The machines the unit tests run on, read from the files the VM checks use, so a test and the
//! VM agree on which CPU is which.

use hybridland_policy::Topology;

/// The VM's machine (`scripts/vm/topology-2p-smt-4e.toml`): E-cores 0-3 of capacity 640 in the
/// L2 clusters {0,2} and {1,3}, P-cores 4-5 and 6-7 with SMT.
pub(crate) fn vm() -> Topology {
    let text = include_str!("../../../scripts/vm/topology-2p-smt-4e.toml");
    *hybridland_machine::parse(text, "topology-2p-smt-4e.toml")
        .unwrap_or_else(|e| panic!("{e}"))
        .topology
}
