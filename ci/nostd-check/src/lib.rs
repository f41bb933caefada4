//! Builds a decision with no std in sight; see Cargo.toml for why this proves anything.
#![no_std]

use core::panic::PanicInfo;
use hybridland_policy::{
    Affinity, Arrival, CoreConfig, CoreKind, CpuId, Input, Life, Occupancy, Output, PolicyConfig, Queued,
    SchedCore, Slot, Target, TaskId, TimeNs, TopologyBuilder, UtilSource,
};

#[panic_handler]
fn panic(_: &PanicInfo<'_>) -> ! {
    loop {}
}

/// Places one task on a 2-CPU machine through the scheduler core, with task storage on the
/// stack (no allocator exists here); returns the chosen CPU or -1.
#[unsafe(no_mangle)]
pub extern "C" fn hybridland_nostd_place() -> i32 {
    let mut b = TopologyBuilder::new();
    if b.add_cpu(CpuId(0), CoreKind::Performance, 1024, 0).is_err()
        || b.add_cpu(CpuId(1), CoreKind::Efficiency, 512, 0).is_err()
    {
        return -1;
    }
    let Ok(topo) = b.build() else { return -1 };
    let allowed = *topo.cpus();
    let storage = [Slot::EMPTY; 8];
    // The core tracks occupancy itself: every CPU starts idle, and no snapshot is needed.
    let config = CoreConfig {
        occupancy: Occupancy::Tracked,
        ..CoreConfig::DEFAULT
    };
    let Ok(mut core) = SchedCore::new(topo, &PolicyConfig::default(), config, storage) else {
        return -1;
    };
    let task = Queued {
        task: TaskId(1),
        life: Life::UNKNOWN,
        token: 0,
        arrival: Arrival::Wakeup { waker: None },
        cpu: None,
        last_run: None,
        weight: 100,
        affinity: Affinity::Cpus(&allowed),
        util: UtilSource::Estimate,
    };
    if core.handle(TimeNs(0), Input::Queued(task)).is_err() {
        return -1;
    }
    match core.poll() {
        Some(Output::Dispatch(d)) => match d.target {
            Target::Cpu(cpu) => i32::from(cpu.0),
            _ => -1,
        },
        _ => -1,
    }
}
