//! The flags' tests: scx-style parsing, the help under the program's name with every policy,
//! `auto`, `turbo` and `none` resolved against a machine, and the sysfs root.

use super::*;

#[test]
fn flags_parse_in_scx_style() {
    let o = Opts::try_parse_from([
        "scx_hybridland",
        "-m",
        "powersave",
        "--cluster-balance",
        "off",
        "--slice-us",
        "2000",
        "--stats",
        "1",
        "-vv",
        "--dry-run",
    ])
    .unwrap();
    assert_eq!(
        o.primary_domain,
        DomainArg::Policy(PrimaryDomain::Powersave)
    );
    assert_eq!(o.cluster_balance, ClusterBalance::Off);
    assert_eq!(o.slice_us, 2000);
    assert_eq!(o.verbose, 2);
    assert!(o.dry_run);
    assert!(!o.fifo);
    assert!(Opts::try_parse_from(["x", "--fifo"]).unwrap().fifo);
    let mask = Opts::try_parse_from(["x", "--primary-domain", "0xf0"]).unwrap();
    assert_eq!(
        mask.primary_domain,
        DomainArg::Policy("4-7".parse().unwrap())
    );
    assert!(Opts::try_parse_from(["x", "--cluster-balance", "sometimes"]).is_err());
    assert!(Opts::try_parse_from(["x", "--slice-us", "5"]).is_err());
    assert!(Opts::try_parse_from(["x", "-m", "3-1"]).is_err());
    let most = crate::scheduler::MAX_MAX_TASKS.to_string();
    let past = (crate::scheduler::MAX_MAX_TASKS + 1).to_string();
    assert!(Opts::try_parse_from(["x", "--max-tasks", &most]).is_ok());
    assert!(Opts::try_parse_from(["x", "--max-tasks", &past]).is_err());
}

fn build_nothing(
    _: &hybridland_policy::Topology,
    _: u64,
    _: &hybridland_policy::KnobValues,
) -> Result<crate::policy_choice::LivePolicy, String> {
    Err("never here".into())
}

const MINE: CustomPolicy = CustomPolicy {
    name: "little-first-ish",
    description: "a test's own policy, described in one line",
    knobs: &[],
    build: build_nothing,
};

#[test]
fn the_help_names_the_program_and_lists_every_policy() {
    // Clap wraps the help to the terminal: compare it with its lines joined.
    let flat = |help: clap::builder::StyledStr| {
        help.to_string()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let long = |program, custom: &[CustomPolicy]| flat(command(program, custom).render_long_help());
    let help = long("scx_mine", &[MINE]);
    assert!(
        help.starts_with(
            "scx_mine: a sched_ext scheduler built on the scx_hybridland library. Its \
             placement policies: little-first-ish, beside hybridland"
        ),
        "{help}"
    );
    assert!(help.contains("Usage: scx_mine [OPTIONS]"), "{help}");
    for b in Builtin::ALL {
        let row = format!("- {}: {}", b.name(), b.description());
        assert!(help.contains(&flat(row.clone().into())), "{row}: {help}");
    }
    assert!(
        help.contains("- little-first-ish: a test's own policy, described in one line"),
        "{help}"
    );
    let short = flat(command("scx_mine", &[MINE]).render_help());
    assert!(
        short.contains(
            "The placement policy: hybridland, capacity-blind, count-cluster, spread, \
             little-first-ish (--help says what each does)"
        ),
        "{short}"
    );
    assert!(
        short.starts_with(
            "scx_mine: a sched_ext scheduler built on the scx_hybridland library, with the \
             placement policies little-first-ish beside hybridland's"
        ),
        "{short}"
    );
    assert_eq!(
        command("scx_mine", &[]).render_version().to_string(),
        format!("scx_mine {}\n", env!("CARGO_PKG_VERSION"))
    );
    // scx_hybridland itself keeps its own description, with the built-in policies listed.
    let own = long("scx_hybridland", &[]);
    assert!(
        own.starts_with("scx_hybridland: a sched_ext scheduler for hybrid CPUs"),
        "{own}"
    );
    assert!(own.contains("- spread: any idle CPU at random"), "{own}");
    assert!(!own.contains("little-first-ish"));
    let renamed = flat(command("scx_hl", &[]).render_help());
    assert!(
        renamed.starts_with("scx_hl: a sched_ext scheduler for hybrid CPUs"),
        "{renamed}"
    );
    // The flags parse the same under any name.
    let o = Opts::from_arg_matches(
        &command("scx_mine", &[MINE])
            .try_get_matches_from(["scx_mine", "--policy", "little-first-ish", "--dry-run"])
            .unwrap(),
    )
    .unwrap();
    assert_eq!((o.policy.as_str(), o.dry_run), ("little-first-ish", true));
}

#[test]
fn auto_turbo_and_none_resolve_against_the_machine() {
    // E-cores 0-1; P-cores 2-3, of which 3 is the favoured core (higher rank).
    let topo = hybridland_policy::testkit::favoured_core_machine();
    let m = |s: &str| Opts::try_parse_from(["x", "-m", s]).unwrap().primary_domain;
    assert_eq!(m("none").resolve(None), PrimaryDomain::All);
    assert_eq!(m("turbo").resolve(None), PrimaryDomain::Turbo);
    assert_eq!(
        PrimaryDomain::Turbo.resolve(&topo).unwrap(),
        hybridland_policy::parse_cpu_list("3").unwrap()
    );
    let auto = m("auto");
    assert_eq!(
        auto.resolve(Some("performance")),
        PrimaryDomain::Performance
    );
    assert_eq!(auto.resolve(Some("power-saver")), PrimaryDomain::Powersave);
    assert_eq!(auto.resolve(Some("balanced")), PrimaryDomain::All);
    assert_eq!(auto.resolve(None), PrimaryDomain::All);
    assert_eq!(
        m("2-3").resolve(None),
        PrimaryDomain::Cpus(hybridland_policy::parse_cpu_list("2-3").unwrap())
    );
    let dir = crate::safe_file::testing::scratch();
    let state = dir.path().join("state.ini");
    std::fs::write(&state, "[State]\nDriver=multiple\nProfile=power-saver\n").unwrap();
    assert_eq!(
        ppd_profile(state.to_str().unwrap()).as_deref(),
        Some("power-saver")
    );
    assert_eq!(ppd_profile("/nonexistent/state.ini"), None);
}

#[test]
fn sysfs_root_from_the_flag_then_scx_sysfs_prefix() {
    use std::ffi::OsStr;
    use std::path::Path;
    let flag = Path::new("/tmp/fake");
    let prefix = OsStr::new("/srv/dump");
    assert_eq!(sysfs_root(Some(flag), Some(prefix)), flag);
    assert_eq!(sysfs_root(None, Some(prefix)), Path::new("/srv/dump/sys"));
    assert_eq!(sysfs_root(None, Some(OsStr::new(""))), Path::new("/sys"));
    assert_eq!(sysfs_root(None, None), Path::new("/sys"));
}
