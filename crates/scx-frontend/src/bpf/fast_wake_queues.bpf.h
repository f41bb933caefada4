/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The wake-up fast path's view of the kernel's queues (part of src/bpf/fast_wake.bpf.h, which
 * includes this file after its walk): who waits in the shared queue, whether this CPU is a
 * synchronous waker's with nothing else waiting, and where the nudge helper and the
 * scheduler's other threads go.
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

/*
 * A thread of the scheduler's own process other than the loop and the nudge helper (the
 * stats server's, the knob watcher, the event reader) put back in line while it could run
 * on (preempted at its slice end, or yielding; not a wake-up): into the shared queue, an idle
 * CPU kicked to take it, never to user space (true); any other task or enqueue: false. Their
 * wake-ups go the usual way, and the core places the helper, whose trips through the loop
 * carry the nudges and the core's timer. The loop is still told to run a round, which the
 * thread's trip through its queue made it do (the exits it drains, the core's scan). Sent to
 * user space, such a thread preempted while it held a lock the loop then waited for (the
 * standard error stream's, a channel's) waited for the loop, which waited for it: every CPU
 * went idle with every task held for the loop until the kernel ejected the scheduler (a
 * runnable task stall, or an RCU stall).
 */
static bool hl_dispatch_own(struct task_struct *p, u64 enq_flags)
{
	s32 cpu;

	if (p->tgid != usersched_pid || (enq_flags & SCX_ENQ_WAKEUP) ||
	    (hl_helper_pid && p->pid == (s32)hl_helper_pid))
		return false;
	scx_bpf_dsq_insert_vtime(p, SHARED_DSQ, slice_ns, p->scx.dsq_vtime, enq_flags);
	__sync_fetch_and_add(&hl_nr_own, 1);
	/* The loop still runs a round for it, as the trip through its queue made it do. */
	set_usersched_needed();
	cpu = scx_bpf_pick_idle_cpu(p->cpus_ptr, 0);
	if (cpu >= 0)
		scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
	return true;
}
