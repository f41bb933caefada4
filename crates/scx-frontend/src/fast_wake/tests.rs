use super::host_walk::{kernel_class, kernel_slice, kernel_walk};
use super::*;
use hybridland_policy::testkit::arb_scenario;
use hybridland_policy::{
    ClusterBalance, CpuId, Policy, PolicyConfig, Step, TaskClass, WakeQuestion,
};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// The C the kernel runs is the policy's walk: the same CPU and step on every machine,
    /// idle state, affinity, previous CPU, class, set of homes, waker and knobs, over the
    /// table as this module lays it out.
    #[test]
    fn the_kernels_walk_is_the_policys(s in arb_scenario()) {
        let policy = s.policy();
        let fast = FastWakeTable::new(policy.wake_table(&s.topology), 5_000_000, SliceMode::Scaled, None);
        let state = s.state();
        let q = s.wake_question(&policy, &state);
        let rust = fast.table().decide(&q);
        let rust = (rust.cpu, rust.cpu.map(|_| rust.step));
        prop_assert_eq!(kernel_walk(&fast, &q), rust);
    }

    /// The slice the kernel gives a placement is the core's for a batch of that one task:
    /// the base divided by the tasks waiting, within its floor, or the base when fixed.
    #[test]
    fn the_kernels_slice_is_the_cores(base in 0u64..1 << 40, waiting in 0u64..100, scaled: bool) {
        let core = if scaled { hybridland_policy::slice_ns(base, waiting) } else { base };
        prop_assert_eq!(kernel_slice(base, waiting, scaled), core);
    }
}

fn vm() -> hybridland_policy::Topology {
    crate::test_machines::vm()
}

#[test]
fn the_tables_lay_out_the_policys_walk_as_the_bpf_side_reads_it() {
    let topo = vm();
    let config = PolicyConfig {
        cluster_balance: ClusterBalance::Auto,
        ..PolicyConfig::default()
    };
    let policy = Policy::new(&topo, &config).unwrap();
    let fast = FastWakeTable::new(
        policy.wake_table(&topo),
        5_000_000,
        SliceMode::Scaled,
        Some(77),
    );
    let w = fast.table();
    assert_eq!((w.nr_ids, w.nr_cpus, w.nr_levels), (8, 8, 2));
    assert_eq!((w.balance.from, w.balance.until), (0, 6));
    assert_eq!((fast.helper, fast.slice_ns), (Some(77), 5_000_000));
    // P-CPUs 4-7 first, then the E-CPUs.
    let ranked: Vec<u16> = w.ranked[..8].iter().map(|c| c.0).collect();
    assert_eq!(ranked, [4, 5, 6, 7, 0, 1, 2, 3]);
    let p = fast.cpu(6);
    assert_eq!((p.present, p.level, p.p_core, p.primary), (1, 1, 1, 1));
    let e = fast.cpu(2);
    assert_eq!((e.present, e.level, e.p_core, e.cluster), (1, 0, 0, 0));
    assert_eq!(fast.cpu(8).present, 0, "past the machine");
    assert_eq!(w.cluster_size[..2], [2, 2]);
}

/// A class change moves the live tables' answer and the simulator's model the same way:
/// both walk the one table with the class the core gave out.
#[test]
fn a_class_change_moves_the_walk() {
    let topo = vm();
    let policy = Policy::new(&topo, &PolicyConfig::default()).unwrap();
    let fast = FastWakeTable::new(policy.wake_table(&topo), 5_000_000, SliceMode::Scaled, None);
    // E-core 0 whole and free, P-CPU 5 free beside a busy sibling.
    let free: CpuSet = [CpuId(0), CpuId(2), CpuId(5)].into_iter().collect();
    let ask = |class| {
        fast.table()
            .decide(&WakeQuestion {
                free: &free,
                allowed: topo.cpus(),
                prev: Some(CpuId(5)),
                class,
                homes: &CpuSet::EMPTY,
                sync_waker: None,
            })
            .cpu
    };
    assert_eq!(ask(TaskClass(0)), Some(CpuId(0)));
    assert_eq!(ask(policy.class_of(&topo, 600)), Some(CpuId(5)));
}

