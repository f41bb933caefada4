//! One placement decision and the cluster-balance decision on hybrid machines of 8 to 1024
//! CPUs, and the per-task rules (utilisation estimate, vtime, slice sizing, up-migration,
//! keeping the CPU state current). See BENCHMARKS.md for how to run them and what they
//! measured.
#![allow(missing_docs)] // criterion_main! generates an undocumented `main`.

use core::hint::black_box;
use core::time::Duration;
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use hybridland_benches::{Case, CoreWakeups, Load, SIZES, balance_step2, wakeup};
use hybridland_policy::testkit::rules;
use hybridland_policy::{CpuId, Run, TaskState, VtimeClock, slice_ns};

fn placement(c: &mut Criterion) {
    for (load, primary) in Load::ALL
        .iter()
        .map(|l| (*l, false))
        .chain(core::iter::once((Load::Half, true)))
    {
        let name = if primary {
            "placement/primary-performance-half-busy".to_string()
        } else {
            format!("placement/{}", load.name())
        };
        bench_placement(c, &name, |cpus| wakeup(cpus, load, primary));
    }
}

/// One placement decision ([`rules::select_cpu`]) as group `name`, one benchmark per machine
/// size, on the case `case` makes for it.
fn bench_placement(c: &mut Criterion, name: &str, case: impl Fn(usize) -> Case) {
    let mut group = c.benchmark_group(name);
    for cpus in SIZES {
        group.bench_with_input(BenchmarkId::from_parameter(cpus), &case(cpus), |b, case| {
            b.iter(|| {
                black_box(rules::select_cpu(
                    &case.policy,
                    black_box(&case.topo),
                    black_box(&case.state),
                    black_box(&case.task()),
                ))
            })
        });
    }
    group.finish();
}

fn cluster_balance(c: &mut Criterion) {
    let mut group = c.benchmark_group("cluster-balance/balance_active");
    for cpus in SIZES {
        let case = balance_step2(cpus);
        group.bench_with_input(BenchmarkId::from_parameter(cpus), &case, |b, case| {
            b.iter(|| {
                black_box(
                    case.policy
                        .balance_active(black_box(&case.topo), black_box(&case.state)),
                )
            })
        });
    }
    group.finish();
    bench_placement(c, "cluster-balance/step2-placement", balance_step2);
}

fn per_task(c: &mut Criterion) {
    let mut group = c.benchmark_group("per-task");
    // A task that ran 2 ms of every 5 for a while: each call feeds the next run, so the
    // estimator decays a few periods and accumulates one, as on a real slice end.
    let mut task = TaskState::new();
    let mut at = 1_000_000u64;
    group.bench_function("on_run", |b| {
        b.iter(|| {
            let run = Run {
                cpu: CpuId(3),
                capacity: 600,
                start_ns: at,
                stop_ns: at + 2_000_000,
                weight: 100,
            };
            at += 5_000_000;
            black_box(task.on_run(black_box(&run)))
        })
    });
    group.bench_function("on_wakeup", |b| {
        b.iter(|| {
            at += 3_000_000;
            task.on_wakeup(black_box(at));
        })
    });
    let mut clock = VtimeClock::new();
    group.bench_function("vtime-queue-and-start", |b| {
        b.iter(|| {
            let key = clock.queue(black_box(&mut task), black_box(5_000_000));
            clock.on_start(key);
            black_box(key)
        })
    });
    group.bench_function("slice_ns", |b| {
        b.iter(|| black_box(slice_ns(black_box(5_000_000), black_box(3))))
    });
    group.finish();

    // Up-migration for a task on the busiest E-cluster's CPU, half the machine busy.
    let mut group = c.benchmark_group("per-task/up_migration");
    for cpus in SIZES {
        let case = balance_step2(cpus);
        let on = case
            .topo
            .cpus()
            .iter()
            .filter(|c| !case.state.is_idle(*c))
            .last()
            .expect("a busy CPU");
        group.bench_with_input(BenchmarkId::from_parameter(cpus), &case, |b, case| {
            b.iter(|| {
                black_box(rules::up_migration(
                    &case.policy,
                    black_box(&case.topo),
                    black_box(&case.state),
                    black_box(on),
                    black_box(&case.task()),
                ))
            })
        });
    }
    group.finish();

    // Keeping the state current: a task arrives on an idle E-core and leaves again.
    let mut group = c.benchmark_group("per-task/occupy-release");
    for cpus in SIZES {
        let case = balance_step2(cpus);
        let cpu = case.decide().cpu.expect("an idle CPU");
        let mut state = case.state.clone();
        group.bench_function(BenchmarkId::from_parameter(cpus), |b| {
            b.iter(|| {
                state.occupy(black_box(&case.topo), black_box(cpu));
                state.release(black_box(&case.topo), black_box(cpu))
            })
        });
    }
    group.finish();
}

/// Short runs: the whole suite has to finish in a few minutes on a 2-core machine.
fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_millis(1200))
        .sample_size(30)
}

/// One wake-up through the scheduler core ([`CoreWakeups::step`]), half the machine busy.
fn core_wakeup(c: &mut Criterion) {
    let mut group = c.benchmark_group("core/wakeup");
    for cpus in SIZES {
        let mut wakeups = CoreWakeups::new(&wakeup(cpus, Load::Half, false));
        group.bench_function(BenchmarkId::from_parameter(cpus), |b| {
            b.iter(|| wakeups.step())
        });
    }
    group.finish();
}

criterion_group! {
    name = policy;
    config = config();
    targets = placement, cluster_balance, per_task, core_wakeup
}
criterion_main!(policy);
