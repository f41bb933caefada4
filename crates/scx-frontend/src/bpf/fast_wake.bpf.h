/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * scx_hybridland's wake-up fast path, compiled into scx_rustland_core's generated main.bpf.c:
 * build.rs includes this file just before the framework's select_cpu and calls
 * hl_fast_wake() there, before the task would be queued to user space, unless the
 * framework's own idle selection is on (--fifo).
 *
 * A wake-up whose answer the policy knows without the task's history (its previous CPU's
 * whole core idle, no CPU that could serve it better idle, cluster balance inactive where
 * load would decide) is dispatched to that CPU here, without the round trip. User space
 * (src/fast_wake.rs) fills the table below from hybridland_policy::FastWake, one entry per
 * CPU; this code only tests idle bits against it. It holds no placement rule: a wake-up the
 * table does not cover goes to user space as before.
 *
 * The table lives in .bss.hl_fast, which user space writes through the skeleton's mmap. It is
 * written while hl_fast_on is 0 and switched on after, so a reader never acts on a table
 * being rewritten for longer than one wake-up that started before the switch.
 */

/*
 * Every global of ours lives in its own data section, which libbpf maps apart from the
 * framework's .bss (user space reaches it as the skeleton's bss_hl_fast). The framework's
 * own globals keep the layout they have in every scx_rustland_core scheduler: with ours in
 * .bss, the 340 KiB of tables sat between its counters and its static flags, which every
 * dispatch touches, so --fifo ran the framework's programs over a different layout than
 * scx_rlfifo does.
 */
#define HL_GLOBAL SEC(".bss.hl_fast")

#define HL_MAX_WORDS 16
#define HL_MAX_CPUS (HL_MAX_WORDS * 64)

struct hl_fast_cpu {
	/* The CPU's core as the policy sees it: all idle, or ask user space. */
	u64 core[HL_MAX_WORDS];
	/* CPUs that could serve the task better: any idle, ask user space. */
	u64 beaten[HL_MAX_WORDS];
	u32 keep;
	/* Ask user space while cluster balance is active (hl_balance_from..hl_balance_until). */
	u32 balance_matters;
	/* The idle order's step that keeps it (hybridland_policy::Step), for the counters. */
	u32 step;
	u32 pad;
};

struct hl_fast_cpu hl_fast_cpus[HL_MAX_CPUS] HL_GLOBAL;
/* The policy's CPUs, to count the busy ones as the balance rule does. */
u64 hl_machine_words[HL_MAX_WORDS] HL_GLOBAL;
volatile u32 hl_fast_on HL_GLOBAL;
u32 hl_nr_cpu_ids HL_GLOBAL, hl_nr_words HL_GLOBAL, hl_nr_machine_cpus HL_GLOBAL;
u32 hl_balance_from HL_GLOBAL, hl_balance_until HL_GLOBAL;
/* The nudge helper is placed by the core alone (it must land where the core sends it). */
volatile u32 hl_helper_pid HL_GLOBAL;
u64 hl_fast_slice_ns HL_GLOBAL;
/* Wake-ups dispatched here by step, and wake-ups the table was asked about. */
volatile u64 hl_nr_fast_step[4] HL_GLOBAL, hl_nr_fast_asked HL_GLOBAL;

/*
 * --audit-fast-wake: each kept wake-up with what it was decided on, for user space to hold
 * against the policy's own answer (hybridland_policy::Policy::check_fast_wake). A ring of
 * slots in .bss.hl_fast, which user space maps at load (the framework forbids it new
 * mappings once loaded); `seq` is 0 while a slot is written and n + 1 for the n-th record
 * after.
 */
#define HL_AUDIT_SLOTS 256

struct hl_fast_audit_rec {
	u64 seq;
	s32 pid;
	s32 cpu;
	u64 idle[HL_MAX_WORDS];
	u64 allowed[HL_MAX_WORDS];
};

