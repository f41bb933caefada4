//! `KEY=VALUE` settings from command lines (`--set`), sorted into policy knobs, replay options
//! and machine-model overrides.

#[cfg(test)]
mod tests;

use crate::asym_capacity::AsymCapacity;
use crate::custom::custom_policies;
use crate::machine::{MODEL_KEYS, MachineModel, ModelError};
use crate::options::{ReplayUtil, SimOptions};
use hybridland_policy::{
    ClusterBalance, ConfigError, CoreConfig, CustomPolicy, KnobValues, Nudging, PolicyConfig,
    PrimaryDomain, WakePreempt, nearest_name,
};
use std::collections::BTreeMap;

/// Keys for the hybridland policy.
pub const POLICY_KEYS: &[&str] = &[
    "primary_domain",
    "cluster_balance",
    "auto_low_busy_pct",
    "auto_high_busy_pct",
    "fit_margin_pct",
    "wake_affine",
];

/// Keys for the baselines.
pub const BASELINE_KEYS: &[&str] = &["kernel_asym_capacity"];

/// Keys for the replay.
pub const SIM_KEYS: &[&str] = &[
    "slice_us",
    "balance_interval_us",
    "fps_window_ms",
    "seed",
    "policy_seed",
    "util_source",
    "fast_wake",
    "wake_preempt",
    "up_scan",
];

/// What `hybrid-sim policies` says about each `--set` key: the values it takes (its default is
/// [`knob_default`]'s, read from the code that applies it).
pub const KNOB_HELP: &[(&str, &str)] = &[
    (
        "primary_domain",
        "all (or none), performance, powersave, turbo, or CPUs as a list (0-7) or a mask (0xff)",
    ),
    ("cluster_balance", "off, on, auto"),
    ("auto_low_busy_pct", "0..=100, at most auto_high_busy_pct"),
    ("auto_high_busy_pct", "0..=100"),
    ("fit_margin_pct", "1..=100"),
    (
        "wake_affine",
        "on, off: a synchronous wake-up (its waker sleeps right after) goes to the waker's CPU when that fits the task",
    ),
    ("slice_us", "1..=1000000000"),
    ("balance_interval_us", "1..=1000000000"),
    ("fps_window_ms", "1..=1000000000"),
    ("seed", "0..=18446744073709551615"),
    (
        "policy_seed",
        "0..=18446744073709551615: the policy's own draws only (compare: the live --seed)",
    ),
    ("util_source", "estimator, hint"),
    (
        "fast_wake",
        "on, off: hybridland's in-kernel wake-up fast path, as scx_hybridland runs it (off: every wake-up to the core, as --no-fast-wake)",
    ),
    (
        "wake_preempt",
        "on, off: the scheduler core's wake-up preemption, as scx_hybridland --wake-preempt runs it (a woken task with nothing idle takes a busy CPU whose task is a slice ahead in vtime)",
    ),
    (
        "up_scan",
        "on, off: the scheduler core's up-migration scan, which nudges a running task to a CPU the up-migration rule prefers (off: it moves only when the core next decides for it, as scx_hybridland --no-up-scan)",
    ),
    (
        "kernel_asym_capacity",
        "auto (on when capacities differ), on, off: kernel-default's asymmetric-capacity wake-up",
    ),
];

