//! `--emit-topology FILE`: the machine as detected, in the machine-file format the simulator
//! reads, so `hybrid-sim replay TRACE --topology FILE` simulates the machine this runs on.

#![forbid(unsafe_code)]

use crate::safe_file;
use crate::topology_detect::Detected;
use anyhow::{Context, Result};
use core::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

/// Whether `path` means standard output.
pub(crate) fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// The file: a comment header saying where the machine was detected from and how, then the
/// canonical form.
pub(crate) fn text(detected: &Detected) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# Written by scx_hybridland --emit-topology: the machine detected from {}.",
        detected.source
    );
    for note in &detected.notes {
        let _ = writeln!(s, "#   {note}");
    }
    let _ = writeln!(
        s,
        "# scx_hybridland --topology reads it back; hybrid-sim replays on it (--topology FILE),"
    );
    if detected.machine.model.is_none() {
        let _ = writeln!(
            s,
            "# with its default model (no [model] table; docs/machine-model.md)."
        );
    } else {
        let _ = writeln!(s, "# with the [model] table below.");
    }
    s.push('\n');
    s + &detected.machine.to_toml_string()
}

/// Writes the file to `path` (never through a link or into a FIFO or device: see
/// [`safe_file`]), or to standard output for `-`.
pub(crate) fn write(detected: &Detected, path: &Path) -> Result<()> {
    let text = text(detected);
    if is_stdout(path) {
        let mut out = std::io::stdout().lock();
        return out
            .write_all(text.as_bytes())
            .and_then(|()| out.flush())
            .context("writing the topology to standard output");
    }
    safe_file::replace(
        path,
        safe_file::OUTPUT_MODE,
        safe_file::Sync::Durable,
        |out| out.write_all(text.as_bytes()),
    )
    .context("writing the topology")
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::topology_detect::detect;

    /// Every fake sysfs tree: what is emitted reads back, through the one parser, to the very
    /// topology the scheduler would run on, dense core and cluster numbers included.
    #[test]
    fn every_fixture_emits_a_file_that_reads_back_to_its_topology() {
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let mut seen = 0;
        for entry in std::fs::read_dir(&fixtures).unwrap() {
            let root = entry.unwrap().path();
            if !root.is_dir() {
                continue;
            }
            let (detected, topo) = detect(None, &root).unwrap();
            let text = text(&detected);
            let back = hybridland_machine::parse(&text, "emitted.toml")
                .unwrap_or_else(|e| panic!("{}: {e}\n{text}", root.display()));
            assert_eq!(*back.topology, topo, "{}", root.display());
            for cpu in topo.cpus().iter() {
                assert_eq!(
                    back.topology.info(cpu),
                    topo.info(cpu),
                    "{}",
                    root.display()
                );
            }
            assert!(back.model.is_none());
            assert!(text.starts_with("# Written by scx_hybridland"));
            assert!(text.contains(&format!("from sysfs at {}", root.display())));
            seen += 1;
        }
        assert!(seen >= 7, "{seen} fixtures");
    }

    /// A `--topology` file comes back out in the canonical form, the same machine, its name,
    /// description and `[model]` kept.
    #[test]
    fn a_topology_file_is_emitted_as_the_same_machine() {
        let vm = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/topologies/tc2.toml");
        let (detected, topo) = detect(Some(&vm), Path::new("/nonexistent")).unwrap();
        let back = hybridland_machine::parse(&text(&detected), "emitted.toml").unwrap();
        assert_eq!(*back.topology, topo);
        assert_eq!(back, detected.machine);
        assert!(back.model.is_some());
    }

    /// `--emit-topology` runs as root: a link or FIFO planted at the path is refused and left
    /// as it is; a regular file there is replaced.
    #[test]
    fn planted_links_and_fifos_are_refused_and_a_file_is_replaced() {
        use crate::safe_file::testing::*;
        let vm = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/topologies/tc2.toml");
        let (detected, _) = detect(Some(&vm), Path::new("/nonexistent")).unwrap();
        let s = scratch();
        let path = s.path().join("machine.toml");
        let victim = s.path().join("victim");
        plant_link(&path, &victim);
        let e = format!("{:#}", write(&detected, &path).unwrap_err());
        assert!(
            e.contains("machine.toml: refusing to write: it is a symbolic link"),
            "{e}"
        );
        assert_link_untouched(&path, &victim);
        std::fs::remove_file(&path).unwrap();

        plant_fifo(&path);
        let e = format!("{:#}", write(&detected, &path).unwrap_err());
        assert!(e.contains("it is a FIFO"), "{e}");
        assert_fifo_untouched(&path);
        std::fs::remove_file(&path).unwrap();

        std::fs::write(&path, "old").unwrap();
        write(&detected, &path).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text(&detected));
        assert_only(s.path(), &["machine.toml", "victim"]);
    }
}
