//! The primary domains both frontends take by name, `turbo` and `none` included, and the
//! power-profile mapping `--primary-domain auto` uses live.

use hybridland_policy::testkit::favoured_core_machine;
use hybridland_policy::{PrimaryDomain, parse_cpu_list};

#[test]
fn turbo_none_and_the_power_profiles_resolve_the_same_for_both_frontends() {
    // E-cores 0-1; P-cores 2-3, of which 3 is the favoured core (higher rank).
    let topo = favoured_core_machine();
    let parse = |s: &str| s.parse::<PrimaryDomain>().unwrap();
    assert_eq!(parse("turbo"), PrimaryDomain::Turbo);
    assert_eq!(parse("turbo").to_string(), "turbo");
    assert_eq!(
        parse("turbo").resolve(&topo).unwrap(),
        parse_cpu_list("3").unwrap()
    );
    assert_eq!(parse("none"), PrimaryDomain::All);
    for (profile, want) in [
        (Some("performance"), PrimaryDomain::Performance),
        (Some("power-saver"), PrimaryDomain::Powersave),
        (Some("balanced"), PrimaryDomain::All),
        (None, PrimaryDomain::All),
    ] {
        assert_eq!(
            PrimaryDomain::for_power_profile(profile),
            want,
            "{profile:?}"
        );
    }
}