/// The value a `--set` key has when it is not given, as `hybrid-sim policies` shows it: taken
/// from the defaults themselves ([`PolicyConfig::DEFAULT`], [`SimOptions::default`], the
/// scheduler core's [`CoreConfig::DEFAULT`]), so the help cannot drift from them.
pub fn knob_default(key: &str) -> Option<String> {
    let c = PolicyConfig::DEFAULT;
    let o = SimOptions::default();
    let on_off = |on: bool| if on { "on" } else { "off" }.to_owned();
    Some(match key {
        "primary_domain" => c.primary_domain.to_string(),
        "cluster_balance" => c.cluster_balance.to_string(),
        "auto_low_busy_pct" => c.auto_low_busy_pct.to_string(),
        "auto_high_busy_pct" => c.auto_high_busy_pct.to_string(),
        "fit_margin_pct" => c.fit_margin_pct.to_string(),
        "wake_affine" => on_off(c.wake_affine),
        "slice_us" => (o.slice_ns / 1_000).to_string(),
        "balance_interval_us" => (o.balance_interval_ns / 1_000).to_string(),
        "fps_window_ms" => (o.fps_window_ns / 1_000_000).to_string(),
        "seed" => "the trace's seed".to_owned(),
        "policy_seed" => "the replay's seed".to_owned(),
        "util_source" => o.util_source.name().to_owned(),
        "fast_wake" => on_off(FAST_WAKE_DEFAULT),
        "wake_preempt" => on_off(CoreConfig::DEFAULT.wake_preempt != WakePreempt::Off),
        "up_scan" => on_off(CoreConfig::DEFAULT.nudging != Nudging::Off),
        "kernel_asym_capacity" => AsymCapacity::default().name().to_owned(),
        _ => return None,
    })
}

/// Every `--set` key: the built-in ones, then the registered policies' own knobs.
pub fn all_keys() -> Vec<&'static str> {
    let mut keys: Vec<&'static str> = POLICY_KEYS
        .iter()
        .chain(BASELINE_KEYS)
        .chain(SIM_KEYS)
        .chain(MODEL_KEYS)
        .copied()
        .collect();
    for c in custom_policies() {
        for k in c.knobs {
            if !keys.contains(&k.name) {
                keys.push(k.name);
            }
        }
    }
    keys
}

/// Whether `key` is a `--set` key ([`all_keys`]); when not, the error names the nearest one.
pub fn check_key(key: &str) -> Result<(), KnobError> {
    let keys = all_keys();
    if keys.contains(&key) {
        return Ok(());
    }
    Err(KnobError::UnknownKey {
        key: key.to_owned(),
        nearest: nearest_name(key, keys).map(str::to_owned),
    })
}

/// The registered policies' own knobs, for the unknown-key message.
fn own_keys_text() -> String {
    let own: Vec<String> = custom_policies()
        .iter()
        .filter(|c| !c.knobs.is_empty())
        .map(|c| {
            let names: Vec<&str> = c.knobs.iter().map(|k| k.name).collect();
            format!("; {}: {}", c.name, names.join(", "))
        })
        .collect();
    own.concat()
}

/// hybridland's in-kernel wake-up fast path is on unless turned off, live
/// (`scx_hybridland --no-fast-wake`) as in a replay.
const FAST_WAKE_DEFAULT: bool = true;

/// A bad `--set` item.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KnobError {
    /// Not `KEY=VALUE`.
    #[error("`{item}` is not KEY=VALUE")]
    Malformed {
        /// The item.
        item: String,
    },
    /// No such key.
    #[error("unknown setting `{key}`{} (policy: {}; baselines: {}; replay: {}; model: {}{})", nearest.as_ref().map(|n| format!("; did you mean `{n}`?")).unwrap_or_default(), POLICY_KEYS.join(", "), BASELINE_KEYS.join(", "), SIM_KEYS.join(", "), MODEL_KEYS.join(", "), own_keys_text())]
    UnknownKey {
        /// The key.
        key: String,
        /// The known key nearest to it, when it looks like a misspelling of one.
        nearest: Option<String>,
    },
    /// The value does not fit the key.
    #[error("bad value `{value}` for `{key}`: {reason}")]
    BadValue {
        /// The key.
        key: String,
        /// The value.
        value: String,
        /// Why.
        reason: String,
    },
    /// A model override failed.
    #[error(transparent)]
    Model(#[from] ModelError),
}

/// Settings by key; later items win. Iterated in key order, so applying them is deterministic.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Knobs {
    items: BTreeMap<String, String>,
}

