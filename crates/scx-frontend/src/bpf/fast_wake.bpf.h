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
 * not comes the same way: the task's class (which capacities its utilisation fits) in task
 * storage, written by user space when the core changes it, and the cores that are some task's
 * home. hl_walk() below is WakeTable::decide() pass for pass; the policy crate's property test
 * holds that to the idle order, and --audit-fast-wake holds each placement made here to it.
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

#define HL_MAX_WORDS 16
#define HL_MAX_CPUS (HL_MAX_WORDS * 64)

/* One CPU as the walk reads it (hybridland_policy::WakeCpu). */
struct hl_cpu {
	u8 present;
	u8 level;
	u8 p_core;
	u8 primary;
	u16 core;
	u16 cluster;
};

struct hl_cpu hl_cpus[HL_MAX_CPUS] HL_GLOBAL;
/* The machine's CPUs by capacity, then rank, highest first; ids ascend on a tie. */
u16 hl_ranked[HL_MAX_CPUS] HL_GLOBAL;
u16 hl_cluster_size[HL_MAX_CPUS] HL_GLOBAL;
/* CPUs whose core is some task's home, as the core last saw them. */
u64 hl_homes[HL_MAX_WORDS] HL_GLOBAL;
volatile u32 hl_fast_on HL_GLOBAL;
u32 hl_nr_ids HL_GLOBAL, hl_nr_ranked HL_GLOBAL, hl_nr_levels HL_GLOBAL;
u32 hl_balance_from HL_GLOBAL, hl_balance_until HL_GLOBAL;
/* The wake-affine rule is on (PolicyConfig::wake_affine). */
u32 hl_wake_affine HL_GLOBAL;
/* The nudge helper is placed by the core alone (it must land where the core sends it). */
volatile u32 hl_helper_pid HL_GLOBAL;
u64 hl_fast_slice_ns HL_GLOBAL;

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

/* The task's class, written by user space through its pidfd; none: class 0. */
struct hl_task {
	u32 class;
	u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct hl_task);
} hl_task_stor SEC(".maps");

/* The walk's scratch, per CPU: larger than a BPF stack. */
struct hl_scratch {
	u64 free[HL_MAX_WORDS];
	u64 allowed[HL_MAX_WORDS];
	u64 core_busy[HL_MAX_WORDS];
	u16 cluster_busy[HL_MAX_CPUS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct hl_scratch);
} hl_scratch_map SEC(".maps");

static __always_inline bool hl_bit(const u64 *words, u32 cpu)
{
	return words[(cpu / 64) & (HL_MAX_WORDS - 1)] & (1ULL << (cpu & 63));
}

static __always_inline void hl_set(u64 *words, u32 cpu)
{
	words[(cpu / 64) & (HL_MAX_WORDS - 1)] |= 1ULL << (cpu & 63);
}

static __always_inline struct hl_cpu *hl_cpu_at(u32 cpu)
{
	return &hl_cpus[cpu & (HL_MAX_CPUS - 1)];
}

static __always_inline bool hl_fits(const struct hl_cpu *c, u32 class)
{
	return class < hl_nr_levels && c->level >= class;
}

/* What the walk knows of one wake-up between its passes. */
struct hl_walk_ctx {
	struct hl_scratch *s;
	u32 class;
	s32 sync_waker;
	bool any_primary;
	bool any_fit;
	u32 step;
	s32 top;
	bool balance;
	u32 least_busy, least_size;
};

static __always_inline bool hl_candidate(const struct hl_walk_ctx *w, u32 i)
{
	const struct hl_cpu *c = hl_cpu_at(i);

	return c->present && hl_bit(w->s->free, i) && hl_bit(w->s->allowed, i) &&
	       (c->primary || !w->any_primary);
}

static __always_inline bool hl_in_pool(const struct hl_walk_ctx *w, u32 i)
{
	return hl_candidate(w, i) && (!w->any_fit || hl_fits(hl_cpu_at(i), w->class));
}

static __always_inline bool hl_whole(const struct hl_walk_ctx *w, u32 i)
{
	return !hl_bit(w->s->core_busy, hl_cpu_at(i)->core);
}

/* Steps, as hybridland_policy::Step numbers them. */
#define HL_STEP_WAKER 0
#define HL_STEP_P 1
#define HL_STEP_E 2
#define HL_STEP_SIBLING 3

static __always_inline bool hl_in_set(const struct hl_walk_ctx *w, u32 i)
{
	if (!hl_in_pool(w, i))
		return false;
	if (w->step == HL_STEP_P)
		return hl_whole(w, i) && hl_cpu_at(i)->p_core;
	if (w->step == HL_STEP_E)
		return hl_whole(w, i);
	return true;
}

static __always_inline bool hl_at_top(const struct hl_walk_ctx *w, u32 i)
{
	return hl_in_set(w, i) && (s32)hl_cpu_at(i)->level == w->top;
}

