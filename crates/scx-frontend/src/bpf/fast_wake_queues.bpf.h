/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The wake-up fast path's view of the kernel's queues (part of src/bpf/fast_wake.bpf.h, which
 * includes this file after its walk): who waits in the shared queue, whether this CPU is a
 * synchronous waker's with nothing else waiting, and where the nudge helper goes.
 */

/* The shared queue's tasks the fast path looks at before it calls the CPU theirs. */
#define HL_SHARED_LOOK 8

/*
 * Whether a task waiting in the shared queue may run on @cpu: one of its first
 * HL_SHARED_LOOK tasks may, or more wait than that. A task pinned elsewhere (each of
 * cyclictest's threads waiting for its own busy CPU) leaves @cpu to the woken task.
 */
static bool hl_shared_wants(s32 cpu)
{
	struct bpf_iter_scx_dsq it;
	struct task_struct *q;
	u32 seen = 0;
	bool wants = false;

	if (!scx_bpf_dsq_nr_queued(SHARED_DSQ))
		return false;
	if (bpf_iter_scx_dsq_new(&it, SHARED_DSQ, 0)) {
		wants = true;
	} else {
		while ((q = bpf_iter_scx_dsq_next(&it))) {
			if (++seen > HL_SHARED_LOOK || bpf_cpumask_test_cpu(cpu, q->cpus_ptr)) {
				wants = true;
				break;
			}
		}
	}
	bpf_iter_scx_dsq_destroy(&it);
	return wants;
}

/*
 * For a synchronous wake-up (@wake_flags has SCX_WAKE_SYNC: the waker, running here, sleeps
 * right after, as a pipe writer that then reads does) with nothing else waiting for this CPU
 * (its local queue and the framework's queue for it empty): this CPU; else -1.
 */
#ifndef PF_EXITING
#define PF_EXITING 0x00000004
#endif

static s32 hl_sync_waker(u64 wake_flags)
{
	s32 cpu = bpf_get_smp_processor_id();

	if (!(wake_flags & SCX_WAKE_SYNC) || (bpf_get_current_task_btf()->flags & PF_EXITING))
		return -1;
	if (scx_bpf_dsq_nr_queued(SCX_DSQ_LOCAL) || scx_bpf_dsq_nr_queued(cpu_to_dsq(cpu)))
		return -1;
	return cpu;
}

/*
 * The nudge helper as user space sent it to a CPU (true), or another dispatch (false). It goes
 * into the local queue of that CPU (its previous CPU when it may not use that one). A CPU runs
 * its local queue before it asks the framework's dispatch for work, so the helper runs at that
 * CPU's next slice end: in the CPU's own queue, the user-space scheduler, which the
 * framework's dispatch runs first whenever it has work, could keep it waiting until the
 * kernel's watchdog ejected the scheduler. Sent to no CPU, it takes the shared queue, where
 * the core's vtime 0 puts it first and any CPU may take it.
 */
static bool hl_dispatch_helper(const struct dispatched_task_ctx *task, struct task_struct *p,
			       s32 prev_cpu)
{
	struct task_ctx *tctx;
	s32 cpu = task->cpu;

	if (!hl_helper_pid || task->pid != (s32)hl_helper_pid || cpu < 0)
		return false;
	/* Dequeued since user space took it: its next enqueue reaches user space again. */
	tctx = try_lookup_task_ctx(p);
	if (!tctx || tctx->enq_cnt > task->enq_cnt)
		return true;
	if (!bpf_cpumask_test_cpu(cpu, p->cpus_ptr))
		cpu = prev_cpu;
	scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL_ON | cpu, task->slice_ns, task->flags);
	scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
	return true;
}
