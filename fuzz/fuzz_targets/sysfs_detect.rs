//! The live scheduler's machine detection on an arbitrary sysfs tree, fed from memory
//! (`hybridland_fuzz::sysfs_tree`): up to past 1,024 CPU directories whose topology, cache,
//! capacity and frequency files hold what a kernel writes or arbitrary text. The reader gives
//! CPUs it was shown, ascending, or an error naming a file of the tree; detection gives a
//! machine of exactly those CPUs, capacities within 1..=1024, that the one machine format
//! writes and reads back to the same topology, or an error. Trees past 32 CPUs are one input
//! in [`LARGE_ONE_IN`](hybridland_fuzz::sysfs_tree::LARGE_ONE_IN) of those asking for one.
#![no_main]

use hybridland_fuzz::sysfs_tree::{ROOT, SysfsIn};
use hybridland_machine::sysfs::SysfsMachine;
use hybridland_machine::sysfs_detect::detect;
use hybridland_policy::{CpuId, MAX_CPUS};
use libfuzzer_sys::{Corpus, fuzz_target};
use std::path::Path;

fuzz_target!(|data: &[u8]| -> Corpus {
    let Some(input) = SysfsIn::from_bytes(data) else {
        return Corpus::Reject;
    };
    check(&input);
    Corpus::Keep
});

fn check(input: &SysfsIn) {
    let tree = input.tree();
    let m = match SysfsMachine::read_from(&tree, Path::new(ROOT)) {
        Ok(m) => m,
        Err(e) => {
            let text = e.to_string();
            assert!(
                text.starts_with(ROOT),
                "an error names a file of the tree: {text}"
            );
            return;
        }
    };
    assert!(!m.cpus.is_empty() || input.nr_cpus() > 0);
    assert!(
        m.cpus.windows(2).all(|w| w[0].cpu < w[1].cpu),
        "CPUs ascending and distinct"
    );
    // CPUs of the tree: its numbered directories and the odd entries named like one.
    let shown = |cpu: u16| {
        usize::from(cpu) < input.nr_cpus() || input.junk_names().any(|j| j == format!("cpu{cpu}"))
    };
    for c in &m.cpus {
        assert!(
            usize::from(c.cpu) < MAX_CPUS && shown(c.cpu),
            "cpu{} was not in the tree",
            c.cpu
        );
    }
    let Ok(d) = detect(&m) else {
        return;
    };
    let topo = &d.machine.topology;
    assert_eq!(topo.nr_cpus(), m.cpus.len());
    for c in &m.cpus {
        let info = topo
            .info(CpuId(c.cpu))
            .expect("every read CPU is in the machine");
        assert!(
            (1..=1024).contains(&info.capacity),
            "capacity {}",
            info.capacity
        );
    }
    let text = d.machine.to_toml_string();
    let again = hybridland_machine::parse(&text, "detected.toml")
        .unwrap_or_else(|e| panic!("the detected machine's file is refused: {e}\n{text}"));
    assert_eq!(again.topology, d.machine.topology, "{text}");
}
