//! Machine descriptions as data: a topology (CPUs, cores, clusters, kinds, capacities) plus
//! machine-model parameters, read from TOML or JSON files and used by the presets.
//!
//! Two ways to list CPUs, exactly one per file:
//! - `groups`: runs of identical cores numbered consecutively from CPU 0 in file order, SMT
//!   siblings on consecutive ids (Intel client numbering), `cores_per_cluster` cores to an L2;
//! - `cpus`: one entry per logical CPU with its own id, kind, capacity and optional core and
//!   cluster labels (CPUs sharing a label share the core or cluster).
//!
//! ```toml
//! name = "my-laptop"
//! [[groups]]
//! kind = "performance"
//! capacity = 1024
//! cores = 4
//! smt = 2
//! [[groups]]
//! kind = "efficiency"
//! capacity = 600
//! cores = 8
//! cores_per_cluster = 4
//! [model]
//! smt_slowdown_pct = 35
//! ```

use crate::machine::{MachineModel, ModelError};
use hybridland_policy::{CoreKind, CpuId, MAX_CPUS, Topology, TopologyBuilder, TopologyError};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// A run of identical cores.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoreGroupSpec {
    /// Kind of every core: `performance`, `efficiency` or `low-power-efficiency` (also
    /// written `low_power_efficiency`, as the `[model]` table and `--set` keys spell it).
    #[serde(deserialize_with = "core_kind")]
    pub kind: CoreKind,
    /// Capacity of every CPU, 1..=1024.
    pub capacity: u16,
    /// Number of cores.
    pub cores: u16,
    /// Logical CPUs per core (1 = no SMT). Default 1.
    #[serde(default = "one")]
    pub smt: u16,
    /// Cores sharing one L2 cluster. Default 1: each core is its own cluster (an SMT pair
    /// sharing its core's L2, as the kernel's `cluster_cpus` reports for P-cores).
    #[serde(default = "one")]
    pub cores_per_cluster: u16,
    /// Priority among equal capacities (ITMT/CPPC ranking), higher preferred. Default 0.
    #[serde(default)]
    pub rank: u16,
}

fn one() -> u16 {
    1
}

/// The kinds files name, each in the policy crate's kebab-case and in the snake_case of the
/// `[model]` table (a file naming `low_power_efficiency` in both places should just work).
const KIND_NAMES: &[(&str, CoreKind)] = &[
    ("performance", CoreKind::Performance),
    ("efficiency", CoreKind::Efficiency),
    ("low-power-efficiency", CoreKind::LowPowerEfficiency),
    ("low_power_efficiency", CoreKind::LowPowerEfficiency),
];

fn core_kind<'de, D: serde::Deserializer<'de>>(d: D) -> Result<CoreKind, D::Error> {
    let name = String::deserialize(d)?;
    KIND_NAMES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, k)| *k)
        .ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown core kind `{name}`, expected performance, efficiency, low-power-efficiency or low_power_efficiency"
            ))
        })
}

/// One logical CPU described by hand.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpuSpec {
    /// Logical CPU id.
    pub id: u16,
    /// Core kind, spelt as in [`CoreGroupSpec::kind`].
    #[serde(deserialize_with = "core_kind")]
    pub kind: CoreKind,
    /// Capacity, 1..=1024.
    pub capacity: u16,
    /// Priority among equal capacities. Default 0.
    #[serde(default)]
    pub rank: u16,
    /// SMT core label; CPUs with the same label are siblings. Default: a core of its own.
    #[serde(default)]
    pub core: Option<u32>,
    /// L2 cluster label; CPUs with the same label share an L2. Default: its core's own.
    #[serde(default)]
    pub cluster: Option<u32>,
}

/// A machine description as written in a file.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineSpec {
    /// Short name.
    #[serde(default)]
    pub name: Option<String>,
    /// What the machine is and where its shape comes from.
    #[serde(default)]
    pub description: Option<String>,
    /// CPUs as runs of identical cores.
    #[serde(default)]
    pub groups: Vec<CoreGroupSpec>,
    /// CPUs one by one.
    #[serde(default)]
    pub cpus: Vec<CpuSpec>,
    /// Model parameters; anything left out keeps [`MachineModel::default`]'s value.
    #[serde(default)]
    pub model: Option<ModelOverrides>,
}

