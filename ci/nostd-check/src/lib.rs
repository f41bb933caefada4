//! Builds a decision with no std in sight; see Cargo.toml for why this proves anything.
#![no_std]

use core::panic::PanicInfo;
use hybridland_policy::{CoreKind, CpuId, CpuState, Policy, PolicyConfig, TaskHints, TopologyBuilder};

#[panic_handler]
fn panic(_: &PanicInfo<'_>) -> ! {
    loop {}
}

/// Places one task on a 2-CPU machine; returns the chosen CPU or -1.
#[unsafe(no_mangle)]
pub extern "C" fn hybridland_nostd_place() -> i32 {
    let mut b = TopologyBuilder::new();
    if b.add_cpu(CpuId(0), CoreKind::Performance, 1024, 0).is_err()
        || b.add_cpu(CpuId(1), CoreKind::Efficiency, 512, 0).is_err()
    {
        return -1;
    }
    let Ok(topo) = b.build() else { return -1 };
    let Ok(policy) = Policy::new(&topo, &PolicyConfig::default()) else { return -1 };
    let state = CpuState::all_idle(&topo);
    let allowed = *topo.cpus();
    match policy.select_cpu(&topo, &state, &TaskHints::new(&allowed)).cpu {
        Some(cpu) => i32::from(cpu.0),
        None => -1,
    }
}
