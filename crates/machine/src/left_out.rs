//! CPUs a file leaves out of its `cores` or `clusters` lists while it groups CPUs like them
//! there: read as the format says, with a [`LeftOut`] warning.

use hybridland_policy::{CoreKind, CpuId, CpuSet, Topology};

use crate::error::LeftOut;

/// Which of `cores` and `clusters` a check is about.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Field {
    /// SMT siblings: a CPU in none is a core of its own.
    Cores,
    /// L2 clusters: a core in none is a cluster of its own.
    Clusters,
}

impl Field {
    fn name(self) -> &'static str {
        match self {
            Self::Cores => "cores",
            Self::Clusters => "clusters",
        }
    }

    /// The group `cpu` forms when no list holds it: itself, or its core.
    fn own_group(self, topo: &Topology, cpu: CpuId) -> CpuSet {
        match self {
            Self::Cores => CpuSet::from_iter([cpu]),
            Self::Clusters => topo
                .info(cpu)
                .map_or(CpuSet::EMPTY, |i| topo.core_mask(usize::from(i.core))),
        }
    }

    /// Whether `group`, a group of this field, is larger than what a CPU in no list becomes.
    pub(crate) fn is_larger_than_own(self, topo: &Topology, group: &CpuSet) -> bool {
        group
            .first()
            .is_some_and(|cpu| *group != self.own_group(topo, cpu))
    }
}

/// A CPU's kind and capacity: CPUs alike in both are expected to be grouped alike.
pub(crate) fn class(topo: &Topology, cpu: CpuId) -> Option<(CoreKind, u16)> {
    topo.info(cpu).map(|i| (i.kind, i.capacity))
}

/// The CPUs of `topo` in none of `listed` (the file's `field` lists, as written) that are alike
/// (kind and capacity) to CPUs a listed group larger than its own holds: one [`LeftOut`] per
/// kind and capacity, in order of their first CPU.
pub(crate) fn left_out(field: Field, listed: &[CpuSet], topo: &Topology) -> Vec<LeftOut> {
    let in_lists = listed.iter().fold(CpuSet::EMPTY, |all, g| all.or(g));
    let orphans = topo.cpus().and_not(&in_lists);
    let mut out: Vec<LeftOut> = Vec::new();
    for cpu in orphans.iter() {
        let Some(kind_capacity) = class(topo, cpu) else {
            continue;
        };
        if out.iter().any(|w| (w.kind, w.capacity) == kind_capacity) {
            continue;
        }
        let like = listed.iter().enumerate().find(|(_, g)| {
            field.is_larger_than_own(topo, g)
                && g.iter().any(|c| class(topo, c) == Some(kind_capacity))
        });
        let Some((i, like)) = like else { continue };
        let cpus: CpuSet = orphans
            .iter()
            .filter(|c| class(topo, *c) == Some(kind_capacity))
            .collect();
        let mut assumed: Vec<CpuSet> = Vec::new();
        for c in cpus.iter() {
            let own = field.own_group(topo, c);
            if !assumed.contains(&own) {
                assumed.push(own);
            }
        }
        out.push(LeftOut {
            field: field.name(),
            cpus,
            kind: kind_capacity.0,
            capacity: kind_capacity.1,
            like: (format!("{}[{i}]", field.name()), *like),
            assumed,
        });
    }
    out
}
