//! The recording importer on arbitrary text: an error naming a line (or the empty recording),
//! or a trace that validates on the machine and prints back to the same trace.
#![no_main]

use hybridland_sim::Trace;
use hybridland_sim::import::ftrace::import;
use hybridland_sim::presets;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let lossy = String::from_utf8_lossy(data);
    let machine = presets::lookup("tc2").expect("preset");
    match import(
        &lossy,
        "fuzz.trace",
        "fuzz",
        &machine.topology,
        data.first() == Some(&b' '),
    ) {
        Err(e) => assert!(!e.to_string().is_empty()),
        Ok(imported) => {
            let trace = imported.trace;
            trace
                .validate_for(&machine.topology, "fuzz.trace")
                .expect("an imported trace fits its machine");
            let printed = trace.to_json_string();
            let again = Trace::from_json_str(&printed, "printed.json")
                .unwrap_or_else(|e| panic!("printed trace refused: {e}\n{printed}"));
            assert_eq!(again, trace);
        }
    }
});
