//! Generated rounds through the loop, every decision checked against the policy's invariants.

use super::*;

/// One round as the framework hands it over: the idle CPUs and the CPUs with tasks in
/// their own queue (bit masks over the VM's 8 CPUs), the loop's own CPU, and tasks back:
/// `(pid, slice end)`, a slice end only for a task running from an earlier round.
#[derive(Clone, Debug)]
struct Round {
    idle: u8,
    queued: u8,
    own: Option<u16>,
    tasks: Vec<(i32, bool)>,
}

fn random_rounds(rng: &mut hybridland_policy::rng::Pcg32) -> Vec<Round> {
    (0..1 + rng.below(30))
        .map(|_| Round {
            idle: rng.below(256) as u8,
            queued: if rng.below(4) == 0 {
                rng.below(256) as u8
            } else {
                0
            },
            own: (rng.below(2) == 0).then(|| rng.below(8) as u16),
            tasks: (0..1 + rng.below(5))
                .map(|_| (1 + rng.below(12) as i32, rng.below(2) == 0))
                .collect(),
        })
        .collect()
}

fn mask(bits: u8) -> CpuSet {
    let mut set = CpuSet::EMPTY;
    for cpu in (0..8u16).filter(|c| bits & (1 << c) != 0) {
        set.insert(CpuId(cpu));
    }
    set
}

/// The shared invariants over the live loop's own sequence: generated rounds go through
/// the loop as the framework hands them over (dequeue, snapshot and recheck, the core,
/// dispatch), and every hybridland decision the core makes on them, with the state it had
/// at that point of the batch, passes the policy crate's checkers. One scheduler takes
/// every round, checked after each: seeded draws, not proptest, whose shrinking builds
/// thousands of schedulers (a few MiB each) in the framework's 64 MiB heap arena this test
/// binary runs in, which then fails an allocation and hangs instead of reporting.
#[test]
fn every_decision_the_live_loop_asks_for_obeys_the_invariants() {
    let mut s = small(false);
    s.core.start_audit();
    // Where each task was sent, and since when.
    let mut placed: std::collections::BTreeMap<i32, (i32, u64)> = Default::default();
    let mut handed = 0u64;
    for seed in 0..256 {
        let mut rng = hybridland_policy::rng::Pcg32::new(seed, 7);
        for (i, r) in random_rounds(&mut rng).iter().enumerate() {
            let idle = mask(r.idle);
            // The snapshot and the recheck the batch may take.
            s.ops.snapshots.extend([Ok(idle), Ok(idle)]);
            s.ops.queued_cpus = mask(r.queued);
            s.ops.own = r.own.map(CpuId);
            let now = now_ns();
            let mut seen = Vec::new();
            for &(pid, slice_end) in &r.tasks {
                if seen.contains(&pid) {
                    continue; // a task is in the framework's queue once
                }
                seen.push(pid);
                let mut t = wakeup(pid);
                if let Some(&(cpu, since)) = placed.get(&pid).filter(|(c, _)| *c >= 0) {
                    t.cpu = cpu;
                    t.start_ts = since;
                    t.stop_ts = now.max(since + 1);
                    if slice_end {
                        t.flags = 0;
                    }
                }
                handed += 1;
                s.ops.incoming.push_back(Ok(t));
            }
            s.schedule_batch().unwrap();
            s.ops.snapshots.clear();
            for d in s.ops.ring.drain(..) {
                placed.insert(d.pid, (d.cpu, now));
            }
            let audit = s.core.audit().unwrap();
            if let Some((task, v)) = &audit.first_violation {
                panic!("seed {seed}, round {i} ({r:?}): task {task}: {v}");
            }
            // Every task handed over was checked: every snapshot succeeds here and every
            // affinity is known, so the core decided each one on its state.
            assert_eq!(
                audit.wakeups + audit.slice_ends,
                handed,
                "seed {seed} round {i}"
            );
        }
    }
}
