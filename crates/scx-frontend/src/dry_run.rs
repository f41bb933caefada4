//! `--dry-run`: what the scheduler would do on this machine, without loading anything.

#![forbid(unsafe_code)]

use crate::topology_detect::Detected;
use core::fmt::Write as _;
use hybridland_policy::{
    CoreKind, CpuId, CpuSet, Placement, PlacementPolicy, Step, Topology, fill_order_of,
};

fn list(set: &CpuSet) -> String {
    if set.is_empty() {
        "-".into()
    } else {
        set.to_string()
    }
}

/// The report: topology, the policy `--policy` named (`name`, built as `policy`), hybridland's
/// knobs when it is hybridland, and the policy's idle order. Building the order asks `policy`
/// (a policy that draws at random draws), so it is one built for the report.
pub(crate) fn report(
    desc: &Detected,
    topo: &Topology,
    name: &str,
    policy: &mut dyn PlacementPolicy,
    slice_us: u64,
) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{} --dry-run: nothing is loaded", crate::program());
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
    match policy.hybridland() {
        Some(h) => {
            let c = h.config();
            let _ = writeln!(
                s,
                "knobs: primary-domain={} ({}) cluster-balance={} auto-high-busy-pct={} fit-margin-pct={} wake-affine={} slice-us={slice_us}",
                c.primary_domain,
                list(h.primary()),
                c.cluster_balance,
                c.auto_high_busy_pct,
                c.fit_margin_pct,
                if c.wake_affine { "on" } else { "off" },
            );
        }
        None => {
            let _ = writeln!(s, "slice-us={slice_us}");
        }
    }
    idle_order(&mut s, topo, policy);
    s
}

/// The policy's fill order ([`fill_order_of`]: the core's wake-up question for new tasks, one
/// after another on an idle machine), one line per run of one step; and where it stops short
/// of filling the machine, the CPUs it left idle.
fn idle_order(s: &mut String, topo: &Topology, policy: &mut dyn PlacementPolicy) {
    let _ = writeln!(
        s,
        "idle order (new tasks placed one by one on an idle machine):"
    );
    let mut order = vec![Placement::NO_IDLE; topo.nr_cpus()];
    let n = fill_order_of(policy, topo, 0, &mut order);
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
    if n < topo.nr_cpus() {
        let placed: CpuSet = order[..n].iter().filter_map(|p| p.cpu).collect();
        let _ = writeln!(
            s,
            "  then task {} gets no idle CPU: {} stay idle",
            n + 1,
            topo.cpus().and_not(&placed)
        );
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use hybridland_policy::{Builtin, PolicyConfig, View};
    use std::path::Path;

    /// The VM's machine file: E-cores 0-3 in clusters {0,2} {1,3}, P-cores 4-5 and 6-7.
    fn vm() -> (Detected, Topology) {
        let file =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/vm/topology-2p-smt-4e.toml");
        crate::topology_detect::detect(Some(&file), Path::new("/nonexistent")).unwrap()
    }

    /// The lowest idle CPU, or with `e_only` the lowest idle E-core and else nothing.
    struct Lowest {
        e_only: bool,
    }

    impl PlacementPolicy for Lowest {
        fn name(&self) -> &str {
            "lowest"
        }

        fn wakeup(&mut self, view: &View<'_>) -> Placement {
            let topo = view.topology();
            let e = |c: &CpuId| {
                topo.info(*c)
                    .is_some_and(|i| i.kind == CoreKind::Efficiency)
            };
            let idle = view.idle_allowed();
            view.place_on(idle.iter().find(|c| !self.e_only || e(c)))
        }
    }

    fn lines(report: &str, from: &str) -> Vec<String> {
        report
            .lines()
            .skip_while(|l| !l.starts_with(from))
            .map(|l| l.trim_end().to_owned())
            .collect()
    }

    #[test]
    fn a_policy_of_ones_own_shows_its_fill_order_and_no_knobs() {
        let (desc, topo) = vm();
        let report = report(&desc, &topo, "lowest", &mut Lowest { e_only: false }, 5000);
        assert_eq!(
            lines(&report, "policy:"),
            [
                "policy: lowest",
                "slice-us=5000",
                "idle order (new tasks placed one by one on an idle machine):",
                "  idle-e-core               0 1 2 3",
                "  idle-p-core               4",
                "  busy-sibling              5",
                "  idle-p-core               6",
                "  busy-sibling              7",
            ]
        );
        assert!(report.starts_with("scx_hybridland --dry-run: nothing is loaded\n"));
        // One that leaves CPUs idle says which.
        let report = super::report(&desc, &topo, "e-only", &mut Lowest { e_only: true }, 5000);
        assert_eq!(
            lines(&report, "  idle-e-core"),
            [
                "  idle-e-core               0 1 2 3",
                "  then task 5 gets no idle CPU: 4-7 stay idle",
            ]
        );
    }

    #[test]
    fn every_builtin_shows_its_order_and_only_hybridland_its_knobs() {
        let (desc, topo) = vm();
        for b in Builtin::ALL {
            let mut policy = b.build(&topo, &PolicyConfig::default(), 3).unwrap();
            let report = report(&desc, &topo, b.name(), &mut policy, 5000);
            let body = lines(&report, "policy:");
            assert_eq!(body[0], format!("policy: {}", b.name()));
            assert_eq!(body[1].starts_with("knobs: "), b == Builtin::Hybridland);
            assert_eq!(
                body[2],
                "idle order (new tasks placed one by one on an idle machine):"
            );
            // Every CPU once: each built-in fills the machine.
            let mut cpus: Vec<u16> = body[3..]
                .iter()
                .flat_map(|l| l.split_whitespace().skip(1))
                .map(|c| c.parse().unwrap())
                .collect();
            cpus.sort_unstable();
            assert_eq!(
                cpus,
                (0..8).collect::<Vec<u16>>(),
                "{}:\n{report}",
                b.name()
            );
        }
    }
}
