//! `hybrid-sim replay --timeline`'s writer over small arbitrary replays (one to three
//! policies, one process each, on a preset): the document is JSON in the Trace Event Format,
//! every complete slice has a track that names it, slices on one track never overlap, and
//! every wake-up arrow has one start and one end, in order, each inside a slice of its track.
#![no_main]

use arbitrary::Arbitrary;
use hybridland_fuzz::small_trace::{SmallTrace, preset_machine, read_trace};
use hybridland_sim::timeline::TimelineWriter;
use hybridland_sim::{
    DecisionObserver, DecisionRecord, Knobs, OccupancyRecord, PolicyKind, RunRecord, SimOptions,
};
use libfuzzer_sys::fuzz_target;
use serde::Deserialize;
use serde_json::Number;
use std::collections::{BTreeMap, BTreeSet};

/// Copies one task entry may ask for: the output is the subject, not the task limit
/// (the `replay` target reaches that).
const MAX_COPIES: usize = 256;

/// Events one replay may take: the writer's output is the subject, and a few thousand events
/// give every kind of record it writes; checking the document costs as much again as the
/// replay (5,000 ran about 200 inputs a second, too few for a campaign of 10^6).
const MAX_EVENTS: u64 = 2_000;

#[derive(Debug, Arbitrary)]
struct Input {
    preset: u8,
    policies: Vec<u8>,
    trace: SmallTrace,
}

struct Writer<'w>(&'w mut TimelineWriter<Vec<u8>>);

impl DecisionObserver for Writer<'_> {
    fn on_decision(&mut self, _: &DecisionRecord<'_>) {}
    fn wants_runs(&self) -> bool {
        true
    }
    fn on_run(&mut self, r: &RunRecord<'_>) {
        self.0.run(r);
    }
    fn on_occupancy(&mut self, o: &OccupancyRecord) {
        self.0.occupancy(o);
    }
}

/// The fields of a trace event the checks read. Typed rather than a `Value` tree: the tree's
/// maps were most of an execution.
#[derive(Deserialize)]
struct Event {
    ph: String,
    pid: u64,
    tid: Option<u64>,
    name: Option<String>,
    ts: Option<Number>,
    dur: Option<Number>,
    id: Option<u64>,
}

#[derive(Deserialize)]
struct Doc {
    #[serde(rename = "traceEvents")]
    trace_events: Vec<Event>,
}

/// A timestamp in ns from the format's microseconds with three decimals.
fn ns(v: Option<&Number>) -> u64 {
    let text = v.expect("a timestamp").to_string();
    let (us, frac) = text.split_once('.').unwrap_or((&text, "0"));
    let frac = format!("{frac:0<3}");
    us.parse::<u64>().expect("whole microseconds") * 1000
        + frac[..3].parse::<u64>().expect("three decimals")
}

fuzz_target!(|input: Input| {
    let machine = preset_machine(input.preset);
    let Some(trace) = read_trace(&input.trace, &machine, MAX_COPIES) else {
        return;
    };
    let mut w = TimelineWriter::new(Vec::new()).expect("writing to memory");
    let base = SimOptions {
        max_events: MAX_EVENTS,
        ..SimOptions::default()
    };
    let policies: Vec<&str> = input
        .policies
        .iter()
        .take(3)
        .map(|p| PolicyKind::ALL[usize::from(*p) % PolicyKind::ALL.len()].name())
        .collect();
    for (i, policy) in policies.iter().enumerate() {
        w.begin_policy(i, policy, &machine.topology);
        // A replay that fails (too many events) leaves what it wrote, as the command does
        // before it reports the error.
        let _ = hybridland_sim::replay_observed(
            &machine,
            &trace,
            policy,
            &Knobs::new(),
            &base,
            &mut Writer(&mut w),
        );
    }
    let bytes = w.finish().expect("writing to memory");
    let doc: Doc = serde_json::from_slice(&bytes).unwrap_or_else(|e| {
        panic!(
            "not a trace event document: {e}\n{}",
            String::from_utf8_lossy(&bytes)
        )
    });
    let mut named: BTreeSet<(u64, u64)> = BTreeSet::new();
    let mut slices: BTreeMap<(u64, u64), Vec<(u64, u64)>> = BTreeMap::new();
    let mut flows: BTreeMap<u64, Vec<(char, u64, u64, u64)>> = BTreeMap::new();
    for e in &doc.trace_events {
        let track = (e.pid, e.tid.expect("a tid"));
        match e.ph.as_str() {
            "M" if e.name.as_deref() == Some("thread_name") => {
                named.insert(track);
            }
            "X" => {
                let (ts, dur) = (ns(e.ts.as_ref()), ns(e.dur.as_ref()));
                assert!(
                    named.contains(&track),
                    "slice before its track is named: {track:?} at {ts}"
                );
                slices.entry(track).or_default().push((ts, ts + dur));
            }
            ph @ ("s" | "f") => {
                let id = e.id.expect("a flow id");
                let c = ph.chars().next().expect("one letter");
                flows
                    .entry(id)
                    .or_default()
                    .push((c, e.pid, track.1, ns(e.ts.as_ref())));
            }
            _ => {}
        }
    }
    for (track, runs) in &mut slices {
        runs.sort_unstable();
        for pair in runs.windows(2) {
            assert!(
                pair[0].1 <= pair[1].0,
                "overlapping slices on {track:?}: {pair:?}"
            );
        }
    }
    // The runs are sorted and apart (checked above): only the last one starting before `ts`
    // can hold it.
    let inside = |pid: u64, tid: u64, ts: u64| {
        slices.get(&(pid, tid)).is_some_and(|runs| {
            let i = runs.partition_point(|&(a, _)| a < ts);
            i > 0 && ts < runs[i - 1].1
        })
    };
    for (id, ends) in &flows {
        assert_eq!(ends.len(), 2, "flow {id}: {ends:?}");
        let (s, f) = (ends[0], ends[1]);
        assert!(
            s.0 == 's' && f.0 == 'f' && s.3 <= f.3,
            "flow {id}: {ends:?}"
        );
        assert!(
            inside(s.1, s.2, s.3) && inside(f.1, f.2, f.3),
            "flow {id} outside its slices: {ends:?}"
        );
    }
});
