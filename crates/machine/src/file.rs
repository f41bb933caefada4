//! Reading a machine file: TOML in the canonical form or with the `groups` sugar.

use std::path::Path;

use hybridland_policy::{CoreKind, CpuId, CpuSet, MAX_CPUS, parse_cpu_list};
use serde::Deserialize;

use crate::error::{MachineError, Problem};
use crate::input_file::{InputFileError, read_bounded};
use crate::layout::{CpuRun, Layout};
use crate::model::ModelTable;
use crate::{MAX_MACHINE_FILE_BYTES, MachineDesc};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileText {
    name: Option<String>,
    description: Option<String>,
    #[serde(default)]
    cores: Vec<String>,
    #[serde(default)]
    clusters: Vec<String>,
    #[serde(default)]
    llcs: Vec<String>,
    #[serde(default)]
    nodes: Vec<String>,
    #[serde(default)]
    cpus: Vec<RunText>,
    #[serde(default)]
    groups: Vec<GroupText>,
    model: Option<ModelTable>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RunText {
    list: String,
    kind: String,
    capacity: u16,
    #[serde(default)]
    rank: u16,
}

/// A run of identical cores numbered from the previous group's last CPU, SMT siblings on
/// consecutive ids (Intel client numbering).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GroupText {
    kind: String,
    capacity: u16,
    cores: u16,
    #[serde(default = "one")]
    smt: u16,
    #[serde(default = "one")]
    cores_per_cluster: u16,
    #[serde(default)]
    rank: u16,
}

fn one() -> u16 {
    1
}

fn kind(entry: &dyn Fn() -> String, name: &str) -> Result<CoreKind, Problem> {
    // `low_power_efficiency` as the `[model]` table spells it: a file naming the kind the same
    // way in both places should just work.
    if name == "low_power_efficiency" {
        return Ok(CoreKind::LowPowerEfficiency);
    }
    name.parse().map_err(|_| Problem::UnknownKind {
        entry: entry(),
        name: name.to_owned(),
    })
}

fn cpu_list(entry: String, text: &str) -> Result<CpuSet, Problem> {
    parse_cpu_list(text).map_err(|error| Problem::CpuList {
        entry,
        text: text.to_owned(),
        error,
    })
}

fn lists(field: &str, texts: &[String]) -> Result<Vec<CpuSet>, Problem> {
    texts
        .iter()
        .enumerate()
        .map(|(i, t)| cpu_list(format!("{field}[{i}]"), t))
        .collect()
}

/// The `groups` sugar expanded into runs, cores and clusters.
fn expand(groups: &[GroupText], layout: &mut Layout) -> Result<(), Problem> {
    let total: usize = groups
        .iter()
        .map(|g| usize::from(g.cores) * usize::from(g.smt))
        .sum();
    if total > MAX_CPUS {
        return Err(Problem::TooManyCpus { cpus: total });
    }
    let mut next = 0u16;
    for (i, g) in groups.iter().enumerate() {
        let entry = || format!("groups[{i}]");
        if g.cores == 0 || g.smt == 0 || g.cores_per_cluster == 0 {
            return Err(Problem::ZeroCount { entry: entry() });
        }
        let kind = kind(&entry, &g.kind)?;
        let mut run = CpuSet::EMPTY;
        let mut cluster = CpuSet::EMPTY;
        for core in 0..g.cores {
            let mut siblings = CpuSet::EMPTY;
            for _ in 0..g.smt {
                siblings.insert(CpuId(next));
                next += 1;
            }
            if g.smt > 1 {
                layout.cores.push(siblings);
            }
            run = run.or(&siblings);
            cluster = cluster.or(&siblings);
            if (core + 1) % g.cores_per_cluster == 0 || core + 1 == g.cores {
                if cluster != siblings {
                    layout.clusters.push(cluster);
                }
                cluster = CpuSet::EMPTY;
            }
        }
        layout.cpus.push(CpuRun {
            cpus: run,
            kind,
            capacity: g.capacity,
            rank: g.rank,
        });
    }
    Ok(())
}

