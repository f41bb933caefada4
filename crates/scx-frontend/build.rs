//! Builds the BPF objects: scx_rustland_core's scheduler (its `main.bpf.c`, `intf.h` and the
//! `src/bpf.rs` connector are generated into this directory by `RustLandBuilder`, which gets one
//! line of ours: the watchdog timeout, see [`patch_connector`]) and the
//! project's own programs: the idle snapshot (`src/bpf/idle_snapshot.bpf.c`, skeleton `idle`)
//! and the task event source (`src/bpf/task_events.bpf.c`, skeleton `task_events`).

/// The line of scx_rustland_core 2.4.15's connector after which the watchdog line goes: the
/// connector sets the struct_ops fields there, before the scheduler is loaded.
const WATCHDOG_ANCHOR: &str =
    "        skel.struct_ops.rustland_mut().exit_dump_len = exit_dump_len;\n";
/// Our one line in the generated connector: the kernel's watchdog timeout from
/// `--watchdog-timeout-ms` (the framework's BPF source fixes 5000 ms, which a loaded host
/// passed twice in the VM benchmarks).
const WATCHDOG_LINE: &str =
    "        skel.struct_ops.rustland_mut().timeout_ms = crate::watchdog::timeout_ms();\n";

/// Adds [`WATCHDOG_LINE`] to the connector `RustLandBuilder` just wrote. Fails the build if
/// the anchor is not there exactly once: a framework upgrade must revisit this patch.
fn patch_connector(path: &str) {
    let text = std::fs::read_to_string(path).expect("reading the generated connector");
    assert_eq!(
        text.matches(WATCHDOG_ANCHOR).count(),
        1,
        "{path}: the watchdog patch's anchor is not there exactly once; scx_rustland_core changed: update build.rs"
    );
    let patched = text.replace(
        WATCHDOG_ANCHOR,
        &format!("{WATCHDOG_ANCHOR}{WATCHDOG_LINE}"),
    );
    std::fs::write(path, patched).expect("writing the patched connector");
}

fn main() {
    scx_rustland_core::RustLandBuilder::new()
        .and_then(|mut b| b.build())
        .expect("building the scx_rustland_core BPF scheduler (needs clang >= 18: BPF_CLANG)");
    patch_connector("src/bpf.rs");
    let mut idle = scx_cargo::BpfBuilder::new().expect("BPF toolchain (clang >= 18: BPF_CLANG)");
    idle.enable_skel("src/bpf/idle_snapshot.bpf.c", "idle");
    idle.build().expect("building src/bpf/idle_snapshot.bpf.c");
    let mut events = scx_cargo::BpfBuilder::new().expect("BPF toolchain (clang >= 18: BPF_CLANG)");
    events.enable_skel("src/bpf/task_events.bpf.c", "task_events");
    events.build().expect("building src/bpf/task_events.bpf.c");
}
