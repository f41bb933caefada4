//! The live loop: moves tasks between scx_rustland_core and the policy, nothing else.
//!
//! Each iteration: drain up to [`BATCH_MAX`] queued tasks; take an idle snapshot; ask the
//! policy for each (through [`adapter::Batch`]); take a second snapshot to count CPUs that
//! turned busy meanwhile (stale); dispatch; tell the framework we are done. Between
//! iterations: poll the control file, log stats. The framework wakes the loop whenever tasks
//! are queued, and at least once a second.

use crate::adapter::{Batch, QueuedInput, Target};
use crate::bpf::{BpfScheduler, DispatchedTask, QueuedTask, RL_CPU_ANY};
use crate::fifo::Fifo;
use crate::idle_snapshot::IdleSnapshot;
use crate::knobs::{ControlFile, KnobChange, POLL_NS};
use crate::stats::{Counters, Framework, Reporter};
use crate::tasks::{Seen, TaskTable};
use anyhow::Result;
use hybridland_policy::{CpuId, CpuSet, CpuState, Policy, SliceEnd, TaskHints, Topology};
use std::os::fd::RawFd;
use tracing::{debug, info, warn};

/// Most tasks decided against one snapshot.
pub(crate) const BATCH_MAX: usize = 64;

/// Without queue lengths from the kernel, a CPU we just sent a task to counts as busy this
/// long (it may not have picked the task up yet).
const CLAIM_NS: u64 = 2_000_000;

/// How often the loop looks for tasks to nudge, and the shortest gap between two nudges.
const NUDGE_CHECK_NS: u64 = 20_000_000;
const NUDGE_GAP_NS: u64 = 50_000_000;
/// Slice of the nudge helper thread (it only reads a byte and sleeps again).
const NUDGE_SLICE_NS: u64 = 50_000;

/// `SCX_ENQ_WAKEUP`: the enqueue is a wake-up, not a slice end.
const SCX_ENQ_WAKEUP: u64 = 1;

/// Loop settings.
pub(crate) struct LoopConfig {
    pub(crate) slice_ns: u64,
    pub(crate) stats_ns: Option<u64>,
    /// `--fifo`: every task to the shared queue in arrival order, no policy ([`Fifo`]).
    pub(crate) fifo: bool,
}

fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn current_cpu() -> Option<CpuId> {
    // SAFETY: no arguments, returns -1 on error.
    let cpu = unsafe { libc::sched_getcpu() };
    u16::try_from(cpu).ok().map(CpuId)
}

/// The task's allowed CPUs: the whole machine when it may run anywhere, else its affinity.
fn allowed_cpus(pid: i32, nr_allowed: u64, nr_possible: u64, topo: &Topology) -> Option<CpuSet> {
    if nr_allowed >= nr_possible {
        return Some(*topo.cpus());
    }
    let mut set: libc::cpu_set_t = unsafe { core::mem::zeroed() };
    // SAFETY: the size matches the set we pass.
    let rc = unsafe { libc::sched_getaffinity(pid, size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return None;
    }
    let mut out = CpuSet::EMPTY;
    for cpu in topo.cpus().iter() {
        // SAFETY: cpu < MAX_CPUS <= CPU_SETSIZE.
        if unsafe { libc::CPU_ISSET(cpu.index(), &set) } {
            out.insert(cpu);
        }
    }
    Some(out)
}

/// A helper thread of ours that sleeps on a pipe. scx_rustland_core refills the slice of a
/// task nothing else competes with, so a task placed on an E-core (or an SMT sibling) while
/// every P-core was busy would stay there after a P-core idles. To re-place it, the loop wakes
/// this thread and sends it to that CPU's queue: at the task's next slice end the CPU has
/// other work, the task comes back to user space and the policy places it again.
pub(crate) struct Nudger {
    tid: i32,
    write_fd: RawFd,
    /// CPU the helper is to be sent to, and when it was woken for it.
    target: Option<(CpuId, u64)>,
    /// When it was last woken (the gap between nudges is kept from here).
    last_ns: Option<u64>,
}

impl Nudger {
    /// Starts the helper. Call before `BpfScheduler::init` (a thread stack needs `mmap`).
    pub(crate) fn spawn() -> Result<Self> {
        let mut fds = [0i32; 2];
        // SAFETY: pipe2 fills the two descriptors we pass.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
            anyhow::bail!("pipe2: {}", std::io::Error::last_os_error());
        }
        let read_fd = fds[0];
        // The reading end blocks.
        // SAFETY: plain fcntl on our descriptor.
        unsafe { libc::fcntl(read_fd, libc::F_SETFL, 0) };
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("hl-nudge".into())
            .stack_size(64 * 1024)
            .spawn(move || {
                // SAFETY: gettid has no arguments.
                let _ = tx.send(unsafe { libc::gettid() });
                let mut buf = [0u8; 64];
                loop {
                    // SAFETY: reads into our buffer.
                    let n = unsafe { libc::read(read_fd, buf.as_mut_ptr().cast(), buf.len()) };
                    if n == 0
                        || (n < 0
                            && std::io::Error::last_os_error().kind()
                                != std::io::ErrorKind::Interrupted)
                    {
                        break;
                    }
                }
            })?;
        let tid = rx.recv()?;
        Ok(Self {
            tid,
            write_fd: fds[1],
            target: None,
            last_ns: None,
        })
    }

    fn wake(&mut self, cpu: CpuId, now: u64) {
        // SAFETY: writes one byte from a local; non-blocking.
        unsafe { libc::write(self.write_fd, [1u8].as_ptr().cast(), 1) };
        self.target = Some((cpu, now));
        self.last_ns = Some(now);
    }
}

