/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * scx_hybridland's wake-up fast path, compiled into scx_rustland_core's generated main.bpf.c:
 * build.rs includes this file just before the framework's dispatch_task, calls
 * hl_dispatch_helper() at the start of it, and calls hl_fast_wake() in the framework's
 * select_cpu (and hl_fast_wake_queued() in its enqueue, for a wake-up the kernel asked no
 * select_cpu about), before the task would be queued to user space, unless the framework's
 * own idle selection is on (--fifo).
 *
 * A wake-up that finds an allowed CPU free is placed here, on the CPU the policy's idle order
 * chooses (a synchronous wake-up's waker's CPU first, by the wake-affine rule), without the
 * round trip. The order comes from user space as tables
 * (hybridland_policy::WakeTable, written by src/fast_wake.rs): per CPU its capacity level,
 * kind, primary-domain bit, core and cluster; the CPUs in rank order; the cluster sizes; the
 * busy counts at which cluster balance is active. What the core knows and the kernel does
 * not comes the same way: the task's class (which capacities its utilisation fits) in a
 * table by pid (hl_classes), written by user space when the core changes it, and the cores that are some task's
 * home. The walk itself (fast_wake_walk.h) is WakeTable::decide() pass for pass, a pure
 * function over the tables and one wake-up's words that the host test compiles too and holds
 * to WakeTable::decide; the policy crate's property test holds that to the idle order, and
 * --audit-fast-wake holds each placement made here to it.
 * A wake-up with nothing allowed free goes to user space as before.
 *
 * Each placement is reported to the core through a ring of slots (fast_wake_rings.bpf.h):
 * where and when, the class the walk read, the task's affinity and the run before it (the
 * framework's start and stop times of the task's last run), so the core counts it as a
 * wake-up it decided (Input::Placed): its estimate, vtime and homes see every run, its
 * up-migration scan sees the task where it runs, and a class that did not reach the task is
 * given again.
 *
 * The tables live in .bss.hl_fast, which user space writes through the skeleton's mmap. They
 * are written while hl_fast_on is 0 and switched on after, so a reader never acts on a table
 * being rewritten for longer than one wake-up that started before the switch.
 */

/*
 * Every global of ours lives in its own data section, which libbpf maps apart from the
 * framework's .bss (user space reaches it as the skeleton's bss_hl_fast). The framework's
 * own globals keep the layout they have in every scx_rustland_core scheduler, so --fifo runs
 * the framework's programs over the layout scx_rlfifo does.
 */
#define HL_GLOBAL SEC(".bss.hl_fast")

/* BPF's spelling of the walk's counted loop (fast_wake_walk.h). */
#define HL_FOR(i, from, to) bpf_for(i, from, to)

#include "fast_wake_walk.h"

struct hl_table hl_table HL_GLOBAL;
/* CPUs whose core is some task's home, as the core last saw them. */
u64 hl_homes[HL_MAX_WORDS] HL_GLOBAL;
volatile u32 hl_fast_on HL_GLOBAL;
/* The nudge helper is placed by the core alone (it must land where the core sends it). */
volatile u32 hl_helper_pid HL_GLOBAL;
/* The core's base slice, and whether it scales it by the tasks waiting (hl_slice()). */
u64 hl_fast_slice_ns HL_GLOBAL;
u32 hl_fast_slice_scaled HL_GLOBAL;

/*
 * Counters. Asked: wake-ups (not the helper's) the fast path saw while on. Of them, no_free:
 * nothing allowed was free (the core decides, as it must). Of the rest, placed by the idle
 * order's step, or declined by reason (src/fast_wake.rs names them).
 */
#define HL_DECLINE_SHARED_QUEUE 0
#define HL_DECLINE_RACE 1
#define HL_DECLINES 2
#define HL_STEPS 5
volatile u64 hl_nr_fast_asked HL_GLOBAL, hl_nr_fast_no_free HL_GLOBAL;
/* Of no_free, wake-ups the pinned rule placed (hl_pinned()). */
volatile u64 hl_nr_fast_pinned HL_GLOBAL;
volatile u64 hl_nr_fast_step[HL_STEPS] HL_GLOBAL, hl_nr_fast_declined[HL_DECLINES] HL_GLOBAL;

