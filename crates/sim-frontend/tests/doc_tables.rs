//! docs/machine-model.md's parameter, topology and policy tables against the presets and the
//! registry: the parameter table is rendered here and must appear verbatim, the topology rows
//! must give each preset's CPU count, capacities and core-kind CPU lists, the policy table
//! must name every policy; the presets' figures are pinned with an insta snapshot.

use core::fmt::Write as _;
use hybridland_policy::CoreKind;
use hybridland_sim::machine::CorePower;
use hybridland_sim::{MachineModel, PolicyKind, presets};
use std::path::PathBuf;

fn model_doc() -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/machine-model.md");
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()))
}

/// 30000 -> "30,000".
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

fn power(p: &CorePower) -> String {
    format!(
        "{} / {} / {}",
        thousands(p.active_mw.into()),
        thousands(p.smt_extra_mw.into()),
        thousands(p.idle_mw.into())
    )
}

type PowerOf = fn(&MachineModel) -> &CorePower;

/// The columns after the default: presets whose model differs from the default.
const COLUMNS: [&str; 4] = ["adl-desktop", "rpl-desktop", "atom24", "tc2"];

fn parameter_table() -> String {
    let default = MachineModel::default();
    // (model, which kinds the machine has); the default column shows every kind.
    let mut cols: Vec<(MachineModel, [bool; 3])> = vec![(default.clone(), [true; 3])];
    for name in COLUMNS {
        let m = presets::lookup(name).unwrap();
        let has = CoreKind::ALL.map(|k| !m.topology.kind_mask(k).is_empty());
        cols.push((m.model, has));
    }
    let mut t = String::from("| parameter | default (i7-13800H) |");
    for name in COLUMNS {
        write!(t, " {name} |").unwrap();
    }
    t.push_str("\n|---|---|---|---|---|---|\n");
    let mut row = |label: &str, cell: &dyn Fn(&MachineModel, [bool; 3]) -> String| {
        write!(t, "| {label} |").unwrap();
        for (m, has) in &cols {
            write!(t, " {} |", cell(m, *has)).unwrap();
        }
        t.push('\n');
    };
    row("`smt_slowdown_pct`", &|m, _| m.smt_slowdown_pct.to_string());
    row("`l2_contention_pct`", &|m, _| {
        m.l2_contention_pct.to_string()
    });
    row("`migration_ns`", &|m, _| thousands(m.migration_ns));
    row("`cross_cluster_migration_ns`", &|m, _| {
        thousands(m.cross_cluster_migration_ns)
    });
    row("`package_mw`", &|m, _| thousands(m.package_mw.into()));
    row("`wakeup_irq_ns`", &|m, _| thousands(m.wakeup_irq_ns));
    row(
        "`idle_exit_ns` performance / efficiency / low-power efficiency",
        &|m, has| {
            let x = m.idle_exit_ns;
            [x.performance, x.efficiency, x.low_power_efficiency]
                .iter()
                .zip(has)
                .map(|(v, h)| if h { thousands(*v) } else { "—".to_owned() })
                .collect::<Vec<_>>()
                .join(" / ")
        },
    );
    let kinds: [(&str, PowerOf); 3] = [
        ("performance", |m| &m.performance),
        ("efficiency", |m| &m.efficiency),
        ("low-power efficiency", |m| &m.low_power_efficiency),
    ];
    for (i, (name, get)) in kinds.into_iter().enumerate() {
        row(
            &format!("{name} active / SMT extra / idle mW"),
            &|m, has| {
                if has[i] {
                    power(get(m))
                } else {
                    "—".to_owned()
                }
            },
        );
    }
    t
}

/// Every preset's shape and model as one line each, for the snapshot.
fn presets_summary() -> String {
    let mut s = String::new();
    for info in presets::list() {
        let m = presets::lookup(info.name).unwrap();
        let t = &m.topology;
        write!(
            s,
            "{}: {} CPUs, {} cores, {} clusters, capacities {:?};",
            info.name,
            t.nr_cpus(),
            t.nr_cores(),
            t.nr_clusters(),
            t.capacity_levels()
        )
        .unwrap();
        for k in CoreKind::ALL {
            if !t.kind_mask(k).is_empty() {
                write!(s, " {k} {}", t.kind_mask(k)).unwrap();
            }
        }
        writeln!(s, "\n  {:?}", m.model).unwrap();
    }
    s
}

#[test]
fn parameter_table_is_the_presets() {
    let table = parameter_table();
    insta::assert_snapshot!("machine_model_parameters", table);
    insta::assert_snapshot!("presets", presets_summary());
    assert!(
        model_doc().contains(&table),
        "docs/machine-model.md's parameter table differs from the presets; it should read:\n{table}"
    );
    // The page says these two use the defaults.
    for name in ["mtl-laptop", "symmetric", "i7-13800h"] {
        assert_eq!(
            presets::lookup(name).unwrap().model,
            MachineModel::default(),
            "{name}"
        );
    }
}

#[test]
fn topology_rows_give_each_presets_cpus_and_capacities() {
    let doc = model_doc();
    for info in presets::list() {
        let m = presets::lookup(info.name).unwrap();
        let t = &m.topology;
        let prefix = format!("| `{}` | {} |", info.name, t.nr_cpus());
        let row = doc
            .lines()
            .find(|l| l.starts_with(&prefix))
            .unwrap_or_else(|| panic!("no topology row starting `{prefix}`"));
        let capacities = row.rsplit('|').nth(1).unwrap();
        // "A15 1024, A7 494": the last word of each item.
        let mut listed: Vec<u16> = capacities
            .split(',')
            .map(|item| item.split_whitespace().last().unwrap().parse().unwrap())
            .collect();
        listed.sort_unstable();
        listed.dedup();
        assert_eq!(listed, t.capacity_levels(), "{row}");
        if t.is_hybrid() {
            for k in CoreKind::ALL {
                let mask = t.kind_mask(k);
                if !mask.is_empty() {
                    assert!(row.contains(&mask.to_string()), "{row}: no {k} CPUs {mask}");
                }
            }
        }
    }
}

#[test]
fn policy_table_names_every_policy() {
    let doc = model_doc();
    let section = doc
        .split("## Policies")
        .nth(1)
        .expect("a Policies section")
        .split("\n## ")
        .next()
        .unwrap();
    let named: Vec<&str> = section
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split('`').next())
        .collect();
    let known: Vec<&str> = PolicyKind::ALL.iter().map(|k| k.name()).collect();
    assert_eq!(named, known, "the Policies table, in registry order");
}
