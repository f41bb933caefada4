//! `--policy`: which placement policy the loop's scheduler core runs.

#![forbid(unsafe_code)]

use anyhow::{Result, anyhow, bail};
use hybridland_policy::{
    Builtin, CustomPolicy, KnobSpec, KnobValues, PlacementPolicy, PolicyConfig, Topology,
    knob_index, nearest_name,
};
use std::collections::BTreeMap;

/// The placement policy the loop's core runs: hybridland, a built-in baseline, or a library
/// user's own (`--policy`).
pub(crate) type LivePolicy = Box<dyn PlacementPolicy + Send>;

/// The simulator's policies that cannot run here, and why.
pub(crate) const SIM_ONLY: [(&str, &str); 2] = [
    (
        "kernel-default",
        "it models the kernel's own scheduler, whose per-CPU queues are balanced by pulling tasks between CPUs; this framework hands every decision to user space through one shared queue and has no such pull (unload this scheduler to run the real one)",
    ),
    (
        "summed-capacity",
        "it balances per-CPU queues by pulling tasks between CPUs, which this framework has no user-space equivalent of",
    ),
];

/// A policy `--policy` named.
#[derive(Copy, Clone, Debug)]
pub(crate) enum Choice {
    /// One of the policy crate's.
    Builtin(Builtin),
    /// One a program using this crate as a library handed over.
    Custom(CustomPolicy),
}

impl Choice {
    /// Its name.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Self::Builtin(b) => b.name(),
            Self::Custom(c) => c.name,
        }
    }

    /// Its own knobs (a registered policy's `CustomPolicy::knobs`; the built-in ones take
    /// flags instead).
    pub(crate) fn knobs(&self) -> &'static [KnobSpec] {
        match self {
            Self::Builtin(_) => &[],
            Self::Custom(c) => c.knobs,
        }
    }

    /// Its own knobs' values from `--set KEY=VALUE` items: the defaults, each item over them.
    /// A key the policy does not declare is called unknown, with the nearest of its names.
    pub(crate) fn knob_values(&self, items: &[String]) -> Result<KnobValues> {
        let specs = self.knobs();
        let mut values =
            KnobValues::defaults(specs).map_err(|e| anyhow!("policy `{}`: {e}", self.name()))?;
        for item in items {
            let Some((key, text)) = item.split_once('=') else {
                bail!("--set {item}: expected KEY=VALUE");
            };
            let key = key.trim();
            let Some(i) = knob_index(specs, key) else {
                let names: Vec<&str> = specs.iter().map(|s| s.name).collect();
                let hint = nearest_name(key, names.iter().copied())
                    .map(|n| format!("; did you mean `{n}`?"))
                    .unwrap_or_default();
                let known = if names.is_empty() {
                    "it declares none; the built-in policies' knobs are flags (--help)".to_owned()
                } else {
                    format!("its knobs: {}", names.join(", "))
                };
                bail!(
                    "--set {key}: unknown knob of policy `{}`{hint} ({known})",
                    self.name()
                );
            };
            let spec = &specs[i];
            let value = spec
                .parse(text)
                .map_err(|e| anyhow!("--set {item}: {e} (takes {})", spec.range()))?;
            values.set(specs, i, value)?;
        }
        Ok(values)
    }

    /// `values` by knob name, as a decision log's header keeps them.
    pub(crate) fn knob_map(&self, values: &KnobValues) -> BTreeMap<String, i64> {
        self.knobs()
            .iter()
            .zip(values.as_slice())
            .map(|(k, v)| (k.name.to_owned(), *v))
            .collect()
    }

    /// The policy for `topo`: hybridland with the knobs `config`, a registered one with its
    /// own knobs `own`, any other drawing from `seed`.
    pub(crate) fn build(
        &self,
        topo: &Topology,
        config: &PolicyConfig,
        seed: u64,
        own: &KnobValues,
    ) -> Result<LivePolicy> {
        match self {
            Self::Builtin(b) => Ok(Box::new(b.build(topo, config, seed).map_err(|e| {
                anyhow!(
                    "policy `{}`: the knobs do not fit this machine: {e}",
                    b.name()
                )
            })?)),
            Self::Custom(c) => (c.build)(topo, seed, own)
                .map_err(|e| anyhow!("policy `{}` cannot run on this machine: {e}", c.name)),
        }
    }
}