impl Knobs {
    /// No settings: every default.
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses `KEY=VALUE` items, rejecting unknown keys.
    pub fn parse<S: AsRef<str>>(items: &[S]) -> Result<Self, KnobError> {
        let mut k = Self::new();
        for item in items {
            k.set_item(item.as_ref())?;
        }
        Ok(k)
    }

    /// Adds one `KEY=VALUE` item.
    pub fn set_item(&mut self, item: &str) -> Result<(), KnobError> {
        let (key, value) = item.split_once('=').ok_or_else(|| KnobError::Malformed {
            item: item.to_owned(),
        })?;
        self.set(key.trim(), value.trim())
    }

    /// Sets one key.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), KnobError> {
        check_key(key)?;
        self.items.insert(key.to_owned(), value.to_owned());
        Ok(())
    }

    /// The knob values of the registered policy `policy`: its defaults, with each of its own
    /// knobs that is set here.
    pub fn custom_values(&self, policy: &CustomPolicy) -> Result<KnobValues, KnobError> {
        let mut values = policy.default_knobs().map_err(|e| KnobError::BadValue {
            key: policy.name.to_owned(),
            value: String::new(),
            reason: e.to_string(),
        })?;
        for (i, spec) in policy.knobs.iter().enumerate() {
            let Some(text) = self.get(spec.name) else {
                continue;
            };
            let bad = |e: hybridland_policy::KnobError| KnobError::BadValue {
                key: spec.name.to_owned(),
                value: text.to_owned(),
                reason: format!("{e} (takes {})", spec.range()),
            };
            let value = spec.parse(text).map_err(bad)?;
            values.set(policy.knobs, i, value).map_err(bad)?;
        }
        Ok(values)
    }

    /// The value of `key`, if set.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.items.get(key).map(String::as_str)
    }

    /// Every setting, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.items.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// `kernel-default`'s asymmetric-capacity mode (`kernel_asym_capacity`, default auto).
    pub fn kernel_asym_capacity(&self) -> Result<AsymCapacity, KnobError> {
        match self.get("kernel_asym_capacity") {
            None => Ok(AsymCapacity::default()),
            Some(v) => AsymCapacity::parse(v).ok_or_else(|| KnobError::BadValue {
                key: "kernel_asym_capacity".to_owned(),
                value: v.to_owned(),
                reason: "expected auto, on or off".to_owned(),
            }),
        }
    }

    /// Whether hybridland's wake-up fast path is modelled (`fast_wake`, default on, as live).
    pub fn fast_wake(&self) -> Result<bool, KnobError> {
        self.on_off("fast_wake", FAST_WAKE_DEFAULT)
    }

    /// Whether the scheduler core preempts on wake-up (`wake_preempt`, default off, as live).
    pub fn wake_preempt(&self) -> Result<bool, KnobError> {
        self.on_off(
            "wake_preempt",
            CoreConfig::DEFAULT.wake_preempt != WakePreempt::Off,
        )
    }

    /// Whether the scheduler core runs its up-migration scan (`up_scan`, default on, as live).
    pub fn up_scan(&self) -> Result<bool, KnobError> {
        self.on_off("up_scan", CoreConfig::DEFAULT.nudging != Nudging::Off)
    }

    fn on_off(&self, key: &str, default: bool) -> Result<bool, KnobError> {
        match self.get(key) {
            None => Ok(default),
            Some("on") => Ok(true),
            Some("off") => Ok(false),
            Some(v) => Err(KnobError::BadValue {
                key: key.to_owned(),
                value: v.to_owned(),
                reason: "expected on or off".to_owned(),
            }),
        }
    }

    /// The hybridland knobs over [`PolicyConfig::default`].
    pub fn policy_config(&self) -> Result<PolicyConfig, KnobError> {
        self.policy_config_over(PolicyConfig::default())
    }

    /// The hybridland knobs over `base` (a decision log's, say).
    pub fn policy_config_over(&self, base: PolicyConfig) -> Result<PolicyConfig, KnobError> {
        let mut c = base;
        let bad = |key: &str, value: &str, reason: String| KnobError::BadValue {
            key: key.to_owned(),
            value: value.to_owned(),
            reason,
        };
        for (key, value) in self.iter() {
            match key {
                "primary_domain" => {
                    c.primary_domain = value
                        .parse::<PrimaryDomain>()
                        .map_err(|e| bad(key, value, e.to_string()))?;
                }
                "cluster_balance" => {
                    c.cluster_balance = value
                        .parse::<ClusterBalance>()
                        .map_err(|e| bad(key, value, e.to_string()))?;
                }
                "auto_low_busy_pct" => c.auto_low_busy_pct = pct(key, value)?,
                "auto_high_busy_pct" => c.auto_high_busy_pct = pct(key, value)?,
                "fit_margin_pct" => c.fit_margin_pct = pct(key, value)?,
                "wake_affine" => c.wake_affine = self.on_off(key, c.wake_affine)?,
                _ => {}
            }
        }
        // The policy crate checks the knobs together; name the key that was set (the low
        // threshold is the one out of order unless only the high one was given).
        c.validate().map_err(|e| {
            let key = match e {
                ConfigError::FitMargin { .. } => "fit_margin_pct",
                ConfigError::AutoThresholds { .. }
                    if self.get("auto_high_busy_pct").is_some()
                        && self.get("auto_low_busy_pct").is_none() =>
                {
                    "auto_high_busy_pct"
                }
                _ => "auto_low_busy_pct",
            };
            bad(key, self.get(key).unwrap_or("(default)"), e.to_string())
        })?;
        Ok(c)
    }

    /// The replay options over `base`.
    pub fn sim_options(&self, base: &SimOptions) -> Result<SimOptions, KnobError> {
        let mut o = base.clone();
        for (key, value) in self.iter() {
            let num = || -> Result<u64, KnobError> {
                value.parse().map_err(|_| KnobError::BadValue {
                    key: key.to_owned(),
                    value: value.to_owned(),
                    reason: "not a non-negative integer".into(),
                })
            };
            match key {
                "slice_us" => o.slice_ns = positive(key, value, num()?)? * 1_000,
                "balance_interval_us" => {
                    o.balance_interval_ns = positive(key, value, num()?)? * 1_000;
                }
                "fps_window_ms" => o.fps_window_ns = positive(key, value, num()?)? * 1_000_000,
                "seed" => o.seed = Some(num()?),
                "policy_seed" => o.policy_seed = Some(num()?),
                "util_source" => {
                    o.util_source = match value {
                        "estimator" => ReplayUtil::Estimator,
                        "hint" => ReplayUtil::Hint,
                        _ => {
                            return Err(KnobError::BadValue {
                                key: key.to_owned(),
                                value: value.to_owned(),
                                reason: "expected estimator or hint".into(),
                            });
                        }
                    };
                }
                _ => {}
            }
        }
        Ok(o)
    }

    /// Applies the model keys to `model`.
    pub fn apply_model(&self, model: &mut MachineModel) -> Result<(), KnobError> {
        for (key, value) in self.iter() {
            if MODEL_KEYS.contains(&key) {
                model.set(key, value)?;
            }
        }
        model.validate()?;
        Ok(())
    }
}

fn pct(key: &str, value: &str) -> Result<u8, KnobError> {
    match value.parse::<u8>() {
        Ok(v) if v <= 100 => Ok(v),
        _ => Err(KnobError::BadValue {
            key: key.to_owned(),
            value: value.to_owned(),
            reason: "expected a percentage 0..=100".into(),
        }),
    }
}

fn positive(key: &str, value: &str, v: u64) -> Result<u64, KnobError> {
    if v == 0 || v > 1_000_000_000 {
        return Err(KnobError::BadValue {
            key: key.to_owned(),
            value: value.to_owned(),
            reason: "must be 1..=1000000000".into(),
        });
    }
    Ok(v)
}