/// Model parameters a file may set; unset ones keep the base model's.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelOverrides {
    /// See [`MachineModel::smt_slowdown_pct`].
    pub smt_slowdown_pct: Option<u8>,
    /// See [`MachineModel::l2_contention_pct`].
    pub l2_contention_pct: Option<u16>,
    /// See [`MachineModel::migration_ns`].
    pub migration_ns: Option<u64>,
    /// See [`MachineModel::cross_cluster_migration_ns`].
    pub cross_cluster_migration_ns: Option<u64>,
    /// See [`MachineModel::package_mw`].
    pub package_mw: Option<u32>,
    /// See [`MachineModel::performance`].
    pub performance: Option<crate::machine::CorePower>,
    /// See [`MachineModel::efficiency`].
    pub efficiency: Option<crate::machine::CorePower>,
    /// See [`MachineModel::low_power_efficiency`].
    pub low_power_efficiency: Option<crate::machine::CorePower>,
}

impl ModelOverrides {
    /// `base` with the fields set here replaced.
    pub fn apply(&self, base: &MachineModel) -> MachineModel {
        let mut m = base.clone();
        if let Some(v) = self.smt_slowdown_pct {
            m.smt_slowdown_pct = v;
        }
        if let Some(v) = self.l2_contention_pct {
            m.l2_contention_pct = v;
        }
        if let Some(v) = self.migration_ns {
            m.migration_ns = v;
        }
        if let Some(v) = self.cross_cluster_migration_ns {
            m.cross_cluster_migration_ns = v;
        }
        if let Some(v) = self.package_mw {
            m.package_mw = v;
        }
        if let Some(v) = self.performance {
            m.performance = v;
        }
        if let Some(v) = self.efficiency {
            m.efficiency = v;
        }
        if let Some(v) = self.low_power_efficiency {
            m.low_power_efficiency = v;
        }
        m
    }
}

/// A validated machine: the policy's topology plus the model parameters.
#[derive(Clone, Debug)]
pub struct Machine {
    /// Short name (preset name or file stem).
    pub name: String,
    /// What it is.
    pub description: String,
    /// The validated topology. Boxed: it is tens of kilobytes.
    pub topology: Box<Topology>,
    /// Model parameters.
    pub model: MachineModel,
}

/// Why a machine description could not be used.
#[derive(Debug, thiserror::Error)]
pub enum MachineFileError {
    /// The file could not be read.
    #[error("{source_name}: cannot read: {error}")]
    Io {
        /// The path.
        source_name: String,
        /// The OS error.
        error: std::io::Error,
    },
    /// The file's extension is neither `.toml` nor `.json`.
    #[error("{source_name}: unknown topology file type (expected .toml or .json)")]
    UnknownFormat {
        /// The path.
        source_name: String,
    },
    /// Not valid TOML/JSON for a machine description.
    #[error("{source_name}: {message}")]
    Syntax {
        /// The file.
        source_name: String,
        /// Parser message, with line and column.
        message: String,
    },
    /// Well-formed but not a machine.
    #[error("{source_name}: {message}")]
    Invalid {
        /// The file.
        source_name: String,
        /// What is wrong.
        message: String,
    },
    /// The topology contradicts itself.
    #[error("{source_name}: invalid topology: {error}")]
    Topology {
        /// The file.
        source_name: String,
        /// The builder's error.
        error: TopologyError,
    },
    /// A model parameter is out of range.
    #[error("{source_name}: {error}")]
    Model {
        /// The file.
        source_name: String,
        /// The model's error.
        error: ModelError,
    },
}

/// Largest topology file accepted; real machines need a few kilobytes.
pub const MAX_MACHINE_FILE_BYTES: usize = 1 << 20;

impl MachineSpec {
    /// Parses TOML text; `source_name` goes into errors.
    pub fn from_toml_str(text: &str, source_name: &str) -> Result<Self, MachineFileError> {
        check_size(text, source_name)?;
        toml::from_str(text).map_err(|e| MachineFileError::Syntax {
            source_name: source_name.to_owned(),
            message: e.to_string().trim_end().to_owned(),
        })
    }

    /// Parses JSON text; `source_name` goes into errors.
    pub fn from_json_str(text: &str, source_name: &str) -> Result<Self, MachineFileError> {
        check_size(text, source_name)?;
        serde_json::from_str(text).map_err(|e| MachineFileError::Syntax {
            source_name: source_name.to_owned(),
            message: e.to_string(),
        })
    }

