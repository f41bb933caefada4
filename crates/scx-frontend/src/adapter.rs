//! The bridge between the kernel's view and the policy: a queued task plus an idle snapshot in,
//! a policy call, a dispatch target out. Plain functions and values only (no BPF, no clock),
//! so the tests below run the policy crate's shared invariants against exactly the code the
//! live loop runs. No scheduling rule lives here: a wake-up is `Policy::select_cpu`, a slice
//! end `Policy::slice_end`; this module keeps the batch's view of the machine current.
//!
//! Call order for one batch of decisions:
//! 1. [`Batch::new`] from the idle snapshot (the kernel's idle CPUs, minus CPUs with tasks
//!    waiting in their own queue);
//! 2. [`Batch::place`] for each queued task, which also marks the chosen CPU busy so the next
//!    task of the batch does not get it too;
//! 3. dispatch each [`Decision`] to its [`Target`].

#![forbid(unsafe_code)]

use hybridland_policy::{
    CpuId, CpuSet, CpuState, Placement, Policy, SliceEnd, Step, TaskHints, Topology,
};

/// What the loop knows about a queued task, in the policy's terms.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct QueuedInput {
    /// The CPU the kernel reports for the task: where it last ran (a wake-up) or where it was
    /// running until now (its slice ended while it still wants the CPU).
    pub(crate) cpu: Option<CpuId>,
    /// Whether it comes back at the end of its slice rather than from a sleep.
    pub(crate) slice_end: bool,
    /// At a slice end: whether other tasks wait in its CPU's own queue.
    pub(crate) contended: bool,
    /// Whether it has run before; a new task has no cache to go back to.
    pub(crate) has_run: bool,
    /// Utilisation estimate 0..=1024.
    pub(crate) util: u16,
}

/// Where a task goes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// The per-CPU queue of this CPU.
    Cpu(CpuId),
    /// The shared queue, consumed by whichever CPU frees up first (vtime order).
    Any,
}

/// One decision and why.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Decision {
    /// Where to dispatch.
    pub(crate) target: Target,
    /// The idle order's placement, for a wake-up or a move at a slice end.
    pub(crate) placement: Option<Placement>,
    /// The slice-end rule's answer, at a slice end.
    pub(crate) slice_end: Option<SliceEnd>,
    /// Whether the chosen CPU was idle in the snapshot (rather than the task's own, kept);
    /// only those can turn out stale.
    pub(crate) from_snapshot: bool,
}

impl Decision {
    /// The step that placed the task, for stats: none when it kept its CPU or yielded.
    pub(crate) fn step(&self) -> Option<Step> {
        self.placement.map(|p| p.step)
    }
}

/// Decisions for one batch of queued tasks against one idle snapshot.
pub(crate) struct Batch<'a> {
    topo: &'a Topology,
    policy: &'a Policy,
    state: CpuState,
    /// CPUs given a task in this batch.
    taken: CpuSet,
}

impl<'a> Batch<'a> {
    /// A batch against `idle`, the CPUs free to take a task now.
    pub(crate) fn new(topo: &'a Topology, policy: &'a Policy, idle: &CpuSet) -> Self {
        Self {
            topo,
            policy,
            state: CpuState::from_idle(topo, idle),
            taken: CpuSet::EMPTY,
        }
    }

    /// Tells the policy which cores are tasks' homes (kept across batches by the task table).
    #[must_use]
    pub(crate) fn with_homes(mut self, homes: Option<&CpuState>) -> Self {
        if let Some(homes) = homes {
            self.state.copy_homes(homes);
        }
        self
    }

    /// The state the next decision sees.
    #[cfg(test)]
    pub(crate) fn state(&self) -> &CpuState {
        &self.state
    }

    /// Places one task allowed on `allowed`, and marks its CPU busy for the rest of the batch.
    pub(crate) fn place(&mut self, task: &QueuedInput, allowed: &CpuSet) -> Decision {
        let prev_cpu = task
            .cpu
            .filter(|c| task.has_run && self.topo.info(*c).is_some());
        let hints = TaskHints {
            allowed,
            prev_cpu,
            util: task.util,
        };
        let Some(own) = prev_cpu.filter(|_| task.slice_end) else {
            let p = self.policy.select_cpu(self.topo, &self.state, &hints);
            return self.take(p, None, true);
        };
        // The task was running on `own` until now: the rule asks about the machine with it
        // still there. A CPU an earlier task of this batch was given is contended.
        let contended = task.contended || self.taken.contains(own);
        let vacated = self.state.occupy(self.topo, own);
        let answer = self
            .policy
            .slice_end(self.topo, &self.state, &hints, contended);
        match answer {
            SliceEnd::Keep => {
                self.taken.insert(own);
                Decision {
                    target: Target::Cpu(own),
                    placement: None,
                    slice_end: Some(answer),
                    from_snapshot: false,
                }
            }
            SliceEnd::Move(p) => {
                if vacated {
                    self.state.release(self.topo, own);
                }
                self.take(p, Some(answer), true)
            }
            SliceEnd::Yield => {
                if vacated {
                    self.state.release(self.topo, own);
                }
                Decision {
                    target: Target::Any,
                    placement: None,
                    slice_end: Some(answer),
                    from_snapshot: false,
                }
            }
        }
    }

