//! The stats tests: figures between samples and their line, `--help-stats`, and the server,
//! its socket and the monitor client.

use super::counters::RoundCounts;
use super::metrics::Metrics;
use super::server::{MonitorError, SOCKET_MODE};
use super::*;
use crate::safe_file::testing::scratch;
use core::time::Duration;
use hybridland_policy::{ClusterBalance, CoreKind, CpuId, Step, TopologyBuilder};
use scx_stats::prelude::*;
use scx_stats_derive::{Stats, stat_doc};
use serde::{Deserialize, Serialize};

fn sample(steps: &[Step], stale: u64, user: u64) -> Sample {
    let mut counters = Counters::default();
    for s in steps {
        counters.steps.add(*s);
    }
    counters.stale = stale;
    Sample {
        counters,
        fw: Framework {
            user,
            running: 1,
            ..Default::default()
        },
        balance: Some(ClusterBalance::On),
        backlog: 0,
        tasks_tracked: 7,
        tasks_high_water: 9,
        tasks_untracked: 0,
        class_drift: 0,
        events_dropped: 0,
        loop_cpu_ns: 0,
    }
}

#[test]
fn metrics_are_the_deltas_between_samples_and_render_as_the_log_line() {
    let prev = sample(&[Step::IdlePCore], 0, 5);
    let mut now = sample(&[Step::IdlePCore, Step::IdlePCore, Step::IdlePCore], 1, 12);
    now.counters.rounds = RoundCounts {
        batches: 4,
        empty: 1,
        tasks: 6,
        snapshots: 5,
        snapshot_ns: 2_500_000,
        decide_ns: 40_000,
        timer_wakes: 3,
    };
    now.loop_cpu_ns = 3_000_000;
    now.counters.preempts = 2;
    now.counters.yielded = 3;
    // Ten wake-ups asked, four with nothing free (one of them pinned, taken in the kernel):
    // four of the six placed, one declined per reason.
    now.fw.fast = [0, 3, 1, 0, 0];
    now.fw.fast_asked = 10;
    now.fw.fast_no_free = 4;
    now.fw.fast_pinned = 1;
    now.fw.fast_declined = [1, 1];
    now.counters.fast_path.class_writes = 2;
    now.counters.fast_path.class_errors = 1;
    now.counters.fast_path.class_gone = 3;
    now.counters.fast_path.placed = 4;
    now.counters.fast_path.lost = 5;
    now.class_drift = 6;
    let m = Metrics::between(
        &prev,
        &now,
        &[(CoreKind::Performance, 66), (CoreKind::Efficiency, 10)],
    );
    assert_eq!(m.placed["idle-p-core"], 2);
    assert_eq!((m.stale, m.fw_user, m.fw_running), (1, 7, 1));
    assert_eq!(
        m.line(),
        "stats: placed waker-cpu=0 idle-p-core=2 idle-e-core=0 busy-sibling=0 no-idle=0 | overflow=0 stale=1 \
         nudge=0 kept=0 yielded=3 preempt=2 | tasks=7 tasks-max=9 exit=0 exit-tracked=0 renewed=0 stale-exit=0 waking=0 by-task=0 to-core=0 refill=0 | \
         busy \
         performance=66% efficiency=10% | loop batches=4 empty=1 tasks=6 snapshots=5 \
         snapshot-us=2500 decide-us=40 timer-wakes=3 cpu-us=3000 | balance=on | fw user=7 kernel=0 \
         fast=4 fast-asked=10 fast-no-free=4 fast-pinned=1 fast-cover=66% fast-shared-queue=1 fast-race=1 \
         class-writes=2 class-gone=3 class-errors=1 class-drift=6 fast-placed=4 fast-lost=5 cancel=0 bounce=0 failed=0 congested=0 running=1 queued=0"
    );
    // The error figures appear only when there is something to say.
    let mut errs = now;
    errs.counters.snapshot_errors = 3;
    errs.backlog = 4;
    let line = Metrics::between(&prev, &errs, &[]).line();
    assert!(
        line.contains(" kept=0 yielded=3 preempt=2 dispatch-retries=0 backlog=4 snapshot-errors=3 dequeue-errors=0 affinity-errors=0 | tasks=7 "),
        "{line}"
    );
    let mut lost = now;
    lost.events_dropped = 5;
    let line = Metrics::between(&prev, &lost, &[]).line();
    assert!(
        line.contains(" refill=0 events-dropped=5 event-errors=0 untracked=0 | busy"),
        "{line}"
    );
    // Own threads the kernel took from a blocked loop's queue: only when there were some.
    let mut rescued = now;
    rescued.fw.own_rescued = 2;
    let line = Metrics::between(&prev, &rescued, &[]).line();
    assert!(
        line.ends_with(" running=1 queued=0 own-rescued=2 own-untracked=0"),
        "{line}"
    );
    // A framework reload restarts its counters: the interval shows zero, not a wrap.
    let mut reloaded = now;
    reloaded.fw.user = 2;
    assert_eq!(Metrics::between(&now, &reloaded, &[]).fw_user, 0);
}

