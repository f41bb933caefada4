/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The fast path's walk (fast_wake_walk.h) built for the host, for the test that holds it to
 * hybridland_policy::WakeTable::decide (src/fast_wake/tests.rs): the same C the BPF scheduler
 * runs, given the table user space writes and one wake-up's words. Linked into the crate's
 * test binary only (build.rs).
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int32_t s32;

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif
#define HL_FOR(i, from, to) for ((i) = (from); (i) < (to); (i)++)

#include "fast_wake_walk.h"

/*
 * The walk's CPU for one wake-up (-1: nothing allowed is free) and, in @step, the step it
 * took (meaningful when a CPU was found).
 */
s32 hl_host_walk(const struct hl_table *t, const u64 *homes, const u64 *free, const u64 *allowed,
		 s32 prev, s32 sync_waker, u32 class, u32 *step)
{
	struct hl_scratch s;
	struct hl_walk_ctx w = {
		.t = t,
		.homes = homes,
		.s = &s,
		.class = class,
		.sync_waker = sync_waker,
	};
	s32 cpu;

	memset(&s, 0xa5, sizeof(s));
	memcpy(s.free, free, sizeof(s.free));
	memcpy(s.allowed, allowed, sizeof(s.allowed));
	cpu = hl_walk_words(&w, prev);
	*step = w.step;
	return cpu;
}

/* Task @pid's class in @classes (hl_class_in). */
u32 hl_host_class(const u64 *classes, s32 pid)
{
	return hl_class_in(classes, pid);
}

/* The slice the fast path gives a placement (hl_slice). */
u64 hl_host_slice(u64 base, u64 waiting, bool scaled)
{
	return hl_slice(base, waiting, scaled);
}
