//! `--set KEY=VALUE` on arbitrary items (`Knobs`), then every reading of them (the policy's
//! knobs, the replay options, the machine model, the kernel baseline's mode), and the
//! policy's own `FromStr` for `primary_domain` and `cluster_balance`: a typed error naming the
//! item or key, or values that are what was set. Items are mostly a known key with a value of
//! the right shape, a number near a bound or arbitrary text, so every key's checks are
//! reached; one input may carry a few thousand items.
#![no_main]

use arbitrary::Arbitrary;
use hybridland_policy::{ClusterBalance, PrimaryDomain};
use hybridland_sim::MachineModel;
use hybridland_sim::knobs::{BASELINE_KEYS, POLICY_KEYS, SIM_KEYS};
use hybridland_sim::machine::MODEL_KEYS;
use hybridland_sim::{KnobError, Knobs, SimOptions, presets};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

#[derive(Debug, Arbitrary)]
enum ValueIn {
    Number(u64),
    /// 0, 1, the bounds and one past them.
    Edge(u8),
    Word(u8),
    Text(String),
}

#[derive(Debug, Arbitrary)]
enum ItemIn {
    Known {
        key: u8,
        value: ValueIn,
        spaces: bool,
    },
    Raw(String),
}

#[derive(Debug, Arbitrary)]
struct Input {
    items: Vec<ItemIn>,
    domain: String,
    balance: String,
}

fn all_keys() -> Vec<&'static str> {
    [POLICY_KEYS, BASELINE_KEYS, SIM_KEYS, MODEL_KEYS].concat()
}

fn value(v: &ValueIn) -> String {
    match v {
        ValueIn::Number(n) => n.to_string(),
        ValueIn::Edge(e) => [
            "0",
            "1",
            "100",
            "101",
            "255",
            "256",
            "1000000000",
            "1000000001",
            "18446744073709551615",
            "18446744073709551616",
            "-1",
            "",
        ][usize::from(*e) % 12]
            .to_owned(),
        ValueIn::Word(w) => [
            "all",
            "performance",
            "powersave",
            "off",
            "on",
            "auto",
            "estimator",
            "hint",
            "0-3,8",
            "0xff",
            "0x",
            "7-2",
        ][usize::from(*w) % 12]
            .to_owned(),
        ValueIn::Text(t) => t.clone(),
    }
}

fn item(i: &ItemIn, keys: &[&str]) -> String {
    match i {
        ItemIn::Known {
            key,
            value: v,
            spaces,
        } => {
            let key = keys[usize::from(*key) % keys.len()];
            if *spaces {
                format!(" {key} = {} ", value(v))
            } else {
                format!("{key}={}", value(v))
            }
        }
        ItemIn::Raw(s) => s.clone(),
    }
}

/// The policy's parsers alone: what parses prints back to itself.
fn from_str_round_trips(domain: &str, balance: &str) {
    match domain.parse::<PrimaryDomain>() {
        Ok(d) => assert_eq!(d.to_string().parse::<PrimaryDomain>(), Ok(d), "{domain:?}"),
        Err(e) => assert!(!e.to_string().is_empty()),
    }
    match balance.parse::<ClusterBalance>() {
        Ok(b) => assert_eq!(
            b.to_string().parse::<ClusterBalance>(),
            Ok(b),
            "{balance:?}"
        ),
        Err(e) => assert!(!e.to_string().is_empty()),
    }
}

fuzz_target!(|input: Input| {
    from_str_round_trips(&input.domain, &input.balance);
    let keys = all_keys();
    let items: Vec<String> = input
        .items
        .iter()
        .take(4_096)
        .map(|i| item(i, &keys))
        .collect();
    let knobs = match Knobs::parse(&items) {
        Ok(k) => k,
        Err(KnobError::Malformed { item }) => {
            assert!(items.contains(&item) && !item.contains('='), "{item:?}");
            return;
        }
        Err(KnobError::UnknownKey { key, .. }) => {
            assert!(!keys.contains(&key.as_str()), "{key:?} is known");
            assert!(items.iter().any(|i| i.contains(&key)));
            return;
        }
        Err(e) => panic!("parsing items gave {e}"),
    };
    // Later items win, keys and values trimmed.
    let mut expected = std::collections::BTreeMap::new();
    for i in &items {
        let (k, v) = i.split_once('=').expect("accepted items have a =");
        expected.insert(k.trim(), v.trim());
    }
    assert_eq!(
        knobs.iter().collect::<std::collections::BTreeMap<_, _>>(),
        expected
    );

    let named_a_set_key = |e: &KnobError| match e {
        KnobError::BadValue { key, value, .. } => {
            assert!(
                knobs.get(key) == Some(value.as_str()) || value == "(default)",
                "{e}"
            );
        }
        KnobError::Model(m) => assert!(!m.to_string().is_empty()),
        other => panic!("reading knobs gave {other}"),
    };
    match knobs.policy_config() {
        Ok(c) => {
            c.validate().expect("accepted knobs validate");
            if let Some(d) = knobs.get("primary_domain") {
                assert_eq!(d.parse::<PrimaryDomain>(), Ok(c.primary_domain));
            }
            if let Some(b) = knobs.get("cluster_balance") {
                assert_eq!(b.parse::<ClusterBalance>(), Ok(c.cluster_balance));
            }
            if let Some(f) = knobs.get("fit_margin_pct") {
                assert_eq!(f.parse::<u8>(), Ok(c.fit_margin_pct));
            }
        }
        Err(e) => named_a_set_key(&e),
    }
    let base = SimOptions::default();
    match knobs.sim_options(&base) {
        Ok(o) => {
            if let Some(s) = knobs.get("slice_us") {
                assert_eq!(s.parse::<u64>().map(|us| us * 1_000), Ok(o.slice_ns));
            }
            if let Some(s) = knobs.get("seed") {
                assert_eq!(s.parse::<u64>().ok(), o.seed);
            }
            assert_eq!(
                o.max_events, base.max_events,
                "no knob sets the event limit"
            );
        }
        Err(e) => named_a_set_key(&e),
    }
    static MODEL: OnceLock<MachineModel> = OnceLock::new();
    let mut model = MODEL
        .get_or_init(|| {
            let name = presets::list()[0].name;
            presets::lookup(name).expect("a listed preset").model
        })
        .clone();
    if let Err(e) = knobs.apply_model(&mut model) {
        named_a_set_key(&e);
    }
    if let Err(e) = knobs.kernel_asym_capacity() {
        named_a_set_key(&e);
    }
});