/// Looks `name` up among the built-in policies and `custom`.
pub(crate) fn resolve(name: &str, custom: &[CustomPolicy]) -> Result<Choice> {
    if let Some(b) = Builtin::from_name(name) {
        return Ok(Choice::Builtin(b));
    }
    if let Some(c) = custom.iter().find(|c| c.name == name) {
        return Ok(Choice::Custom(*c));
    }
    if let Some((_, why)) = SIM_ONLY.iter().find(|(n, _)| *n == name) {
        return Err(anyhow!("policy `{name}` runs only in hybrid-sim: {why}"));
    }
    let known: Vec<&str> = Builtin::ALL
        .iter()
        .map(|b| b.name())
        .chain(custom.iter().map(|c| c.name))
        .collect();
    Err(anyhow!(
        "unknown policy `{name}` (known here: {})",
        known.join(", ")
    ))
}

#[cfg(test)]
mod test {
    use super::*;

    fn build_nothing(_: &Topology, _: u64, _: &KnobValues) -> Result<LivePolicy, String> {
        Err("never here".into())
    }

    const MINE: CustomPolicy = CustomPolicy {
        name: "mine",
        description: "a test's",
        knobs: &[KnobSpec::int(
            "heavy_util",
            0,
            1024,
            256,
            "when a task is heavy",
        )],
        build: build_nothing,
    };

    #[test]
    fn names_resolve_and_the_sim_only_ones_say_why() {
        for b in Builtin::ALL {
            assert!(matches!(resolve(b.name(), &[]).unwrap(), Choice::Builtin(x) if x == b));
        }
        assert_eq!(resolve("mine", &[MINE]).unwrap().name(), "mine");
        let e = resolve("mine", &[]).unwrap_err().to_string();
        assert!(
            e.contains("unknown policy `mine`") && e.contains("spread"),
            "{e}"
        );
        for (name, _) in SIM_ONLY {
            let e = resolve(name, &[MINE]).unwrap_err().to_string();
            assert!(e.contains("runs only in hybrid-sim"), "{e}");
        }
    }

    #[test]
    fn a_custom_policy_that_cannot_run_here_says_so() {
        let topo = crate::test_machines::vm();
        let e = Choice::Custom(MINE)
            .build(&topo, &PolicyConfig::default(), 0, &KnobValues::NONE)
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert_eq!(e, "policy `mine` cannot run on this machine: never here");
    }

    /// `--set` takes a registered policy's own knobs by name; an unknown one is called
    /// unknown with the nearest name, a value out of range names the range.
    #[test]
    fn set_takes_a_policys_own_knobs_by_name() {
        let mine = Choice::Custom(MINE);
        assert_eq!(mine.knob_values(&[]).unwrap().as_slice(), &[256]);
        let v = mine.knob_values(&["heavy_util=300".into()]).unwrap();
        assert_eq!(v.as_slice(), &[300]);
        assert_eq!(mine.knob_map(&v).get("heavy_util"), Some(&300));
        let e = mine
            .knob_values(&["heavy_utl=300".into()])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("unknown knob of policy `mine`; did you mean `heavy_util`?"),
            "{e}"
        );
        let e = mine
            .knob_values(&["heavy_util=2000".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("0..=1024"), "{e}");
        let e = Choice::Builtin(Builtin::Hybridland)
            .knob_values(&["cluster_balance=on".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown knob of policy `hybridland`"), "{e}");
    }
}
