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
 * ran: each placement's task and the run before it, for the core (always on).
 * audit: each placement with what it was decided on (--audit-fast-wake).
 */
#define HL_RAN_SLOTS 1024
#define HL_AUDIT_SLOTS 256

struct hl_ran_rec {
	u64 seq;
	s32 pid;
	s32 cpu;
	u64 start_ns;
	u64 stop_ns;
	u32 weight;
	u32 pad;
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

static void hl_report_ran(struct task_struct *p, s32 ran_on)
{
	struct task_ctx *tctx = try_lookup_task_ctx(p);
	struct hl_ran_rec *rec;
	u64 n;

	if (!tctx || !tctx->stop_ts || tctx->stop_ts < tctx->start_ts)
		return;
	n = __sync_fetch_and_add(&hl_ran_head, 1);
	rec = &hl_ran_recs[n & (HL_RAN_SLOTS - 1)];
	rec->seq = 0;
	asm volatile("" ::: "memory");
	rec->pid = p->pid;
	rec->cpu = ran_on;
	rec->start_ns = tctx->start_ts;
	rec->stop_ns = tctx->stop_ts;
	rec->weight = p->scx.weight;
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
