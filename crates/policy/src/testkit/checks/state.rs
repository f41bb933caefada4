//! The check of a state's derived fields against its idle set.

use super::{Recount, Violation, fail};
use crate::{CpuSet, CpuState, Topology};
use std::format;

/// Checks that the state's derived fields (whole-idle cores, cluster busy counts) agree with
/// its idle set.
pub fn check_state(topo: &Topology, state: &CpuState) -> Result<(), Violation> {
    if !state.idle().is_subset(topo.cpus()) {
        return fail(
            "state",
            format!("idle set {} has CPUs outside the machine", state.idle()),
        );
    }
    let recount = Recount::new(topo, state);
    let whole: CpuSet = state
        .idle()
        .iter()
        .filter(|c| recount.whole_core_idle(topo, *c))
        .collect();
    if whole != *state.idle_cores() {
        return fail(
            "state",
            format!("idle cores {} but expected {whole}", state.idle_cores()),
        );
    }
    for cluster in 0..topo.nr_clusters() {
        let lead = topo.cluster_cpus(cluster)[0];
        let (busy, _) = recount.cluster_load(topo, lead);
        if u32::from(state.cluster_busy(cluster)) != busy {
            return fail(
                "state",
                format!(
                    "cluster {cluster} counts {} busy, has {busy}",
                    state.cluster_busy(cluster)
                ),
            );
        }
    }
    let busy = topo.nr_cpus() - state.idle().count();
    if state.nr_busy() != busy {
        return fail(
            "state",
            format!("{} busy counted, {busy} busy", state.nr_busy()),
        );
    }
    let homes: CpuSet = topo
        .cpus()
        .iter()
        .filter(|c| state.home_count(topo, *c) > 0)
        .collect();
    if homes != *state.homes() {
        return fail(
            "state",
            format!("homes {} but counted {homes}", state.homes()),
        );
    }
    check_by_load(topo, state, &recount)
}

/// The per-share sets: when the topology has a ladder, every CPU sits in exactly one rung,
/// CPUs of one rung share one cluster busy share, and rungs ascend by share.
fn check_by_load(topo: &Topology, state: &CpuState, recount: &Recount) -> Result<(), Violation> {
    let rungs = state.by_load(topo);
    if rungs.is_empty() {
        return Ok(());
    }
    let mut seen = CpuSet::EMPTY;
    let mut last: Option<(u32, u32)> = None;
    for (r, rung) in rungs.iter().enumerate() {
        if rung.intersects(&seen) {
            return fail(
                "state",
                format!("rung {r} repeats CPUs of a lower rung: {rung}"),
            );
        }
        seen = seen.or(rung);
        let Some(first) = rung.first() else { continue };
        let share = recount.cluster_load(topo, first);
        if let Some(c) = rung.iter().find(|c| {
            let (b, n) = recount.cluster_load(topo, *c);
            b * share.1 != share.0 * n
        }) {
            return fail(
                "state",
                format!(
                    "rung {r} holds cpu {first} (cluster load {share:?}) and cpu {c} (cluster load {:?})",
                    recount.cluster_load(topo, c)
                ),
            );
        }
        if let Some(l) = last.filter(|l| l.0 * share.1 >= share.0 * l.1) {
            return fail(
                "state",
                format!("rung {r} (share {share:?}) is not above the rung before it ({l:?})"),
            );
        }
        last = Some(share);
    }
    if seen != *topo.cpus() {
        return fail(
            "state",
            format!("the rungs hold {seen}, the machine is {}", topo.cpus()),
        );
    }
    Ok(())
}
