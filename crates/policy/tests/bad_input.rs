//! Malformed machine descriptions, CPU lists and knobs: each is a typed error, none panics.

use hybridland_policy::*;
use proptest::prelude::*;

fn cpu(n: u16) -> CpuId {
    CpuId(n)
}

fn two_cpus() -> TopologyBuilder {
    let mut b = TopologyBuilder::new();
    b.add_cpu(cpu(0), CoreKind::Performance, 1024, 0).unwrap();
    b.add_cpu(cpu(1), CoreKind::Performance, 1024, 0).unwrap();
    b
}

#[test]
fn topology_errors_name_the_fault() {
    let mut b = two_cpus();
    assert_eq!(
        b.add_cpu(cpu(0), CoreKind::Efficiency, 500, 0),
        Err(TopologyError::DuplicateCpu { cpu: cpu(0) })
    );
    assert_eq!(
        b.add_cpu(cpu(1024), CoreKind::Efficiency, 500, 0),
        Err(TopologyError::CpuOutOfRange { cpu: 1024 })
    );
    assert_eq!(
        b.add_cpu(cpu(2), CoreKind::Efficiency, 0, 0),
        Err(TopologyError::ZeroCapacity { cpu: cpu(2) })
    );
    assert_eq!(
        b.add_cpu(cpu(2), CoreKind::Efficiency, 2000, 0),
        Err(TopologyError::CapacityTooLarge {
            cpu: cpu(2),
            capacity: 2000
        })
    );
    assert_eq!(
        b.add_core(&[]),
        Err(TopologyError::EmptyGroup {
            level: GroupLevel::Core,
            group: 0
        })
    );
    assert_eq!(
        b.add_cluster(&[cpu(0), cpu(9)]),
        Err(TopologyError::UnknownCpu {
            level: GroupLevel::Cluster,
            group: 0,
            cpu: cpu(9)
        })
    );
    b.add_core(&[cpu(0)]).unwrap();
    assert_eq!(
        b.add_core(&[cpu(1), cpu(0)]),
        Err(TopologyError::CpuInTwoGroups {
            level: GroupLevel::Core,
            cpu: cpu(0),
            first: 0,
            second: 1
        })
    );
    assert_eq!(
        b.add_llc(&[cpu(1), cpu(1)]),
        Err(TopologyError::CpuInTwoGroups {
            level: GroupLevel::Llc,
            cpu: cpu(1),
            first: 0,
            second: 0
        })
    );
    // The failed calls changed nothing: cpu 1 is still free for a core.
    b.add_core(&[cpu(1)]).unwrap();
    assert!(b.build().is_ok());
    assert_eq!(
        TopologyBuilder::new().build().unwrap_err(),
        TopologyError::NoCpus
    );
}

#[test]
fn contradictory_nesting_is_refused() {
    let mut b = two_cpus();
    b.add_core(&[cpu(0), cpu(1)]).unwrap();
    b.add_cluster(&[cpu(0)]).unwrap();
    b.add_cluster(&[cpu(1)]).unwrap();
    assert!(matches!(
        b.build(),
        Err(TopologyError::SplitGroup {
            inner: GroupLevel::Core,
            outer: GroupLevel::Cluster,
            ..
        })
    ));

    let mut b = two_cpus();
    b.add_cluster(&[cpu(0), cpu(1)]).unwrap();
    b.add_llc(&[cpu(0)]).unwrap();
    assert!(matches!(
        b.build(),
        Err(TopologyError::SplitGroup {
            inner: GroupLevel::Cluster,
            outer: GroupLevel::Llc,
            ..
        })
    ));

    let mut b = TopologyBuilder::new();
    b.add_cpu(cpu(0), CoreKind::Performance, 1024, 0).unwrap();
    b.add_cpu(cpu(1), CoreKind::Efficiency, 1024, 0).unwrap();
    b.add_core(&[cpu(0), cpu(1)]).unwrap();
    assert_eq!(
        b.build().unwrap_err(),
        TopologyError::SiblingKindMismatch {
            cpu: cpu(0),
            sibling: cpu(1)
        }
    );
}

#[test]
fn too_many_capacities_and_too_many_cpus() {
    let mut b = TopologyBuilder::new();
    for i in 0..=MAX_CAPACITY_LEVELS as u16 {
        b.add_cpu(cpu(i), CoreKind::Performance, 100 + i, 0)
            .unwrap();
    }
    assert_eq!(b.build().unwrap_err(), TopologyError::TooManyCapacityLevels);

    let mut b = TopologyBuilder::new();
    for i in 0..MAX_CPUS as u16 {
        b.add_cpu(cpu(i), CoreKind::Efficiency, 512, 0).unwrap();
    }
    assert_eq!(b.build().unwrap().nr_cpus(), MAX_CPUS);
    assert!(
        b.add_cpu(cpu(MAX_CPUS as u16), CoreKind::Efficiency, 512, 0)
            .is_err()
    );
}