static __always_inline bool hl_equal(const struct hl_walk_ctx *w, u32 i)
{
	const struct hl_cpu *c = hl_cpu_at(i);
	u32 cl = c->cluster & (HL_MAX_CPUS - 1);

	if (!hl_at_top(w, i))
		return false;
	if (!w->balance)
		return true;
	/* Equal busy shares: busy_a * size_b == busy_b * size_a. */
	return (u32)w->s->cluster_busy[cl] * w->least_size ==
	       w->least_busy * (u32)hl_cluster_size[cl];
}

/*
 * Whether the wake-affine rule may put @p on its synchronous waker's CPU (w->sync_waker): the
 * rule is on and that CPU is present, in the primary domain, allowed and fits the task's
 * class (or the class fits none and the CPU has the top capacity). Marks it allowed for the
 * audit.
 */
static __always_inline bool hl_waker_may_take(struct task_struct *p, struct hl_walk_ctx *w)
{
	s32 cpu = w->sync_waker;
	const struct hl_cpu *c;

	if (!hl_wake_affine || cpu < 0 || cpu >= (s32)hl_nr_ids || cpu >= HL_MAX_CPUS)
		return false;
	c = hl_cpu_at(cpu);
	if (!c->present || !c->primary ||
	    !(hl_fits(c, w->class) || (w->class >= hl_nr_levels && c->level + 1 == hl_nr_levels)))
		return false;
	if (!bpf_cpumask_test_cpu(cpu, p->cpus_ptr))
		return false;
	hl_set(w->s->allowed, cpu);
	return true;
}

/*
 * Whether some CPU @p may use is free (idle, nothing in its own queue): stops at the first,
 * which it marks allowed and free for the audit.
 */
static bool hl_any_free(struct task_struct *p, struct hl_walk_ctx *w)
{
	const struct cpumask *idle = scx_bpf_get_idle_cpumask();
	bool found = false;
	u32 i;

	bpf_for(i, 0, hl_nr_ids) {
		if (i >= HL_MAX_CPUS || !hl_cpu_at(i)->present)
			continue;
		if (bpf_cpumask_test_cpu(i, p->cpus_ptr) && bpf_cpumask_test_cpu(i, idle) &&
		    !scx_bpf_dsq_nr_queued(cpu_to_dsq(i))) {
			hl_set(w->s->allowed, i);
			hl_set(w->s->free, i);
			found = true;
			break;
		}
	}
	scx_bpf_put_idle_cpumask(idle);
	return found;
}

/*
 * The idle order's CPU for @p woken with @prev its previous CPU (-1: none), in the passes of
 * hybridland_policy::WakeTable::decide; -1 when nothing allowed is free. Fills w->s->free and
 * w->s->allowed for the audit (for a wake-affine placement, the inputs that decided it: the
 * waker's CPU and the first free allowed CPU).
 */