    /// Builds and validates the machine on top of `base` model parameters.
    pub fn build(
        &self,
        source_name: &str,
        base: &MachineModel,
    ) -> Result<Machine, MachineFileError> {
        let invalid = |message: String| MachineFileError::Invalid {
            source_name: source_name.to_owned(),
            message,
        };
        let topo_err = |error| MachineFileError::Topology {
            source_name: source_name.to_owned(),
            error,
        };
        let mut b = TopologyBuilder::new();
        match (self.groups.is_empty(), self.cpus.is_empty()) {
            (true, true) => return Err(invalid("no CPUs: give `groups` or `cpus`".into())),
            (false, false) => {
                return Err(invalid("give either `groups` or `cpus`, not both".into()));
            }
            (false, true) => build_groups(&self.groups, &mut b).map_err(|e| match e {
                GroupError::Topology(t) => topo_err(t),
                GroupError::Invalid(m) => invalid(m),
            })?,
            (true, false) => build_cpus(&self.cpus, &mut b).map_err(topo_err)?,
        }
        let topology = Box::new(b.build().map_err(topo_err)?);
        let model = match &self.model {
            Some(o) => o.apply(base),
            None => base.clone(),
        };
        model.validate().map_err(|error| MachineFileError::Model {
            source_name: source_name.to_owned(),
            error,
        })?;
        Ok(Machine {
            name: self.name.clone().unwrap_or_else(|| source_name.to_owned()),
            description: self.description.clone().unwrap_or_default(),
            topology,
            model,
        })
    }
}

fn check_size(text: &str, source_name: &str) -> Result<(), MachineFileError> {
    if text.len() > MAX_MACHINE_FILE_BYTES {
        return Err(MachineFileError::Invalid {
            source_name: source_name.to_owned(),
            message: format!(
                "file is {} bytes, more than the {MAX_MACHINE_FILE_BYTES} accepted",
                text.len()
            ),
        });
    }
    Ok(())
}

enum GroupError {
    Topology(TopologyError),
    Invalid(String),
}

fn build_groups(groups: &[CoreGroupSpec], b: &mut TopologyBuilder) -> Result<(), GroupError> {
    let total: usize = groups
        .iter()
        .map(|g| usize::from(g.cores) * usize::from(g.smt))
        .sum();
    if total > MAX_CPUS {
        return Err(GroupError::Invalid(format!(
            "{total} CPUs, more than the {MAX_CPUS} supported"
        )));
    }
    let mut next = 0u16;
    for (gi, g) in groups.iter().enumerate() {
        if g.smt == 0 || g.cores == 0 || g.cores_per_cluster == 0 {
            return Err(GroupError::Invalid(format!(
                "groups[{gi}]: cores, smt and cores_per_cluster must be at least 1"
            )));
        }
        let mut cluster = Vec::new();
        for core in 0..g.cores {
            let ids: Vec<CpuId> = (0..g.smt).map(|t| CpuId(next + t)).collect();
            next += g.smt;
            for &cpu in &ids {
                b.add_cpu(cpu, g.kind, g.capacity, g.rank)
                    .map_err(GroupError::Topology)?;
            }
            b.add_core(&ids).map_err(GroupError::Topology)?;
            cluster.extend_from_slice(&ids);
            if (core + 1) % g.cores_per_cluster == 0 || core + 1 == g.cores {
                b.add_cluster(&cluster).map_err(GroupError::Topology)?;
                cluster.clear();
            }
        }
    }
    Ok(())
}

fn build_cpus(cpus: &[CpuSpec], b: &mut TopologyBuilder) -> Result<(), TopologyError> {
    let mut cores: BTreeMap<u32, Vec<CpuId>> = BTreeMap::new();
    let mut clusters: BTreeMap<u32, Vec<CpuId>> = BTreeMap::new();
    for c in cpus {
        if usize::from(c.id) >= MAX_CPUS {
            return Err(TopologyError::CpuOutOfRange {
                cpu: u32::from(c.id),
            });
        }
        b.add_cpu(CpuId(c.id), c.kind, c.capacity, c.rank)?;
        if let Some(core) = c.core {
            cores.entry(core).or_default().push(CpuId(c.id));
        }
        if let Some(cluster) = c.cluster {
            clusters.entry(cluster).or_default().push(CpuId(c.id));
        }
    }
    for ids in cores.values() {
        b.add_core(ids)?;
    }
    for ids in clusters.values() {
        b.add_cluster(ids)?;
    }
    Ok(())
}

