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

    /// Runs the `clock_now` program, or with `snapshot` this object's snapshot program (one
    /// `bpf()` call), and returns the globals it wrote.
    fn run(&self, snapshot: bool) -> Result<&crate::idle_skel::types::bss> {
        let progs = &self.skel.progs;
        let (prog, what) = match (snapshot, self.full) {
            (false, _) => (&progs.clock_now, "clock"),
            (true, true) => (&progs.snapshot_full, "idle-snapshot"),
            (true, false) => (&progs.snapshot_idle, "idle-snapshot"),
        };
        let out = prog
            .test_run(ProgramInput::default())
            .with_context(|| format!("running the {what} program"))?;
        if out.return_value != 0 {
            bail!("{what} program returned {}", out.return_value);
        }
        self.skel
            .maps
            .bss_data
            .as_deref()
            .context("idle-snapshot .bss is not mapped")
    }

    /// The framework's clock now (the `clock_now` program).
    pub(crate) fn clock(&mut self) -> Result<u64> {
        Ok(self.run(false)?.clock_ns)
    }

    /// Runs the snapshot program and returns the masks it copied.
    pub(crate) fn take(&mut self) -> Result<IdleCpus> {
        let runs = self.runs + 1;
        let bss = self.run(true)?;
        let recorded = bss.nr_snapshots;
        let mut idle = [0u64; CpuSet::WORDS];
        let mut queued = [0u64; CpuSet::WORDS];
        let mut served = [0u64; CpuSet::WORDS];
        let n = CpuSet::WORDS.min(bss.idle_words.len());
        idle[..n].copy_from_slice(&bss.idle_words[..n]);
        queued[..n].copy_from_slice(&bss.queued_words[..n]);
        served[..n].copy_from_slice(&bss.served_words[..n]);
        let clock_ns = bss.clock_ns;
        self.runs = runs;
        if recorded < runs {
            bail!("idle-snapshot program did not run ({recorded} runs recorded, {runs} asked)");
        }
        Ok(IdleCpus {
            idle: CpuSet::from_words(idle),
            queued: self.full.then(|| CpuSet::from_words(queued)),
            served: self.full.then(|| CpuSet::from_words(served)),
            clock_ns,
        })
    }
}
