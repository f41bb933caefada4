//! Topology presets for real parts: machine files under `crates/sim-frontend/presets/`, built
//! into the binary. Each says where its shape and constants come from, and which constants were
//! calibrated on a seed's figures; its `[model]` table holds every model constant.

use crate::machine_file::Machine;
use hybridland_machine::MachineDesc;
use std::sync::OnceLock;

/// A preset's name and one-line description.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PresetInfo {
    /// The name `lookup` accepts.
    pub name: &'static str,
    /// What the part is (the file's `description`).
    pub description: String,
}

/// Every preset's name and file, in a stable order.
const FILES: &[(&str, &str)] = &[
    ("i7-13800h", include_str!("../presets/i7-13800h.toml")),
    ("adl-desktop", include_str!("../presets/adl-desktop.toml")),
    ("rpl-desktop", include_str!("../presets/rpl-desktop.toml")),
    ("mtl-laptop", include_str!("../presets/mtl-laptop.toml")),
    ("atom24", include_str!("../presets/atom24.toml")),
    ("tc2", include_str!("../presets/tc2.toml")),
    ("symmetric", include_str!("../presets/symmetric.toml")),
];

/// Every preset, in a stable order. A preset whose file does not read is left out (a test
/// reads them all).
pub fn list() -> &'static [PresetInfo] {
    static LIST: OnceLock<Vec<PresetInfo>> = OnceLock::new();
    LIST.get_or_init(|| {
        FILES
            .iter()
            .filter_map(|(name, _)| {
                Some(PresetInfo {
                    name,
                    description: desc(name)?.description.unwrap_or_default(),
                })
            })
            .collect()
    })
}

/// The machine of preset `name`, or `None` for an unknown name.
pub fn lookup(name: &str) -> Option<Machine> {
    let mut machine = Machine::from_desc(desc(name)?, name);
    name.clone_into(&mut machine.name);
    Some(machine)
}

/// Preset `name`'s file as read, e.g. to change it or to write it out as a file to edit.
pub fn desc(name: &str) -> Option<MachineDesc> {
    let (_, text) = FILES.iter().find(|(n, _)| *n == name)?;
    hybridland_machine::parse(text, &format!("presets/{name}.toml")).ok()
}

/// Preset `name`'s file as it is built in.
pub fn file_text(name: &str) -> Option<&'static str> {
    FILES.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

#[cfg(test)]
mod test {
    use super::*;
    use hybridland_policy::{CoreKind, CpuId};

    #[test]
    fn every_preset_reads_and_is_named_as_listed() {
        for (name, text) in FILES {
            let (d, warnings) = hybridland_machine::parse_with_warnings(text, name)
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(warnings, [], "{name} leaves CPUs out of its lists");
            assert_eq!(d.name.as_deref(), Some(*name));
            assert!(d.model.is_some(), "{name} has no [model] table");
        }
        assert_eq!(list().len(), FILES.len());
        for p in list() {
            assert_eq!(lookup(p.name).unwrap().name, p.name);
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

    /// The i7-13800H file states the default model in full, so a machine file without a
    /// `[model]` table runs on the i7-13800H's constants, as the docs say.
    #[test]
    fn the_default_model_is_the_i7_13800h_preset() {
        assert_eq!(
            lookup("i7-13800h").unwrap().model,
            crate::machine::MachineModel::default()
        );
    }
}
