//! `--dry-run`: what the scheduler would do on this machine, without loading anything.

#![forbid(unsafe_code)]

use crate::topology_detect::Detected;
use core::fmt::Write as _;
use hybridland_policy::{CoreKind, CpuId, CpuSet, Policy, Step, Topology};

fn list(set: &CpuSet) -> String {
    if set.is_empty() {
        "-".into()
    } else {
        set.to_string()
    }
}

/// The report: topology, the policy, and for hybridland (`hybridland`) its knobs and idle
/// order.
pub(crate) fn report(
    desc: &Detected,
    topo: &Topology,
    name: &str,
    hybridland: Option<&Policy>,
    slice_us: u64,
) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "scx_hybridland --dry-run: nothing is loaded");
    let _ = writeln!(s, "source: {}", desc.source);
    for note in &desc.notes {
        let _ = writeln!(s, "  {note}");
    }
    let _ = writeln!(
        s,
        "cpus: {} ({}), cores: {}, clusters: {}, llcs: {}, nodes: {}, smt: {}, hybrid: {}",
        topo.nr_cpus(),
        list(topo.cpus()),
        topo.nr_cores(),
        topo.nr_clusters(),
        topo.nr_llcs(),
        topo.nr_nodes(),
        if topo.has_smt() { "yes" } else { "no" },
        if topo.is_hybrid() { "yes" } else { "no" },
    );
    for kind in CoreKind::ALL {
        let mask = topo.kind_mask(kind);
        if mask.is_empty() {
            continue;
        }
        let mut caps: Vec<u16> = mask
            .iter()
            .filter_map(|c| topo.info(c))
            .map(|i| i.capacity)
            .collect();
        caps.sort_unstable();
        caps.dedup();
        let caps: Vec<String> = caps.iter().map(u16::to_string).collect();
        let _ = writeln!(s, "{kind}: {} (capacity {})", list(mask), caps.join("/"));
    }
    let _ = writeln!(s, "smt cores:");
    let smt: Vec<String> = (0..topo.nr_cores())
        .filter(|c| topo.core_cpus(*c).len() > 1)
        .map(|c| {
            topo.core_cpus(c)
                .iter()
                .copied()
                .collect::<CpuSet>()
                .to_string()
        })
        .collect();
    let _ = writeln!(
        s,
        "  {}",
        if smt.is_empty() {
            "-".into()
        } else {
            smt.join(" ")
        }
    );
    let _ = writeln!(s, "clusters:");
    for cl in 0..topo.nr_clusters() {
        let cpus: CpuSet = topo.cluster_cpus(cl).iter().copied().collect();
        let kind = topo
            .info(topo.cluster_cpus(cl)[0])
            .map_or(CoreKind::Performance, |i| i.kind);
        let _ = writeln!(s, "  {cl}: {cpus} {kind}");
    }
    let ranks: Vec<String> = topo
        .cpus()
        .iter()
        .filter_map(|c| topo.info(c).map(|i| (c, i.rank)))
        .map(|(c, r)| format!("{c}:{r}"))
        .collect();
    let infos: Vec<_> = topo.cpus().iter().filter_map(|c| topo.info(c)).collect();
    if infos.iter().any(|a| {
        infos
            .iter()
            .any(|b| a.capacity == b.capacity && a.rank != b.rank)
    }) {
        let _ = writeln!(s, "ranks: {}", ranks.join(" "));
    }
    let _ = writeln!(s, "policy: {name}");
    let Some(policy) = hybridland else {
        let _ = writeln!(s, "slice-us={slice_us}");
        return s;
    };
    let c = policy.config();
    let _ = writeln!(
        s,
        "knobs: primary-domain={} ({}) cluster-balance={} auto-high-busy-pct={} fit-margin-pct={} slice-us={slice_us}",
        c.primary_domain,
        list(policy.primary()),
        c.cluster_balance,
        c.auto_high_busy_pct,
        c.fit_margin_pct,
    );
    let _ = writeln!(
        s,
        "idle order (new tasks placed one by one on an idle machine):"
    );
    let mut order = vec![hybridland_policy::Placement::NO_IDLE; topo.nr_cpus()];
    let n = policy.fill_order(topo, 0, &mut order);
    let mut rows: Vec<(Step, bool, Vec<CpuId>)> = Vec::new();
    for p in &order[..n] {
        let Some(cpu) = p.cpu else { break };
        let key = (p.step, p.is_overflow());
        match rows.last_mut() {
            Some(last) if (last.0, last.1) == key => last.2.push(cpu),
            _ => rows.push((key.0, key.1, vec![cpu])),
        }
    }
    for (step, overflow, cpus) in rows {
        let name = if overflow {
            format!("{step} (overflow)")
        } else {
            step.to_string()
        };
        let cpus: Vec<String> = cpus.iter().map(|c| c.to_string()).collect();
        let _ = writeln!(s, "  {name:<25} {}", cpus.join(" "));
    }
    s
}
