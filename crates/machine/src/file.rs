//! Reading a machine file: TOML in the canonical form or with the `groups` sugar.

use std::path::Path;

use hybridland_policy::{CoreKind, CpuId, CpuSet, MAX_CPUS, parse_cpu_list};
use serde::Deserialize;

use crate::error::{LeftOut, MachineError, Problem, Warning};
use crate::input_file::{InputFileError, read_bounded};
use crate::layout::{CpuRun, Layout};
use crate::left_out::{Field, left_out};
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

fn parse_text(text: &str) -> Result<(MachineDesc, Vec<LeftOut>), Problem> {
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
    // The `groups` sugar says how every core is clustered; only lists can leave CPUs out.
    let mut left = Vec::new();
    if file.groups.is_empty() {
        left.extend(left_out(Field::Cores, &layout.cores, &topology));
        left.extend(left_out(Field::Clusters, &layout.clusters, &topology));
    }
    let desc = MachineDesc {
        name: file.name,
        description: file.description,
        topology,
        model: file.model,
    };
    Ok((desc, left))
}

/// Reads a machine from TOML text; `source_name` (the file) goes into errors. What the file
/// leaves to a default that looks like a slip is dropped here:
/// [`parse_with_warnings`] returns it.
pub fn parse(text: &str, source_name: &str) -> Result<MachineDesc, MachineError> {
    parse_with_warnings(text, source_name).map(|(desc, _)| desc)
}

/// [`parse`], with the [`Warning`]s a user of the file should see: CPUs left out of `cores`
/// or `clusters` while CPUs of the same kind and capacity are grouped there (each became a
/// core or a cluster of its own, as the format says of CPUs in no list).
pub fn parse_with_warnings(
    text: &str,
    source_name: &str,
) -> Result<(MachineDesc, Vec<Warning>), MachineError> {
    let (desc, left) = parse_text(text).map_err(|p| MachineError::new(source_name, p))?;
    let warnings = left
        .into_iter()
        .map(|left_out| Warning {
            source_name: source_name.to_owned(),
            left_out,
        })
        .collect();
    Ok((desc, warnings))
}

/// Reads a machine file; its warnings are dropped ([`load_with_warnings`] returns them).
pub fn load(path: &Path) -> Result<MachineDesc, MachineError> {
    load_with_warnings(path).map(|(desc, _)| desc)
}

