//! Reads the CPU topology files of a sysfs tree into plain data, nothing more: the reader
//! lives in `hybridland-machine` (so the fuzz target feeds it file contents without the
//! scheduler); this module keeps its tests on the committed fake trees under `tests/fixtures/`,
//! read exactly as the scheduler reads `/sys` on a real machine. Every file is optional:
//! firmware differs, and what is missing is `None` here and a fallback in
//! [`topology_detect`](crate::topology_detect).

#![forbid(unsafe_code)]

pub(crate) use hybridland_machine::sysfs::SysfsMachine;

#[cfg(test)]
mod test {
    use super::*;
    use std::path::{Path, PathBuf};

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name)
    }

    #[test]
    fn reads_the_laptop_fixture() {
        let m = SysfsMachine::read(&fixture("i7-13800h")).unwrap();
        assert_eq!(m.cpus.len(), 20);
        assert_eq!(m.intel_core.unwrap().to_string(), "0-11");
        assert_eq!(m.intel_atom.unwrap().to_string(), "12-19");
        let c3 = &m.cpus[3];
        assert_eq!(c3.siblings.unwrap().to_string(), "2-3");
        assert_eq!(m.cpus[13].l2.unwrap().to_string(), "12-15");
        assert_eq!(m.cpus[13].llc.unwrap().to_string(), "0-19");
        assert_eq!(m.nodes.len(), 1);
    }

    #[test]
    fn trailing_whitespace_and_nul_bytes_are_trimmed() {
        let m = SysfsMachine::read(&fixture("arm-nul-endings")).unwrap();
        assert_eq!(m.cpus.len(), 4);
        assert_eq!(m.cpus[1].cluster.unwrap().to_string(), "0-1");
        assert_eq!(m.cpus[2].l2.unwrap().to_string(), "2-3");
        assert_eq!(m.cpus[3].capacity, Some(512));
        assert_eq!(m.nodes[0].1.to_string(), "0-3");
    }

    #[test]
    fn without_the_online_list_each_cpu_says_for_itself() {
        let m = SysfsMachine::read(&fixture("no-online-list")).unwrap();
        let ids: Vec<u16> = m.cpus.iter().map(|c| c.cpu).collect();
        assert_eq!(ids, [0, 1, 3]);
    }

    #[test]
    fn a_parse_error_points_at_the_offending_byte() {
        let dir = crate::safe_file::testing::scratch();
        let cpu0 = dir.path().join("devices/system/cpu/cpu0/topology");
        std::fs::create_dir_all(&cpu0).unwrap();
        // "0-3,5x" with sysfs's endings: the `x` is byte 5.
        std::fs::write(cpu0.join("cluster_cpus_list"), "0-3,5x\n\0").unwrap();
        let e = SysfsMachine::read(dir.path()).unwrap_err().to_string();
        assert!(
            e.contains("cluster_cpus_list") && e.contains("at byte 5"),
            "{e}"
        );
    }

    #[test]
    fn missing_root_is_an_error() {
        assert!(SysfsMachine::read(Path::new("/nonexistent/sys")).is_err());
    }
}
