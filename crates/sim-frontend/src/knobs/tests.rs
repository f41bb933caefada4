//! The settings' tests: keys sorted into their consumers, what cannot be used refused, unknown
//! keys named with the nearest one, policy errors naming key and value, and every key's help
//! and default.

use super::*;

#[test]
fn sorts_keys_into_their_consumers() {
    let k = Knobs::parse(&[
        "primary_domain=performance",
        "cluster_balance=on",
        "slice_us=2000",
        "smt_slowdown_pct=30",
    ])
    .unwrap();
    let c = k.policy_config().unwrap();
    assert_eq!(c.primary_domain, PrimaryDomain::Performance);
    assert_eq!(c.cluster_balance, ClusterBalance::On);
    assert_eq!(
        k.sim_options(&SimOptions::default()).unwrap().slice_ns,
        2_000_000
    );
    let mut m = MachineModel::default();
    k.apply_model(&mut m).unwrap();
    assert_eq!(m.smt_slowdown_pct, 30);
}

#[test]
fn rejects_what_it_cannot_use() {
    assert!(matches!(
        Knobs::parse(&["turbo=1"]),
        Err(KnobError::UnknownKey { .. })
    ));
    assert!(matches!(
        Knobs::parse(&["slice_us"]),
        Err(KnobError::Malformed { .. })
    ));
    let k = Knobs::parse(&["cluster_balance=sometimes"]).unwrap();
    assert!(k.policy_config().is_err());
    let k = Knobs::parse(&["slice_us=0"]).unwrap();
    assert!(k.sim_options(&SimOptions::default()).is_err());
}

#[test]
fn an_unknown_key_is_called_unknown_with_the_nearest_name() {
    let e = Knobs::parse(&["cluster_balnce=on"]).unwrap_err();
    assert!(
        matches!(&e, KnobError::UnknownKey { key, nearest: Some(n) } if key == "cluster_balnce" && n == "cluster_balance"),
        "{e:?}"
    );
    assert!(
        e.to_string()
            .starts_with("unknown setting `cluster_balnce`; did you mean `cluster_balance`?"),
        "{e}"
    );
    let far = Knobs::parse(&["frobnicate=1"]).unwrap_err();
    assert!(matches!(far, KnobError::UnknownKey { nearest: None, .. }));
}

#[test]
fn policy_errors_name_the_key_and_value_given() {
    let err = |item: &str| Knobs::parse(&[item]).unwrap().policy_config().unwrap_err();
    assert!(matches!(
        err("fit_margin_pct=0"),
        KnobError::BadValue { key, value, .. } if key == "fit_margin_pct" && value == "0"
    ));
    assert!(matches!(
        err("auto_low_busy_pct=90"),
        KnobError::BadValue { key, value, .. } if key == "auto_low_busy_pct" && value == "90"
    ));
    let high = Knobs::parse(&["auto_low_busy_pct=50", "auto_high_busy_pct=40"])
        .unwrap()
        .policy_config()
        .unwrap_err();
    assert!(high.to_string().contains("`auto_low_busy_pct`"), "{high}");
}

#[test]
fn every_key_has_help_and_a_default_that_changes_nothing() {
    let keys: Vec<&str> = KNOB_HELP.iter().map(|(k, _)| *k).collect();
    let mut all: Vec<&str> = POLICY_KEYS
        .iter()
        .chain(BASELINE_KEYS)
        .chain(SIM_KEYS)
        .copied()
        .collect();
    all.sort_unstable();
    let mut sorted = keys.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, all);
    let defaults = Knobs::new();
    for key in keys {
        let value = knob_default(key).unwrap_or_else(|| panic!("{key} has no default"));
        if key.ends_with("seed") {
            continue; // not a value: the trace's or the replay's own seed
        }
        let mut given = Knobs::new();
        given.set(key, &value).unwrap();
        assert_eq!(
            given.policy_config(),
            defaults.policy_config(),
            "{key}={value}"
        );
        let base = SimOptions::default();
        assert_eq!(
            given.sim_options(&base),
            defaults.sim_options(&base),
            "{key}={value}"
        );
        assert_eq!(given.fast_wake(), defaults.fast_wake(), "{key}={value}");
        assert_eq!(
            given.wake_preempt(),
            defaults.wake_preempt(),
            "{key}={value}"
        );
        assert_eq!(
            given.kernel_asym_capacity(),
            defaults.kernel_asym_capacity(),
            "{key}={value}"
        );
    }
}
