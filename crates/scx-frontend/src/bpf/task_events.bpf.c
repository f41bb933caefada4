/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Task events scx_rustland_core does not report to user space, for scx_hybridland's loop.
 *
 * The framework hands user space a task when it wants a CPU, and nothing else: not when a
 * task exits (so per-task tables could only be pruned by age), not who woke a task (so a
 * recording has no wake chains), and not when it refilled the slice of a task nobody else
 * wanted (so the loop never sees an uncontended slice end). This object, loaded and attached
 * before the framework's own, reports those three through one BPF ring buffer that user space
 * drains without a system call (the ring is mmap'ed at load time).
 *
 * - exit:    tp_btf/sched_process_free, once per thread, when it is freed: after its last run,
 *            so nothing the framework or the fast path reports about it comes later (from
 *            sched_process_exit on, a thread still runs its exit path, can be preempted or
 *            block and be woken, and each of those would reach the loop after its exit);
 * - waking:  tp_btf/sched_waking, with the waker when the wake-up comes from a task (not from
 *            an interrupt, where `current` is whatever was interrupted): its pid and CPU.
 *            Loaded only when a recording or a scheduler without the wake-up fast path wants
 *            the wakers (src/init.rs);
 * - refill:  fentry on the kfunc scx_bpf_task_set_slice when it is called for the task running
 *            on this CPU, which is the framework's dispatch refilling `prev` (its enable path
 *            sets the slice of a task that is not running). Optional: the loader goes on
 *            without it when the kernel cannot attach there.
 *
 * Nothing here decides anything; a full ring drops the event and counts it per kind.
 */
#include <scx/common.bpf.h>

char _license[] SEC("license") = "GPL";

/* Kinds; the values are the Rust side's `EventKind` (src/task_events.rs). */
#define EV_EXIT 1
#define EV_WAKING 2
#define EV_REFILL 3
#define EV_KINDS 4

/* One event: 32 bytes, the layout src/task_events.rs parses. */
struct task_event {
	u64 at_ns;	/* scx_bpf_now(): the framework's clock, which the loop uses */
	s32 pid;	/* the task (thread id) */
	s32 other;	/* exit: its tgid; waking: the waker's pid or -1; refill: the slice in us */
	s32 cpu;	/* exit, refill: this CPU; waking: the waker's CPU, or -1 */
	u32 kind;
	/* exit: the task's start time, which tells it from a later thread given its pid
	 * (hybridland_policy::Life); else 0 */
	u64 life;
};

/* 256 KiB: about 10,900 events, several loop iterations of a busy machine. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} events SEC(".maps");

/* The scheduler's own process: its threads' wake-ups and refills are not reported. */
const volatile s32 own_tgid;

/* Per kind: events written, and events lost to a full ring. */
u64 nr_sent[EV_KINDS];
u64 nr_dropped[EV_KINDS];

/*
 * The preempt count, to tell a wake-up from an interrupt (where `current` is whatever task was
 * interrupted) from one by a task. Written here rather than taken from bpf_experimental.h,
 * whose PREEMPT_RT test is a Kconfig extern: libbpf then needs the kernel's config file at
 * load time, which a minimal system (the project's VM) does not have. The per-CPU variable is
 * `__preempt_count` on x86 since 6.15 and `pcpu_hot.preempt_count` from 6.1 to 6.14; arm64
 * keeps it in the task.
 */
extern const int __preempt_count __ksym __weak;
struct pcpu_hot___hl {
	int preempt_count;
} __attribute__((preserve_access_index));
extern struct pcpu_hot___hl pcpu_hot __ksym __weak;

/* The kernel's irq_count() bits: softirq (served or disabled), hardirq, NMI. */
#define HL_IRQ_BITS 0x00ffff00

static __always_inline int hl_in_interrupt(void)
{
#if defined(bpf_target_x86)
	if (bpf_ksym_exists(&__preempt_count))
		return *(int *)bpf_this_cpu_ptr(&__preempt_count) & HL_IRQ_BITS;
	if (bpf_core_field_exists(pcpu_hot.preempt_count))
		return ((struct pcpu_hot___hl *)bpf_this_cpu_ptr(&pcpu_hot))->preempt_count &
		       HL_IRQ_BITS;
	return 0;
#elif defined(bpf_target_arm64)
	return bpf_get_current_task_btf()->thread_info.preempt.count & HL_IRQ_BITS;
#else
	return 0;
#endif
}

static __always_inline void emit(u32 kind, s32 pid, s32 other, s32 cpu, u64 life)
{
	struct task_event *e;

	if (kind >= EV_KINDS)
		return;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		__sync_fetch_and_add(&nr_dropped[kind], 1);
		return;
	}
	e->at_ns = scx_bpf_now();
	e->pid = pid;
	e->other = other;
	e->cpu = cpu;
	e->kind = kind;
	e->life = life;
	/* User space polls between batches: waking it here would cost a wake-up per event. */
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	__sync_fetch_and_add(&nr_sent[kind], 1);
}

SEC("tp_btf/sched_process_free")
int BPF_PROG(hl_task_exit, struct task_struct *p)
{
	emit(EV_EXIT, p->pid, p->tgid, bpf_get_smp_processor_id(), p->start_time);
	return 0;
}

SEC("tp_btf/sched_waking")
int BPF_PROG(hl_task_waking, struct task_struct *p)
{
	struct task_struct *cur;
	s32 waker = -1, cpu = -1;

	if (p->tgid == own_tgid)
		return 0;
	if (!hl_in_interrupt()) {
		cur = bpf_get_current_task_btf();
		/* pid 0 is a CPU's idle task: no task woke this one. */
		if (cur->pid != 0) {
			waker = cur->pid;
			cpu = bpf_get_smp_processor_id();
		}
	}
	emit(EV_WAKING, p->pid, waker, cpu, 0);
	return 0;
}

SEC("fentry/scx_bpf_task_set_slice")
int BPF_PROG(hl_slice_refill, struct task_struct *p, u64 slice)
{
	struct task_struct *cur = bpf_get_current_task_btf();

	if (p->pid != cur->pid || p->tgid == own_tgid || p->pid == 0)
		return 0;
	emit(EV_REFILL, p->pid, (s32)(slice / 1000), bpf_get_smp_processor_id(), 0);
	return 0;
}