struct hl_fast_audit_rec hl_audit_recs[HL_AUDIT_SLOTS] HL_GLOBAL;
volatile u64 hl_audit_head HL_GLOBAL;
volatile u32 hl_fast_audit_on HL_GLOBAL;

static void hl_audit(struct task_struct *p, s32 cpu, u64 *idle_w, u32 nr_cpus)
{
	struct hl_fast_audit_rec *rec;
	u64 n = __sync_fetch_and_add(&hl_audit_head, 1);
	s32 c;
	u32 w;

	rec = &hl_audit_recs[n & (HL_AUDIT_SLOTS - 1)];
	rec->seq = 0;
	asm volatile("" ::: "memory");
	rec->pid = p->pid;
	rec->cpu = cpu;
	for (w = 0; w < HL_MAX_WORDS; w++) {
		rec->idle[w] = idle_w[w];
		rec->allowed[w] = 0;
	}
	bpf_for(c, 0, nr_cpus) {
		u32 word = (u32)c / 64;

		if (word >= HL_MAX_WORDS)
			break;
		if (bpf_cpumask_test_cpu(c, p->cpus_ptr))
			rec->allowed[word] |= 1ULL << ((u32)c & 63);
	}
	asm volatile("" ::: "memory");
	rec->seq = n + 1;
}

static bool hl_fast_wake(struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	const struct cpumask *idle;
	struct hl_fast_cpu *e;
	u64 idle_w[HL_MAX_WORDS] = {};
	u32 nr_cpus = hl_nr_cpu_ids, nr_idle = 0, busy, w;
	s32 cpu;

	if (!hl_fast_on || !(wake_flags & SCX_WAKE_TTWU) || p->pid == hl_helper_pid)
		return false;
	if (prev_cpu < 0 || prev_cpu >= HL_MAX_CPUS || (u32)prev_cpu >= nr_cpus)
		return false;
	__sync_fetch_and_add(&hl_nr_fast_asked, 1);
	e = &hl_fast_cpus[prev_cpu];
	if (!e->keep || !bpf_cpumask_test_cpu(prev_cpu, p->cpus_ptr))
		return false;
	if (!can_direct_dispatch(prev_cpu))
		return false;

	idle = scx_bpf_get_idle_cpumask();
	bpf_for(cpu, 0, nr_cpus) {
		u32 word = (u32)cpu / 64;
		u64 bit = 1ULL << ((u32)cpu & 63);

		if (word >= HL_MAX_WORDS)
			break;
		/*
		 * A CPU of the core with a task queued is about to run it: the core, which sees
		 * queues, counts it busy.
		 */
		if ((e->core[word] & bit) && scx_bpf_dsq_nr_queued(cpu_to_dsq(cpu)))
			continue;
		if (bpf_cpumask_test_cpu(cpu, idle)) {
			idle_w[word] |= bit;
			if (hl_machine_words[word] & bit)
				nr_idle++;
		}
	}
	scx_bpf_put_idle_cpumask(idle);

	bpf_for(w, 0, hl_nr_words) {
		if (w >= HL_MAX_WORDS)
			break;
		if ((e->core[w] & idle_w[w]) != e->core[w] || (e->beaten[w] & idle_w[w]))
			return false;
	}
	busy = hl_nr_machine_cpus - nr_idle;
	if (e->balance_matters && busy >= hl_balance_from && busy < hl_balance_until)
		return false;

	if (!scx_bpf_test_and_clear_cpu_idle(prev_cpu))
		return false;
	/*
	 * The CPU's local queue, which it runs before it calls the framework's dispatch: there,
	 * the user-space scheduler would go first whenever it has work, and the woken task
	 * would wait behind it (measured: p50 wake-up latency 458 us alone in the VM against
	 * 368 us without the fast path).
	 */
	scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, hl_fast_slice_ns, 0);
	__sync_fetch_and_add(&hl_nr_fast_step[e->step & 3], 1);
	if (hl_fast_audit_on)
		hl_audit(p, prev_cpu, idle_w, nr_cpus);
	return true;
}
