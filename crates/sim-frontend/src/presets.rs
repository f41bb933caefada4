//! Topology presets for real parts, with where their shapes come from.
//!
//! Capacities are on the kernel's 0..=1024 scale. Intel's hybrid parts do not publish one; 630
//! for an E-core is the ratio of single-thread scores of Gracemont/Crestmont to Golden/Raptor
//! Cove at equal frequency, and it puts an E-core-only frame loop near seed 004's 25.5 fps when
//! the P-cores give 33.5. Power figures are rough per-core package-power shares chosen so the
//! seed-004 workload draws about 3.5 W on P-cores and about 2.2 W on E-cores, as measured
//! there.

use crate::machine::{CorePower, MachineModel};
use crate::machine_file::{CoreGroupSpec, CpuSpec, Machine, MachineSpec};
use hybridland_policy::CoreKind;

/// A preset's name and one-line description.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PresetInfo {
    /// The name `lookup` accepts.
    pub name: &'static str,
    /// What the part is.
    pub description: &'static str,
}

const PRESETS: &[PresetInfo] = &[
    PresetInfo {
        name: "i7-13800h",
        description: "Intel Core i7-13800H (Raptor Lake-H): 6 P-cores with SMT = CPUs 0-11, 8 E-cores = CPUs 12-19 in 2 clusters of 4",
    },
    PresetInfo {
        name: "adl-desktop",
        description: "Intel Core i9-12900K (Alder Lake-S): 8 P-cores with SMT = CPUs 0-15, 8 E-cores = CPUs 16-23 in 2 clusters of 4",
    },
    PresetInfo {
        name: "rpl-desktop",
        description: "Intel Core i9-13900K (Raptor Lake-S): 8 P-cores with SMT = CPUs 0-15, 16 E-cores = CPUs 16-31 in 4 clusters of 4",
    },
    PresetInfo {
        name: "mtl-laptop",
        description: "Intel Core Ultra 7 155H (Meteor Lake-H): 6 P-cores with SMT = CPUs 0-11, 8 E-cores = CPUs 12-19 in 2 clusters of 4, 2 low-power E-cores = CPUs 20-21 in their own cluster",
    },
    PresetInfo {
        name: "atom24",
        description: "Intel Atom P5962B (Jacobsville) server of seed 002: 24 Tremont cores = CPUs 0-23, 6 clusters of 4 sharing an L2",
    },
    PresetInfo {
        name: "tc2",
        description: "Arm Versatile Express TC2 of seed 003: 2 Cortex-A15 = CPUs 0-1 (capacity 1024), 3 Cortex-A7 = CPUs 2-4 (capacity 494)",
    },
    PresetInfo {
        name: "symmetric",
        description: "A symmetric 8-core/16-thread part (e.g. Ryzen 7 7840U-like): 8 equal cores with SMT = CPUs 0-15",
    },
];

/// Every preset, in a stable order.
pub fn list() -> &'static [PresetInfo] {
    PRESETS
}

/// The machine of preset `name`, or `None` for an unknown name.
pub fn lookup(name: &str) -> Option<Machine> {
    let info = PRESETS.iter().find(|p| p.name == name)?;
    let (spec, model) = spec_of(name)?;
    let mut machine = spec.build(name, &model).ok()?;
    machine.name = info.name.to_owned();
    machine.description = info.description.to_owned();
    Some(machine)
}

/// The description and model of preset `name` as data, e.g. to write it out as a file to edit.
pub fn spec(name: &str) -> Option<(MachineSpec, MachineModel)> {
    spec_of(name)
}

fn group(kind: CoreKind, capacity: u16, cores: u16, smt: u16, per_cluster: u16) -> CoreGroupSpec {
    CoreGroupSpec {
        kind,
        capacity,
        cores,
        smt,
        cores_per_cluster: per_cluster,
        rank: 0,
    }
}

fn intel_client(p_cores: u16, e_clusters: u16, low_power: u16) -> MachineSpec {
    let mut groups = vec![
        // Golden/Raptor Cove P-cores: SMT siblings numbered consecutively, each core its own
        // L2 (the kernel's cluster_cpus for a P-core is its SMT pair).
        group(CoreKind::Performance, 1024, p_cores, 2, 1),
        // Gracemont/Crestmont E-cores: modules of 4 sharing a 2-4 MB L2.
        group(CoreKind::Efficiency, 630, e_clusters * 4, 1, 4),
    ];
    if low_power > 0 {
        // Meteor Lake's SoC-tile low-power E-cores: their own cluster, no L3.
        groups.push(group(
            CoreKind::LowPowerEfficiency,
            400,
            low_power,
            1,
            low_power,
        ));
    }
    MachineSpec {
        groups,
        ..MachineSpec::default()
    }
}