#[test]
fn help_stats_describes_every_figure() {
    let text = describe().unwrap();
    let meta = Metrics::meta();
    assert!(
        text.starts_with("[Metrics] scx_hybridland: counts over the interval"),
        "{text}"
    );
    for (name, field) in &meta.fields {
        let desc = field.attrs.desc.as_deref().unwrap_or_default();
        assert!(!desc.is_empty(), "{name} has no description");
        assert!(
            text.lines()
                .any(|l| l.trim_start().starts_with(name.as_str()) && l.ends_with(desc)),
            "{name}: {text}"
        );
    }
    assert!(
        text.contains("placed") && text.contains("{string:u64}"),
        "{text}"
    );
    assert_eq!(meta.fields.len(), 58);
}

/// A server on a socket in a temporary directory, a fake loop answering its requests, and
/// the `--monitor` client reading it: each client request gives the deltas since the
/// previous one.
#[test]
fn the_monitor_reads_the_loops_figures_through_the_socket() {
    let dir = scratch();
    let path = dir.path().join("root/stats");
    let mut b = TopologyBuilder::new();
    b.add_cpu(CpuId(0), CoreKind::Performance, 1024, 0).unwrap();
    // serve() changes the umask for a moment: not while another test looks at it.
    let guard = crate::safe_file::testing::UMASK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let (server, link) = serve(Kinds::new(&b.build().unwrap()), &path).unwrap();
    drop(guard);
    // The loop: every request gets a sample two placements and three dispatches further.
    // Left running at the end: the server's threads keep its channel open.
    std::thread::spawn(move || {
        let mut n = 0u64;
        while link.requests.recv().is_ok() {
            n += 1;
            let steps = vec![Step::IdleECore; 2 * n as usize];
            if link.samples.send(sample(&steps, n, 3 * n)).is_err() {
                break;
            }
        }
    });
    let seen = core::cell::RefCell::new(Vec::new());
    monitor(
        &path,
        Duration::ZERO,
        || seen.borrow().len() >= 3,
        |m| {
            seen.borrow_mut().push(m.clone());
            Ok(())
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    drop(server);
    let seen = seen.into_inner();
    assert_eq!(seen.len(), 3);
    for m in &seen {
        assert_eq!(m.placed["idle-e-core"], 2, "{m:?}");
        assert_eq!((m.stale, m.fw_user), (1, 3), "{m:?}");
        assert_eq!(m.cluster_balance, "on");
        assert!(m.busy_pct.contains_key("performance"), "{m:?}");
    }
}

/// Even under a loose umask the socket is the owner's only, from the moment it exists.
#[test]
fn the_socket_is_owner_only_whatever_the_umask() {
    use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _};
    let dir = scratch();
    let path = dir.path().join("scx/root/stats");
    let mut b = TopologyBuilder::new();
    b.add_cpu(CpuId(0), CoreKind::Performance, 1024, 0).unwrap();
    let guard = crate::safe_file::testing::UMASK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let old = rustix::process::umask(rustix::fs::Mode::empty());
    let served = serve(Kinds::new(&b.build().unwrap()), &path);
    let after = rustix::process::umask(old);
    drop(guard);
    let (server, link) = served.unwrap();
    let meta = std::fs::symlink_metadata(&path).unwrap();
    let dir_modes: Vec<u32> = [dir.path().join("scx"), dir.path().join("scx/root")]
        .iter()
        .map(|d| std::fs::metadata(d).unwrap().mode() & 0o777)
        .collect();
    // Stopped before anything is asserted: a server dropped while a failed assertion
    // unwinds waits for ever on its own wake-up connection.
    drop(server);
    drop(link);
    // The umask is given back.
    assert_eq!(after, rustix::fs::Mode::empty());
    assert!(meta.file_type().is_socket());
    assert_eq!(meta.mode() & 0o7777, SOCKET_MODE);
    assert_eq!(meta.uid(), rustix::process::geteuid().as_raw());
    // The directories scx_stats made on the way are closed too.
    assert_eq!(dir_modes, [0o700, 0o700]);
}

#[test]
fn the_monitor_reports_nothing_without_a_server_and_refuses_another_schedulers_figures() {
    let dir = scratch();
    let path = dir.path().join("stats");
    let mut tries = 0;
    let mut printed = 0;
    monitor(
        &path,
        Duration::ZERO,
        || {
            tries += 1;
            tries > 3
        },
        |_| {
            printed += 1;
            Ok(())
        },
    )
    .unwrap();
    assert_eq!(printed, 0);

    // A server whose figures are some other scheduler's.
    #[stat_doc]
    #[derive(Clone, Debug, Default, Serialize, Deserialize, Stats)]
    #[stat(top)]
    struct Other {
        #[stat(desc = "Number of running tasks")]
        nr_running: u64,
    }
    let data = StatsServerData::<(), ()>::new()
        .add_meta(Other::meta())
        .add_stats("top", Box::new(|_, _| Other { nr_running: 3 }.to_json()));
    let server = StatsServer::new(data).set_path(&path).launch().unwrap();
    let err = monitor(&path, Duration::ZERO, || false, |_| Ok(())).unwrap_err();
    assert!(matches!(err, MonitorError::NotOurs(_)), "{err}");
    assert!(
        err.to_string().contains("another sched_ext scheduler"),
        "{err}"
    );
    drop(server);
}