    fn take(&mut self, p: Placement, slice_end: Option<SliceEnd>, from_snapshot: bool) -> Decision {
        if let Some(cpu) = p.cpu {
            self.state.occupy(self.topo, cpu);
            self.taken.insert(cpu);
        }
        Decision {
            target: p.cpu.map_or(Target::Any, Target::Cpu),
            placement: Some(p),
            slice_end,
            from_snapshot: from_snapshot && p.cpu.is_some(),
        }
    }
}

/// Counts of placements by step, for stats.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct StepCounts(pub(crate) [u64; Step::ALL.len()]);

impl StepCounts {
    /// Counts one placement.
    pub(crate) fn add(&mut self, step: Step) {
        self.0[step.index()] += 1;
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use hybridland_policy::testkit::{self, Scenario};
    use hybridland_policy::{ClusterBalance, CoreKind, PolicyConfig, TopologyBuilder};
    use proptest::prelude::*;

    fn input(s: &Scenario, slice_end: bool) -> QueuedInput {
        QueuedInput {
            cpu: s.prev_cpu,
            slice_end,
            contended: false,
            has_run: true,
            util: s.util,
        }
    }

    /// Runs `f` on a thread with a 64 MiB stack: a debug build of the policy's checkers keeps
    /// several `CpuState`s (kilobytes each) per frame and overflows the test thread's 2 MiB.
    fn on_big_stack(f: impl FnOnce() + Send + 'static) {
        let joined = std::thread::Builder::new()
            .stack_size(64 << 20)
            .spawn(f)
            .unwrap()
            .join();
        if let Err(panic) = joined {
            std::panic::resume_unwind(panic);
        }
    }

    fn cases_1000() -> ProptestConfig {
        ProptestConfig {
            cases: 1000,
            ..ProptestConfig::default()
        }
    }

    /// A wake-up decision is exactly a policy decision on the snapshot, and passes every
    /// shared invariant.
    #[test]
    fn wakeup_follows_the_idle_order() {
        on_big_stack(|| {
            proptest!(cases_1000(), |(s in testkit::arb_scenario())| {
                let topo = &s.topology;
                let policy = s.policy();
                let mut batch = Batch::new(topo, &policy, &s.idle);
                let before = batch.state().clone();
                let d = batch.place(&input(&s, false), &s.allowed);
                let Some(p) = d.placement else { return Err(TestCaseError::fail("no placement")) };
                testkit::check_placement(topo, &policy, &before, &s.task(), &p)
                    .map_err(|v| TestCaseError::fail(v.to_string()))?;
                prop_assert_eq!(d.from_snapshot, p.cpu.is_some());
                match d.target {
                    Target::Cpu(c) => {
                        prop_assert_eq!(Some(c), p.cpu);
                        prop_assert!(!batch.state().is_idle(c));
                    }
                    Target::Any => prop_assert_eq!(p.step, Step::NoIdle),
                }
                testkit::check_state(topo, batch.state()).map_err(|v| TestCaseError::fail(v.to_string()))?;
            })
        });
    }

    /// At a slice end the batch asks the policy's slice-end rule about the machine with
    /// the task still on its CPU (whether the snapshot shows that CPU idle or not), and
    /// its answer passes the shared slice-end invariants; the batch's state follows it.
    #[test]
    fn slice_end_follows_the_rule() {
        on_big_stack(|| {
            proptest!(cases_1000(), |(s in testkit::arb_scenario())| {
                let topo = &s.topology;
                let policy = s.policy();
                let Some(own) = s.prev_cpu else { return Ok(()) };
                for contended in [false, true] {
                    let mut batch = Batch::new(topo, &policy, &s.idle);
                    let mut running = batch.state().clone();
                    running.occupy(topo, own);
                    let d = batch.place(&QueuedInput { contended, ..input(&s, true) }, &s.allowed);
                    let Some(answer) = d.slice_end else { return Err(TestCaseError::fail("no slice-end answer")) };
                    testkit::check_slice_end(topo, &policy, &running, &s.task(), contended, answer)
                        .map_err(|v| TestCaseError::fail(v.to_string()))?;
                    match answer {
                        SliceEnd::Keep => {
                            prop_assert_eq!(d.target, Target::Cpu(own));
                            prop_assert!(!batch.state().is_idle(own));
                        }
                        SliceEnd::Yield => prop_assert_eq!(d.target, Target::Any),
                        SliceEnd::Move(p) => {
                            prop_assert_eq!(d.target, p.cpu.map_or(Target::Any, Target::Cpu));
                            prop_assert_eq!(batch.state().is_idle(own), s.idle.contains(own));
                        }
                    }
                    testkit::check_state(topo, batch.state()).map_err(|v| TestCaseError::fail(v.to_string()))?;
                }
            })
        });
    }

    /// A batch never hands one CPU to two tasks, and fills an idle machine in the idle
    /// order (the shared fill checker's answer).
    #[test]
    fn a_batch_fills_in_the_policy_order() {
        on_big_stack(|| {
            proptest!(cases_1000(), |(topo in testkit::arb_topology_sized(false), balance in 0u8..3)| {
                let config = PolicyConfig {
                    cluster_balance: [ClusterBalance::Off, ClusterBalance::On, ClusterBalance::Auto][balance as usize],
                    ..PolicyConfig::default()
                };
                let policy = Policy::new(&topo, &config).unwrap();
                let expected = testkit::check_fill(&topo, &policy).map_err(|v| TestCaseError::fail(v.to_string()))?;
                let mut batch = Batch::new(&topo, &policy, topo.cpus());
                let all = *topo.cpus();
                let new_task = QueuedInput { cpu: Some(CpuId(0)), slice_end: false, contended: false, has_run: false, util: 0 };
                let mut seen = CpuSet::EMPTY;
                for want in &expected {
                    let d = batch.place(&new_task, &all);
                    prop_assert_eq!(d.placement, Some(*want));
                    let Target::Cpu(c) = d.target else { return Err(TestCaseError::fail("no cpu")) };
                    prop_assert!(seen.insert(c), "cpu {} twice", c);
                }
                prop_assert_eq!(batch.place(&new_task, &all).target, Target::Any);
            })
        });
    }

    /// The VM check's machine: P-cores 0-1 and 2-3 with SMT, E-cores 4-7 in clusters 4-5, 6-7.
    fn vm_machine() -> Topology {
        let mut b = TopologyBuilder::new();
        for c in 0..8u16 {
            let (k, cap) = if c < 4 {
                (CoreKind::Performance, 1024)
            } else {
                (CoreKind::Efficiency, 640)
            };
            b.add_cpu(CpuId(c), k, cap, 0).unwrap();
        }
        b.add_core(&[CpuId(0), CpuId(1)]).unwrap();
        b.add_core(&[CpuId(2), CpuId(3)]).unwrap();
        b.add_cluster(&[CpuId(4), CpuId(5)]).unwrap();
        b.add_cluster(&[CpuId(6), CpuId(7)]).unwrap();
        b.build().unwrap()
    }

    fn cpus(batch: &mut Batch<'_>, n: usize, topo: &Topology) -> Vec<u16> {
        let new_task = QueuedInput {
            cpu: Some(CpuId(5)),
            slice_end: false,
            contended: false,
            has_run: false,
            util: 0,
        };
        (0..n)
            .map(|_| match batch.place(&new_task, topo.cpus()).target {
                Target::Cpu(c) => c.0,
                Target::Any => u16::MAX,
            })
            .collect()
    }

    #[test]
    fn vm_machine_order_matches_what_vm_check_expects() {
        let topo = vm_machine();
        let on = Policy::new(
            &topo,
            &PolicyConfig {
                cluster_balance: ClusterBalance::On,
                ..Default::default()
            },
        )
        .unwrap();
        let mut batch = Batch::new(&topo, &on, topo.cpus());
        // P-cores first (one per core), then E clusters alternately, then SMT siblings.
        assert_eq!(
            cpus(&mut batch, 9, &topo),
            vec![0, 2, 4, 6, 5, 7, 1, 3, u16::MAX]
        );
        let off = Policy::new(
            &topo,
            &PolicyConfig {
                cluster_balance: ClusterBalance::Off,
                ..Default::default()
            },
        )
        .unwrap();
        let mut batch = Batch::new(&topo, &off, topo.cpus());
        assert_eq!(cpus(&mut batch, 4, &topo), vec![0, 2, 4, 5]);
        let powersave = Policy::new(
            &topo,
            &PolicyConfig {
                primary_domain: "powersave".parse().unwrap(),
                ..Default::default()
            },
        )
        .unwrap();
        let mut batch = Batch::new(&topo, &powersave, topo.cpus());
        let first = cpus(&mut batch, 5, &topo);
        assert!(first[..4].iter().all(|c| (4..8).contains(c)), "{first:?}");
        assert!(
            first[4] < 4,
            "overflow to a P-core once the E-cores are busy: {first:?}"
        );
    }

    #[test]
    fn tasks_sharing_a_cpu_are_not_all_sent_back_to_it() {
        let topo = vm_machine();
        let policy = Policy::new(&topo, &PolicyConfig::default()).unwrap();
        // Three tasks took turns on CPU 2; CPU 0 runs something else; the rest is idle.
        let idle: CpuSet = [1, 3, 4, 5, 6, 7].into_iter().map(CpuId).collect();
        let mut batch = Batch::new(&topo, &policy, &idle);
        let t = QueuedInput {
            cpu: Some(CpuId(2)),
            slice_end: true,
            contended: false,
            has_run: true,
            util: 1024,
        };
        let got: Vec<Target> = (0..3)
            .map(|_| batch.place(&t, topo.cpus()).target)
            .collect();
        assert_eq!(got[0], Target::Cpu(CpuId(2)));
        assert!(!got[1..].contains(&Target::Cpu(CpuId(2))), "{got:?}");
        assert_eq!(got[1..], [Target::Cpu(CpuId(4)), Target::Cpu(CpuId(6))]);
    }

    /// A new task avoids an idle core that is a sleeping task's home, when another equal
    /// core is idle: the homes the task table keeps reach the batch's state.
    #[test]
    fn new_tasks_avoid_other_tasks_homes() {
        let topo = vm_machine();
        let config = PolicyConfig {
            cluster_balance: ClusterBalance::Off,
            ..PolicyConfig::default()
        };
        let policy = Policy::new(&topo, &config).unwrap();
        let fresh = QueuedInput {
            cpu: None,
            slice_end: false,
            contended: false,
            has_run: false,
            util: 0,
        };
        // Every P-core busy: the task goes to an E-core, lowest id first.
        let idle: CpuSet = [4, 5, 6, 7].into_iter().map(CpuId).collect();
        let d = Batch::new(&topo, &policy, &idle).place(&fresh, topo.cpus());
        assert_eq!(d.target, Target::Cpu(CpuId(4)));
        // E-core 4 is a sleeping task's home: the next idle E-core instead.
        let mut homes = CpuState::all_idle(&topo);
        homes.move_home(&topo, None, CpuId(4));
        let d = Batch::new(&topo, &policy, &idle)
            .with_homes(Some(&homes))
            .place(&fresh, topo.cpus());
        assert_eq!(d.target, Target::Cpu(CpuId(5)));
    }

    #[test]
    fn a_task_on_an_e_core_moves_to_an_idle_p_core_at_slice_end() {
        let topo = vm_machine();
        let policy = Policy::new(&topo, &PolicyConfig::default()).unwrap();
        let t = QueuedInput {
            cpu: Some(CpuId(6)),
            slice_end: true,
            contended: false,
            has_run: true,
            util: 640,
        };
        // CPU 6 runs the task; everything else idle.
        let mut idle = *topo.cpus();
        idle.remove(CpuId(6));
        let d = Batch::new(&topo, &policy, &idle).place(&t, topo.cpus());
        assert_eq!(d.step(), Some(Step::IdlePCore));
        assert!(d.from_snapshot);
        // With every P-core busy it stays where it is.
        let idle: CpuSet = [4, 5, 7].into_iter().map(CpuId).collect();
        let d = Batch::new(&topo, &policy, &idle).place(&t, topo.cpus());
        assert_eq!(d.target, Target::Cpu(CpuId(6)));
        assert_eq!(d.slice_end, Some(SliceEnd::Keep));
        assert!(!d.from_snapshot);
        // Others wait there and nothing else is idle: it yields to the shared queue.
        let idle: CpuSet = [].into_iter().collect();
        let d = Batch::new(&topo, &policy, &idle).place(
            &QueuedInput {
                contended: true,
                ..t
            },
            topo.cpus(),
        );
        assert_eq!(d.target, Target::Any);
        assert_eq!(d.slice_end, Some(SliceEnd::Yield));
    }
}
