/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The wake-up fast path's walk: hybridland_policy::WakeTable::decide() pass for pass, as a
 * pure function over the table user space writes (struct hl_table), the homes' words and the
 * wake-up's free and allowed words. It reads nothing of the kernel's: the BPF side
 * (fast_wake.bpf.h) fills the words from the kernel's idle mask, the CPUs' queues and the
 * task's cpus_ptr and then walks, and the host test (host_walk.c, src/fast_wake/tests.rs)
 * compiles this same file and holds its answers to WakeTable::decide's on random machines,
 * masks, classes, homes and knobs.
 *
 * The includer defines u8, u16, u32, u64, s32, bool, __always_inline and HL_FOR(i, from, to),
 * a counted loop (bpf_for in BPF, a plain for on the host).
 */

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

/* The idle order for one policy on one machine (hybridland_policy::WakeTable). */
struct hl_table {
	struct hl_cpu cpus[HL_MAX_CPUS];
	/* The machine's CPUs by capacity, then rank, highest first; ids ascend on a tie. */
	u16 ranked[HL_MAX_CPUS];
	u16 cluster_size[HL_MAX_CPUS];
	u32 nr_ids;
	u32 nr_ranked;
	u32 nr_levels;
	/* Cluster balance is active at busy counts balance_from..balance_until. */
	u32 balance_from;
	u32 balance_until;
	/* The wake-affine rule is on (PolicyConfig::wake_affine). */
	u32 wake_affine;
};

/*
 * One wake-up's words: free (idle, nothing in the CPU's own queue) and allowed are the
 * question, filled before the walk; core_busy and cluster_busy are the walk's own.
 */
struct hl_scratch {
	u64 free[HL_MAX_WORDS];
	u64 allowed[HL_MAX_WORDS];
	u64 core_busy[HL_MAX_WORDS];
	u16 cluster_busy[HL_MAX_CPUS];
};

/* Steps, as hybridland_policy::Step numbers them. */
#define HL_STEP_WAKER 0
#define HL_STEP_P 1
#define HL_STEP_E 2
#define HL_STEP_SIBLING 3

/* One wake-up: the question (t, homes, s's free and allowed, class, sync_waker) and what the
 * walk learns of it between its passes. */
struct hl_walk_ctx {
	const struct hl_table *t;
	/* CPUs whose core is some task's home. */
	const u64 *homes;
	struct hl_scratch *s;
	u32 class;
	/* A synchronous waker's CPU (TaskHints::sync_waker), or -1. */
	s32 sync_waker;
	bool any_primary;
	bool any_fit;
	u32 step;
	s32 top;
	bool balance;
	u32 least_busy, least_size;
};

static __always_inline bool hl_bit(const u64 *words, u32 cpu)
{
	return words[(cpu / 64) & (HL_MAX_WORDS - 1)] & (1ULL << (cpu & 63));
}

static __always_inline void hl_set(u64 *words, u32 cpu)
{
	words[(cpu / 64) & (HL_MAX_WORDS - 1)] |= 1ULL << (cpu & 63);
}

static __always_inline const struct hl_cpu *hl_cpu_at(const struct hl_walk_ctx *w, u32 cpu)
{
	return &w->t->cpus[cpu & (HL_MAX_CPUS - 1)];
}

static __always_inline u32 hl_ranked_at(const struct hl_walk_ctx *w, u32 r)
{
	return w->t->ranked[r & (HL_MAX_CPUS - 1)];
}

static __always_inline bool hl_fits(const struct hl_walk_ctx *w, const struct hl_cpu *c)
{
	return w->class < w->t->nr_levels && c->level >= w->class;
}

static __always_inline bool hl_candidate(const struct hl_walk_ctx *w, u32 i)
{
	const struct hl_cpu *c = hl_cpu_at(w, i);

	return c->present && hl_bit(w->s->free, i) && hl_bit(w->s->allowed, i) &&
	       (c->primary || !w->any_primary);
}

