//! The task events scx_rustland_core does not report (`src/bpf/task_events.bpf.c`): a task
//! exited, who woke a task, and the framework refilled the slice of a task nobody else wanted.
//!
//! Load it with [`TaskEventSource::load`] *before* `BpfScheduler::init`, as the idle snapshot:
//! the ring buffer is mmap'ed when it is built, and the framework forbids `mmap` after its init.
//! Draining it afterwards reads that shared memory, with no system call.

#![forbid(unsafe_code)]

use crate::task_events_skel::{TaskEventsSkel, TaskEventsSkelBuilder};
use anyhow::{Context, Result};
use core::cell::RefCell;
use core::fmt;
use core::mem::MaybeUninit;
use hybridland_policy::CpuId;
use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{RingBuffer, RingBufferBuilder};
use std::rc::Rc;

/// The kinds of event, numbered as the BPF side writes them.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum EventKind {
    /// A thread exited.
    Exit = 1,
    /// A task was woken.
    Waking = 2,
    /// The framework gave the running task a new slice at its slice end: nothing else waited.
    Refill = 3,
}

impl EventKind {
    /// Every kind, in counter order.
    pub(crate) const ALL: [Self; 3] = [Self::Exit, Self::Waking, Self::Refill];

    const fn from_raw(raw: u32) -> Option<Self> {
        match raw {
            1 => Some(Self::Exit),
            2 => Some(Self::Waking),
            3 => Some(Self::Refill),
            _ => None,
        }
    }
}

/// The task that woke another, when a task did (not an interrupt).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct WakingTask {
    pub(crate) pid: i32,
    pub(crate) cpu: CpuId,
}

/// One event, as the loop hands it on. Times are CLOCK_MONOTONIC ns, the loop's clock.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum TaskEvent {
    /// Thread `pid` of process `tgid` exited; `life` is its start time (`Life`: a later
    /// thread given the same pid has another).
    Exit {
        at_ns: u64,
        pid: i32,
        tgid: i32,
        life: u64,
    },
    /// `pid` was woken, by `waker` when a task woke it.
    Waking {
        at_ns: u64,
        pid: i32,
        waker: Option<WakingTask>,
    },
    /// `pid`'s slice ended on `cpu` with no other task wanting the CPU, and the framework let
    /// it run on with a new slice of `slice_us`.
    Refill {
        at_ns: u64,
        pid: i32,
        cpu: CpuId,
        slice_us: u32,
    },
}

/// Size of one event on the ring (`struct task_event`).
const RAW_EVENT_BYTES: usize = 32;

/// Why a record on the ring is not an event: a BPF object and this crate out of step.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum RawEventError {
    /// Not the size of `struct task_event`.
    Size(usize),
    /// A kind this build does not know.
    Kind(u32),
    /// A CPU number out of range for a CPU id.
    Cpu(i32),
}

impl fmt::Display for RawEventError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Size(n) => write!(f, "a {n}-byte record, not {RAW_EVENT_BYTES}"),
            Self::Kind(k) => write!(f, "unknown event kind {k}"),
            Self::Cpu(c) => write!(f, "CPU {c} out of range"),
        }
    }
}

impl core::error::Error for RawEventError {}

