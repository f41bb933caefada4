//! The rt-app importer on arbitrary bytes: an error that says something, or a trace that
//! validates and prints back to the same trace, and a note for every item it did not model
//! exactly. Loops of -1 with a huge duration, huge instances and deep phase lists must be
//! refused by the trace limits, not expanded.
#![no_main]

use hybridland_sim::Trace;
use hybridland_sim::import::rt_app::{import, is_rt_app};
use hybridland_sim::trace::MAX_TASKS;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let lossy = String::from_utf8_lossy(data);
    let _ = is_rt_app(&lossy);
    match import(&lossy, "fuzz.json", "fuzz") {
        Err(e) => assert!(!e.to_string().is_empty()),
        Ok(imported) => {
            let trace = imported.trace;
            trace
                .validate("fuzz.json")
                .expect("an imported trace validates");
            assert!(trace.nr_tasks() <= MAX_TASKS);
            let printed = trace.to_json_string();
            let again = Trace::from_json_str(&printed, "printed.json")
                .unwrap_or_else(|e| panic!("printed trace refused: {e}\n{printed}"));
            assert_eq!(again, trace);
            for n in &imported.unmodelled {
                assert!(!n.to_string().is_empty());
            }
        }
    }
});
