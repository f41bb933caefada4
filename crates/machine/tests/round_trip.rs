//! Parse → write → parse is the identity, for machines of every shape the policy meets; and
//! the parser answers any text with a machine or an error, never a panic.

use hybridland_machine::{CorePower, Layout, MachineDesc, ModelTable, parse, parse_with_warnings};
use hybridland_policy::testkit::arb_topology_sized;
use proptest::prelude::*;

fn arb_model() -> impl Strategy<Value = Option<ModelTable>> {
    let power = (0u32..20_000, 0u32..5_000, 0u32..500).prop_map(|(a, s, i)| CorePower {
        active_mw: a,
        smt_extra_mw: s,
        idle_mw: i,
    });
    proptest::option::of((
        proptest::option::of(0u8..=90),
        proptest::option::of(0u16..=1000),
        // TOML integers are i64: no file holds more.
        proptest::option::of(0..=i64::MAX as u64),
        proptest::option::of(power.clone()),
        proptest::option::of(power),
    ))
    .prop_map(|m| {
        m.map(|(smt, l2, mig, p, e)| ModelTable {
            smt_slowdown_pct: smt,
            l2_contention_pct: l2,
            migration_ns: mig,
            performance: p,
            efficiency: e,
            ..ModelTable::default()
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn parse_write_parse_is_the_identity(
        topo in arb_topology_sized(false),
        name in proptest::option::of("[ -~]{0,20}"),
        description in proptest::option::of("\\PC{0,40}"),
        model in arb_model(),
    ) {
        // Any topology the builder accepts, renumbered canonically (groups by lowest CPU).
        let layout = Layout::of(&topo);
        let canonical = layout.build("generated").unwrap();
        for cpu in topo.cpus().iter() {
            let (a, b) = (topo.info(cpu).unwrap(), canonical.info(cpu).unwrap());
            prop_assert_eq!((a.kind, a.capacity, a.rank), (b.kind, b.capacity, b.rank));
            prop_assert_eq!(topo.siblings(cpu), canonical.siblings(cpu));
            prop_assert_eq!(
                topo.cluster_mask(usize::from(a.cluster)),
                canonical.cluster_mask(usize::from(b.cluster))
            );
        }
        let first = MachineDesc { name, description, topology: Box::new(canonical), model };
        let text = first.to_toml_string();
        let (second, warnings) = parse_with_warnings(&text, "written.toml")
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        prop_assert_eq!(&second, &first);
        // What the writer leaves out is only what the format assumes without a warning.
        prop_assert!(warnings.is_empty(), "{:?}\n{}", warnings, text);
        prop_assert_eq!(second.to_toml_string(), text);
    }

    #[test]
    fn any_text_is_a_machine_or_an_error(text in "\\PC{0,300}") {
        if let Err(e) = parse(&text, "any.toml") {
            prop_assert!(e.to_string().starts_with("any.toml: "));
        }
    }

    #[test]
    fn any_cpu_lists_are_a_machine_or_an_error(
        lists in proptest::collection::vec("[0-9,-]{0,8}", 0..6),
        runs in proptest::collection::vec(("[0-9,-]{1,8}", "(p|e|lp|x)", 0u16..1100, 0u16..3), 0..4),
    ) {
        let quoted: Vec<String> = lists.iter().map(|l| format!("\"{l}\"")).collect();
        let mut text = format!("cores = [{}]\nclusters = [{}]\n", quoted.join(","), quoted.join(","));
        for (list, kind, capacity, rank) in runs {
            text += &format!("[[cpus]]\nlist = \"{list}\"\nkind = \"{kind}\"\ncapacity = {capacity}\nrank = {rank}\n");
        }
        match parse(&text, "lists.toml") {
            Ok(m) => {
                let again = parse(&m.to_toml_string(), "again.toml").unwrap();
                prop_assert_eq!(again, m);
            }
            Err(e) => prop_assert!(e.to_string().starts_with("lists.toml: ")),
        }
    }
}