static __always_inline bool hl_in_pool(const struct hl_walk_ctx *w, u32 i)
{
	return hl_candidate(w, i) && (!w->any_fit || hl_fits(w, hl_cpu_at(w, i)));
}

static __always_inline bool hl_whole(const struct hl_walk_ctx *w, u32 i)
{
	return !hl_bit(w->s->core_busy, hl_cpu_at(w, i)->core);
}

static __always_inline bool hl_in_set(const struct hl_walk_ctx *w, u32 i)
{
	if (!hl_in_pool(w, i))
		return false;
	if (w->step == HL_STEP_P)
		return hl_whole(w, i) && hl_cpu_at(w, i)->p_core;
	if (w->step == HL_STEP_E)
		return hl_whole(w, i);
	return true;
}

static __always_inline bool hl_at_top(const struct hl_walk_ctx *w, u32 i)
{
	return hl_in_set(w, i) && (s32)hl_cpu_at(w, i)->level == w->top;
}

static __always_inline bool hl_equal(const struct hl_walk_ctx *w, u32 i)
{
	const struct hl_cpu *c = hl_cpu_at(w, i);
	u32 cl = c->cluster & (HL_MAX_CPUS - 1);

	if (!hl_at_top(w, i))
		return false;
	if (!w->balance)
		return true;
	/* Equal busy shares: busy_a * size_b == busy_b * size_a. */
	return (u32)w->s->cluster_busy[cl] * w->least_size ==
	       w->least_busy * (u32)w->t->cluster_size[cl];
}

/*
 * Whether the wake-affine rule may put the task on its synchronous waker's CPU
 * (w->sync_waker): the rule is on and that CPU is present, in the primary domain, allowed and
 * fits the task's class (or the class fits none and the CPU has the top capacity).
 */
static __always_inline bool hl_waker_may_take(const struct hl_walk_ctx *w)
{
	s32 cpu = w->sync_waker;
	const struct hl_cpu *c;

	if (!w->t->wake_affine || cpu < 0 || cpu >= (s32)w->t->nr_ids || cpu >= HL_MAX_CPUS)
		return false;
	c = hl_cpu_at(w, cpu);
	return c->present && c->primary && hl_bit(w->s->allowed, cpu) &&
	       (hl_fits(w, c) || (w->class >= w->t->nr_levels && (u32)c->level + 1 == w->t->nr_levels));
}

/* Slots of the class table by pid (hl_classes in fast_wake.bpf.h, src/fast_wake.rs). */
#define HL_CLASS_SLOTS 8192

/*
 * Task @pid's class in the table user space writes (slot pid % HL_CLASS_SLOTS holds
 * (pid << 32) | class); 0, the class of a task with no history, when the slot holds another
 * pid's.
 */
static __always_inline u32 hl_class_in(const u64 *classes, s32 pid)
{
	u64 e = classes[(u32)pid & (HL_CLASS_SLOTS - 1)];

	return (u32)(e >> 32) == (u32)pid ? (u32)e : 0;
}

/*
 * The slice the core gives a task it decides while @waiting tasks wait for user space, itself
 * included (hybridland_policy::slice_ns): @base divided by @waiting, within [@base / 8,
 * @base]; @base itself when the slice is not scaled (--fixed-slice).
 */
static __always_inline u64 hl_slice(u64 base, u64 waiting, bool scaled)
{
	u64 floor = base / 8;
	u64 slice = base / (waiting ? waiting : 1);

	if (!scaled)
		return base;
	return slice > floor ? slice : floor;
}

/*
 * The idle order's CPU for a task woken with @prev its previous CPU (-1: none), in the passes
 * of hybridland_policy::WakeTable::decide; -1 when nothing allowed is free. Sets w->step.
 */
