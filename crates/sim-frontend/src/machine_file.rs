//! Machines as the simulator runs them: a machine file in the one format both frontends read
//! (the `hybridland-machine` crate: kernel CPU lists, `[[cpus]]` runs, `[[groups]]` sugar),
//! with its `[model]` table applied over [`MachineModel::default`], the i7-13800H's constants.

use crate::machine::MachineModel;
use hybridland_machine::{MachineDesc, ModelTable, Warning};
use hybridland_policy::Topology;
use std::path::Path;

pub use hybridland_machine::{MachineError, Problem};

/// A validated machine: the policy's topology plus the model parameters.
#[derive(Clone, Debug)]
pub struct Machine {
    /// Short name (preset name, the file's `name`, or the file stem).
    pub name: String,
    /// What it is.
    pub description: String,
    /// The validated topology. Boxed: it is tens of kilobytes.
    pub topology: Box<Topology>,
    /// Model parameters.
    pub model: MachineModel,
    /// What the file left to a default that looks like a slip, and what was assumed
    /// ([`hybridland_machine::parse_with_warnings`]); a frontend shows them to its user.
    pub warnings: Vec<Warning>,
}

/// `base` with the fields `table` sets replaced. The machine crate has checked their ranges.
pub fn apply_model(table: &ModelTable, base: &MachineModel) -> MachineModel {
    let mut m = base.clone();
    if let Some(v) = table.smt_slowdown_pct {
        m.smt_slowdown_pct = v;
    }
    if let Some(v) = table.l2_contention_pct {
        m.l2_contention_pct = v;
    }
    if let Some(v) = table.migration_ns {
        m.migration_ns = v;
    }
    if let Some(v) = table.cross_cluster_migration_ns {
        m.cross_cluster_migration_ns = v;
    }
    if let Some(v) = table.package_mw {
        m.package_mw = v;
    }
    if let Some(v) = table.performance {
        m.performance = v;
    }
    if let Some(v) = table.efficiency {
        m.efficiency = v;
    }
    if let Some(v) = table.low_power_efficiency {
        m.low_power_efficiency = v;
    }
    if let Some(v) = table.wakeup_irq_ns {
        m.wakeup_irq_ns = v;
    }
    if let Some(x) = &table.idle_exit_ns {
        let d = &mut m.idle_exit_ns;
        d.performance = x.performance.unwrap_or(d.performance);
        d.efficiency = x.efficiency.unwrap_or(d.efficiency);
        d.low_power_efficiency = x.low_power_efficiency.unwrap_or(d.low_power_efficiency);
    }
    m
}

impl Machine {
    /// The machine a description gives: its `[model]` over the default model, named
    /// `fallback_name` when the description has no name; no warnings.
    pub fn from_desc(desc: MachineDesc, fallback_name: &str) -> Self {
        let model = desc.model.as_ref().map_or_else(MachineModel::default, |t| {
            apply_model(t, &MachineModel::default())
        });
        Self {
            name: desc.name.unwrap_or_else(|| fallback_name.to_owned()),
            description: desc.description.unwrap_or_default(),
            topology: desc.topology,
            model,
            warnings: Vec::new(),
        }
    }

    /// Reads machine-file text; `source_name` names it in errors and warnings and when the
    /// file has no name.
    pub fn from_toml_str(text: &str, source_name: &str) -> Result<Self, MachineError> {
        let (desc, warnings) = hybridland_machine::parse_with_warnings(text, source_name)?;
        Ok(Self {
            warnings,
            ..Self::from_desc(desc, source_name)
        })
    }
}

/// Reads a machine file, with its warnings; without a `name` it is named after the file stem.
pub fn load_topology_file(path: &Path) -> Result<Machine, MachineError> {
    let (desc, warnings) = hybridland_machine::load_with_warnings(path)?;
    let stem = path.file_stem().map_or_else(
        || path.display().to_string(),
        |s| s.to_string_lossy().into_owned(),
    );
    Ok(Machine {
        warnings,
        ..Machine::from_desc(desc, &stem)
    })
}

#[cfg(test)]
mod test {
    use super::*;
    use hybridland_policy::CpuId;

    #[test]
    fn the_wake_up_cost_is_set_per_kind_from_the_model_table() {
        let m = Machine::from_toml_str(
            "[[groups]]\nkind = \"performance\"\ncapacity = 1024\ncores = 2\n\
             [model]\nwakeup_irq_ns = 500\nidle_exit_ns = { efficiency = 40000 }\n",
            "box.toml",
        )
        .unwrap();
        let d = MachineModel::default();
        assert_eq!(m.model.wakeup_irq_ns, 500);
        assert_eq!(m.model.idle_exit_ns.efficiency, 40_000);
        assert_eq!(m.model.idle_exit_ns.performance, d.idle_exit_ns.performance);
        assert_eq!(
            m.model
                .wakeup_cost_ns(hybridland_policy::CoreKind::Efficiency, false),
            40_500
        );
        assert_eq!(
            m.model
                .wakeup_cost_ns(hybridland_policy::CoreKind::Efficiency, true),
            500
        );
        let e = Machine::from_toml_str(
            "[[groups]]\nkind = \"performance\"\ncapacity = 1024\ncores = 1\n\
             [model]\nidle_exit_ns = { big = 1 }\n",
            "bad.toml",
        )
        .unwrap_err();
        assert!(e.to_string().contains("big"), "{e}");
    }

    #[test]
    fn the_model_table_overrides_only_what_it_sets() {
        let m = Machine::from_toml_str(
            "[[groups]]\nkind = \"performance\"\ncapacity = 1024\ncores = 2\nsmt = 2\n\
             [model]\nsmt_slowdown_pct = 30\nefficiency = { active_mw = 1, smt_extra_mw = 2, idle_mw = 3 }\n",
            "box.toml",
        )
        .unwrap();
        let d = MachineModel::default();
        assert_eq!(m.name, "box.toml");
        assert_eq!(m.topology.siblings(CpuId(1)), &[CpuId(0), CpuId(1)]);
        assert_eq!(m.model.smt_slowdown_pct, 30);
        assert_eq!(m.model.efficiency.idle_mw, 3);
        assert_eq!(
            MachineModel {
                smt_slowdown_pct: d.smt_slowdown_pct,
                efficiency: d.efficiency,
                ..m.model
            },
            d
        );
        assert_eq!(m.warnings, []);
        let bare = Machine::from_toml_str(
            "name = \"bare\"\n[[cpus]]\nlist = \"0-3\"\nkind = \"e\"\ncapacity = 512\n",
            "bare.toml",
        )
        .unwrap();
        assert_eq!((bare.name.as_str(), bare.model), ("bare", d));
    }
}