/// Reads a machine description from a `.toml` or `.json` file over the default model.
pub fn load_topology_file(path: &Path) -> Result<Machine, MachineFileError> {
    let source_name = path.display().to_string();
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    if ext != "toml" && ext != "json" {
        return Err(MachineFileError::UnknownFormat { source_name });
    }
    let meta = std::fs::metadata(path).map_err(|error| MachineFileError::Io {
        source_name: source_name.clone(),
        error,
    })?;
    if meta.len() > MAX_MACHINE_FILE_BYTES as u64 {
        return Err(MachineFileError::Invalid {
            source_name,
            message: format!(
                "file is {} bytes, more than the {MAX_MACHINE_FILE_BYTES} accepted",
                meta.len()
            ),
        });
    }
    let text = std::fs::read_to_string(path).map_err(|error| MachineFileError::Io {
        source_name: source_name.clone(),
        error,
    })?;
    let spec = if ext == "toml" {
        MachineSpec::from_toml_str(&text, &source_name)?
    } else {
        MachineSpec::from_json_str(&text, &source_name)?
    };
    let mut machine = spec.build(&source_name, &MachineModel::default())?;
    if spec.name.is_none() {
        if let Some(stem) = path.file_stem().and_then(|s| s.to_str()) {
            machine.name = stem.to_owned();
        }
    }
    Ok(machine)
}

#[cfg(test)]
mod test {
    use super::*;

    const LAPTOP: &str = r#"
name = "laptop"
[[groups]]
kind = "performance"
capacity = 1024
cores = 2
smt = 2
[[groups]]
kind = "efficiency"
capacity = 600
cores = 4
cores_per_cluster = 4
[model]
smt_slowdown_pct = 30
"#;

    #[test]
    fn low_power_kind_takes_both_spellings_and_bad_kinds_are_named() {
        for kind in ["low-power-efficiency", "low_power_efficiency"] {
            let text = format!(
                "[[groups]]\nkind = \"performance\"\ncapacity = 1024\ncores = 1\n[[groups]]\nkind = \"{kind}\"\ncapacity = 300\ncores = 2\n"
            );
            let m = MachineSpec::from_toml_str(&text, "lp.toml")
                .unwrap()
                .build("lp.toml", &MachineModel::default())
                .unwrap();
            assert_eq!(
                m.topology.kind_mask(CoreKind::LowPowerEfficiency).count(),
                2,
                "{kind}"
            );
        }
        let json = r#"{"cpus": [{"id": 0, "kind": "low_power_efficiency", "capacity": 300}]}"#;
        assert!(MachineSpec::from_json_str(json, "lp.json").is_ok());
        let err = MachineSpec::from_toml_str(
            "[[groups]]\nkind = \"turbo\"\ncapacity = 1\ncores = 1\n",
            "bad.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("unknown core kind `turbo`"), "{err}");
    }

    #[test]
    fn groups_number_siblings_consecutively() {
        let spec = MachineSpec::from_toml_str(LAPTOP, "laptop.toml").unwrap();
        let m = spec.build("laptop.toml", &MachineModel::default()).unwrap();
        let t = &m.topology;
        assert_eq!(t.nr_cpus(), 8);
        assert_eq!(t.siblings(CpuId(1)), &[CpuId(0), CpuId(1)]);
        assert_eq!(t.nr_clusters(), 3);
        assert_eq!(m.model.smt_slowdown_pct, 30);
        assert_eq!(
            m.model.l2_contention_pct,
            MachineModel::default().l2_contention_pct
        );
    }

    #[test]
    fn explicit_cpus_with_labels() {
        let json = r#"{"cpus": [
            {"id": 0, "kind": "performance", "capacity": 1024, "cluster": 7},
            {"id": 1, "kind": "performance", "capacity": 1024, "cluster": 7},
            {"id": 2, "kind": "efficiency", "capacity": 400}
        ]}"#;
        let spec = MachineSpec::from_json_str(json, "x.json").unwrap();
        let m = spec.build("x.json", &MachineModel::default()).unwrap();
        assert_eq!(m.topology.nr_clusters(), 2);
    }

    #[test]
    fn bad_files_name_the_problem() {
        let e = MachineSpec::from_toml_str("[[groups]]\nkind = \"huge\"\n", "f.toml").unwrap_err();
        assert!(e.to_string().starts_with("f.toml: "), "{e}");
        let e = MachineSpec::from_toml_str("colour = 1\n", "f.toml").unwrap_err();
        assert!(e.to_string().contains("colour"), "{e}");
        let dup = r#"{"cpus": [
            {"id": 0, "kind": "performance", "capacity": 1024},
            {"id": 0, "kind": "performance", "capacity": 1024}]}"#;
        let e = MachineSpec::from_json_str(dup, "d.json")
            .unwrap()
            .build("d.json", &MachineModel::default())
            .unwrap_err();
        assert!(matches!(e, MachineFileError::Topology { .. }), "{e}");
        let e = MachineSpec::default()
            .build("empty", &MachineModel::default())
            .unwrap_err();
        assert!(matches!(e, MachineFileError::Invalid { .. }));
    }
}
