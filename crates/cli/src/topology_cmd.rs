//! `hybrid-sim topology list|show`.

use crate::table::Table;
use anyhow::Result;
use hybridland_policy::{CoreKind, CpuSet, Placement, Policy, PolicyConfig, Topology};
use hybridland_sim::machine_file::Machine;
use hybridland_sim::presets;
use serde::Serialize;

pub(crate) fn list(json: bool) -> Result<String> {
    if json {
        #[derive(Serialize)]
        struct Row<'a> {
            name: &'a str,
            description: &'a str,
        }
        let rows: Vec<Row<'_>> = presets::list()
            .iter()
            .map(|p| Row {
                name: p.name,
                description: &p.description,
            })
            .collect();
        return Ok(serde_json::to_string_pretty(&rows)? + "\n");
    }
    let mut t = Table::new(vec!["preset".into(), "cpus".into(), "description".into()]);
    for p in presets::list() {
        let cpus = presets::lookup(p.name).map_or(0, |m| m.topology.nr_cpus());
        t.row(vec![p.name.into(), cpus.to_string(), p.description.clone()]);
    }
    Ok(t.render())
}

/// One group of the fill order: consecutive placements made by the same step.
#[derive(Debug, Serialize, PartialEq, Eq)]
pub(crate) struct OrderRun {
    step: &'static str,
    overflow: bool,
    cpus: Vec<u16>,
}

/// The policy's fill order on the idle machine, grouped into runs of one step.
pub(crate) fn fill_order(topo: &Topology, config: &PolicyConfig) -> Result<Vec<OrderRun>> {
    let policy = Policy::new(topo, config)?;
    let mut order = vec![Placement::NO_IDLE; topo.nr_cpus()];
    let n = policy.fill_order(topo, 0, &mut order);
    let mut runs: Vec<OrderRun> = Vec::new();
    for p in &order[..n] {
        let Some(cpu) = p.cpu else { continue };
        match runs.last_mut() {
            Some(run) if run.step == p.step.name() && run.overflow == p.is_overflow() => {
                run.cpus.push(cpu.0)
            }
            _ => runs.push(OrderRun {
                step: p.step.name(),
                overflow: p.is_overflow(),
                cpus: vec![cpu.0],
            }),
        }
    }
    Ok(runs)
}

#[derive(Serialize)]
struct Shown<'a> {
    name: &'a str,
    description: &'a str,
    cpus: usize,
    cores: usize,
    clusters: Vec<ClusterRow>,
    kinds: Vec<KindRow>,
    knobs: &'a PolicyConfig,
    fill_order: Vec<OrderRun>,
}

#[derive(Serialize)]
struct ClusterRow {
    cluster: usize,
    kind: CoreKind,
    capacity: u16,
    cpus: String,
    smt_cores: usize,
}

#[derive(Serialize)]
struct KindRow {
    kind: CoreKind,
    cpus: String,
    count: usize,
}

pub(crate) fn show(machine: &Machine, config: &PolicyConfig, json: bool) -> Result<String> {
    let topo = &*machine.topology;
    let clusters: Vec<ClusterRow> = (0..topo.nr_clusters())
        .map(|c| {
            let cpus = topo.cluster_cpus(c);
            let info = topo.info(cpus[0]).copied();
            let set: CpuSet = cpus.iter().copied().collect();
            let mut cores: Vec<u16> = cpus
                .iter()
                .filter_map(|&x| topo.info(x).map(|i| i.core))
                .collect();
            cores.dedup();
            let smt_cores = cores
                .iter()
                .filter(|&&k| topo.core_cpus(usize::from(k)).len() > 1)
                .count();
            ClusterRow {
                cluster: c,
                kind: info.map_or(CoreKind::Performance, |i| i.kind),
                capacity: info.map_or(0, |i| i.capacity),
                cpus: set.to_string(),
                smt_cores,
            }
        })
        .collect();
    let kinds: Vec<KindRow> = CoreKind::ALL
        .iter()
        .filter(|k| !topo.kind_mask(**k).is_empty())
        .map(|&kind| KindRow {
            kind,
            cpus: topo.kind_mask(kind).to_string(),
            count: topo.kind_mask(kind).count(),
        })
        .collect();
    let shown = Shown {
        name: &machine.name,
        description: &machine.description,
        cpus: topo.nr_cpus(),
        cores: topo.nr_cores(),
        clusters,
        kinds,
        knobs: config,
        fill_order: fill_order(topo, config)?,
    };
    if json {
        return Ok(serde_json::to_string_pretty(&shown)? + "\n");
    }
    let mut out = format!("{}: {}\n", shown.name, shown.description);
    out += &format!(
        "{} CPUs, {} cores, {} clusters, {} LLC(s), {} node(s)\n\n",
        shown.cpus,
        shown.cores,
        topo.nr_clusters(),
        topo.nr_llcs(),
        topo.nr_nodes()
    );
    let mut t = Table::new(vec!["kind".into(), "cpus".into(), "count".into()]);
    for k in &shown.kinds {
        t.row(vec![
            k.kind.to_string(),
            k.cpus.clone(),
            k.count.to_string(),
        ]);
    }
    out += &t.render();
    out.push('\n');
    let mut t = Table::new(vec![
        "cluster".into(),
        "kind".into(),
        "capacity".into(),
        "SMT cores".into(),
        "cpus".into(),
    ]);
    for c in &shown.clusters {
        t.row(vec![
            c.cluster.to_string(),
            c.kind.to_string(),
            c.capacity.to_string(),
            c.smt_cores.to_string(),
            c.cpus.clone(),
        ]);
    }
    out += &t.render();
    out += &format!(
        "\nIdle order on the idle machine (primary domain {}, cluster balance {}):\n",
        config.primary_domain, config.cluster_balance
    );
    for (i, run) in shown.fill_order.iter().enumerate() {
        let cpus: Vec<String> = run.cpus.iter().map(u16::to_string).collect();
        out += &format!(
            "  {}. {}{}: {}\n",
            i + 1,
            run.step,
            if run.overflow { " (overflow)" } else { "" },
            cpus.join(" ")
        );
    }
    Ok(out)
}
