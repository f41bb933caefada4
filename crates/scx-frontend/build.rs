//! Builds the BPF objects: scx_rustland_core's scheduler (its `main.bpf.c`, `intf.h` and the
//! `src/bpf.rs` connector are generated into this directory by `RustLandBuilder`) and the
//! project's own programs: the idle snapshot (`src/bpf/idle_snapshot.bpf.c`, skeleton `idle`)
//! and the task event source (`src/bpf/task_events.bpf.c`, skeleton `task_events`).

fn main() {
    scx_rustland_core::RustLandBuilder::new()
        .and_then(|mut b| b.build())
        .expect("building the scx_rustland_core BPF scheduler (needs clang >= 18: BPF_CLANG)");
    let mut idle = scx_cargo::BpfBuilder::new().expect("BPF toolchain (clang >= 18: BPF_CLANG)");
    idle.enable_skel("src/bpf/idle_snapshot.bpf.c", "idle");
    idle.build().expect("building src/bpf/idle_snapshot.bpf.c");
    let mut events = scx_cargo::BpfBuilder::new().expect("BPF toolchain (clang >= 18: BPF_CLANG)");
    events.enable_skel("src/bpf/task_events.bpf.c", "task_events");
    events.build().expect("building src/bpf/task_events.bpf.c");
}