#[test]
fn knob_errors() {
    let topo = {
        let mut b = two_cpus();
        b.add_core(&[cpu(0), cpu(1)]).unwrap();
        b.build().unwrap()
    };
    let cfg = |primary_domain| PolicyConfig {
        primary_domain,
        ..PolicyConfig::default()
    };
    assert_eq!(
        Policy::new(&topo, &cfg(PrimaryDomain::Powersave)).unwrap_err(),
        ConfigError::EmptyPrimaryDomain {
            domain: "powersave"
        }
    );
    assert_eq!(
        Policy::new(&topo, &cfg("5".parse().unwrap())).unwrap_err(),
        ConfigError::PrimaryCpuMissing { cpu: cpu(5) }
    );
    let bad = PolicyConfig {
        auto_low_busy_pct: 90,
        auto_high_busy_pct: 50,
        ..PolicyConfig::default()
    };
    assert!(matches!(
        Policy::new(&topo, &bad),
        Err(ConfigError::AutoThresholds { .. })
    ));
    let bad = PolicyConfig {
        fit_margin_pct: 0,
        ..PolicyConfig::default()
    };
    assert!(matches!(
        Policy::new(&topo, &bad),
        Err(ConfigError::FitMargin { pct: 0 })
    ));
    assert!("sideways".parse::<ClusterBalance>().is_err());
    assert!("fast".parse::<PrimaryDomain>().is_err());
    assert_eq!(
        "0xg".parse::<PrimaryDomain>(),
        Err(CpuListError::BadHexDigit { at: 2 })
    );
    // A mask of zeros names no CPU: refused when parsed (found by the `knobs` fuzz target:
    // it printed as `(none)`, which does not parse).
    assert_eq!("0x00".parse::<PrimaryDomain>(), Err(CpuListError::Empty));
    assert_eq!(" 0x0,0 ".parse::<PrimaryDomain>(), Err(CpuListError::Empty));
}

#[test]
fn config_round_trips_through_serde() {
    let c = PolicyConfig {
        primary_domain: "0-5,12".parse().unwrap(),
        cluster_balance: ClusterBalance::On,
        ..PolicyConfig::default()
    };
    let json = serde_json::to_string(&c).unwrap();
    assert_eq!(serde_json::from_str::<PolicyConfig>(&json).unwrap(), c);
    assert_eq!(
        serde_json::from_str::<PolicyConfig>("{}").unwrap(),
        PolicyConfig::default()
    );
    assert!(serde_json::from_str::<PolicyConfig>(r#"{"cluster_balance":"sideways"}"#).is_err());
    assert!(serde_json::from_str::<PolicyConfig>(r#"{"primary":"all"}"#).is_err());
    assert!(serde_json::from_str::<PolicyConfig>(r#"{"fit_margin_pct":0}"#).is_err());
}

/// A random sequence of builder calls, including contradictory ones.
#[derive(Debug, Clone)]
enum Call {
    Cpu(u16, u8, u16, u16),
    Group(u8, Vec<u16>),
}

fn call() -> impl Strategy<Value = Call> {
    prop_oneof![
        (0u16..1100, 0u8..3, 0u16..1200, any::<u16>())
            .prop_map(|(c, k, cap, r)| Call::Cpu(c, k, cap, r)),
        (0u8..4, proptest::collection::vec(0u16..40, 0..6))
            .prop_map(|(l, cpus)| Call::Group(l, cpus)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn builder_never_panics(calls in proptest::collection::vec(call(), 0..60)) {
        let mut b = TopologyBuilder::new();
        for c in calls {
            let _ = match c {
                Call::Cpu(c, k, cap, r) => b.add_cpu(CpuId(c), CoreKind::ALL[k as usize], cap, r),
                Call::Group(l, cpus) => {
                    let cpus: Vec<CpuId> = cpus.into_iter().map(CpuId).collect();
                    match l {
                        0 => b.add_core(&cpus),
                        1 => b.add_cluster(&cpus),
                        2 => b.add_llc(&cpus),
                        _ => b.add_node(&cpus),
                    }
                }
            };
        }
        if let Ok(topo) = b.build() {
            // Whatever was accepted is consistent and usable.
            let policy = Policy::new(&topo, &PolicyConfig::default()).unwrap();
            testkit::check_fill(&topo, &policy)
                .map_err(|v| TestCaseError::fail(v.to_string()))?;
        }
    }

    /// A domain that parses prints as text that parses back to it (a named domain only from
    /// its name, an explicit set from its canonical list), and a rejected one names a byte
    /// offset inside the text, at a character boundary.
    #[test]
    fn domains_round_trip_and_errors_point_into_the_text(
        s in "\\PC{0,24}|0x[0-9a-fA-F,]{0,300}|[0-9,\\- ]{0,30}|all|performance|powersave| ?(all|performance|powersave)\n?"
    ) {
        match s.parse::<PrimaryDomain>() {
            Ok(domain) => {
                if !matches!(domain, PrimaryDomain::Cpus(_)) {
                    prop_assert_eq!(s.trim(), domain.kind_name());
                }
                prop_assert_eq!(domain.to_string().parse::<PrimaryDomain>(), Ok(domain));
            }
            Err(e) => {
                let at = match e {
                    CpuListError::BadNumber { at }
                    | CpuListError::ReversedRange { at }
                    | CpuListError::CpuTooLarge { at }
                    | CpuListError::BadHexDigit { at } => Some(at),
                    CpuListError::Empty | CpuListError::MaskTooWide => None,
                };
                if let Some(at) = at {
                    prop_assert!(at <= s.len() && s.is_char_boundary(at), "{e} for {s:?}");
                }
                prop_assert!(!["all", "performance", "powersave"].contains(&s.trim()));
            }
        }
    }
}
