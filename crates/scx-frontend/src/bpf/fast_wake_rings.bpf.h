/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The wake-up fast path's slot rings (part of src/bpf/fast_wake.bpf.h, which includes this
 * file after its walk): each placement's report of the run before it, for the core, and the
 * audit's record of what a placement was decided on.
 */

/*
 * Slot rings user space reads through the mmap (the framework forbids it new mappings once
 * loaded, so a BPF ring buffer cannot be mapped): `seq` is 0 while a slot is written and n + 1
 * for the n-th record after.
 *
 * ran: each placement, for the core (always on): where and when, the class it walked with,
 *      the task's affinity and the run before it.
 * audit: each placement with what it was decided on (--audit-fast-wake).
 */
#define HL_RAN_SLOTS 1024
#define HL_AUDIT_SLOTS 256

struct hl_ran_rec {
	u64 seq;
	s32 pid;
	/* The CPU the task last ran on (-1: none), and the one it was placed on. */
	s32 prev;
	s32 cpu;
	u32 weight;
	/* The run before the wake-up; both 0 when there is none. */
	u64 start_ns;
	u64 stop_ns;
	/* When the placement was made, on the framework's clock (scx_bpf_now(), as its timestamps). */
	u64 woke_ns;
	/* The task's affinity (cpus_mask, not cpus_ptr: migration disabled for a moment is not an
	 * affinity): how many CPUs, and the first 64. */
	u64 allowed0;
	u32 nr_allowed;
	u32 class;
	/* The task's start time, which tells it from a later thread given its pid. */
	u64 life;
};

struct hl_fast_audit_rec {
	u64 seq;
	s32 pid;
	s32 cpu;
	s32 prev;
	u32 class;
	s32 sync_waker;
	u32 pad;
	u64 free[HL_MAX_WORDS];
	u64 allowed[HL_MAX_WORDS];
	u64 homes[HL_MAX_WORDS];
};

struct hl_ran_rec hl_ran_recs[HL_RAN_SLOTS] HL_GLOBAL;
volatile u64 hl_ran_head HL_GLOBAL;
struct hl_fast_audit_rec hl_audit_recs[HL_AUDIT_SLOTS] HL_GLOBAL;
volatile u64 hl_audit_head HL_GLOBAL;
volatile u32 hl_fast_audit_on HL_GLOBAL;

static void hl_report_placed(struct task_struct *p, s32 prev, s32 cpu, u32 class)
{
	struct task_ctx *tctx = try_lookup_task_ctx(p);
	struct hl_ran_rec *rec;
	bool ran = tctx && tctx->stop_ts && tctx->stop_ts >= tctx->start_ts;
	u64 n;

	n = __sync_fetch_and_add(&hl_ran_head, 1);
	rec = &hl_ran_recs[n & (HL_RAN_SLOTS - 1)];
	rec->seq = 0;
	asm volatile("" ::: "memory");
	rec->pid = p->pid;
	rec->prev = prev;
	rec->cpu = cpu;
	rec->weight = p->scx.weight;
	rec->start_ns = ran ? tctx->start_ts : 0;
	rec->stop_ns = ran ? tctx->stop_ts : 0;
	rec->woke_ns = scx_bpf_now();
	rec->allowed0 = p->cpus_mask.bits[0];
	rec->nr_allowed = p->nr_cpus_allowed;
	rec->class = class;
	rec->life = p->start_time;
	asm volatile("" ::: "memory");
	rec->seq = n + 1;
}

static void hl_audit(struct task_struct *p, s32 cpu, s32 prev, const struct hl_walk_ctx *w)
{
	struct hl_fast_audit_rec *rec;
	u64 n = __sync_fetch_and_add(&hl_audit_head, 1);
	u32 i;

	rec = &hl_audit_recs[n & (HL_AUDIT_SLOTS - 1)];
	rec->seq = 0;
	asm volatile("" ::: "memory");
	rec->pid = p->pid;
	rec->cpu = cpu;
	rec->prev = prev;
	rec->class = w->class;
	rec->sync_waker = w->sync_waker;
	bpf_for(i, 0, HL_MAX_WORDS) {
		u32 k = i & (HL_MAX_WORDS - 1);

		rec->free[k] = w->s->free[k];
		rec->allowed[k] = w->s->allowed[k];
		rec->homes[k] = hl_homes[k];
	}
	asm volatile("" ::: "memory");
	rec->seq = n + 1;
}