static s32 hl_walk(struct task_struct *p, s32 prev, struct hl_walk_ctx *w)
{
	struct hl_scratch *s = w->s;
	const struct cpumask *idle;
	u32 nr = hl_nr_ids, busy = 0, i, r;
	bool any = false, p_whole = false, e_whole = false;

	if (nr > HL_MAX_CPUS)
		return -1;
	/* Only the words that can hold the machine's CPUs are ever set. */
	bpf_for(i, 0, (nr + 63) / 64) {
		s->free[i & (HL_MAX_WORDS - 1)] = 0;
		s->allowed[i & (HL_MAX_WORDS - 1)] = 0;
		s->core_busy[i & (HL_MAX_WORDS - 1)] = 0;
	}
	bpf_for(i, 0, nr)
		s->cluster_busy[i & (HL_MAX_CPUS - 1)] = 0;

	/*
	 * Wake-affine: the synchronous waker's CPU when it may take the task and some allowed CPU
	 * is free, which the first such CPU answers: no pass over the rest of the machine. None
	 * free: nothing allowed is free, as pass 1 would find.
	 */
	if (hl_waker_may_take(p, w)) {
		w->step = HL_STEP_WAKER;
		return hl_any_free(p, w) ? w->sync_waker : -1;
	}

	/* Pass 1: free CPUs (idle, nothing in their own queue), busy cores and counts. */
	idle = scx_bpf_get_idle_cpumask();
	bpf_for(i, 0, nr) {
		const struct hl_cpu *c = hl_cpu_at(i);

		if (!c->present)
			continue;
		/*
		 * cpus_ptr, not the task's CPU count: a task with migration disabled keeps its count
		 * while cpus_ptr narrows to its CPU.
		 */
		if (bpf_cpumask_test_cpu(i, p->cpus_ptr))
			hl_set(s->allowed, i);
		if (bpf_cpumask_test_cpu(i, idle) && !scx_bpf_dsq_nr_queued(cpu_to_dsq(i))) {
			hl_set(s->free, i);
			if (hl_bit(s->allowed, i)) {
				any = true;
				w->any_primary |= c->primary;
			}
		} else {
			hl_set(s->core_busy, c->core);
			s->cluster_busy[c->cluster & (HL_MAX_CPUS - 1)]++;
			busy++;
		}
	}
	scx_bpf_put_idle_cpumask(idle);
	if (!any)
		return -1;

	/* Pass 2: whether a candidate fits; the step. */
	bpf_for(i, 0, nr) {
		if (hl_candidate(w, i) && hl_fits(hl_cpu_at(i), w->class)) {
			w->any_fit = true;
			break;
		}
	}
	bpf_for(i, 0, nr) {
		if (hl_in_pool(w, i) && hl_whole(w, i)) {
			if (hl_cpu_at(i)->p_core)
				p_whole = true;
			else
				e_whole = true;
		}
	}
	w->step = p_whole ? HL_STEP_P : e_whole ? HL_STEP_E : HL_STEP_SIBLING;
	/* A previous CPU the machine lacks is no CPU's sibling. */
	if (prev >= (s32)nr || (prev >= 0 && !hl_cpu_at(prev)->present))
		prev = -1;
	if (w->step == HL_STEP_P && prev >= 0) {
		u16 core = hl_cpu_at(prev)->core;

		if (hl_in_set(w, prev))
			return prev;
		bpf_for(i, 0, nr) {
			if (hl_cpu_at(i)->core == core && hl_in_set(w, i))
				return i;
		}
	}

	/* Pass 3: the highest capacity in the set, and the least cluster load at it. */
	w->top = -1;
	bpf_for(r, 0, hl_nr_ranked) {
		u32 cpu = hl_ranked[r & (HL_MAX_CPUS - 1)];

		if (hl_in_set(w, cpu)) {
			w->top = hl_cpu_at(cpu)->level;
			break;
		}
	}
	if (w->top < 0)
		return -1;
	w->balance = busy >= hl_balance_from && busy < hl_balance_until;
	if (w->balance) {
		bool found = false;

		bpf_for(r, 0, hl_nr_ranked) {
			u32 cpu = hl_ranked[r & (HL_MAX_CPUS - 1)];
			u32 cl = hl_cpu_at(cpu)->cluster & (HL_MAX_CPUS - 1);
			u32 b = s->cluster_busy[cl], sz = hl_cluster_size[cl];

			if (!hl_at_top(w, cpu))
				continue;
			if (!found || b * w->least_size < w->least_busy * sz) {
				w->least_busy = b;
				w->least_size = sz;
				found = true;
			}
		}
	}

	/* Pass 4: the previous CPU, then the first in rank order whose core is no home. */
	if (prev >= 0 && hl_equal(w, prev))
		return prev;
	bpf_for(r, 0, hl_nr_ranked) {
		u32 cpu = hl_ranked[r & (HL_MAX_CPUS - 1)];

		if (hl_equal(w, cpu) && !hl_bit(hl_homes, cpu))
			return cpu;
	}
	bpf_for(r, 0, hl_nr_ranked) {
		u32 cpu = hl_ranked[r & (HL_MAX_CPUS - 1)];

		if (hl_equal(w, cpu))
			return cpu;
	}
	return -1;
}

/*
 * The pinned rule (hybridland_policy::pinned_cpu, WakeTable::pinned), for a wake-up the walk
 * found nothing allowed free for: a task whose allowed CPUs are its previous CPU alone takes
 * that CPU, which the core would answer too (Target::Preempt). Asked from the framework's
 * enqueue only: the kernel asks select_cpu about no such task. Reads the walk's allowed and
 * free words, which pass 1 filled; -1 when the rule does not apply.
 */
static s32 hl_pinned(struct task_struct *p, s32 prev, const struct hl_walk_ctx *w)
{
	if (prev < 0 || prev >= (s32)hl_nr_ids || prev >= HL_MAX_CPUS || !hl_cpu_at(prev)->present)
		return -1;
	if (!hl_bit(w->s->allowed, prev) || hl_bit(w->s->free, prev) ||
	    bpf_cpumask_weight(p->cpus_ptr) != 1)
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
	struct hl_task *t;
	u32 zero = 0;
	s32 cpu, prev = scx_bpf_task_cpu(p);

	if (!hl_fast_on || p->pid == hl_helper_pid)
		return -1;
	w.s = bpf_map_lookup_elem(&hl_scratch_map, &zero);
	if (!w.s)
		return -1;
	__sync_fetch_and_add(&hl_nr_fast_asked, 1);
	t = bpf_task_storage_get(&hl_task_stor, p, 0, 0);
	w.class = t ? t->class : 0;
	if (!in_enqueue)
		w.sync_waker = hl_sync_waker(flags);
	cpu = hl_walk(p, prev, &w);
	if (cpu < 0) {
		__sync_fetch_and_add(&hl_nr_fast_no_free, 1);
		cpu = in_enqueue ? hl_pinned(p, prev, &w) : -1;
		if (cpu < 0)
			return -1;
		/* First in its CPU's local queue; the task running there ends its slice now. */
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL_ON | cpu, hl_fast_slice_ns, flags | SCX_ENQ_PREEMPT);
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
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL_ON | cpu, hl_fast_slice_ns, flags);
	else
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, hl_fast_slice_ns, 0);
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
