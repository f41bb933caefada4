//! The workspace's boundaries, checked where the default `cargo test` runs them: the live
//! scheduler links no simulator code, and no crate's modules import each other in a circle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A root daemon carries no engine, machine model or baselines: `--record` writes through the
/// trace crate. Checked on the resolved graph, so a dependency that pulls the simulator in
/// transitively fails too.
#[test]
fn live_scheduler_links_no_simulator_crate() {
    let out = Command::new(env!("CARGO"))
        .args([
            "tree",
            "--offline",
            "--locked",
            "-p",
            "scx_hybridland",
            "-e",
            "normal,build",
            "--prefix",
            "none",
        ])
        .current_dir(workspace_root())
        .output()
        .expect("run cargo tree");
    assert!(
        out.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tree = String::from_utf8_lossy(&out.stdout);
    assert!(
        tree.contains("hybridland-trace"),
        "unexpected tree:\n{tree}"
    );
    for line in tree.lines() {
        let name = line.split_whitespace().next().unwrap_or("");
        assert!(
            name != "hybridland-sim" && name != "hybrid-sim",
            "scx_hybridland links {name}:\n{tree}"
        );
    }
}

/// `crate::NAME` references outside comments and test modules, per top-level module.
fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read src dir") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(src).expect("under src");
            let first = rel.components().next().expect("a component");
            let top = first
                .as_os_str()
                .to_string_lossy()
                .trim_end_matches(".rs")
                .to_owned();
            // A test module in its own file (`tests.rs`) or directory (`tests/`) is test code,
            // as an inline one is.
            let test_dir = rel.components().any(|c| c.as_os_str() == "tests");
            if top == "lib"
                || top == "main"
                || top == "bpf"
                || path.ends_with("tests.rs")
                || test_dir
            {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("read source");
            let code = text.split("#[cfg(test)]").next().unwrap_or("");
            for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
                for (i, _) in line.match_indices("crate::") {
                    let rest = &line[i + "crate::".len()..];
                    for name in referenced(rest) {
                        if name != top {
                            graph.entry(top.clone()).or_default().insert(name);
                        }
                    }
                }
            }
        }
    }
    graph
}

/// The module names a `crate::` path starts with: `a::b` gives `a`, `{a, b::c}` gives both.
fn referenced(rest: &str) -> Vec<String> {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    if let Some(group) = rest.strip_prefix('{') {
        let end = group.find('}').unwrap_or(group.len());
        group[..end]
            .split(',')
            .map(|item| ident(item.trim()))
            .filter(|n| !n.is_empty())
            .collect()
    } else {
        vec![ident(rest)]
    }
}

fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(node.to_owned(), 1);
        path.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            match state.get(next.as_str()) {
                Some(1) => {
                    let start = path.iter().position(|p| p == next).expect("on path");
                    let mut cycle = path[start..].to_vec();
                    cycle.push(next.clone());
                    return Some(cycle);
                }
                Some(_) => {}
                None => {
                    if let Some(c) = visit(next, graph, state, path) {
                        return Some(c);
                    }
                }
            }
        }
        path.pop();
        state.insert(node.to_owned(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for node in graph.keys() {
        if !state.contains_key(node.as_str())
            && let Some(c) = visit(node, graph, &mut state, &mut Vec::new())
        {
            return Some(c);
        }
    }
    None
}

#[test]
fn no_module_import_cycle_in_any_crate() {
    let crates = workspace_root().join("crates");
    let mut checked = 0;
    for entry in std::fs::read_dir(&crates).expect("read crates/") {
        let src = entry.expect("dir entry").path().join("src");
        if !src.is_dir() {
            continue;
        }
        let graph = module_graph(&src);
        if let Some(cycle) = find_cycle(&graph) {
            panic!(
                "{}: modules import in a circle: {}",
                src.display(),
                cycle.join(" -> ")
            );
        }
        checked += 1;
    }
    assert!(
        checked >= 6,
        "only {checked} crates found under {}",
        crates.display()
    );
}

#[test]
fn the_cycle_finder_finds_a_cycle() {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    graph.entry("a".into()).or_default().insert("b".into());
    graph.entry("b".into()).or_default().insert("c".into());
    assert_eq!(find_cycle(&graph), None);
    graph.entry("c".into()).or_default().insert("a".into());
    assert_eq!(
        find_cycle(&graph).map(|c| c.join(">")),
        Some("a>b>c>a".into())
    );
    assert_eq!(
        referenced("{x, y::z}::w"),
        vec!["x".to_owned(), "y".to_owned()]
    );
}