static s32 hl_walk_words(struct hl_walk_ctx *w, s32 prev)
{
	struct hl_scratch *s = w->s;
	const struct hl_table *t = w->t;
	u32 nr = t->nr_ids, busy = 0, i, r;
	bool any = false, p_whole = false, e_whole = false;

	if (nr > HL_MAX_CPUS)
		return -1;
	HL_FOR(i, 0, (nr + 63) / 64)
		s->core_busy[i & (HL_MAX_WORDS - 1)] = 0;
	HL_FOR(i, 0, nr)
		s->cluster_busy[i & (HL_MAX_CPUS - 1)] = 0;

	/*
	 * Wake-affine: the synchronous waker's CPU when it may take the task and some allowed CPU
	 * is free, which the first such CPU answers: no pass over the rest of the machine (the
	 * BPF side fills no more than that CPU then). None free: nothing allowed is free, as
	 * pass 1 would find.
	 */
	if (hl_waker_may_take(w)) {
		w->step = HL_STEP_WAKER;
		HL_FOR(i, 0, nr) {
			if (hl_cpu_at(w, i)->present && hl_bit(s->free, i) && hl_bit(s->allowed, i))
				return w->sync_waker;
		}
		return -1;
	}

	/* Pass 1: busy cores and counts, and which pools hold a candidate. */
	HL_FOR(i, 0, nr) {
		const struct hl_cpu *c = hl_cpu_at(w, i);

		if (!c->present)
			continue;
		if (!hl_bit(s->free, i)) {
			hl_set(s->core_busy, c->core);
			s->cluster_busy[c->cluster & (HL_MAX_CPUS - 1)]++;
			busy++;
		} else if (hl_bit(s->allowed, i)) {
			any = true;
			w->any_primary |= c->primary;
		}
	}
	if (!any)
		return -1;

	/* Pass 2: whether a candidate fits; the step. */
	HL_FOR(i, 0, nr) {
		if (hl_candidate(w, i) && hl_fits(w, hl_cpu_at(w, i))) {
			w->any_fit = true;
			break;
		}
	}
	HL_FOR(i, 0, nr) {
		if (hl_in_pool(w, i) && hl_whole(w, i)) {
			if (hl_cpu_at(w, i)->p_core)
				p_whole = true;
			else
				e_whole = true;
		}
	}
	w->step = p_whole ? HL_STEP_P : e_whole ? HL_STEP_E : HL_STEP_SIBLING;
	/* A previous CPU the machine lacks is no CPU's sibling. */
	if (prev >= (s32)nr || (prev >= 0 && !hl_cpu_at(w, prev)->present))
		prev = -1;
	if (w->step == HL_STEP_P && prev >= 0) {
		u16 core = hl_cpu_at(w, prev)->core;

		if (hl_in_set(w, prev))
			return prev;
		HL_FOR(i, 0, nr) {
			if (hl_cpu_at(w, i)->core == core && hl_in_set(w, i))
				return i;
		}
	}

	/* Pass 3: the highest capacity in the set, and the least cluster load at it. */
	w->top = -1;
	HL_FOR(r, 0, t->nr_ranked) {
		u32 cpu = hl_ranked_at(w, r);

		if (hl_in_set(w, cpu)) {
			w->top = hl_cpu_at(w, cpu)->level;
			break;
		}
	}
	if (w->top < 0)
		return -1;
	w->balance = busy >= t->balance_from && busy < t->balance_until;
	if (w->balance) {
		bool found = false;

		HL_FOR(r, 0, t->nr_ranked) {
			u32 cpu = hl_ranked_at(w, r);
			u32 cl = hl_cpu_at(w, cpu)->cluster & (HL_MAX_CPUS - 1);
			u32 b = s->cluster_busy[cl], sz = t->cluster_size[cl];

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
	HL_FOR(r, 0, t->nr_ranked) {
		u32 cpu = hl_ranked_at(w, r);

		if (hl_equal(w, cpu) && !hl_bit(w->homes, cpu))
			return cpu;
	}
	HL_FOR(r, 0, t->nr_ranked) {
		u32 cpu = hl_ranked_at(w, r);

		if (hl_equal(w, cpu))
			return cpu;
	}
	return -1;
}
