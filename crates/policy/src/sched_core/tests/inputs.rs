//! The inputs themselves: the other occupancy mode's refused as a typed error, a knob the
//! policy lacks refused with its token back, and every input's owned form and JSON.

use super::*;

/// Each core takes the inputs of its own occupancy mode only; a refused input changes nothing.
#[test]
fn an_input_of_the_other_occupancy_mode_is_a_typed_error() {
    let topo = vm_machine();
    let all = *topo.cpus();
    let run = LastRun {
        start_ns: 0,
        stop_ns: 10,
    };
    let mut live = core(&topo, &PolicyConfig::default(), CoreConfig::DEFAULT, 64);
    for input in [
        Input::Started {
            task: TaskId(1),
            cpu: CpuId(0),
        },
        Input::Stopped {
            task: TaskId(1),
            cpu: CpuId(0),
            run,
            weight: 100,
        },
    ] {
        assert_eq!(
            live.handle(TimeNs(1), input),
            Err(InputError::WrongOccupancy {
                input: input.name(),
                core: Occupancy::Snapshots,
            })
        );
    }
    assert_eq!(live.stats().tracked, 0, "the refused run was not counted");
    let tracked_config = CoreConfig {
        occupancy: Occupancy::Tracked,
        ..CoreConfig::DEFAULT
    };
    let mut sim = core(&topo, &PolicyConfig::default(), tracked_config, 64);
    sim.handle(TimeNs(1), Input::Queued(wakeup(1, None, &all)))
        .unwrap();
    let snap = snapshot(&CpuSet::EMPTY);
    for input in [
        Input::Snapshot(snap),
        Input::SnapshotFailed,
        Input::Recheck(snap),
    ] {
        let err = sim.handle(TimeNs(2), input).unwrap_err();
        assert!(matches!(
            err,
            InputError::WrongOccupancy {
                core: Occupancy::Tracked,
                ..
            }
        ));
        assert!(err.to_string().contains(input.name()), "{err}");
    }
    // The pending task is still decided against the tracked state (all idle), not blind.
    let Some(Output::Dispatch(d)) = sim.poll() else {
        panic!("the pending task")
    };
    assert!(matches!(d.target, Target::Cpu(_)), "{d:?}");
    assert_ne!(d.why, Why::Blind);
}

#[test]
fn a_knob_the_policy_lacks_is_refused_and_the_token_comes_back() {
    let topo = vm_machine();
    let all = *topo.cpus();
    let policy = crate::Builtin::Spread
        .build(&topo, &PolicyConfig::default(), 1)
        .unwrap();
    let mut c = SchedCore::with_policy(
        topo.clone(),
        policy,
        CoreConfig::DEFAULT,
        vec![Slot::EMPTY; Slot::count_for(8)],
    )
    .unwrap();
    let mode = ClusterBalance::On;
    assert_eq!(
        c.handle(TimeNs(0), Input::ClusterBalance { mode }),
        Err(InputError::NoSuchKnob {
            input: "cluster_balance"
        })
    );
    let q = Queued {
        token: 77,
        ..wakeup(5, None, &all)
    };
    c.handle(TimeNs(1), Input::Queued(q)).unwrap();
    c.handle(TimeNs(1), Input::Snapshot(snapshot(&all)))
        .unwrap();
    match c.poll() {
        Some(Output::Dispatch(d)) => assert_eq!((d.task.0, d.token), (5, 77)),
        other => panic!("{other:?}"),
    }
    assert_eq!(c.poll(), None);
}

/// The owned form hands back the input it was made from, and survives JSON.
#[test]
fn every_input_survives_its_owned_form_and_json() {
    let topo = vm_machine();
    let all = *topo.cpus();
    let some = cpus(&[1, 5]);
    let q = Queued {
        arrival: Arrival::Wakeup {
            waker: Some(Waker {
                task: Some(TaskId(3)),
                cpu: CpuId(2),
                sync: false,
            }),
        },
        last_run: Some(LastRun {
            start_ns: 1,
            stop_ns: u64::MAX,
        }),
        util: UtilSource::Hint(512),
        ..wakeup(9, Some(CpuId(7)), &some)
    };
    let unknown = Queued {
        affinity: Affinity::Unknown,
        ..slice_end(4, CpuId(0), Waiting::SharedQueue, &all)
    };
    let snap = Snapshot {
        idle: &some,
        queued: None,
        caller_cpu: Some(CpuId(3)),
    };
    let inputs = [
        Input::Queued(q),
        Input::Queued(unknown),
        Input::Snapshot(snap),
        Input::Snapshot(snapshot(&CpuSet::EMPTY)),
        Input::SnapshotFailed,
        Input::Recheck(snap),
        Input::Backlog { waiting: 1 << 40 },
        Input::Tick,
        Input::Exit {
            task: TaskId(u32::MAX),
            life: Life(u64::MAX),
        },
        Input::Started {
            task: TaskId(1),
            cpu: CpuId(1023),
        },
        Input::Stopped {
            task: TaskId(1),
            cpu: CpuId(0),
            run: LastRun {
                start_ns: 0,
                stop_ns: 5,
            },
            weight: 3,
        },
        Input::Placed {
            woken: q,
            cpu: CpuId(4),
            class: crate::TaskClass(2),
            woke: TimeNs(7),
        },
        Input::ClusterBalance {
            mode: ClusterBalance::Auto,
        },
    ];
    for input in inputs {
        let owned = input.to_owned();
        assert_eq!(owned.as_input().to_owned(), owned);
        let text = serde_json::to_string(&owned).unwrap();
        let back: OwnedInput = serde_json::from_str(&text).unwrap();
        assert_eq!(back, owned, "{text}");
    }
}
