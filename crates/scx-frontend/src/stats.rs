//! Statistics, served the scx way: the loop answers requests from an scx_stats server on the
//! standard socket ([`SOCKET`]) with a copy of its counters ([`Sample`]); the server turns two
//! samples into [`Metrics`](metrics::Metrics) (a `#[derive(Stats)]` struct, described by `--help-stats`) for each
//! client: `--monitor SECS` in another process, `--stats SECS` in a thread of this one (which
//! logs it through `tracing`), or any scx_stats client. The one-line rendering:
//!
//! ```text
//! stats: placed idle-p-core=12 idle-e-core=30 busy-sibling=2 no-idle=5 | overflow=0 stale=1
//!   nudge=0 kept=40 yielded=6 preempt=3 | tasks=31 tasks-max=57 exit=4 exit-tracked=3 renewed=0 stale-exit=0 waking=118 by-task=97 refill=12 | busy
//!   performance=95% efficiency=40% | loop batches=40 empty=2 tasks=49 snapshots=47
//!   snapshot-us=800 decide-us=120 timer-wakes=12 cpu-us=3900 | balance=auto | fw user=44 kernel=3 fast=21
//!   fast-asked=60 fast-no-free=38 fast-pinned=0 fast-cover=95% fast-shared-queue=1 fast-race=0
//!   class-writes=2 class-gone=0 class-errors=0 class-drift=0 fast-placed=21 fast-lost=0
//!   cancel=0 bounce=0 failed=0 congested=0 running=6 queued=0
//! ```
//!
//! - `placed`: wake-ups and slice-end moves per step of the idle order (`no-idle` went to the
//!   shared queue);
//! - `overflow`: placements outside the primary domain because none of it was idle;
//! - `stale`: picks whose CPU was idle in the snapshot but busy by dispatch time, sent to the
//!   shared queue instead;
//! - `nudge`: tasks made to come back for re-placement because a better CPU went idle;
//! - `kept`: slice ends where the task kept its CPU (the policy's slice-end rule);
//! - `yielded`: slice ends sent to the shared queue instead, because a task waited for that
//!   CPU and nothing better was idle (any CPU that asks for work next takes them, in vtime
//!   order);
//! - `preempt`: woken tasks that found no CPU idle and took a busy one from a task far ahead of
//!   them in vtime (the core's wake-up preemption), the task there made to end its slice;
//! - the task-event source (`src/task_events.rs`): `tasks`, the loop's task table now, and
//!   `tasks-max`, the most it held (its capacity is `--max-tasks`); `exit`,
//!   threads that exited, `exit-tracked` of them in the table (they leave it at once);
//!   `renewed`, entries a new thread that reused a pid ended before the old thread's exit
//!   arrived, and `stale-exit`, those old threads' exits, ignored when they came; `waking`,
//!   wake-ups, `by-task` of them with a task as waker (not an interrupt); `refill`, slices the
//!   framework refilled because nothing else wanted the CPU (0 where the kernel cannot report
//!   them); only when non-zero, `events-dropped` (lost to a full event ring since start),
//!   `event-errors` and `untracked` (decisions for tasks the full table did not hold);
//! - `busy`: share of each core kind's CPU time spent not idle (from `/proc/stat`);
//! - `loop`: the loop's rounds with tasks (`batches`) and without (`empty`), tasks decided,
//!   idle snapshots (one `bpf()` call each) and the time in them, the time in the core's calls,
//!   and the loop thread's CPU time: what a batch costs;
//! - only when non-zero: `dispatch-retries` (tasks kept in the local backlog because the ring
//!   buffer to the kernel was full), `backlog` (tasks in it now), `snapshot-errors` (failed idle
//!   snapshots: that batch went to the shared queue), `dequeue-errors`, `affinity-errors`;
//! - `fw`: scx_rustland_core's counters over the interval (user/kernel dispatches, cancelled,
//!   bounced to the previous CPU, failed, ring-buffer congestion) and its current gauges;
//!   among them the wake-up fast path's: `fast`, wake-ups it placed in the kernel (never seen
//!   by the loop, so not in `placed`), of `fast-asked`; `fast-no-free` of those found no
//!   allowed CPU free, of which `fast-pinned` were placed by the pinned rule (a task allowed
//!   on one busy CPU goes first there); `fast-cover`, the share of the others placed; the others by reason
//!   (`fast-shared-queue`, `fast-race`); the loop's side: `class-writes`, task classes
//!   written into the kernel's table by pid, `class-gone`, those for an id no task can have,
//!   `class-errors`, those with no table to write, `class-drift`, placements
//!   that read another class than the core's (the core took it and gave its own again),
//!   `fast-placed`, placements reported and handed to the core, and `fast-lost`, those lost
//!   to a full ring;
//!   only when non-zero, `own-rescued`, threads of the scheduler's own the kernel ran from the
//!   loop's queue because the loop was blocked (`src/bpf/own_threads.bpf.h`), and
//!   `own-untracked`, those its table had no room to note.

#![forbid(unsafe_code)]

mod counters;
mod metrics;
mod proc_stat;
mod server;
#[cfg(test)]
mod tests;

pub(crate) use counters::{Counters, Framework, Sample};
pub(crate) use proc_stat::Kinds;
pub(crate) use server::{SOCKET, StatsLink, describe, monitor, serve};
