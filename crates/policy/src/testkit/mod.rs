//! The shared invariants: proptest strategies that generate machines, states and knobs, and
//! checkers that state every rule of the policy independently of its implementation.
//!
//! Each frontend runs the same checkers: the policy's own property tests, the simulator on
//! every decision of a replay, the live scheduler on its adapter. A checker recomputes what it
//! needs from first principles (plain loops over CPUs, no shared helper with the decision
//! code), so a bug in the fast path cannot hide behind the same bug in the check.

mod checks;
mod machines;
pub mod rules;
mod strategies;
mod task_checks;

pub use checks::{
    Violation, check_deterministic, check_fill, check_lone_task, check_placement, check_state,
};
pub use machines::{CoreGroup, Numbering, favoured_core_machine, machine};
pub use strategies::{Scenario, arb_config, arb_scenario, arb_topology, arb_topology_sized};
pub use task_checks::{
    UTIL_TOLERANCE, check_no_ping_pong, check_slice, check_slice_end, check_up_migration,
    check_util_converges, check_util_near, check_vtime_queue,
};
