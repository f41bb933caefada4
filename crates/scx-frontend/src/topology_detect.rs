//! Turns what sysfs says (or a `--topology` machine file, read by `hybridland-machine` as the
//! simulator reads it) into the policy's [`Topology`]. The sysfs rules are
//! `hybridland_machine::sysfs_detect`'s:
//!
//! Detection rules, in order of trust:
//! - **Kinds.** On Intel hybrid parts `devices/cpu_core/cpus` are P-cores and
//!   `devices/cpu_atom/cpus` E-cores; these stay right when every CPU reports the same maximum
//!   frequency. Elsewhere a CPU whose capacity is below 80% of the largest is an E-core, the
//!   rest P-cores (so a symmetric machine is all P).
//! - **Capacity and rank.** The first source every CPU has, of: `cpu_capacity`, ACPI CPPC
//!   `highest_perf`, `amd_pstate_highest_perf`, `cpuinfo_max_freq`; scaled so the largest is
//!   1024. P-cores all get the P capacity of their kind's best CPU and keep the raw value as
//!   their rank (ITMT favoured cores, AMD preferred cores), so a favoured core wins ties without
//!   making its siblings look slow. `amd_pstate_prefcore_ranking` is the rank when present.
//! - **SMT.** `thread_siblings_list` (or `core_cpus_list`).
//! - **Clusters.** `cluster_cpus_list`, the kernel's own cluster, unless it is missing or just
//!   the CPU's core; then the CPUs sharing the L2 (`cache/index*/` of level 2); else the core.
//! - **LLC** from the highest cache level of 3 or more, **nodes** from `devices/system/node`.

#![forbid(unsafe_code)]

use crate::sysfs::SysfsMachine;
use anyhow::Result;
use hybridland_policy::Topology;
use std::path::Path;

/// The machine as detected, with how it was found, kept for `--dry-run` and
/// `--emit-topology`.
pub(crate) use hybridland_machine::sysfs_detect::Detected;

/// Builds a description from a sysfs tree (`hybridland-machine` holds the rules above, so the
/// fuzz target reaches them without the scheduler).
pub(crate) fn from_sysfs(m: &SysfsMachine) -> Result<Detected> {
    Ok(hybridland_machine::sysfs_detect::detect(m)?)
}

/// Reads the machine from `--topology FILE` if given, else from the sysfs tree at `sysfs_root`.
pub(crate) fn detect(
    topology_file: Option<&Path>,
    sysfs_root: &Path,
) -> Result<(Detected, Topology)> {
    let detected = match topology_file {
        Some(path) => {
            let (machine, warnings) = hybridland_machine::load_with_warnings(path)?;
            let mut notes = vec!["kinds, capacities and groups as the file says".to_owned()];
            if machine.model.is_some() {
                notes.push("its [model] table is the simulator's and is not used here".into());
            }
            // What the file left out: logged (the scheduler runs with it) and in the report.
            for w in warnings {
                tracing::warn!("{w}");
                notes.push(format!("warning: {}", w.left_out));
            }
            Detected {
                source: format!("file {}", path.display()),
                notes,
                machine,
            }
        }
        None => from_sysfs(&SysfsMachine::read(sysfs_root)?)?,
    };
    let topo = (*detected.machine.topology).clone();
    Ok((detected, topo))
}

#[cfg(test)]
mod test {
    use super::*;
    use hybridland_policy::CoreKind::{Efficiency, Performance};
    use hybridland_policy::CpuId;

