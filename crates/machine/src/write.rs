//! Writing a machine in the canonical form, the shortest one that reads back to the same
//! topology.

use core::fmt::Write as _;

use hybridland_policy::CpuSet;

use crate::MachineDesc;
use crate::layout::Layout;

/// A TOML basic string, escaped as the TOML library escapes it.
fn quoted(s: &str) -> String {
    toml::Value::String(s.to_owned()).to_string()
}

/// `key = ["..", ..]`, one list a line once there are more than fit on one.
fn list_field(out: &mut String, key: &str, groups: &[CpuSet]) {
    if groups.is_empty() {
        return;
    }
    let items: Vec<String> = groups.iter().map(|g| format!("\"{g}\"")).collect();
    let one_line = format!("{key} = [{}]", items.join(", "));
    if one_line.len() <= 100 {
        let _ = writeln!(out, "{one_line}");
    } else {
        let _ = writeln!(out, "{key} = [");
        for item in items {
            let _ = writeln!(out, "  {item},");
        }
        let _ = writeln!(out, "]");
    }
}

impl MachineDesc {
    /// The machine as a TOML file in the canonical form: `name` and `description` if set, the
    /// CPU lists, one `[[cpus]]` run per kind, capacity and rank, and the `[model]` table if
    /// any. [`parse`](crate::parse) reads it back to an equal [`MachineDesc`].
    pub fn to_toml_string(&self) -> String {
        let layout = Layout::of(&self.topology);
        let mut out = String::new();
        if let Some(name) = &self.name {
            let _ = writeln!(out, "name = {}", quoted(name));
        }
        if let Some(description) = &self.description {
            let _ = writeln!(out, "description = {}", quoted(description));
        }
        if !out.is_empty() {
            out.push('\n');
        }
        let lists = out.len();
        list_field(&mut out, "cores", &layout.cores);
        list_field(&mut out, "clusters", &layout.clusters);
        list_field(&mut out, "llcs", &layout.llcs);
        list_field(&mut out, "nodes", &layout.nodes);
        if out.len() > lists {
            out.push('\n');
        }
        for run in &layout.cpus {
            let _ = writeln!(out, "[[cpus]]");
            let _ = writeln!(out, "list = \"{}\"", run.cpus);
            let _ = writeln!(out, "kind = \"{}\"", run.kind);
            let _ = writeln!(out, "capacity = {}", run.capacity);
            if run.rank != 0 {
                let _ = writeln!(out, "rank = {}", run.rank);
            }
            out.push('\n');
        }
        if let Some(model) = &self.model {
            let _ = writeln!(out, "[model]");
            for line in model.lines() {
                let _ = writeln!(out, "{line}");
            }
            out.push('\n');
        }
        // One newline at the end, not a blank line.
        while out.ends_with("\n\n") {
            out.pop();
        }
        out
    }
}