/// A synchronous wake-up goes to its waker's busy CPU while some allowed CPU is free and
/// that CPU fits the task; the knob turns the rule off.
#[test]
fn a_synchronous_wake_up_follows_its_waker() {
    let topo = vm();
    let table = |wake_affine| {
        let config = PolicyConfig {
            wake_affine,
            ..PolicyConfig::default()
        };
        Policy::new(&topo, &config).unwrap().wake_table(&topo)
    };
    let (on, off) = (table(true), table(false));
    assert_eq!((on.wake_affine, off.wake_affine), (true, false));
    let free: CpuSet = [CpuId(0), CpuId(2), CpuId(5)].into_iter().collect();
    let heavy = Policy::new(&topo, &PolicyConfig::default())
        .unwrap()
        .class_of(&topo, 600);
    let ask = |t: &WakeTable, free: &CpuSet, class, waker| {
        let p = t.decide(&WakeQuestion {
            free,
            allowed: topo.cpus(),
            prev: Some(CpuId(5)),
            class,
            homes: &CpuSet::EMPTY,
            sync_waker: Some(CpuId(waker)),
        });
        (p.cpu.map(|c| c.0), p.step == Step::WakerCpu)
    };
    // P-CPU 6 and E-CPU 1 are busy (their wakers run there).
    assert_eq!(ask(&on, &free, TaskClass(0), 6), (Some(6), true));
    assert_eq!(ask(&on, &free, TaskClass(0), 1), (Some(1), true));
    // A task that needs a P-core does not follow its waker onto an E-core.
    assert_eq!(ask(&on, &free, heavy, 1), (Some(5), false));
    assert_eq!(ask(&off, &free, TaskClass(0), 6), (Some(0), false));
    // Nothing free: the core decides.
    assert_eq!(ask(&on, &CpuSet::EMPTY, TaskClass(0), 6), (None, false));
}

#[test]
fn a_refill_for_other_knobs_equals_a_new_table() {
    let topo = vm();
    let policy = |balance| {
        let config = PolicyConfig {
            cluster_balance: balance,
            ..PolicyConfig::default()
        };
        Policy::new(&topo, &config).unwrap()
    };
    let (on, off) = (policy(ClusterBalance::On), policy(ClusterBalance::Off));
    let mut fast = FastWakeTable::new(on.wake_table(&topo), 5_000_000, SliceMode::Scaled, None);
    fast.refill(off.wake_table(&topo));
    assert_ne!(on.balance_range(&topo), off.balance_range(&topo));
    assert_eq!(fast.table().balance, off.balance_range(&topo));
}

#[test]
fn cpus_outside_the_primary_domain_are_laid_out_as_such() {
    let topo = vm();
    let config = PolicyConfig {
        primary_domain: "performance".parse().unwrap(),
        ..PolicyConfig::default()
    };
    let policy = Policy::new(&topo, &config).unwrap();
    let fast = FastWakeTable::new(policy.wake_table(&topo), 5_000_000, SliceMode::Scaled, None);
    assert_eq!(fast.cpu(0).primary, 0);
    assert_eq!(fast.cpu(4).primary, 1);
}

/// A class the loop writes is the one the kernel reads for that task, and for no other: a
/// task whose slot another pid took reads class 0, and an exit takes only its own entry out.
#[test]
fn the_kernel_reads_the_class_the_loop_wrote() {
    // The table as the BPF side lays it out (`HL_CLASS_SLOTS` words).
    let mut t = [0u64; 8192];
    let slots = t.len() as u32;
    assert_eq!(kernel_class(&t, 42), 0, "never written");
    FastWakeTable::set_class(&mut t, 42, TaskClass(2));
    FastWakeTable::set_class(&mut t, 43, TaskClass(1));
    assert_eq!((kernel_class(&t, 42), kernel_class(&t, 43)), (2, 1));
    // Pid 42 + slots shares 42's slot: the later write holds it.
    FastWakeTable::set_class(&mut t, 42 + slots, TaskClass(1));
    assert_eq!(kernel_class(&t, 42), 0);
    assert_eq!(kernel_class(&t, (42 + slots) as i32), 1);
    FastWakeTable::forget_class(&mut t, 42);
    assert_eq!(kernel_class(&t, (42 + slots) as i32), 1, "not 42's entry");
    FastWakeTable::forget_class(&mut t, 43);
    assert_eq!(kernel_class(&t, 43), 0);
}
