//! Builds the BPF objects: scx_rustland_core's scheduler (its `main.bpf.c`, `intf.h` and the
//! `src/bpf.rs` connector are generated into this directory by `RustLandBuilder`; the connector
//! gets the watchdog timeout and the queued task's start time, see [`patch_connector`],
//! `intf.h` that start time ([`patch_intf`]), and `main.bpf.c` the wake-up fast path in
//! select_cpu and in enqueue, the helper's dispatch, the preempting kick, the rescue of the
//! scheduler's own threads and the start time's copy, see [`patch_scheduler`]) and
//! the project's own programs: the idle snapshot (`src/bpf/idle_snapshot.bpf.c`, skeleton
//! `idle`) and the task event source (`src/bpf/task_events.bpf.c`, skeleton `task_events`);
//! and, for the host, the fast path's walk (`src/bpf/host_walk.c`), which only its test calls.

/// The line of scx_rustland_core 2.4.15's connector after which the watchdog line goes: the
/// connector sets the struct_ops fields there, before the scheduler is loaded.
const WATCHDOG_ANCHOR: &str =
    "        skel.struct_ops.rustland_mut().exit_dump_len = exit_dump_len;\n";
/// Our one line in the generated connector: the kernel's watchdog timeout from
/// `--watchdog-timeout-ms` (the framework's BPF source fixes 5000 ms, which a loaded host
/// passed twice in the VM benchmarks).
const WATCHDOG_LINE: &str =
    "        skel.struct_ops.rustland_mut().timeout_ms = crate::watchdog::timeout_ms();\n";

/// The queued-task record's last fields in scx_rustland_core 2.4.15's `intf.h`, its connector's
/// `QueuedTask` and the connector's copy from one to the other, after which each gets the
/// task's start time (`task_struct->start_time`): the life of its pid
/// (`hybridland_policy::Life`), so a thread that reuses an id before the old thread's exit
/// reaches the loop is a new task.
const INTF_ANCHOR: &str = "\tu64 enq_cnt;\n\tchar comm[TASK_COMM_LEN];";
const INTF_LINE: &str = "\tu64 enq_cnt;\n\tu64 start_time; /* scx_hybridland: the task's start, its pid's life */\n\tchar comm[TASK_COMM_LEN];";
const QUEUED_TASK_ANCHOR: &str = "    pub enq_cnt: u64,\n    pub comm:";
const QUEUED_TASK_LINE: &str = "    pub enq_cnt: u64,\n    pub start_time: u64, // scx_hybridland: the task's start, its pid's life\n    pub comm:";
const TO_QUEUED_ANCHOR: &str = "            enq_cnt: self.inner.enq_cnt,\n";
const TO_QUEUED_LINE: &str =
    "            enq_cnt: self.inner.enq_cnt,\n            start_time: self.inner.start_time,\n";
/// The line of that scheduler's `get_task_info` after which the start time is copied.
const TASK_INFO_ANCHOR: &str = "\ttask->enq_cnt = ++tctx->enq_cnt;\n";
const TASK_INFO_LINE: &str = "\ttask->enq_cnt = ++tctx->enq_cnt;\n\t/* scx_hybridland: the pid's life (build.rs). */\n\ttask->start_time = p->start_time;\n";

/// Adds the start time to the queued-task record of the interface `RustLandBuilder` just
/// wrote ([`INTF_LINE`]).
fn patch_intf(path: &str) {
    let text = std::fs::read_to_string(path).expect("reading the generated intf.h");
    let text = replace_once(path, &text, INTF_ANCHOR, INTF_LINE);
    std::fs::write(path, text).expect("writing the patched intf.h");
}

/// Adds [`WATCHDOG_LINE`] and the queued task's start time ([`QUEUED_TASK_LINE`],
/// [`TO_QUEUED_LINE`]) to the connector `RustLandBuilder` just wrote. Fails the build if an
/// anchor is not there exactly once: a framework upgrade must revisit this patch.
fn patch_connector(path: &str) {
    let text = std::fs::read_to_string(path).expect("reading the generated connector");
    let text = replace_once(
        path,
        &text,
        WATCHDOG_ANCHOR,
        &format!("{WATCHDOG_ANCHOR}{WATCHDOG_LINE}"),
    );
    let text = replace_once(path, &text, QUEUED_TASK_ANCHOR, QUEUED_TASK_LINE);
    let text = replace_once(path, &text, TO_QUEUED_ANCHOR, TO_QUEUED_LINE);
    std::fs::write(path, text).expect("writing the patched connector");
}

/// The lines of scx_rustland_core 2.4.15's `main.bpf.c` before which the fast path's file is
/// included: the comment of the framework's `dispatch_task`, after the helpers the fast path
/// uses (`try_lookup_task_ctx`, `cpu_to_dsq`).
const DISPATCH_TASK_ANCHOR: &str =
    "/*\n * Dispatch a task to a target per-CPU DSQ, waking up the corresponding CPU, if\n";
const FAST_WAKE_INCLUDE: &str = "#include \"src/bpf/fast_wake.bpf.h\"\n\n";