fn parse_text(text: &str) -> Result<MachineDesc, Problem> {
    if text.len() > MAX_MACHINE_FILE_BYTES {
        return Err(Problem::TooLarge {
            bytes: text.len() as u64,
        });
    }
    let file: FileText = toml::from_str(text).map_err(|e| Problem::Syntax {
        message: e.to_string().trim_end().to_owned(),
    })?;
    let mut layout = Layout::default();
    if !file.groups.is_empty() {
        if !file.cpus.is_empty() || !file.cores.is_empty() || !file.clusters.is_empty() {
            return Err(Problem::MixedForms);
        }
        expand(&file.groups, &mut layout)?;
    }
    for (i, run) in file.cpus.iter().enumerate() {
        let entry = || format!("cpus[{i}]");
        layout.cpus.push(CpuRun {
            cpus: cpu_list(entry(), &run.list)?,
            kind: kind(&entry, &run.kind)?,
            capacity: run.capacity,
            rank: run.rank,
        });
    }
    layout.cores.extend(lists("cores", &file.cores)?);
    layout.clusters.extend(lists("clusters", &file.clusters)?);
    layout.llcs = lists("llcs", &file.llcs)?;
    layout.nodes = lists("nodes", &file.nodes)?;
    if let Some(model) = &file.model {
        model.check()?;
    }
    let topology = layout
        .build_boxed("")
        .map_err(|MachineError { problem, .. }| problem)?;
    Ok(MachineDesc {
        name: file.name,
        description: file.description,
        topology,
        model: file.model,
    })
}

/// Reads a machine from TOML text; `source_name` (the file) goes into errors.
pub fn parse(text: &str, source_name: &str) -> Result<MachineDesc, MachineError> {
    parse_text(text).map_err(|p| MachineError::new(source_name, p))
}

/// Reads a machine file.
pub fn load(path: &Path) -> Result<MachineDesc, MachineError> {
    let name = path.display().to_string();
    let fail = |problem| MachineError::new(&name, problem);
    if path.extension().is_some_and(|e| e == "json") {
        return Err(fail(Problem::Json));
    }
    let text = read_bounded(path, MAX_MACHINE_FILE_BYTES as u64, "file").map_err(|e| {
        fail(match e {
            InputFileError::Io { error, .. } => Problem::Io { error },
            InputFileError::TooLarge { bytes, .. } => Problem::TooLarge { bytes },
            InputFileError::NotRegular { what, .. } => Problem::NotRegular { what },
            InputFileError::NotText { error, .. } => Problem::Io {
                error: std::io::Error::new(std::io::ErrorKind::InvalidData, error),
            },
        })
    })?;
    parse(&text, &name)
}

#[cfg(test)]
mod test {
    use super::*;
    use hybridland_policy::CoreKind::{Efficiency, LowPowerEfficiency, Performance};

    const LAPTOP_GROUPS: &str = r#"
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

    const LAPTOP_LISTS: &str = r#"
name = "laptop"
cores = ["0-1", "2-3"]
clusters = ["4-7"]
[[cpus]]
list = "0-3"
kind = "performance"
capacity = 1024
[[cpus]]
list = "4-7"
kind = "efficiency"
capacity = 600
[model]
smt_slowdown_pct = 30
"#;

    #[test]
    fn groups_are_sugar_for_the_cpu_lists() {
        let sugar = parse(LAPTOP_GROUPS, "g.toml").unwrap();
        let lists = parse(LAPTOP_LISTS, "l.toml").unwrap();
        assert_eq!(sugar, lists);
        let t = &sugar.topology;
        assert_eq!(t.nr_cpus(), 8);
        assert_eq!(t.siblings(CpuId(1)), &[CpuId(0), CpuId(1)]);
        assert_eq!(t.nr_clusters(), 3);
        assert_eq!(t.kind_mask(Efficiency).to_string(), "4-7");
        assert_eq!(sugar.model.unwrap().smt_slowdown_pct, Some(30));
    }

