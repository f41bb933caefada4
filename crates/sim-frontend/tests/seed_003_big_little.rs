//! Seed 003, big.LITTLE on Arm TC2 (2 fast A15 + 3 slow A7): a lone CPU-bound task ran 2.09 s
//! on a fast CPU and 4.33 s on a slow one, and without capacity-aware wake-up only some runs
//! got the fast CPU; a 5-thread OpenMP job ran 14.34% slower when summed-capacity balance put
//! 3 threads on the 2 fast CPUs and left a slow CPU idle. Acceptance: hybridland gives the lone
//! task a fast CPU on every one of 100 seeds, capacity-blind wake-up spreads it over fast and
//! slow, 5 threads run one per CPU and summed-capacity is measurably slower.

mod util;

use util::{load_trace, pct_slower, replay};

const FAST_NS: u64 = 2_090_000_000;
const SLOW_NS: u64 = 4_330_000_000;

fn near(ns: u64, target: u64) -> bool {
    ns.abs_diff(target) * 20 <= target
}

#[test]
fn lone_task_gets_a_fast_cpu_on_every_seed() {
    let trace = load_trace("seed003-lone.json");
    let mut blind_fast = 0;
    let mut blind_slow = 0;
    for seed in 0..100 {
        let hybrid = replay(&trace, "hybridland", &[], Some(seed));
        let ns = hybrid.summary.makespan_ns;
        assert!(
            near(ns, FAST_NS),
            "seed {seed}: {ns} ns is not near {FAST_NS}"
        );
        assert_eq!(hybrid.tasks[0].ran_efficiency_ns, 0, "seed {seed}");

        let blind = replay(&trace, "capacity-blind", &[], Some(seed))
            .summary
            .makespan_ns;
        if near(blind, FAST_NS) {
            blind_fast += 1;
        } else if near(blind, SLOW_NS) {
            blind_slow += 1;
        } else {
            panic!("seed {seed}: capacity-blind took {blind} ns, neither fast nor slow");
        }
    }
    println!(
        "seed 003: 100 seeds: hybridland 100 fast; capacity-blind {blind_fast} within 5% of 2.09 s, {blind_slow} within 5% of 4.33 s"
    );
    assert!(blind_fast > 0 && blind_slow > 0);
    assert!(blind_slow > blind_fast, "3 of 5 CPUs are slow");
}

#[test]
fn five_threads_run_one_per_cpu_and_summed_capacity_is_slower() {
    let trace = load_trace("seed003-openmp.json");
    let hybrid = replay(&trace, "hybridland", &[], None);
    assert_eq!(hybrid.summary.tasks_finished, 5);
    // Never queued, never moved: each thread kept a CPU of its own.
    assert_eq!(hybrid.summary.migrations, 0);
    let queued = hybrid
        .steps
        .iter()
        .find(|s| s.step == "no-idle")
        .map_or(0, |s| s.count);
    assert_eq!(queued, 0, "{:?}", hybrid.steps);
    let on_fast = hybrid
        .tasks
        .iter()
        .filter(|t| t.ran_performance_ns > 0)
        .count();
    let on_slow = hybrid
        .tasks
        .iter()
        .filter(|t| t.ran_efficiency_ns > 0)
        .count();
    assert_eq!((on_fast, on_slow), (2, 3));

    let summed = replay(&trace, "summed-capacity", &[], None);
    let slower = pct_slower(summed.summary.makespan_ns, hybrid.summary.makespan_ns);
    println!(
        "seed 003: OpenMP job: hybridland {} ns, summed-capacity {} ns ({slower:.1}% slower)",
        hybrid.summary.makespan_ns, summed.summary.makespan_ns
    );
    assert!(slower >= 5.0, "summed-capacity only {slower:.1}% slower");
    let slow_cluster = &summed.clusters[1];
    assert!(
        slow_cluster.avg_running < 2.2,
        "a slow CPU stays idle: {slow_cluster:?}"
    );
}