/// Reads a machine file, with the [`Warning`]s of [`parse_with_warnings`].
pub fn load_with_warnings(path: &Path) -> Result<(MachineDesc, Vec<Warning>), MachineError> {
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
    parse_with_warnings(&text, &name)
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

    /// The i7-13800H's lists with the second E-core cluster (16-19) forgotten, and its last
    /// P-core's SMT pair (10-11) too.
    const FORGOTTEN: &str = r#"
cores = ["0-1", "2-3", "4-5", "6-7", "8-9"]
clusters = ["12-15"]
[[cpus]]
list = "0-11"
kind = "performance"
capacity = 1024
[[cpus]]
list = "12-19"
kind = "efficiency"
capacity = 600
"#;

    #[test]
    fn cpus_left_out_of_lists_that_group_cpus_like_them_are_warned_about() {
        let (m, warnings) = parse_with_warnings(FORGOTTEN, "f.toml").unwrap();
        let lines: Vec<String> = warnings.iter().map(ToString::to_string).collect();
        assert_eq!(
            lines,
            [
                "f.toml: `cores` leaves out CPUs 10-11, performance CPUs of capacity 1024 as in \
                 cores[0] (0-1), so each was taken as a core of its own, with no SMT sibling \
                 (2 cores: 10, 11); list them in `cores`, each with its SMT siblings (alone in \
                 its list to keep it apart)",
                "f.toml: `clusters` leaves out CPUs 16-19, efficiency CPUs of capacity 600 as in \
                 clusters[0] (12-15), so each of their cores was taken as an L2 cluster of its \
                 own (4 clusters: 16, 17, 18, 19); list them in `clusters`, each with the CPUs \
                 it shares an L2 with (alone in its list to keep it apart)",
            ]
        );
        // Read as the format says: what the warnings assumed (CPUs 10 and 11 two cores, so two
        // clusters of their own beside the other five P-cores').
        assert_eq!(m.topology.nr_clusters(), 5 + 2 + 1 + 4);
        assert_eq!(m.topology.siblings(CpuId(10)), &[CpuId(10)]);
        assert_eq!(parse(FORGOTTEN, "f.toml").unwrap(), m);
        // Listed, the CPUs say nothing more; P-cores in no cluster are alike to no listed
        // cluster (every P-core its own L2 is what the canonical form writes).
        let fixed = FORGOTTEN
            .replace(r#""8-9"]"#, r#""8-9", "10-11"]"#)
            .replace(r#"["12-15"]"#, r#"["12-15", "16-19"]"#);
        let (m, warnings) = parse_with_warnings(&fixed, "f.toml").unwrap();
        assert_eq!(warnings, []);
        assert_eq!(m.topology.nr_clusters(), 6 + 2);
        // Each alone in its list: kept apart, on purpose.
        let apart = FORGOTTEN
            .replace(r#""8-9"]"#, r#""8-9", "10", "11"]"#)
            .replace(r#"["12-15"]"#, r#"["12-15", "16", "17", "18", "19"]"#);
        let (m, warnings) = parse_with_warnings(&apart, "f.toml").unwrap();
        assert_eq!(warnings, []);
        assert_eq!(m.topology.nr_clusters(), 5 + 2 + 1 + 4);
        // Written back, the file lists them: it reads back the same, without a warning.
        let text = m.to_toml_string();
        assert!(
            text.contains(r#"clusters = ["12-15", "16", "17", "18", "19"]"#),
            "{text}"
        );
        assert_eq!(parse_with_warnings(&text, "w.toml").unwrap(), (m, vec![]));
        // The sugar clusters every core itself.
        let (_, warnings) = parse_with_warnings(LAPTOP_GROUPS, "g.toml").unwrap();
        assert_eq!(warnings, []);
    }

    #[test]
    fn a_kind_of_another_capacity_or_no_list_at_all_is_no_slip() {
        // The prime core (capacity 1024) alone beside a cluster of big cores (800): not alike.
        let prime = "clusters = [\"0-3\", \"4-6\"]\n\
            [[cpus]]\nlist = \"0-3\"\nkind = \"e\"\ncapacity = 300\n\
            [[cpus]]\nlist = \"4-6\"\nkind = \"p\"\ncapacity = 800\n\
            [[cpus]]\nlist = \"7\"\nkind = \"p\"\ncapacity = 1024\n";
        assert_eq!(parse_with_warnings(prime, "p.toml").unwrap().1, []);
        // No `clusters` at all: every core its own, as the file says.
        let none = "[[cpus]]\nlist = \"0-7\"\nkind = \"e\"\ncapacity = 600\n";
        assert_eq!(parse_with_warnings(none, "n.toml").unwrap().1, []);
        // A listed cluster of one core shows no larger grouping to be like.
        let single = "clusters = [\"0\"]\n[[cpus]]\nlist = \"0-3\"\nkind = \"e\"\ncapacity = 600\n";
        assert_eq!(parse_with_warnings(single, "s.toml").unwrap().1, []);
    }

    #[test]
    fn files_too_large_or_json_are_refused_by_name() {
        let dir = crate::input_file::testing::scratch();
        let json = dir.path().join("tc2.json");
        std::fs::write(&json, "{}").unwrap();
        let e = load(&json).unwrap_err();
        assert!(matches!(e.problem, Problem::Json), "{e}");
        let big = dir.path().join("big.toml");
        std::fs::write(&big, vec![b'#'; MAX_MACHINE_FILE_BYTES + 1]).unwrap();
        let e = load(&big).unwrap_err();
        assert!(matches!(e.problem, Problem::TooLarge { .. }), "{e}");
        let e = load(&dir.path().join("missing.toml")).unwrap_err();
        assert!(
            matches!(e.problem, Problem::Io { .. }) && e.source_name.ends_with("missing.toml"),
            "{e}"
        );
    }
}
