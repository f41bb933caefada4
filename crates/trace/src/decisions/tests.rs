//! The decision log's entries through memory and the file.

use super::*;
use hybridland_policy::{
    Arrival, ClusterBalance, CpuId, CpuSet, LastRun, Life, OwnedQueued, OwnedSnapshot, TaskClass,
    TaskId, UtilSource, Waiting, Waker,
};

fn header(max_bytes: usize) -> Header {
    Header {
        format: FORMAT.into(),
        version: VERSION,
        machine: String::new(),
        policy: "hybridland".into(),
        seed: 3,
        knobs: PolicyConfig::default(),
        policy_knobs: Default::default(),
        core: CoreSettings::from(&CoreConfig::DEFAULT),
        max_tasks: 64,
        helper: None,
        max_bytes,
        truncated: false,
    }
}

fn at(now: u64, input: OwnedInput) -> Entry {
    Entry::Input {
        now: TimeNs(now),
        input,
    }
}

fn every_kind() -> Vec<Entry> {
    let full = CpuSet::first_n(1024);
    let some: CpuSet = [CpuId(0), CpuId(5), CpuId(700)].into_iter().collect();
    let queued = OwnedQueued {
        task: TaskId(u32::MAX),
        life: Life(u64::MAX),
        arrival: Arrival::Wakeup {
            waker: Some(Waker {
                task: Some(TaskId(8)),
                cpu: CpuId(3),
                sync: true,
            }),
        },
        cpu: Some(CpuId(1023)),
        last_run: Some(LastRun {
            start_ns: 1,
            stop_ns: u64::MAX - 1,
        }),
        weight: 100,
        allowed: Some(full),
        util: UtilSource::Hint(1024),
    };
    vec![
        at(u64::MAX, OwnedInput::Queued(queued.clone())),
        at(
            0,
            OwnedInput::Queued(OwnedQueued {
                task: TaskId(7),
                life: Life::UNKNOWN,
                arrival: Arrival::SliceEnd {
                    waiting: Waiting::SharedQueue,
                },
                cpu: None,
                last_run: None,
                weight: 0,
                allowed: None,
                util: UtilSource::Estimate,
            }),
        ),
        at(
            0,
            OwnedInput::Queued(OwnedQueued {
                arrival: Arrival::Wakeup {
                    waker: Some(Waker {
                        task: None,
                        cpu: CpuId(1),
                        sync: false,
                    }),
                },
                ..queued
            }),
        ),
        at(
            9,
            OwnedInput::Snapshot(OwnedSnapshot {
                idle: full,
                queued: Some(full),
                caller_cpu: Some(CpuId(2)),
            }),
        ),
        at(
            9,
            OwnedInput::Snapshot(OwnedSnapshot {
                idle: CpuSet::EMPTY,
                queued: None,
                caller_cpu: None,
            }),
        ),
        at(1, OwnedInput::SnapshotFailed),
        at(
            1,
            OwnedInput::Recheck(OwnedSnapshot {
                idle: some,
                queued: Some(CpuSet::EMPTY),
                caller_cpu: None,
            }),
        ),
        at(2, OwnedInput::Backlog { waiting: 1 << 40 }),
        at(5, OwnedInput::Tick),
        at(
            5,
            OwnedInput::Exit {
                task: TaskId(0),
                life: Life(1_700_000_000_123),
            },
        ),
        at(
            5,
            OwnedInput::Exit {
                task: TaskId(1),
                life: Life::UNKNOWN,
            },
        ),
        at(
            6,
            OwnedInput::ClusterBalance {
                mode: ClusterBalance::Auto,
            },
        ),
        at(
            6,
            OwnedInput::Knob {
                index: 2,
                value: -5,
            },
        ),
        at(
            6,
            OwnedInput::Knob {
                index: 15,
                value: i64::MIN,
            },
        ),
        at(
            7,
            OwnedInput::Started {
                task: TaskId(3),
                cpu: CpuId(4),
            },
        ),
        at(
            8,
            OwnedInput::Stopped {
                task: TaskId(3),
                cpu: CpuId(4),
                run: LastRun {
                    start_ns: 7,
                    stop_ns: 8,
                },
                weight: 1024,
            },
        ),
        Entry::Sent(Sent {
            task: TaskId(4),
            cpu: None,
            slice_ns: 5_000_000,
            vtime: 0,
            preempt: false,
        }),
        Entry::Sent(Sent {
            task: TaskId(4),
            cpu: Some(6),
            slice_ns: 1,
            vtime: u64::MAX,
            preempt: false,
        }),
        Entry::Sent(Sent {
            task: TaskId(5),
            cpu: Some(7),
            slice_ns: 2,
            vtime: 3,
            preempt: true,
        }),
        at(
            9,
            OwnedInput::Placed {
                woken: OwnedQueued {
                    task: TaskId(3),
                    life: Life(9),
                    arrival: Arrival::Wakeup { waker: None },
                    cpu: Some(CpuId(5)),
                    last_run: Some(LastRun {
                        start_ns: 8,
                        stop_ns: 9,
                    }),
                    weight: 100,
                    allowed: None,
                    util: UtilSource::Estimate,
                },
                cpu: CpuId(6),
                class: TaskClass(2),
                woke: TimeNs(4),
            },
        ),
        at(
            u64::MAX,
            OwnedInput::Placed {
                woken: queued.clone(),
                cpu: CpuId(1023),
                class: TaskClass(0),
                woke: TimeNs(u64::MAX),
            },
        ),
        Entry::Nudged(Nudged {
            cpu: 2,
            task: TaskId(9),
        }),
        Entry::Classed(Classed {
            task: TaskId(3),
            class: TaskClass(1),
        }),
    ]
}

#[test]
fn every_entry_survives_memory_and_the_file() {
    let mut log = DecisionLog::new(header(1 << 16));
    for e in every_kind() {
        log.push(e);
    }
    assert_eq!(log.iter().collect::<Vec<_>>(), every_kind());
    let mut file = Vec::new();
    log.write_to(&mut file).unwrap();
    let back = DecisionLog::read_from(file.as_slice()).unwrap();
    assert_eq!(back.header(), log.header());
    assert_eq!(back.iter().collect::<Vec<_>>(), every_kind());
}

#[test]
fn an_entry_line_holds_one_thing() {
    let text = r#"{"now":5,"in":"tick","sent":{"task":1,"slice_ns":1,"vtime":2}}"#;
    let err = serde_json::from_str::<Entry>(text).unwrap_err();
    assert!(err.to_string().contains("nothing else"), "{err}");
    let tick: Entry = serde_json::from_str(r#"{"now":5,"in":"tick"}"#).unwrap();
    assert_eq!(tick, at(5, OwnedInput::Tick));
    assert!(serde_json::from_str::<Entry>(r#"{"in":"tick"}"#).is_err());
}

#[test]
fn a_full_log_stops_whole_and_says_so() {
    let mut log = DecisionLog::new(header(40));
    for i in 0..20 {
        log.push(at(1_000_000 * (i + 1), OwnedInput::Tick));
    }
    assert!(log.header().truncated);
    assert_eq!(log.len(), 10, "4 bytes each, 40 bytes");
    assert_eq!(log.iter().count(), 10);
}

#[test]
fn packed_bytes_that_encode_did_not_write_read_as_nothing() {
    for bytes in [
        &[12u8][..],
        &[0, 0xff],
        &[1, 0, 5, 17],
        &[8, 1, 0x80],
        &[7, 0, 9],
    ] {
        assert!(codec::decode(bytes, TimeNs(0)).is_none(), "{bytes:?}");
    }
}
