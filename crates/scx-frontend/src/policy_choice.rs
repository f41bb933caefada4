//! `--policy`: which placement policy the loop's scheduler core runs.

#![forbid(unsafe_code)]

use anyhow::{Result, anyhow};
use hybridland_policy::{Builtin, CustomPolicy, PlacementPolicy, PolicyConfig, Topology};

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

    /// The policy for `topo`: hybridland with the knobs `config`, any other drawing from
    /// `seed`.
    pub(crate) fn build(
        &self,
        topo: &Topology,
        config: &PolicyConfig,
        seed: u64,
    ) -> Result<LivePolicy> {
        match self {
            Self::Builtin(b) => Ok(Box::new(b.build(topo, config, seed).map_err(|e| {
                anyhow!(
                    "policy `{}`: the knobs do not fit this machine: {e}",
                    b.name()
                )
            })?)),
            Self::Custom(c) => (c.build)(topo, seed)
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

    fn build_nothing(_: &Topology, _: u64) -> Result<LivePolicy, String> {
        Err("never here".into())
    }

    const MINE: CustomPolicy = CustomPolicy {
        name: "mine",
        description: "a test's",
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
            .build(&topo, &PolicyConfig::default(), 0)
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert_eq!(e, "policy `mine` cannot run on this machine: never here");
    }
}
