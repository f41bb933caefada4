//! The check of a machine filled task by task until no CPU is idle.

use super::{Violation, check_placement, check_state, fail};
use crate::{ClusterBalance, CpuState, Placement, Policy, TaskHints, Topology};
use std::{format, vec::Vec};

/// Places tasks one after another on an idle machine (all CPUs allowed, no history) until no
/// CPU is idle, checking each decision and the state after it. Also checks: every CPU gets
/// exactly one task; with every CPU primary, steps never go backwards; with cluster balance
/// `on`, clusters alike in kind, capacity and size never differ by more than one busy CPU.
/// Returns the CPUs in the order they were chosen.
pub fn check_fill(topo: &Topology, policy: &Policy) -> Result<Vec<Placement>, Violation> {
    let mut state = CpuState::all_idle(topo);
    let allowed = *topo.cpus();
    let everything_primary = policy.primary() == topo.cpus();
    let balanced = everything_primary && policy.config().cluster_balance == ClusterBalance::On;
    let alike = if balanced {
        alike_clusters(topo)
    } else {
        Vec::new()
    };
    let mut order = Vec::new();
    loop {
        let task = TaskHints::new(&allowed);
        let p = policy.select_cpu(topo, &state, &task);
        check_placement(topo, policy, &state, &task, &p)?;
        let Some(cpu) = p.cpu else { break };
        if everything_primary
            && order
                .last()
                .is_some_and(|last: &Placement| last.step > p.step)
        {
            return fail(
                "fill-order",
                format!("step {} after {:?}", p.step, order.last()),
            );
        }
        if !state.occupy(topo, cpu) {
            return fail("fill", format!("cpu {cpu} chosen twice"));
        }
        check_state(topo, &state)?;
        order.push(p);
        if balanced {
            check_clusters_even(&alike, &state)?;
        }
    }
    if order.len() != topo.nr_cpus() {
        return fail(
            "fill",
            format!("{} tasks placed on {} CPUs", order.len(), topo.nr_cpus()),
        );
    }
    Ok(order)
}

/// The pairs of clusters that are alike: as many CPUs of each kind, capacity and core size. A
/// cluster's first CPU does not say it: a cluster of 7 P-CPUs and 4 E-CPUs, beside one of 11
/// P-CPUs, fills to 7 and 9 busy, rightly, since capacity comes before cluster balance (found
/// by the `topology_builder` fuzz target).
fn alike_clusters(topo: &Topology) -> Vec<(usize, usize)> {
    let key = |cl: usize| {
        let mut members: Vec<_> = topo
            .cluster_cpus(cl)
            .iter()
            .map(|&c| {
                let info = topo.info(c).copied();
                (
                    info.map(|i| i.kind),
                    info.map(|i| i.capacity),
                    topo.siblings(c).len(),
                )
            })
            .collect();
        members.sort_unstable();
        members
    };
    let keys: Vec<_> = (0..topo.nr_clusters()).map(key).collect();
    let mut pairs = Vec::new();
    for a in 0..keys.len() {
        for b in a + 1..keys.len() {
            if keys[a] == keys[b] {
                pairs.push((a, b));
            }
        }
    }
    pairs
}

/// Alike clusters never differ by more than one busy CPU.
fn check_clusters_even(alike: &[(usize, usize)], state: &CpuState) -> Result<(), Violation> {
    for &(a, b) in alike {
        let (x, y) = (state.cluster_busy(a), state.cluster_busy(b));
        if x.abs_diff(y) > 1 {
            return fail(
                "cluster-balance",
                format!("equal clusters {a} and {b} hold {x} and {y} busy CPUs"),
            );
        }
    }
    Ok(())
}
