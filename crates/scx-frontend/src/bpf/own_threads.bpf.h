/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The scheduler's own threads while its loop is blocked (part of src/bpf/fast_wake.bpf.h,
 * which includes this file; build.rs calls hl_own_queued() where the framework queues a task
 * to user space, hl_own_dispatched() where it dispatches one user space sent, and
 * hl_own_rescue() at the start of its dispatch, in every mode).
 *
 * The loop is one thread of a process whose other threads (the stats server's, the knob
 * watcher, the nudge helper) wait in the loop's queue like any task. They share locks with
 * it: the framework's allocator is one mutex for the whole process. A thread preempted at a
 * slice end while it holds such a lock is queued to user space; if the loop then takes the
 * lock, it sleeps until that thread runs, which only the loop can dispatch. Every runnable
 * task then waits in the loop's queue and every CPU idles, until the kernel's watchdog ejects
 * the scheduler.
 *
 * So each own thread queued to user space is noted here until the loop dispatches it, and a
 * CPU that asks for work while the loop is not runnable (blocked: between rounds it yields and
 * stays runnable) hands the noted threads to the shared queue itself, where that CPU takes the
 * first. A thread the loop dispatched after all is dispatched once: the kernel ignores the
 * later of two dispatches of one enqueue. While the loop is blocked the framework's heartbeat
 * kicks its CPU every second, so a rescue does not wait for other work to end.
 */

/* Pids of own threads queued to user space and not dispatched by it since; 0: free. */
#define HL_OWN_SLOTS 64
volatile s32 hl_own_waiting[HL_OWN_SLOTS] HL_GLOBAL;
volatile u32 hl_nr_own_waiting HL_GLOBAL;
/* Threads handed to the kernel while the loop was blocked; threads a full table left out. */
volatile u64 hl_nr_own_rescued HL_GLOBAL, hl_nr_own_untracked HL_GLOBAL;

/* A thread of the scheduler's process other than the loop (the loop is its main thread). */
static bool hl_is_own(const struct task_struct *p)
{
	return usersched_pid && p->tgid == (s32)usersched_pid && p->pid != (s32)usersched_pid;
}

/* Frees slot @i when it holds @pid; true when this call freed it. */
static __always_inline bool hl_own_clear(u32 i, s32 pid)
{
	if (i >= HL_OWN_SLOTS || !pid || hl_own_waiting[i] != pid ||
	    __sync_val_compare_and_swap(&hl_own_waiting[i], pid, 0) != pid)
		return false;
	__sync_fetch_and_sub(&hl_nr_own_waiting, 1);
	return true;
}

/* Takes @pid's slot out of the table, if it has one. */
static void hl_own_forget(s32 pid)
{
	u32 i;

	bpf_for(i, 0, HL_OWN_SLOTS) {
		if (hl_own_clear(i, pid))
			return;
	}
}

/* @p was queued to user space: note it when it is an own thread. */
static void hl_own_queued(const struct task_struct *p)
{
	s32 pid = p->pid;
	u32 i;

	if (!hl_is_own(p))
		return;
	bpf_for(i, 0, HL_OWN_SLOTS) {
		if (hl_own_waiting[i] == pid)
			return;
	}
	bpf_for(i, 0, HL_OWN_SLOTS) {
		if (!hl_own_waiting[i] &&
		    __sync_val_compare_and_swap(&hl_own_waiting[i], 0, pid) == 0) {
			__sync_fetch_and_add(&hl_nr_own_waiting, 1);
			return;
		}
	}
	__sync_fetch_and_add(&hl_nr_own_untracked, 1);
}

/*
 * User space dispatched @p for its enqueue number @enq_cnt: it no longer waits on the loop,
 * unless it was queued again since. A rescued thread runs and can be queued again before the
 * loop's dispatch of the rescued enqueue arrives; the later enqueue, still waiting on the
 * loop, must stay noted.
 */
static void hl_own_dispatched(const struct task_struct *p, u64 enq_cnt)
{
	struct task_ctx *tctx;

	if (!hl_nr_own_waiting || !hl_is_own(p))
		return;
	tctx = try_lookup_task_ctx(p);
	if (tctx && tctx->enq_cnt > enq_cnt)
		return;
	hl_own_forget(p->pid);
}

/* Whether the loop is blocked: not runnable (it yields between rounds, and stays runnable). */
static bool hl_loop_blocked(void)
{
	struct task_struct *u;
	bool blocked;

	u = bpf_task_from_pid(usersched_pid);
	if (!u)
		return false;
	blocked = !is_queued(u);
	bpf_task_release(u);
	return blocked;
}

/* At a CPU's dispatch: while the loop is blocked, the noted threads go to the shared queue. */
static void hl_own_rescue(void)
{
	u32 i;

	if (!hl_nr_own_waiting || !hl_loop_blocked())
		return;
	bpf_for(i, 0, HL_OWN_SLOTS) {
		struct task_struct *p;
		s32 pid = hl_own_waiting[i];

		if (!hl_own_clear(i, pid))
			continue;
		p = bpf_task_from_pid(pid);
		if (!p)
			continue;
		/* First in the shared queue, where any CPU takes it. */
		scx_bpf_dsq_insert_vtime(p, SHARED_DSQ, slice_ns, 0, 0);
		__sync_fetch_and_add(&hl_nr_own_rescued, 1);
		bpf_task_release(p);
	}
}
