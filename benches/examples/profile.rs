//! Runs one benchmarked decision many times, for instruction counts under callgrind:
//!
//! ```sh
//! cargo build --release -p hybridland-benches --example profile
//! valgrind --tool=callgrind --toggle-collect='*decide_many*' \
//!     target/release/examples/profile half-busy 20 10000
//! ```
//! Cases: `nearly-idle`, `half-busy`, `nearly-full`, `primary` (P-cores primary, half busy)
//! and `balance` (step-2 placement with cluster balance on). Divide the collected
//! instructions by the count for instructions per decision.
//!
//! `profile core-wakeup CPUS COUNT` runs `core/wakeup`'s loop (collect `*core_many*`).
//!
//! `profile replay ENTRIES LOOPS` replays the simulator benchmark's workload with
//! `ENTRIES` x 100 tasks of `LOOPS` run/sleep rounds once and prints its size, for peak-memory
//! measurements (`/usr/bin/time -v`): memory should follow the number of tasks, not events.

use core::hint::black_box;
use hybridland_benches::{Case, Load, SIM_PRESET, balance_step2, large_trace_json, wakeup};
use hybridland_policy::{
    Affinity, Arrival, CoreConfig, Dispatch, LastRun, PolicyConfig, Queued, SchedCore, Slot,
    Target, UtilSource,
};

#[inline(never)]
fn decide_many(case: &Case, n: u64) -> u64 {
    let mut sum = 0u64;
    for _ in 0..n {
        let p = black_box(case).decide();
        sum += u64::from(p.cpu.map_or(0, |c| c.0));
    }
    sum
}

/// `core/wakeup`'s loop (benches/benches/policy.rs): a task handed to the scheduler core, its
/// dispatch polled, its run reported; half the machine busy, 1,000 tasks taking turns.
#[inline(never)]
fn core_many(case: &Case, n: u64) -> u64 {
    let mut core = SchedCore::new(
        case.topo.clone(),
        &PolicyConfig::default(),
        CoreConfig::DEFAULT,
        vec![Slot::EMPTY; Slot::count_for(1_000)],
    )
    .expect("a core");
    for cpu in case.topo.cpus().iter().filter(|c| !case.state.is_idle(*c)) {
        core.handle_started(u32::MAX - 1, cpu);
    }
    let (mut at, mut task, mut sum) = (1_000_000u64, 0u32, 0u64);
    for _ in 0..n {
        at += 10_000;
        task = (task + 1) % 1_000;
        let q = Queued {
            task,
            arrival: Arrival::Wakeup { waker: None },
            cpu: case.prev_cpu,
            last_run: None,
            weight: 100,
            affinity: Affinity::Cpus(&case.allowed),
            util: UtilSource::Estimate,
        };
        let _ = core.handle_queued(at, black_box(&q));
        if let Some(Dispatch {
            target: Target::Cpu(cpu),
            ..
        }) = black_box(core.poll_dispatch())
        {
            sum += u64::from(cpu.0);
            let ran = LastRun {
                start_ns: at,
                stop_ns: at + 5_000,
            };
            core.handle_stopped(task, cpu, ran, 100);
        }
    }
    sum
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: profile nearly-idle|half-busy|nearly-full|primary|balance CPUS COUNT";
    let (Some(kind), Some(cpus), Some(n)) = (args.get(1), args.get(2), args.get(3)) else {
        eprintln!("{usage}");
        std::process::exit(2);
    };
    if kind == "core-wakeup" {
        let cpus: usize = cpus.parse().expect("CPUS is a number");
        let n: u64 = n.parse().expect("COUNT is a number");
        println!(
            "checksum {}",
            core_many(&wakeup(cpus, Load::Half, false), n)
        );
        return;
    }
    if kind == "replay" {
        let entries: usize = cpus.parse().expect("ENTRIES is a number");
        let loops: u32 = n.parse().expect("LOOPS is a number");
        replay(entries, loops);
        return;
    }
    let cpus: usize = cpus.parse().expect("CPUS is a number");
    let n: u64 = n.parse().expect("COUNT is a number");
    let case = match kind.as_str() {
        "nearly-idle" => wakeup(cpus, Load::NearlyIdle, false),
        "half-busy" => wakeup(cpus, Load::Half, false),
        "nearly-full" => wakeup(cpus, Load::NearlyFull, false),
        "primary" => wakeup(cpus, Load::Half, true),
        "balance" => balance_step2(cpus),
        _ => {
            eprintln!("{usage}");
            std::process::exit(2);
        }
    };
    println!("{:?} (checksum {})", case.decide(), decide_many(&case, n));
}

fn replay(entries: usize, loops: u32) {
    let text = large_trace_json(entries, 100, loops);
    let trace = hybridland_sim::Trace::from_json_str(&text, "large.json").expect("parses");
    drop(text);
    let machine = hybridland_sim::presets::lookup(SIM_PRESET).expect("preset exists");
    let knobs = hybridland_sim::Knobs::new();
    let report = hybridland_sim::replay(&machine, &trace, "hybridland", &knobs).expect("replays");
    println!(
        "{} tasks, {} events",
        report.summary.tasks, report.summary.events
    );
}
