//! The decision-log reader (`hybrid-sim decisions`, `scx_hybridland --record`'s
//! FILE.decisions.jsonl) on arbitrary bytes, and the replay of what it accepts: an error that
//! names something, never a panic; an accepted log writes back to the same log; its replay
//! ends with a report or a typed error.
#![no_main]

use hybridland_sim::Knobs;
use hybridland_sim::decision_replay::replay_decisions;
use hybridland_trace::decisions::DecisionLog;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(log) = DecisionLog::read_from(data) else {
        return;
    };
    let mut printed = Vec::new();
    log.write_to(&mut printed).expect("writing to memory");
    let again = DecisionLog::read_from(printed.as_slice())
        .unwrap_or_else(|e| panic!("a written log is refused: {e}"));
    assert_eq!(again.header(), log.header());
    assert!(again.iter().eq(log.iter()));
    if let Ok(report) = replay_decisions(&log, &Knobs::new()) {
        assert!(report.agreed <= report.sent);
        assert!(report.nudges_agreed <= report.nudges);
        let _ = report.render();
    }
});
