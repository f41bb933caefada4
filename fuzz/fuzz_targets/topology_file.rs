//! Topology files (TOML and JSON machine descriptions) on arbitrary text: an error, or a
//! machine whose topology the policy places on by the rules and whose model validates.
#![no_main]

use hybridland_policy::testkit::check_fill;
use hybridland_policy::{Policy, PolicyConfig};
use hybridland_sim::{MachineModel, MachineSpec};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&format, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let spec = if format & 1 == 0 {
        MachineSpec::from_toml_str(&text, "fuzz.toml")
    } else {
        MachineSpec::from_json_str(&text, "fuzz.json")
    };
    let spec = match spec {
        Ok(spec) => spec,
        Err(e) => {
            assert!(!e.to_string().is_empty());
            return;
        }
    };
    let machine = match spec.build("fuzz", &MachineModel::default()) {
        Ok(m) => m,
        Err(e) => {
            assert!(!e.to_string().is_empty());
            return;
        }
    };
    machine
        .model
        .validate()
        .expect("a built machine's model validates");
    let topo = &machine.topology;
    assert!(topo.nr_cpus() > 0);
    if topo.nr_cpus() <= 32 {
        let policy = Policy::new(topo, &PolicyConfig::default()).expect("default knobs fit");
        if let Err(v) = check_fill(topo, &policy) {
            panic!("{v}\n{topo:?}");
        }
    }
});
