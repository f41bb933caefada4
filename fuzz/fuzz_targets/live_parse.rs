//! The live-figures parser (`scx_hybridland --record`'s FILE.live.json, read by `hybrid-sim
//! compare`) on arbitrary bytes: an error that names something, or figures that pass their own
//! checks and print back to JSON parsing to the same figures.
#![no_main]

use hybridland_sim::LiveStats;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let lossy = String::from_utf8_lossy(data);
    match LiveStats::from_json_str(&lossy, "fuzz.live.json") {
        Err(e) => assert!(e.to_string().starts_with("fuzz.live.json")),
        Ok(live) => {
            live.validate("fuzz.live.json")
                .expect("accepted figures validate");
            let printed = live.to_json_string();
            let again = LiveStats::from_json_str(&printed, "printed.json")
                .unwrap_or_else(|e| panic!("printed figures refused: {e}\n{printed}"));
            assert_eq!(again, live);
        }
    }
});