    #[test]
    fn kinds_take_the_policy_names_and_the_model_spelling() {
        for name in ["low-power-efficiency", "low_power_efficiency", "lp"] {
            let text = format!("[[cpus]]\nlist = \"0-1\"\nkind = \"{name}\"\ncapacity = 300\n");
            let m = parse(&text, "lp.toml").unwrap();
            assert_eq!(
                m.topology.kind_mask(LowPowerEfficiency).count(),
                2,
                "{name}"
            );
        }
        let e = parse(
            "[[cpus]]\nlist = \"0\"\nkind = \"p\"\ncapacity = 1\n[[cpus]]\nlist = \"1\"\nkind = \"turbo\"\ncapacity = 1\n",
            "k.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("k.toml: cpus[1]: unknown core kind `turbo`"),
            "{e}"
        );
        let m = parse(
            "[[groups]]\nkind = \"big\"\ncapacity = 1024\ncores = 1\n",
            "b.toml",
        )
        .unwrap();
        assert_eq!(m.topology.kind_mask(Performance).count(), 1);
    }

    #[test]
    fn bad_files_name_the_field_and_what_is_wrong() {
        let err = |text: &str| parse(text, "f.toml").unwrap_err().to_string();
        let e = err("colour = 1\n");
        assert!(e.starts_with("f.toml: ") && e.contains("colour"), "{e}");
        let e = err("[[cpus]]\nlist = \"0-3\"\nkind = \"p\"\ncapacity = 70000\n");
        assert!(e.contains("capacity") && e.contains("line 4"), "{e}");
        let e = err("clusters = [\"4-2\"]\n[[cpus]]\nlist = \"0-7\"\nkind = \"p\"\ncapacity = 1\n");
        assert!(
            e.starts_with("f.toml: clusters[0]: bad CPU list `4-2`"),
            "{e}"
        );
        let e = err(
            "[[cpus]]\nlist = \"0\"\nkind = \"p\"\ncapacity = 1\n[[groups]]\nkind = \"p\"\ncapacity = 1\ncores = 1\n",
        );
        assert!(e.contains("not both"), "{e}");
        let e = err("[[groups]]\nkind = \"p\"\ncapacity = 1\ncores = 1\nsmt = 0\n");
        assert_eq!(
            e,
            "f.toml: groups[0]: cores, smt and cores_per_cluster must be at least 1"
        );
        let e = err("[[groups]]\nkind = \"p\"\ncapacity = 1\ncores = 65535\nsmt = 65535\n");
        assert!(e.contains("more than the 1024 supported"), "{e}");
        let e = err(
            "[[cpus]]\nlist = \"0\"\nkind = \"p\"\ncapacity = 1\n[model]\nsmt_slowdown_pct = 95\n",
        );
        assert_eq!(
            e,
            "f.toml: [model] smt_slowdown_pct = 95: must be at most 90"
        );
        let e = err("[[cpus]]\nlist = \"0\"\nkind = \"p\"\ncapacity = 1\n[model]\nturbo = 1\n");
        assert!(e.contains("turbo"), "{e}");
        let e = err("name = \"empty\"\n");
        assert!(
            e.ends_with("no CPUs: give [[cpus]] runs (or [[groups]])"),
            "{e}"
        );
    }

    #[test]
    fn files_too_large_or_json_are_refused_by_name() {
        let dir = std::env::temp_dir().join(format!("hl-machine-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let json = dir.join("tc2.json");
        std::fs::write(&json, "{}").unwrap();
        let e = load(&json).unwrap_err();
        assert!(matches!(e.problem, Problem::Json), "{e}");
        let big = dir.join("big.toml");
        std::fs::write(&big, vec![b'#'; MAX_MACHINE_FILE_BYTES + 1]).unwrap();
        let e = load(&big).unwrap_err();
        assert!(matches!(e.problem, Problem::TooLarge { .. }), "{e}");
        let e = load(&dir.join("missing.toml")).unwrap_err();
        assert!(
            matches!(e.problem, Problem::Io { .. }) && e.source_name.ends_with("missing.toml"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