/*
 * Task classes, by pid: slot pid % HL_CLASS_SLOTS holds (pid << 32) | class, one 64-bit store
 * by user space through the mmap (src/fast_wake.rs), so a reader sees a pid and its class
 * together. A slot holding another pid (two live tasks whose pids share it, the later write
 * wins): class 0, the class of a task with no history; the core takes the class a placement
 * read back (class drift) and gives its own again. Not task storage: a write there from user
 * space is a bpf() call that holds the CPU's task-storage busy count, and a scheduler callback
 * that runs on that CPU meanwhile finds no task storage at all (the framework's own context
 * lookup fails and it drops the enqueue: the task is never queued, and the kernel ejects the
 * scheduler for a stall).
 */
u64 hl_classes[HL_CLASS_SLOTS] HL_GLOBAL;

/* The walk's words, per CPU: larger than a BPF stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct hl_scratch);
} hl_scratch_map SEC(".maps");

/*
 * Fills the words of one wake-up of @p for the walk (fast_wake_walk.h), from the kernel:
 * allowed from the task's cpus_ptr (not its CPU count: a task with migration disabled keeps
 * its count while cpus_ptr narrows to its CPU), free from the idle mask and the CPUs' own
 * queues. When the wake-affine rule may take the task, only the waker's allowed bit and the
 * first free allowed CPU, which is all the walk reads then. The audit records these words.
 */
static void hl_fill(struct task_struct *p, struct hl_walk_ctx *w)
{
	struct hl_scratch *s = w->s;
	const struct cpumask *idle;
	u32 nr = hl_table.nr_ids, i;
	bool first_only;

	if (nr > HL_MAX_CPUS)
		return;
	/* Only the words that can hold the machine's CPUs are ever set. */
	bpf_for(i, 0, (nr + 63) / 64) {
		s->free[i & (HL_MAX_WORDS - 1)] = 0;
		s->allowed[i & (HL_MAX_WORDS - 1)] = 0;
	}
	if (w->sync_waker >= 0 && w->sync_waker < (s32)nr &&
	    bpf_cpumask_test_cpu(w->sync_waker, p->cpus_ptr))
		hl_set(s->allowed, w->sync_waker);
	first_only = hl_waker_may_take(w);
	idle = scx_bpf_get_idle_cpumask();
	bpf_for(i, 0, nr) {
		if (!hl_cpu_at(w, i)->present)
			continue;
		if (bpf_cpumask_test_cpu(i, p->cpus_ptr))
			hl_set(s->allowed, i);
		else if (first_only)
			continue;
		if (bpf_cpumask_test_cpu(i, idle) && !scx_bpf_dsq_nr_queued(cpu_to_dsq(i))) {
			hl_set(s->free, i);
			if (first_only)
				break;
		}
	}
	scx_bpf_put_idle_cpumask(idle);
}

/* The idle order's CPU for @p woken with @prev its previous CPU (-1: none), or -1. */
static s32 hl_walk(struct task_struct *p, s32 prev, struct hl_walk_ctx *w)
{
	hl_fill(p, w);
	return hl_walk_words(w, prev);
}

/* Whether the scheduler's loop (the user-space scheduler's thread) runs on @cpu now. */
static bool hl_loop_on(s32 cpu)
{
	struct task_struct *loop;
	bool on;

	if (!usersched_pid)
		return false;
	loop = bpf_task_from_pid(usersched_pid);
	if (!loop)
		return false;
	on = loop->on_cpu && scx_bpf_task_cpu(loop) == cpu;
	bpf_task_release(loop);
	return on;
}

/*
 * The pinned rule (hybridland_policy::pinned_cpu, WakeTable::pinned), for a wake-up the walk
 * found nothing allowed free for: a task whose allowed CPUs are its previous CPU alone takes
 * that CPU, which the core would answer too (Target::Preempt). Asked from the framework's
 * enqueue only: the kernel asks select_cpu about no such task. Reads the walk's allowed and
 * free words, which pass 1 filled; -1 when the rule does not apply, and when the scheduler's
 * loop runs on that CPU: the core spares the loop's CPU (the loop frees it right after its
 * batch) and decides such a wake-up itself, so it goes to the core.
 */
static s32 hl_pinned(struct task_struct *p, s32 prev, const struct hl_walk_ctx *w)
{
	if (prev < 0 || prev >= (s32)hl_table.nr_ids || prev >= HL_MAX_CPUS ||
	    !hl_cpu_at(w, prev)->present)
		return -1;
	if (!hl_bit(w->s->allowed, prev) || hl_bit(w->s->free, prev) ||
	    bpf_cpumask_weight(p->cpus_ptr) != 1 || hl_loop_on(prev))
		return -1;
	return prev;
}