/// Reads one record as the BPF side wrote it (native byte order: the same machine).
pub(crate) fn parse_event(bytes: &[u8]) -> Result<TaskEvent, RawEventError> {
    let raw: &[u8; RAW_EVENT_BYTES] = bytes
        .try_into()
        .map_err(|_| RawEventError::Size(bytes.len()))?;
    let word = |i: usize| [raw[i], raw[i + 1], raw[i + 2], raw[i + 3]];
    let long = |i: usize| u64::from_ne_bytes(core::array::from_fn(|k| raw[i + k]));
    let at_ns = long(0);
    let pid = i32::from_ne_bytes(word(8));
    let other = i32::from_ne_bytes(word(12));
    let cpu = i32::from_ne_bytes(word(16));
    let kind = u32::from_ne_bytes(word(20));
    let cpu_id = |c: i32| {
        u16::try_from(c)
            .map(CpuId)
            .map_err(|_| RawEventError::Cpu(c))
    };
    match EventKind::from_raw(kind) {
        Some(EventKind::Exit) => Ok(TaskEvent::Exit {
            at_ns,
            pid,
            tgid: other,
            life: long(24),
        }),
        Some(EventKind::Waking) => Ok(TaskEvent::Waking {
            at_ns,
            pid,
            waker: if other > 0 && cpu >= 0 {
                Some(WakingTask {
                    pid: other,
                    cpu: cpu_id(cpu)?,
                })
            } else {
                None
            },
        }),
        Some(EventKind::Refill) => Ok(TaskEvent::Refill {
            at_ns,
            pid,
            cpu: cpu_id(cpu)?,
            slice_us: u32::try_from(other).unwrap_or(0),
        }),
        None => Err(RawEventError::Kind(kind)),
    }
}

/// What the kernel side counted: events written and lost to a full ring, per kind.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct SourceCounters {
    pub(crate) sent: [u64; EventKind::ALL.len()],
    pub(crate) dropped: [u64; EventKind::ALL.len()],
}

/// Records read from the ring and not yet handed on; bounded by [`DRAIN_MAX`].
type Pending = Rc<RefCell<Vec<Result<TaskEvent, RawEventError>>>>;

/// Most records taken from the ring per [`TaskEventSource::drain`]: the rest stay on the ring
/// for the next call, so the loop's work per call is bounded and nothing is allocated.
pub(crate) const DRAIN_MAX: usize = 4096;

/// The loaded and attached event source.
pub(crate) struct TaskEventSource<'obj> {
    // Declared before `skel`: the ring is freed before the map it reads.
    ring: RingBuffer<'static>,
    pending: Pending,
    skel: TaskEventsSkel<'obj>,
    refills: bool,
}

impl<'obj> TaskEventSource<'obj> {
    /// Opens, loads and attaches the programs; `own_tgid` (the scheduler's process) is left out
    /// of wake-ups and refills; `wakers`: whether wake-ups are reported at all. The refill
    /// probe is tried first; if the kernel refuses it, the source is loaded without it (into
    /// `fallback`), and [`refills`](Self::refills) says so.
    pub(crate) fn load(
        object: &'obj mut MaybeUninit<libbpf_rs::OpenObject>,
        fallback: &'obj mut MaybeUninit<libbpf_rs::OpenObject>,
        own_tgid: i32,
        wakers: bool,
    ) -> Result<Self> {
        match Self::load_with(object, own_tgid, true, wakers) {
            Ok(me) => Ok(me),
            Err(e) => {
                tracing::warn!(
                    "slice refills unseen ({e:#}): the framework's silent refills are not reported"
                );
                Self::load_with(fallback, own_tgid, false, wakers)
            }
        }
    }

    fn load_with(
        object: &'obj mut MaybeUninit<libbpf_rs::OpenObject>,
        own_tgid: i32,
        refills: bool,
        wakers: bool,
    ) -> Result<Self> {
        let mut open = TaskEventsSkelBuilder::default()
            .open(object)
            .context("opening the task-event BPF object")?;
        // common.bpf.h's prolog probe is for struct_ops schedulers; this object has none.
        open.progs.scx_lib_init_probe.set_autoload(false);
        open.progs.hl_slice_refill.set_autoload(refills);
        open.progs.hl_task_waking.set_autoload(wakers);
        open.maps
            .rodata_data
            .as_deref_mut()
            .context("task-event .rodata is not mapped")?
            .own_tgid = own_tgid;
        let mut skel = open.load().context("loading the task-event BPF programs")?;
        skel.attach()
            .context("attaching the task-event BPF programs")?;
        let pending: Pending = Rc::new(RefCell::new(Vec::with_capacity(DRAIN_MAX)));
        let sink = Rc::clone(&pending);
        let mut builder = RingBufferBuilder::new();
        builder
            .add(&skel.maps.events, move |bytes: &[u8]| {
                sink.borrow_mut().push(parse_event(bytes));
                0
            })
            .context("reading the task-event ring")?;
        let ring = builder.build().context("mapping the task-event ring")?;
        Ok(Self {
            ring,
            pending,
            skel,
            refills,
        })
    }

