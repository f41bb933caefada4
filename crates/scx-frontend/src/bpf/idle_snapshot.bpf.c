/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Idle snapshot for scx_hybridland's user-space policy.
 *
 * scx_rustland_core hands user space no idle mask, and its select_cpu helper applies the
 * kernel's own idle pick. This separate object holds one BPF_PROG_TYPE_SYSCALL program that
 * copies the sched_ext built-in idle mask (every idle CPU) into a global array. User space
 * runs it with BPF_PROG_TEST_RUN before each batch of decisions and reads the arrays through
 * the skeleton's mmap'ed .bss.
 *
 * scx_bpf_get_idle_cpumask() is registered for syscall programs (kernel/sched/ext_idle.c).
 * The copy is a snapshot: a CPU may turn busy right after it.
 */
#include <scx/common.bpf.h>

char _license[] SEC("license") = "GPL";

#define SNAP_MAX_CPUS 1024
#define SNAP_WORDS (SNAP_MAX_CPUS / 64)
/* Tasks of the shared queue looked at one by one; past that, every CPU counts as served. */
#define SNAP_MAX_SHARED 64

/* Outputs, one bit per CPU, the same layout as hybridland_policy::CpuSet's words. */
u64 idle_words[SNAP_WORDS];
/*
 * CPUs whose scx_rustland_core per-CPU queue (DSQ id = CPU number) holds tasks not yet
 * started: such a CPU is not free even when the kernel calls it idle, and a task whose slice
 * ends there is not the only one wanting it. Filled by snapshot_full only.
 */
u64 queued_words[SNAP_WORDS];
/* Tasks in the shared queue (DSQ id SNAP_MAX_CPUS), or a negative error. */
s32 shared_queued;
/*
 * CPUs a task waiting in the shared queue may run on, of the tasks no idle CPU can take: the
 * busy CPUs those tasks wait for. A task whose slice ends on such a CPU is not the only one
 * wanting it. Filled by snapshot_full only; every CPU when more than SNAP_MAX_SHARED tasks
 * wait (or one of them may run anywhere and nothing is idle).
 */
u64 served_words[SNAP_WORDS];
/*
 * The framework's clock when the snapshot was taken: scx_bpf_now(), the clock of the task
 * timestamps scx_rustland_core reports (the runqueue clock, sched_clock on most machines; on
 * kernels without the kfunc, bpf_ktime_get_ns() for both). It is not CLOCK_MONOTONIC, which
 * NTP slews and which starts elsewhere: user space reads its offset from here.
 */
u64 clock_ns;
/* Number of possible CPU ids the kernel reported on the last run. */
u32 nr_cpu_ids_seen;
/* Runs so far; user space checks it moves, so a silently failing program is noticed. */
u64 nr_snapshots;

/* Whether @p may run on a CPU idle_words shows idle. */
static __always_inline bool may_run_idle(struct task_struct *p, u32 nr)
{
	int cpu;

	bpf_for(cpu, 0, nr) {
		u32 word = (u32)cpu / 64;

		if (word >= SNAP_WORDS)
			break;
		if ((idle_words[word] >> ((u32)cpu & 63)) & 1 && bpf_cpumask_test_cpu(cpu, p->cpus_ptr))
			return true;
	}
	return false;
}

/*
 * Fills served_words from the tasks waiting in the shared queue that no idle CPU can take
 * (one that can is about to run there, and needs no busy CPU).
 */
static __always_inline void shared_served(u32 nr, bool any_idle)
{
	struct bpf_iter_scx_dsq it;
	struct task_struct *p;
	bool all = false;
	u32 seen = 0;
	int cpu;

	bpf_rcu_read_lock();
	if (bpf_iter_scx_dsq_new(&it, SNAP_MAX_CPUS, 0)) {
		all = !any_idle;
	} else {
		while ((p = bpf_iter_scx_dsq_next(&it))) {
			if (++seen > SNAP_MAX_SHARED) {
				all = true;
				break;
			}
			if (any_idle && may_run_idle(p, nr))
				continue;
			if (p->nr_cpus_allowed >= (int)nr) {
				all = true;
				break;
			}
			bpf_for(cpu, 0, nr) {
				u32 word = (u32)cpu / 64;

				if (word >= SNAP_WORDS)
					break;
				if (bpf_cpumask_test_cpu(cpu, p->cpus_ptr))
					served_words[word] |= 1ULL << ((u32)cpu & 63);
			}
		}
	}
	bpf_iter_scx_dsq_destroy(&it);
	bpf_rcu_read_unlock();
	if (!all)
		return;
	bpf_for(cpu, 0, nr) {
		u32 word = (u32)cpu / 64;

		if (word >= SNAP_WORDS)
			break;
		served_words[word] |= 1ULL << ((u32)cpu & 63);
	}
}

static __always_inline int snapshot(bool queues)
{
	const struct cpumask *idle;
	u32 nr = scx_bpf_nr_cpu_ids();
	u32 w;
	int cpu;

	if (nr > SNAP_MAX_CPUS)
		nr = SNAP_MAX_CPUS;

	for (w = 0; w < SNAP_WORDS; w++) {
		idle_words[w] = 0;
		queued_words[w] = 0;
		served_words[w] = 0;
	}

	idle = scx_bpf_get_idle_cpumask();

	/* An open-coded iterator: verified once, whatever the number of CPUs. */
	bpf_for(cpu, 0, nr) {
		u32 word = (u32)cpu / 64;
		u64 bit = 1ULL << ((u32)cpu & 63);

		if (word >= SNAP_WORDS)
			break;
		if (bpf_cpumask_test_cpu(cpu, idle))
			idle_words[word] |= bit;
		if (queues && scx_bpf_dsq_nr_queued(cpu) > 0)
			queued_words[word] |= bit;
	}

	scx_bpf_put_idle_cpumask(idle);

	if (queues) {
		shared_queued = scx_bpf_dsq_nr_queued(SNAP_MAX_CPUS);
		if (shared_queued > 0) {
			bool any_idle = false;

			for (w = 0; w < SNAP_WORDS; w++)
				any_idle |= idle_words[w] != 0;
			shared_served(nr, any_idle);
		}
	}
	nr_cpu_ids_seen = nr;
	clock_ns = scx_bpf_now();
	__sync_fetch_and_add(&nr_snapshots, 1);
	return 0;
}

/* The idle mask and per-CPU queue occupancy. */
SEC("syscall")
int snapshot_full(void *ctx)
{
	return snapshot(true);
}

/* The framework's clock alone, for the loop's first reading before any snapshot. */
SEC("syscall")
int clock_now(void *ctx)
{
	clock_ns = scx_bpf_now();
	return 0;
}

/* The idle mask only: the fallback if the kernel refuses snapshot_full. */
SEC("syscall")
int snapshot_idle(void *ctx)
{
	return snapshot(false);
}