/// The lines of that `dispatch_task` after which a thread of the scheduler's own is noted as
/// dispatched (`hl_own_dispatched`) and the nudge helper is dispatched our way
/// (`hl_dispatch_helper`: into the local queue of its CPU, which no other work or order in the
/// framework's queues can keep it out of).
const HELPER_ANCHOR: &str = "\tprev_cpu = scx_bpf_task_cpu(p);\n\n\t/*\n\t * Dispatch task to the shared DSQ if the user-space scheduler\n";
const HELPER_CALL: &str = "\tprev_cpu = scx_bpf_task_cpu(p);\n\n\t/* scx_hybridland: an own thread no longer waits (src/bpf/own_threads.bpf.h). */\n\thl_own_dispatched(p, task->enq_cnt);\n\n\t/* scx_hybridland: the nudge helper (src/bpf/fast_wake.bpf.h). */\n\tif (hl_dispatch_helper(task, p, prev_cpu))\n\t\tgoto out_release;\n\n\t/*\n\t * Dispatch task to the shared DSQ if the user-space scheduler\n";
/// The first lines of that select_cpu's body after which the fast path is asked: the task
/// is not the user-space scheduler. The CPU it places the task on is select_cpu's answer. Only when the framework's own idle selection is off
/// (`builtin_idle` is on in `--fifo` alone, and the framework then dispatches to an idle CPU
/// itself): `builtin_idle` is read-only data set before load, so the verifier drops the call
/// from `--fifo`'s program, which is then the framework's own, as scx_rlfifo runs it.
const FAST_WAKE_ANCHOR: &str = "\tif (is_usersched_task(p))\n\t\treturn prev_cpu;\n\n\t/*\n\t * If built-in idle CPU policy is not enabled";
const FAST_WAKE_CALL: &str = "\tif (is_usersched_task(p))\n\t\treturn prev_cpu;\n\n\t/* scx_hybridland: the wake-up fast path (src/bpf/fast_wake.bpf.h). */\n\tif (!builtin_idle) {\n\t\ts32 hl_cpu = hl_fast_wake(p, prev_cpu, wake_flags);\n\n\t\tif (hl_cpu >= 0)\n\t\t\treturn hl_cpu;\n\t}\n\n\t/*\n\t * If built-in idle CPU policy is not enabled";

/// The lines of that scheduler's enqueue that send a task to user space unless the framework's
/// own idle selection takes it (`--fifo`). Before them, a wake-up the kernel asked no
/// select_cpu about (a task allowed on one CPU: `is_wakeup` there) is offered to the fast
/// path, which places it on its CPU when that CPU is free, and the CPU is kicked as the
/// framework kicks it.
const ENQUEUE_ANCHOR: &str = "\tif (!(builtin_idle && is_wakeup)) {\n\t\tqueue_task_to_userspace(p, prev_cpu, enq_flags);\n\t\tgoto out_kick;\n\t}\n";
const ENQUEUE_CALL: &str = "\t/* scx_hybridland: a wake-up select_cpu was not asked about (src/bpf/fast_wake.bpf.h). */\n\tif (!builtin_idle) {\n\t\ts32 hl_cpu = hl_fast_wake_queued(p, is_wakeup, enq_flags);\n\n\t\tif (hl_cpu >= 0) {\n\t\t\tprev_cpu = hl_cpu;\n\t\t\tgoto out_kick;\n\t\t}\n\t}\n";

/// The kick that ends scx_rustland_core 2.4.15's `dispatch_task` (a task user space sent to a
/// CPU): it wakes the CPU if idle. A dispatch the core marks preempting (`Target::Preempt`,
/// sent with the kernel's `SCX_ENQ_PREEMPT` bit, which the kernel honours only for a local
/// queue and this one is the CPU's own queue) makes the task running there end its slice.
const DISPATCH_KICK_ANCHOR: &str = "\t */\n\tscx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);\n\nout_release:";
const DISPATCH_KICK: &str = "\t */\n\t/* scx_hybridland: a preempting dispatch (build.rs). */\n\tscx_bpf_kick_cpu(cpu, (task->flags & SCX_ENQ_PREEMPT) ? SCX_KICK_PREEMPT : SCX_KICK_IDLE);\n\nout_release:";

/// The lines of that scheduler's `queue_task_to_userspace` that hand a task to user space:
/// between them, a thread of the scheduler's own is noted as waiting on the loop
/// (`hl_own_queued`, src/bpf/own_threads.bpf.h), before the loop can see it and send it.
const QUEUED_ANCHOR: &str =
    "\tget_task_info(task, p, tctx, enq_flags, prev_cpu);\n\tbpf_ringbuf_submit(task, 0);\n";
const QUEUED_CALL: &str = "\tget_task_info(task, p, tctx, enq_flags, prev_cpu);\n\t/* scx_hybridland: an own thread waits on the loop (src/bpf/own_threads.bpf.h). */\n\thl_own_queued(p);\n\tbpf_ringbuf_submit(task, 0);\n";

/// The comment in that scheduler's dispatch before which a CPU asking for work hands the
/// scheduler's own threads to the kernel while the loop is blocked (`hl_own_rescue`).
const RESCUE_ANCHOR: &str =
    "\t/*\n\t * Dispatch the user-space scheduler if there's any pending action\n";