fn spec_of(name: &str) -> Option<(MachineSpec, MachineModel)> {
    let intel = MachineModel::default();
    let spec = match name {
        // Seed 004's Dell Precision 5480: "6 P-cores 0..5 with 2 CPUs each (CPU from 0..11),
        // 8 E-cores 6..13 with 1 CPU each (CPU from 12..19)"; Intel ARK lists 2 E-core
        // modules of 4.
        "i7-13800h" => (intel_client(6, 2, 0), intel),
        // Intel ARK: i9-12900K 8P+8E, 24 threads.
        "adl-desktop" => (
            intel_client(8, 2, 0),
            MachineModel {
                package_mw: 4_000,
                performance: CorePower {
                    active_mw: 9_000,
                    smt_extra_mw: 1_800,
                    idle_mw: 150,
                },
                efficiency: CorePower {
                    active_mw: 2_500,
                    smt_extra_mw: 0,
                    idle_mw: 60,
                },
                ..intel
            },
        ),
        // Intel ARK: i9-13900K 8P+16E, 32 threads.
        "rpl-desktop" => (
            intel_client(8, 4, 0),
            MachineModel {
                package_mw: 4_500,
                performance: CorePower {
                    active_mw: 10_000,
                    smt_extra_mw: 2_000,
                    idle_mw: 150,
                },
                efficiency: CorePower {
                    active_mw: 2_800,
                    smt_extra_mw: 0,
                    idle_mw: 60,
                },
                ..intel
            },
        ),
        // Intel ARK: Core Ultra 7 155H 6P+8E+2LPE, 22 threads.
        "mtl-laptop" => (intel_client(6, 2, 2), intel),
        // Seed 002: "a Jacobsville system with 24 Atom cores, where 4 Atom core per cluster
        // share an L2". All cores equal, so all get the kernel's full capacity.
        "atom24" => (
            MachineSpec {
                groups: vec![group(CoreKind::Efficiency, 1024, 24, 1, 4)],
                ..MachineSpec::default()
            },
            MachineModel {
                package_mw: 8_000,
                efficiency: CorePower {
                    active_mw: 1_500,
                    smt_extra_mw: 0,
                    idle_mw: 100,
                },
                ..intel
            },
        ),
        // Seed 003: TC2 has a 2-core A15 cluster and a 3-core A7 cluster; the lone-task figures
        // there (2.09 s fast, 4.33 s slow) give the A7 1024 × 2.09 / 4.33 = 494.
        "tc2" => (
            MachineSpec {
                cpus: (0..5u16)
                    .map(|id| CpuSpec {
                        id,
                        kind: if id < 2 {
                            CoreKind::Performance
                        } else {
                            CoreKind::Efficiency
                        },
                        capacity: if id < 2 { 1024 } else { 494 },
                        rank: 0,
                        core: None,
                        cluster: Some(u32::from(id >= 2)),
                    })
                    .collect(),
                ..MachineSpec::default()
            },
            MachineModel {
                package_mw: 300,
                performance: CorePower {
                    active_mw: 1_500,
                    smt_extra_mw: 0,
                    idle_mw: 30,
                },
                efficiency: CorePower {
                    active_mw: 300,
                    smt_extra_mw: 0,
                    idle_mw: 10,
                },
                ..intel
            },
        ),
        "symmetric" => (
            MachineSpec {
                groups: vec![group(CoreKind::Performance, 1024, 8, 2, 1)],
                ..MachineSpec::default()
            },
            intel,
        ),
        _ => return None,
    };
    Some(spec)
}

#[cfg(test)]
mod test {
    use super::*;
    use hybridland_policy::CpuId;

    #[test]
    fn every_preset_builds() {
        for p in list() {
            let m = lookup(p.name).unwrap_or_else(|| panic!("{} does not build", p.name));
            assert_eq!(m.name, p.name);
        }
        assert!(lookup("no-such-part").is_none());
    }

    #[test]
    fn shapes_match_their_sources() {
        let t = lookup("i7-13800h").unwrap().topology;
        assert_eq!(t.nr_cpus(), 20);
        assert_eq!(t.kind_mask(CoreKind::Performance).to_string(), "0-11");
        assert_eq!(t.kind_mask(CoreKind::Efficiency).to_string(), "12-19");
        assert_eq!(t.siblings(CpuId(3)), &[CpuId(2), CpuId(3)]);
        // 6 P-core pairs + 2 E-clusters.
        assert_eq!(t.nr_clusters(), 8);
        assert_eq!(
            t.cluster_cpus(7),
            &[CpuId(16), CpuId(17), CpuId(18), CpuId(19)]
        );

        let t = lookup("atom24").unwrap().topology;
        assert_eq!((t.nr_cpus(), t.nr_clusters()), (24, 6));
        let t = lookup("tc2").unwrap().topology;
        assert_eq!(t.nr_clusters(), 2);
        assert_eq!(t.info(CpuId(4)).unwrap().capacity, 494);
        let t = lookup("mtl-laptop").unwrap().topology;
        assert_eq!(
            t.kind_mask(CoreKind::LowPowerEfficiency).to_string(),
            "20-21"
        );
        assert_eq!(lookup("rpl-desktop").unwrap().topology.nr_cpus(), 32);
        assert_eq!(lookup("adl-desktop").unwrap().topology.nr_cpus(), 24);
        assert!(!lookup("symmetric").unwrap().topology.is_hybrid());
    }
}