    /// Whether slice refills are reported on this kernel.
    pub(crate) const fn refills(&self) -> bool {
        self.refills
    }

    /// Hands up to [`DRAIN_MAX`] events to `each`, oldest first, and returns how many records
    /// were read (records that do not parse are handed on as errors, to be counted).
    pub(crate) fn drain(
        &mut self,
        each: &mut dyn FnMut(Result<TaskEvent, RawEventError>),
    ) -> Result<usize> {
        let got = self.ring.consume_raw_n(DRAIN_MAX);
        if got < 0 {
            anyhow::bail!("reading the task-event ring failed ({got})");
        }
        let mut pending = self.pending.borrow_mut();
        let n = pending.len();
        for ev in pending.drain(..) {
            each(ev);
        }
        Ok(n)
    }

    /// The kernel side's counters.
    pub(crate) fn counters(&self) -> SourceCounters {
        let mut c = SourceCounters::default();
        if let Some(bss) = self.skel.maps.bss_data.as_deref() {
            for (i, kind) in EventKind::ALL.iter().enumerate() {
                let k = *kind as usize;
                c.sent[i] = bss.nr_sent.get(k).copied().unwrap_or(0);
                c.dropped[i] = bss.nr_dropped.get(k).copied().unwrap_or(0);
            }
        }
        c
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn raw(at: u64, pid: i32, other: i32, cpu: i32, kind: u32) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&at.to_ne_bytes());
        v.extend_from_slice(&pid.to_ne_bytes());
        v.extend_from_slice(&other.to_ne_bytes());
        v.extend_from_slice(&cpu.to_ne_bytes());
        v.extend_from_slice(&kind.to_ne_bytes());
        // An exit's life: its start time.
        v.extend_from_slice(&(if kind == 1 { at * 100 } else { 0u64 }).to_ne_bytes());
        v
    }

    #[test]
    fn records_parse_as_the_bpf_side_writes_them() {
        assert_eq!(
            parse_event(&raw(7, 10, 9, 2, 1)),
            Ok(TaskEvent::Exit {
                at_ns: 7,
                pid: 10,
                tgid: 9,
                life: 700
            })
        );
        assert_eq!(
            parse_event(&raw(8, 10, 11, 3, 2)),
            Ok(TaskEvent::Waking {
                at_ns: 8,
                pid: 10,
                waker: Some(WakingTask {
                    pid: 11,
                    cpu: CpuId(3)
                })
            })
        );
        // From an interrupt: no waker.
        assert_eq!(
            parse_event(&raw(8, 10, -1, -1, 2)),
            Ok(TaskEvent::Waking {
                at_ns: 8,
                pid: 10,
                waker: None
            })
        );
        assert_eq!(
            parse_event(&raw(9, 10, 20_000, 5, 3)),
            Ok(TaskEvent::Refill {
                at_ns: 9,
                pid: 10,
                cpu: CpuId(5),
                slice_us: 20_000
            })
        );
    }

    #[test]
    fn records_out_of_step_are_errors() {
        assert_eq!(parse_event(&[0; 24]), Err(RawEventError::Size(24)));
        assert_eq!(
            parse_event(&raw(1, 1, 1, 1, 9)),
            Err(RawEventError::Kind(9))
        );
        assert_eq!(
            parse_event(&raw(1, 1, 1, 70_000, 3)),
            Err(RawEventError::Cpu(70_000))
        );
    }
}