const RESCUE_CALL: &str = "\t/* scx_hybridland: the loop is blocked (src/bpf/own_threads.bpf.h). */\n\thl_own_rescue();\n\n";

/// Replaces `anchor` in `text` by `with`, failing the build unless it is there exactly once:
/// a framework upgrade must revisit the patch.
fn replace_once(path: &str, text: &str, anchor: &str, with: &str) -> String {
    assert_eq!(
        text.matches(anchor).count(),
        1,
        "{path}: a patch anchor is not there exactly once; scx_rustland_core changed: update build.rs"
    );
    text.replace(anchor, with)
}

/// Adds the fast path (in select_cpu and in enqueue), the helper's dispatch, the preempting
/// kick and the own threads' rescue to the framework's BPF scheduler `RustLandBuilder` just
/// wrote.
fn patch_scheduler(path: &str) {
    let text = std::fs::read_to_string(path).expect("reading the generated main.bpf.c");
    let text = replace_once(
        path,
        &text,
        DISPATCH_TASK_ANCHOR,
        &format!("{FAST_WAKE_INCLUDE}{DISPATCH_TASK_ANCHOR}"),
    );
    let text = replace_once(path, &text, HELPER_ANCHOR, HELPER_CALL);
    let text = replace_once(path, &text, FAST_WAKE_ANCHOR, FAST_WAKE_CALL);
    let text = replace_once(
        path,
        &text,
        ENQUEUE_ANCHOR,
        &format!("{ENQUEUE_CALL}{ENQUEUE_ANCHOR}"),
    );
    let text = replace_once(path, &text, DISPATCH_KICK_ANCHOR, DISPATCH_KICK);
    let text = replace_once(path, &text, QUEUED_ANCHOR, QUEUED_CALL);
    let text = replace_once(path, &text, TASK_INFO_ANCHOR, TASK_INFO_LINE);
    let text = replace_once(
        path,
        &text,
        RESCUE_ANCHOR,
        &format!("{RESCUE_CALL}{RESCUE_ANCHOR}"),
    );
    std::fs::write(path, text).expect("writing the patched main.bpf.c");
}

/// Ends the build with one line when there is no BPF toolchain to build with (no clang, or
/// one older than 18): cargo prints it as the build's error, with no panic and no backtrace.
fn no_toolchain(e: impl core::fmt::Display) -> ! {
    let cause = format!("{e:#}").replace('\n', "; ");
    println!(
        "cargo::error=no BPF toolchain ({cause}): the live scheduler needs clang >= 18 (as \
         `clang`, or BPF_CLANG) and libbpf's build dependencies; run hybridland's \
         scripts/install-scx-deps.sh, then `source scripts/env.sh` (Debian bookworm's \
         `apt install clang` gives clang 14, too old). The simulator needs none of this."
    );
    std::process::exit(0)
}

fn main() {
    // RustLandBuilder writes the framework's files and builds them as they are; the patched
    // scheduler is then built again under the same skeleton name, replacing that build.
    scx_rustland_core::RustLandBuilder::new()
        .unwrap_or_else(|e| no_toolchain(e))
        .build()
        .expect("building the scx_rustland_core BPF scheduler (needs clang >= 18: BPF_CLANG)");
    patch_intf("intf.h");
    patch_connector("src/bpf.rs");
    patch_scheduler("main.bpf.c");
    let mut sched = scx_cargo::BpfBuilder::new().unwrap_or_else(|e| no_toolchain(e));
    sched.enable_intf("intf.h", "bpf_intf.rs");
    sched.enable_skel("main.bpf.c", "bpf");
    sched
        .build()
        .expect("building the patched scx_rustland_core BPF scheduler");
    println!("cargo:rerun-if-changed=src/bpf/fast_wake.bpf.h");
    println!("cargo:rerun-if-changed=src/bpf/fast_wake_walk.h");
    println!("cargo:rerun-if-changed=src/bpf/fast_wake_rings.bpf.h");
    println!("cargo:rerun-if-changed=src/bpf/fast_wake_queues.bpf.h");
    println!("cargo:rerun-if-changed=src/bpf/own_threads.bpf.h");
    // The walk's C for the host, which the fast path's test holds to the policy's walk: only
    // that test refers to it, so no other binary links it.
    cc::Build::new()
        .file("src/bpf/host_walk.c")
        .warnings(true)
        .extra_warnings(true)
        .warnings_into_errors(true)
        .compile("hl_host_walk");
    println!("cargo:rerun-if-changed=src/bpf/host_walk.c");
    let mut idle = scx_cargo::BpfBuilder::new().unwrap_or_else(|e| no_toolchain(e));
    idle.enable_skel("src/bpf/idle_snapshot.bpf.c", "idle");
    idle.build().expect("building src/bpf/idle_snapshot.bpf.c");
    let mut events = scx_cargo::BpfBuilder::new().unwrap_or_else(|e| no_toolchain(e));
    events.enable_skel("src/bpf/task_events.bpf.c", "task_events");
    events.build().expect("building src/bpf/task_events.bpf.c");
}
