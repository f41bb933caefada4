//! The same trace, machine, policy and seed give byte-identical reports.

mod util;

use hybridland_sim::PolicyKind;
use util::{load_trace, replay};

#[test]
fn replays_are_byte_identical() {
    for name in [
        "seed004-webgl.json",
        "mixed-laptop.json",
        "seed003-openmp.json",
        "wake-chain.json",
    ] {
        let trace = load_trace(name);
        for kind in PolicyKind::ALL {
            let a = replay(&trace, kind.name(), &[], None).to_json_pretty();
            let b = replay(&trace, kind.name(), &[], None).to_json_pretty();
            assert!(
                a == b,
                "{name} under {} differs between two runs",
                kind.name()
            );
        }
    }
}

#[test]
fn the_seed_drives_the_random_choices() {
    let trace = load_trace("seed004-webgl.json");
    let a = replay(&trace, "spread", &[], Some(1)).to_json_pretty();
    let b = replay(&trace, "spread", &[], Some(2)).to_json_pretty();
    assert_ne!(a, b, "spread draws CPUs from the seed");
}