#include "fast_wake_rings.bpf.h"

#include "fast_wake_queues.bpf.h"
#include "own_threads.bpf.h"

/*
 * The CPU woken @p is placed on here, or -1: user space decides. @in_enqueue: asked from the
 * framework's enqueue (the kernel asked no select_cpu), where the task goes into the chosen
 * CPU's local queue by its number and with the enqueue's @enq_flags; else @wake_flags are
 * select_cpu's.
 */
static s32 hl_fast_place(struct task_struct *p, bool in_enqueue, u64 flags)
{
	struct hl_walk_ctx w = { .sync_waker = -1 };
	u32 zero = 0;
	s32 cpu, prev = scx_bpf_task_cpu(p);
	u64 slice;

	if (!hl_fast_on || p->pid == hl_helper_pid)
		return -1;
	/* Set here, not in the initializer: clang would copy that from .rodata, where a global's
	 * address is not relocated. */
	w.t = &hl_table;
	w.homes = hl_homes;
	w.s = bpf_map_lookup_elem(&hl_scratch_map, &zero);
	if (!w.s)
		return -1;
	__sync_fetch_and_add(&hl_nr_fast_asked, 1);
	w.class = hl_class_in(hl_classes, p->pid);
	if (!in_enqueue)
		w.sync_waker = hl_sync_waker(flags);
	cpu = hl_walk(p, prev, &w);
	/* The core's slice for a batch of this one task beside those waiting for user space. */
	slice = hl_slice(hl_fast_slice_ns, nr_queued + 1, hl_fast_slice_scaled);
	if (cpu < 0) {
		__sync_fetch_and_add(&hl_nr_fast_no_free, 1);
		cpu = in_enqueue ? hl_pinned(p, prev, &w) : -1;
		if (cpu < 0)
			return -1;
		/* First in its CPU's local queue; the task running there ends its slice now. */
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL_ON | cpu, slice, flags | SCX_ENQ_PREEMPT);
		__sync_fetch_and_add(&hl_nr_fast_pinned, 1);
		hl_report_placed(p, prev, cpu, w.class);
		if (hl_fast_audit_on)
			hl_audit(p, cpu, prev, &w);
		return cpu;
	}
	if (hl_shared_wants(cpu)) {
		/* A task waits in the shared queue that may run there: the CPU is its; the core sees it. */
		__sync_fetch_and_add(&hl_nr_fast_declined[HL_DECLINE_SHARED_QUEUE], 1);
		return -1;
	}
	/* The waker's CPU is busy (its waker runs there) until the waker sleeps. */
	if (w.step != HL_STEP_WAKER && !scx_bpf_test_and_clear_cpu_idle(cpu)) {
		__sync_fetch_and_add(&hl_nr_fast_declined[HL_DECLINE_RACE], 1);
		return -1;
	}
	/*
	 * The CPU's local queue, which it runs before it calls the framework's dispatch: there,
	 * the user-space scheduler would go first whenever it has work, and the woken task would
	 * wait behind it.
	 */
	if (in_enqueue)
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL_ON | cpu, slice, flags);
	else
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, slice, 0);
	if (w.step < HL_STEPS)
		__sync_fetch_and_add(&hl_nr_fast_step[w.step], 1);
	hl_report_placed(p, prev, cpu, w.class);
	if (hl_fast_audit_on)
		hl_audit(p, cpu, prev, &w);
	return cpu;
}

/* From the framework's select_cpu: the CPU @p is placed on here, or -1. */
static s32 hl_fast_wake(struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	if (!(wake_flags & SCX_WAKE_TTWU))
		return -1;
	return hl_fast_place(p, false, wake_flags);
}

/*
 * From the framework's enqueue, for a task the kernel did not ask select_cpu about (@queued:
 * neither running nor given a CPU by select_cpu): a task allowed on one CPU only, or one with
 * migration disabled. Without this, every wake-up of a pinned task (each of cyclictest's
 * threads, a per-CPU worker) went through user space, which then sent it to the one CPU it
 * may use. The same walk decides, over the one CPU the task may use; the CPU it is placed on,
 * or -1.
 */
static s32 hl_fast_wake_queued(struct task_struct *p, bool queued, u64 enq_flags)
{
	if (!queued || !(enq_flags & SCX_ENQ_WAKEUP))
		return -1;
	return hl_fast_place(p, true, enq_flags);
}
