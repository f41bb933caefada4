//! Machine files (the one format both frontends read) on arbitrary text: an error naming the
//! file, or a machine that writes out and reads back to itself and on whose topology the policy
//! places by the rules.
#![no_main]

use hybridland_policy::testkit::check_fill;
use hybridland_policy::{Policy, PolicyConfig};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let machine = match hybridland_machine::parse(&text, "fuzz.toml") {
        Ok(m) => m,
        Err(e) => {
            assert!(e.to_string().starts_with("fuzz.toml: "), "{e}");
            return;
        }
    };
    let written = machine.to_toml_string();
    let back = hybridland_machine::parse(&written, "written.toml")
        .unwrap_or_else(|e| panic!("{e}\n{written}"));
    assert_eq!(back, machine, "{written}");
    assert_eq!(back.to_toml_string(), written);
    // The simulator takes every machine the parser accepts.
    let sim = hybridland_sim::Machine::from_desc(machine, "fuzz");
    sim.model.validate().expect("a parsed [model] validates");
    let topo = &sim.topology;
    assert!(topo.nr_cpus() > 0);
    if topo.nr_cpus() <= 32 {
        let policy = Policy::new(topo, &PolicyConfig::default()).expect("default knobs fit");
        if let Err(v) = check_fill(topo, &policy) {
            panic!("{v}\n{topo:?}");
        }
    }
});