/// A task the loop sent to a CPU: what the up-migration test needs about it later.
#[derive(Copy, Clone, Debug)]
struct Placed {
    pid: i32,
    allowed: CpuSet,
    util: u16,
}

/// The running scheduler.
pub(crate) struct Scheduler<'a, 'b> {
    bpf: BpfScheduler<'a>,
    idle: IdleSnapshot<'b>,
    topo: Topology,
    policy: Policy,
    cfg: LoopConfig,
    control: Option<ControlFile>,
    tasks: TaskTable,
    counters: Counters,
    reporter: Reporter,
    /// Per CPU: when we last sent it a task.
    last_sent: Vec<u64>,
    /// Per CPU: the last task we sent there, as up-migration needs it.
    placed: Vec<Option<Placed>>,
    nudger: Option<Nudger>,
    nr_possible: u64,
    queued: Vec<QueuedTask>,
    /// Set in `--fifo` mode: batches skip the policy path.
    fifo: Option<Fifo>,
    outgoing: Vec<(DispatchedTask, Option<CpuId>)>,
}

impl<'a, 'b> Scheduler<'a, 'b> {
    pub(crate) fn new(
        bpf: BpfScheduler<'a>,
        idle: IdleSnapshot<'b>,
        topo: Topology,
        policy: Policy,
        cfg: LoopConfig,
        control: Option<ControlFile>,
        nudger: Option<Nudger>,
    ) -> Self {
        // SAFETY: sysconf has no memory effects.
        let nr_possible = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) }.max(1) as u64;
        let fifo = cfg.fifo.then(|| Fifo::new(cfg.slice_ns));
        let mut me = Self {
            bpf,
            idle,
            topo,
            policy,
            cfg,
            control,
            tasks: TaskTable::default(),
            counters: Counters::default(),
            reporter: Reporter::new(Counters::default(), Framework::default()),
            last_sent: vec![0; hybridland_policy::MAX_CPUS],
            placed: vec![None; hybridland_policy::MAX_CPUS],
            nudger,
            nr_possible,
            queued: Vec::with_capacity(BATCH_MAX),
            fifo,
            outgoing: Vec::with_capacity(BATCH_MAX),
        };
        let fw = me.framework();
        me.reporter = Reporter::new(Counters::default(), fw);
        me
    }

    fn framework(&mut self) -> Framework {
        Framework {
            user: *self.bpf.nr_user_dispatches_mut(),
            kernel: *self.bpf.nr_kernel_dispatches_mut(),
            cancel: *self.bpf.nr_cancel_dispatches_mut(),
            bounce: *self.bpf.nr_bounce_dispatches_mut(),
            failed: *self.bpf.nr_failed_dispatches_mut(),
            congested: *self.bpf.nr_sched_congested_mut(),
            running: *self.bpf.nr_running_mut(),
            queued: *self.bpf.nr_queued_mut(),
        }
    }

    /// Runs until a signal or the kernel ends it. Returns whether the kernel ended it
    /// (ejected), after reporting why.
    pub(crate) fn run(&mut self) -> Result<bool> {
        let mut next_poll = 0;
        let mut next_stats = self.cfg.stats_ns.map(|s| now_ns() + s);
        let mut next_prune = now_ns() + 5_000_000_000;
        let mut next_nudge = 0;
        while !self.bpf.exited() {
            self.schedule_batch()?;
            let now = now_ns();
            if now >= next_nudge {
                next_nudge = now + NUDGE_CHECK_NS;
                self.check_nudge(now)?;
            }
            if now >= next_poll {
                next_poll = now + POLL_NS;
                self.poll_knob();
            }
            if let (Some(at), Some(every)) = (next_stats, self.cfg.stats_ns)
                && now >= at
            {
                next_stats = Some(now + every);
                let fw = self.framework();
                let balance = self.policy.config().cluster_balance.to_string();
                info!(
                    "{}",
                    self.reporter
                        .line(&self.topo, &self.counters, &fw, &balance)
                );
            }
            if now >= next_prune {
                next_prune = now + 5_000_000_000;
                let latest = self.tasks.latest_ns();
                self.tasks.prune(latest.saturating_sub(30_000_000_000));
            }
        }
        let ejected = scx_utils::uei_exited!(&self.bpf.skel, uei);
        Ok(ejected)
    }

    /// Gives back the framework handle for the final report.
    pub(crate) fn into_bpf(self) -> BpfScheduler<'a> {
        self.bpf
    }

    fn poll_knob(&mut self) {
        let Some(control) = self.control.as_mut() else {
            return;
        };
        let current = self.policy.config().cluster_balance;
        match control.poll(current) {
            KnobChange::None => {}
            KnobChange::Set(mode) => {
                self.policy.set_cluster_balance(mode);
                info!(
                    "cluster balance: {current} -> {mode} (from {})",
                    control.path().display()
                );
            }
            KnobChange::Rejected => {
                warn!(
                    "{}: expected off, on or auto; keeping {current}",
                    control.path().display()
                );
            }
        }
    }

    /// Looks for a CPU running a task that the policy's up-migration test would now move
    /// (a P-core went idle while it sits on an E-core or an SMT sibling) and wakes the helper
    /// to dislodge it. At most one nudge per [`NUDGE_GAP_NS`].
    fn check_nudge(&mut self, now: u64) -> Result<()> {
        let Some(nudger) = self.nudger.as_ref() else {
            return Ok(());
        };
        if nudger
            .last_ns
            .is_some_and(|at| now.saturating_sub(at) < NUDGE_GAP_NS)
            || !self.placed.iter().any(Option::is_some)
        {
            return Ok(());
        }
        let snap = self.idle.take()?;
        let queued = snap.queued.unwrap_or_default();
        let state = CpuState::from_idle(&self.topo, &snap.idle.and_not(&queued));
        let mut target = None;
        for cpu in self.topo.cpus().iter() {
            let Some(placed) = self.placed[cpu.index()] else {
                continue;
            };
            if snap.idle.contains(cpu) {
                // The task left.
                self.placed[cpu.index()] = None;
                continue;
            }
            if queued.contains(cpu) {
                continue;
            }
            let hints = TaskHints {
                allowed: &placed.allowed,
                prev_cpu: Some(cpu),
                util: placed.util,
            };
            if let Some(p) = self.policy.up_migration(&self.topo, &state, cpu, &hints) {
                target = Some((cpu, placed.pid, p));
                break;
            }
        }
        if let (Some((cpu, pid, p)), Some(nudger)) = (target, self.nudger.as_mut()) {
            debug!(cpu = cpu.0, pid, better = %p.step, "nudge");
            nudger.wake(cpu, now);
            self.counters.nudges += 1;
            self.placed[cpu.index()] = None;
        }
        Ok(())
    }

    /// `--fifo`: the queued batch to the shared queue in arrival order, nothing else.
    fn dispatch_fifo(&mut self) -> Result<()> {
        let Some(fifo) = self.fifo.as_mut() else {
            return Ok(());
        };
        for task in &self.queued {
            let out = fifo.dispatch(task);
            if let Err(e) = self.bpf.dispatch_task(&out) {
                self.counters.dispatch_errors += 1;
                warn!("dispatching pid {} failed: {e}", out.pid);
            }
        }
        self.bpf.notify_complete(0);
        Ok(())
    }

    fn schedule_batch(&mut self) -> Result<()> {
        self.queued.clear();
        while self.queued.len() < BATCH_MAX {
            match self.bpf.dequeue_task() {
                Ok(Some(task)) => self.queued.push(task),
                Ok(None) => break,
                Err(code) => {
                    warn!("reading the queued-task ring buffer failed: {code}");
                    break;
                }
            }
        }
        if self.queued.is_empty() {
            self.bpf.notify_complete(0);
            return Ok(());
        }
        if self.fifo.is_some() {
            return self.dispatch_fifo();
        }

        let now = now_ns();
        let snap = self.idle.take()?;
        // CPUs with tasks waiting in their own queue are not free, whatever the idle mask says.
        // Without queue lengths from the kernel, a CPU counts as such for a moment after we
        // sent it a task.
        let queued_cpus = snap.queued.unwrap_or_else(|| {
            self.topo
                .cpus()
                .iter()
                .filter(|c| now.saturating_sub(self.last_sent[c.index()]) < CLAIM_NS)
                .collect()
        });
        // The CPU this loop runs on counts as busy: it usually just preempted a task that is in
        // this batch at its slice end and gets the CPU back; offering it to woken tasks as
        // well would push that task off its core.
        let own = current_cpu().filter(|c| self.topo.info(*c).is_some());
        let idle = snap.idle.and_not(&queued_cpus);

        let nr_waiting = *self.bpf.nr_queued_mut() + self.queued.len() as u64;
        let slice_ns = hybridland_policy::slice_ns(self.cfg.slice_ns, nr_waiting);
        let mut batch = Batch::new(&self.topo, &self.policy, &idle);
        self.outgoing.clear();
        // Tasks whose slice ended were running a moment ago: they get their CPUs back before
        // any woken task is placed, so a short wake-up (often landing on the CPU this loop
        // just ran on) does not push a running task off its core.
        let by_slice_end = self.queued.iter().filter(|t| t.flags & SCX_ENQ_WAKEUP == 0);
        let wakeups = self.queued.iter().filter(|t| t.flags & SCX_ENQ_WAKEUP != 0);
        for task in by_slice_end.chain(wakeups) {
            let cpu = u16::try_from(task.cpu).ok().map(CpuId);
            let seen = Seen {
                pid: task.pid,
                cpu,
                start_ts: task.start_ts,
                stop_ts: task.stop_ts,
                wakeup: task.flags & SCX_ENQ_WAKEUP != 0,
                weight: task.weight,
            };
            let mut out = DispatchedTask::new(task);
            if let Some(n) = self.nudger.as_mut().filter(|n| n.tid == task.pid) {
                // The helper: to the CPU it is meant to dislodge a task from, briefly.
                out.slice_ns = NUDGE_SLICE_NS;
                out.cpu = n.target.take().map_or(RL_CPU_ANY, |(c, _)| i32::from(c.0));
                self.outgoing.push((out, None));
                continue;
            }
            let util = self.tasks.observe(&self.topo, &seen, now).util();
            out.slice_ns = slice_ns;
            out.vtime = self.tasks.dispatch_vtime(task.pid, self.cfg.slice_ns);
            let Some(allowed) =
                allowed_cpus(task.pid, task.nr_cpus_allowed, self.nr_possible, &self.topo)
            else {
                // The task is gone or unreadable: the shared queue sorts it out.
                self.counters.affinity_errors += 1;
                out.cpu = RL_CPU_ANY;
                self.outgoing.push((out, None));
                continue;
            };
            let input = QueuedInput {
                cpu,
                slice_end: !seen.wakeup,
                contended: cpu.is_some_and(|c| queued_cpus.contains(c)),
                has_run: task.start_ts != 0,
                util,
            };
            let d = batch.place(&input, &allowed);
            if let Some(step) = d.step() {
                self.counters.steps.add(step);
            }
            if d.placement.is_some_and(|p| p.overflow) {
                self.counters.overflow += 1;
            }
            if d.slice_end == Some(SliceEnd::Keep) {
                self.counters.kept += 1;
            }
            let check = match d.target {
                Target::Cpu(cpu) => {
                    out.cpu = i32::from(cpu.0);
                    self.placed[cpu.index()] = Some(Placed {
                        pid: task.pid,
                        allowed,
                        util,
                    });
                    (d.from_snapshot && Some(cpu) != own).then_some(cpu)
                }
                Target::Any => {
                    out.cpu = RL_CPU_ANY;
                    None
                }
            };
            debug!(
                pid = task.pid,
                prev = task.cpu,
                util,
                step = d.step().map_or("-", |s| s.name()),
                slice_end = ?d.slice_end,
                target = out.cpu,
                "placed"
            );
            self.outgoing.push((out, check));
        }

        if self.outgoing.iter().any(|(_, c)| c.is_some()) {
            let again = self.idle.take()?;
            for (_, cpu) in &self.outgoing {
                if let Some(cpu) = cpu
                    && !again.idle.contains(*cpu)
                {
                    self.counters.stale += 1;
                }
            }
        }
        for (task, _) in &self.outgoing {
            if let Err(e) = self.bpf.dispatch_task(task) {
                self.counters.dispatch_errors += 1;
                warn!("dispatching pid {} failed: {e}", task.pid);
                continue;
            }
            if let Some(t) = usize::try_from(task.cpu)
                .ok()
                .and_then(|c| self.last_sent.get_mut(c))
            {
                *t = now;
            }
        }
        self.bpf.notify_complete(0);
        Ok(())
    }
}
