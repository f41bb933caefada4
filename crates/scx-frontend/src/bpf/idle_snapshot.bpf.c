/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Idle snapshot for scx_hybridland's user-space policy.
 *
 * scx_rustland_core hands user space no idle mask, and its select_cpu helper applies the
 * kernel's own idle pick. This separate object holds one BPF_PROG_TYPE_SYSCALL program that
 * copies the sched_ext built-in idle masks (every idle CPU, and the CPUs whose whole SMT core
 * is idle) into global arrays. User space runs it with BPF_PROG_TEST_RUN before each batch of
 * decisions and reads the arrays through the skeleton's mmap'ed .bss.
 *
 * scx_bpf_get_idle_cpumask()/scx_bpf_get_idle_smtmask() are registered for syscall programs
 * (kernel/sched/ext_idle.c). The copy is a snapshot: a CPU may turn busy right after it.
 */
#include <scx/common.bpf.h>

char _license[] SEC("license") = "GPL";

#define SNAP_MAX_CPUS 1024
#define SNAP_WORDS (SNAP_MAX_CPUS / 64)

/* Outputs, one bit per CPU, the same layout as hybridland_policy::CpuSet's words. */
u64 idle_words[SNAP_WORDS];
u64 idle_smt_words[SNAP_WORDS];
/* Number of possible CPU ids the kernel reported on the last run. */
u32 nr_cpu_ids_seen;
/* Runs so far; user space checks it moves, so a silently failing program is noticed. */
u64 nr_snapshots;

static __always_inline u64 mask_word(const struct cpumask *mask, u32 word, u32 nr)
{
	u64 bits = 0;
	u32 bit;

	for (bit = 0; bit < 64; bit++) {
		u32 cpu = word * 64 + bit;

		if (cpu >= nr)
			break;
		if (bpf_cpumask_test_cpu(cpu, mask))
			bits |= 1ULL << bit;
	}
	return bits;
}

SEC("syscall")
int snapshot_idle(void *ctx)
{
	const struct cpumask *idle, *smt;
	u32 nr = scx_bpf_nr_cpu_ids();
	u32 w;

	if (nr > SNAP_MAX_CPUS)
		nr = SNAP_MAX_CPUS;

	idle = scx_bpf_get_idle_cpumask();
	smt = scx_bpf_get_idle_smtmask();

	for (w = 0; w < SNAP_WORDS; w++) {
		if (w * 64 >= nr) {
			idle_words[w] = 0;
			idle_smt_words[w] = 0;
			continue;
		}
		idle_words[w] = mask_word(idle, w, nr);
		idle_smt_words[w] = mask_word(smt, w, nr);
	}

	scx_bpf_put_idle_cpumask(idle);
	scx_bpf_put_idle_cpumask(smt);

	nr_cpu_ids_seen = nr;
	__sync_fetch_and_add(&nr_snapshots, 1);
	return 0;
}
