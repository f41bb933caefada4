//! The kernel's idle CPUs, read on demand through the `snapshot_idle` syscall program
//! (`src/bpf/idle_snapshot.bpf.c`) and BPF_PROG_TEST_RUN.
//!
//! Load it with [`IdleSnapshot::load`] *before* `BpfScheduler::init`: that call locks memory and
//! then forbids `mmap` through seccomp, and loading a BPF object maps its global data.

#![forbid(unsafe_code)]

use crate::idle_skel::{IdleSkel, IdleSkelBuilder};
use anyhow::{Context, Result, bail};
use core::mem::MaybeUninit;
use hybridland_policy::CpuSet;
use libbpf_rs::ProgramInput;
use libbpf_rs::skel::{OpenSkel, SkelBuilder};

/// One reading of the kernel's idle state.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct IdleCpus {
    /// Idle CPUs.
    pub(crate) idle: CpuSet,
    /// CPUs whose scx_rustland_core queue holds tasks not started yet, when the kernel lets the
    /// program read queue lengths (`None` otherwise).
    pub(crate) queued: Option<CpuSet>,
    /// CPUs a task waiting in the shared queue may run on, of the tasks no idle CPU can take
    /// (every CPU when many wait), with `queued`.
    pub(crate) served: Option<CpuSet>,
    /// The framework's clock at the snapshot (see [`crate::clock`]).
    pub(crate) clock_ns: u64,
}

/// The loaded idle-snapshot program.
pub(crate) struct IdleSnapshot<'obj> {
    skel: IdleSkel<'obj>,
    runs: u64,
    full: bool,
}

impl<'obj> IdleSnapshot<'obj> {
    /// Opens and loads the program (not attached: it only ever runs on request).
    ///
    /// `snapshot_full` (idle mask and queue lengths) is tried first; if the kernel refuses it,
    /// `snapshot_idle` (idle mask only) is loaded instead, using `fallback` for the object.
    pub(crate) fn load(
        object: &'obj mut MaybeUninit<libbpf_rs::OpenObject>,
        fallback: &'obj mut MaybeUninit<libbpf_rs::OpenObject>,
    ) -> Result<Self> {
        match Self::load_with(object, true) {
            Ok(me) => Ok(me),
            Err(e) => {
                tracing::warn!("queue lengths unavailable ({e:#}); using idle masks only");
                Self::load_with(fallback, false)
            }
        }
    }

    fn load_with(object: &'obj mut MaybeUninit<libbpf_rs::OpenObject>, full: bool) -> Result<Self> {
        let mut open = IdleSkelBuilder::default()
            .open(object)
            .context("opening the idle-snapshot BPF object")?;
        // common.bpf.h's prolog probe is for struct_ops schedulers; this object has none.
        open.progs.scx_lib_init_probe.set_autoload(false);
        open.progs.snapshot_full.set_autoload(full);
        open.progs.snapshot_idle.set_autoload(!full);
        let skel = open
            .load()
            .context("loading the idle-snapshot BPF program")?;
        Ok(Self {
            skel,
            runs: 0,
            full,
        })
    }

    /// The framework's clock now (the `clock_now` program: one `bpf()` call).
    pub(crate) fn clock(&mut self) -> Result<u64> {
        let out = self
            .skel
            .progs
            .clock_now
            .test_run(ProgramInput::default())
            .context("running the clock program")?;
        if out.return_value != 0 {
            bail!("clock program returned {}", out.return_value);
        }
        let bss = self
            .skel
            .maps
            .bss_data
            .as_deref()
            .context("idle-snapshot .bss is not mapped")?;
        Ok(bss.clock_ns)
    }

    /// Runs the program and returns the masks it copied.
    pub(crate) fn take(&mut self) -> Result<IdleCpus> {
        let prog = if self.full {
            &self.skel.progs.snapshot_full
        } else {
            &self.skel.progs.snapshot_idle
        };
        let out = prog
            .test_run(ProgramInput::default())
            .context("running the idle-snapshot program")?;
        if out.return_value != 0 {
            bail!("idle-snapshot program returned {}", out.return_value);
        }
        let bss = self
            .skel
            .maps
            .bss_data
            .as_deref()
            .context("idle-snapshot .bss is not mapped")?;
        self.runs += 1;
        if bss.nr_snapshots < self.runs {
            bail!(
                "idle-snapshot program did not run ({} runs recorded, {} asked)",
                bss.nr_snapshots,
                self.runs
            );
        }
        let mut idle = [0u64; CpuSet::WORDS];
        let mut queued = [0u64; CpuSet::WORDS];
        let mut served = [0u64; CpuSet::WORDS];
        let n = CpuSet::WORDS.min(bss.idle_words.len());
        idle[..n].copy_from_slice(&bss.idle_words[..n]);
        queued[..n].copy_from_slice(&bss.queued_words[..n]);
        served[..n].copy_from_slice(&bss.served_words[..n]);
        Ok(IdleCpus {
            idle: CpuSet::from_words(idle),
            queued: self.full.then(|| CpuSet::from_words(queued)),
            served: self.full.then(|| CpuSet::from_words(served)),
            clock_ns: bss.clock_ns,
        })
    }
}