    fn fixture(name: &str) -> (Detected, Topology) {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name);
        detect(None, &root).unwrap()
    }

    #[test]
    fn laptop_has_six_smt_p_cores_and_two_e_clusters() {
        let (_, t) = fixture("i7-13800h");
        assert_eq!(t.nr_cpus(), 20);
        assert_eq!(t.kind_mask(Performance).to_string(), "0-11");
        assert_eq!(t.kind_mask(Efficiency).to_string(), "12-19");
        assert_eq!(t.nr_cores(), 6 + 8);
        assert_eq!(t.core_cpus(0), &[CpuId(0), CpuId(1)]);
        // 6 P-core clusters (each its own L2) + 2 E clusters of 4.
        assert_eq!(t.nr_clusters(), 8);
        let e_cluster = t.info(CpuId(12)).unwrap().cluster as usize;
        assert_eq!(t.cluster_cpus(e_cluster).len(), 4);
        assert!(t.info(CpuId(0)).unwrap().capacity > t.info(CpuId(12)).unwrap().capacity);
        assert!(t.is_hybrid());
    }

    #[test]
    fn atom_server_has_six_clusters_of_four() {
        let (_, t) = fixture("atom-24");
        assert_eq!(t.nr_cpus(), 24);
        assert_eq!(t.nr_clusters(), 6);
        assert!((0..6).all(|c| t.cluster_cpus(c).len() == 4));
        assert!(!t.is_hybrid());
    }

    #[test]
    fn big_little_uses_cpu_capacity() {
        let (_, t) = fixture("big-little-2-3");
        assert_eq!(t.kind_mask(Performance).to_string(), "3-4");
        assert_eq!(t.kind_mask(Efficiency).to_string(), "0-2");
        assert_eq!(t.info(CpuId(0)).unwrap().capacity, 446);
        assert_eq!(t.nr_clusters(), 2);
    }

    #[test]
    fn three_tier_phone_keeps_each_cpu_capacity() {
        let (_, t) = fixture("phone-3-tiers");
        let cap = |c: u16| t.info(CpuId(c)).unwrap().capacity;
        assert_eq!((cap(0), cap(4), cap(6), cap(7)), (280, 871, 871, 1024));
        assert_eq!(t.kind_mask(Performance).to_string(), "4-7");
        assert_eq!(t.kind_mask(Efficiency).to_string(), "0-3");
        assert_eq!(t.nr_clusters(), 3);
    }

    #[test]
    fn nul_endings_and_offline_cpus() {
        let (_, t) = fixture("arm-nul-endings");
        assert_eq!(t.nr_clusters(), 2);
        assert_eq!(t.kind_mask(Efficiency).to_string(), "2-3");
        let (_, t) = fixture("no-online-list");
        assert_eq!(t.nr_cpus(), 3);
        assert!(t.info(CpuId(2)).is_none());
    }

    #[test]
    fn symmetric_box_with_split_smt_numbering() {
        let (_, t) = fixture("symmetric-4c8t");
        assert_eq!(t.nr_cpus(), 8);
        assert_eq!(t.nr_cores(), 4);
        assert_eq!(t.core_cpus(0), &[CpuId(0), CpuId(4)]);
        assert!(!t.is_hybrid());
        assert_eq!(t.nr_clusters(), 4);
    }

    /// The `--topology` file is read by the one parser: the VM's file as the simulator reads
    /// it, a `[model]` table noted and left alone, and errors naming the file and entry.
    #[test]
    fn topology_files_are_read_by_the_one_parser() {
        let dir = crate::safe_file::testing::scratch();
        let vm =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/vm/topology-2p-smt-4e.toml");
        let (d, t) = detect(Some(&vm), Path::new("/nonexistent")).unwrap();
        assert_eq!(t.nr_cores(), 6);
        assert_eq!(t.nr_clusters(), 4);
        assert_eq!(t.kind_mask(Efficiency).to_string(), "0-3");
        assert_eq!(d.machine.name.as_deref(), Some("vm-2p-smt-4e"));
        let with_model = dir.path().join("model.toml");
        std::fs::write(
            &with_model,
            "[[groups]]\nkind = \"p\"\ncapacity = 1024\ncores = 2\nsmt = 2\n[model]\nsmt_slowdown_pct = 30\n",
        )
        .unwrap();
        let (d, t) = detect(Some(&with_model), Path::new("/nonexistent")).unwrap();
        assert_eq!(t.nr_cores(), 2);
        assert!(
            d.notes.iter().any(|n| n.contains("[model]")),
            "{:?}",
            d.notes
        );
        let bad = dir.path().join("bad.toml");
        std::fs::write(
            &bad,
            "[[cpus]]\nlist = \"0-3\"\nkind = \"p\"\ncapacity = 1024\n[[cpus]]\nlist = \"3\"\nkind = \"e\"\ncapacity = 500\n",
        )
        .unwrap();
        let e = detect(Some(&bad), Path::new("/nonexistent"))
            .unwrap_err()
            .to_string();
        assert!(
            e.ends_with("bad.toml: cpus[1]: cpu 3 is already in cpus[0]"),
            "{e}"
        );
    }
}
