//! `hybrid-sim policies`: every policy `--policy` takes, whether it runs live, and the knobs
//! `--set` takes (hybridland's, the replay's, and each registered policy's own).

use crate::table::Table;
use hybridland_sim::PolicyKind;

/// The policies and knobs, as tables.
pub(crate) fn policies() -> String {
    let mut t = Table::new(vec!["policy".into(), "live".into(), "what it does".into()]);
    for k in PolicyKind::ALL {
        // The ones the scheduler core runs are `scx_hybridland --policy NAME` too.
        let live = if k.builtin().is_some() { "yes" } else { "no" };
        t.row(vec![k.name().into(), live.into(), k.description().into()]);
    }
    for c in hybridland_sim::registry::custom_policies() {
        t.row(vec![c.name.into(), "own".into(), c.description.into()]);
    }
    let mut out = t.render();
    out += "\nlive: yes = `scx_hybridland --policy NAME` runs it (the simulator's scheduler core runs it\n\
             here); no = simulator only (per-CPU queues balanced by pulling tasks between CPUs,\n\
             which sched_ext's user-space framework has no equivalent of); own = the program\n\
             that registered it runs it live.\n";
    out += "\nKnobs for --set (hybridland's, then the replay's):\n";
    let mut t = Table::new(vec!["key".into(), "values".into(), "default".into()]);
    for (key, values) in hybridland_sim::knobs::KNOB_HELP {
        let default = hybridland_sim::knobs::knob_default(key).unwrap_or_default();
        t.row(vec![(*key).into(), (*values).into(), default]);
    }
    for c in hybridland_sim::registry::custom_policies() {
        for k in c.knobs {
            let values = format!("{}'s own, {}: {}", c.name, k.range(), k.help);
            t.row(vec![k.name.into(), values, k.show(k.default).to_string()]);
        }
    }
    out += &t.render();
    out += "\nModel overrides (default: the machine's own values, `hybrid-sim topology show`): ";
    out += &hybridland_sim::machine::MODEL_KEYS.join(", ");
    out += "\nA policy name may carry its own knobs: hybridland:primary_domain=powersave\n";
    out
}
