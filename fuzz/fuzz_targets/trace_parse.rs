//! The trace parser and validator on arbitrary bytes: an error that says something, or a
//! valid trace (within every limit) that prints back to JSON parsing to the same trace. A
//! hostile trace (billions of tasks, loops, frames) must be refused by the limits before
//! anything grows; `-rss_limit_mb` and `-malloc_limit_mb` turn any growth into a crash.
#![no_main]

use hybridland_sim::Trace;
use hybridland_sim::trace::MAX_TASKS;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let lossy = String::from_utf8_lossy(data);
    match Trace::from_json_str(&lossy, "fuzz.json") {
        Err(e) => assert!(!e.to_string().is_empty()),
        Ok(trace) => {
            trace
                .validate("fuzz.json")
                .expect("an accepted trace validates");
            assert!(trace.nr_tasks() <= MAX_TASKS);
            let printed = trace.to_json_string();
            let again = Trace::from_json_str(&printed, "printed.json")
                .unwrap_or_else(|e| panic!("printed trace refused: {e}\n{printed}"));
            assert_eq!(again, trace);
        }
    }
});
