//! The shared invariants, run against the policy itself on generated machines and states.

use hybridland_policy::testkit::*;
use hybridland_policy::*;
use proptest::prelude::*;

const CASES: u32 = 1000;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    #[test]
    fn every_decision_follows_the_idle_order(s in arb_scenario()) {
        let (topo, policy, state) = (&s.topology, s.policy(), s.state());
        check_state(topo, &state).map_err(|v| TestCaseError::fail(v.to_string()))?;
        let p = check_deterministic(topo, &policy, &state, &s.task())
            .map_err(|v| TestCaseError::fail(v.to_string()))?;
        check_placement(topo, &policy, &state, &s.task(), &p)
            .map_err(|v| TestCaseError::fail(v.to_string()))?;
    }

    #[test]
    fn lone_task_gets_the_best_cpu(topo in arb_topology(), balance in prop_oneof![
        Just(ClusterBalance::Off), Just(ClusterBalance::On), Just(ClusterBalance::Auto)]) {
        let config = PolicyConfig { cluster_balance: balance, ..PolicyConfig::default() };
        let policy = Policy::new(&topo, &config).unwrap();
        let _placement = check_lone_task(&topo, &policy).map_err(|v| TestCaseError::fail(v.to_string()))?;
    }

    #[test]
    fn filling_an_idle_machine_keeps_clusters_even(topo in arb_topology_sized(false)) {
        let config = PolicyConfig { cluster_balance: ClusterBalance::On, ..PolicyConfig::default() };
        let policy = Policy::new(&topo, &config).unwrap();
        check_fill(&topo, &policy).map_err(|v| TestCaseError::fail(v.to_string()))?;
    }

    #[test]
    fn filling_follows_the_order_with_any_knobs(
        (topo, config) in arb_topology_sized(false).prop_flat_map(|t| {
            let c = arb_config(&t);
            (Just(t), c)
        })
    ) {
        let policy = Policy::new(&topo, &config).unwrap();
        check_fill(&topo, &policy).map_err(|v| TestCaseError::fail(v.to_string()))?;
    }

    #[test]
    fn state_bookkeeping_survives_any_sequence(
        (topo, ops) in arb_topology().prop_flat_map(|t| {
            let cpus: Vec<CpuId> = t.cpus().iter().collect();
            let ops = proptest::collection::vec(
                (any::<bool>(), proptest::sample::select(cpus)), 0..64);
            (Just(t), ops)
        })
    ) {
        let mut state = CpuState::all_idle(&topo);
        for (occupy, cpu) in ops {
            let was_idle = state.is_idle(cpu);
            let changed = if occupy { state.occupy(&topo, cpu) } else { state.release(&topo, cpu) };
            prop_assert_eq!(changed, was_idle == occupy);
        }
        check_state(&topo, &state).map_err(|v| TestCaseError::fail(v.to_string()))?;
        prop_assert_eq!(&CpuState::from_idle(&topo, state.idle()), &state);
    }
}
