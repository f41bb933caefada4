//! `new-policy NAME [DIR]`: writes a crate of the user's own that builds outside this
//! repository: a placement policy named NAME, its `hybrid-sim` binary (no BPF toolchain
//! needed), its live binary behind the `live` feature, and a test that replays a bundled trace.
//!
//! hybridland is not published to a registry, so the crate's dependencies are path
//! dependencies on a hybridland checkout (by default the one this program was built from), and
//! its Cargo.lock starts as that checkout's, so the `=`-pinned scx crates and everything below
//! them resolve to the versions hybridland is tested with. The templates are the files beside
//! this one (`new_policy/*.in`); scripts/tests/new-policy.sh builds what they make.

use crate::failure::Failure;
use crate::opts::NewPolicyArgs;
use anyhow::anyhow;
use std::path::{Path, PathBuf};

const CARGO_TOML: &str = include_str!("new_policy/Cargo.toml.in");
const LIB_RS: &str = include_str!("new_policy/lib.rs.in");
const SIM_RS: &str = include_str!("new_policy/sim.rs.in");
const LIVE_RS: &str = include_str!("new_policy/live.rs.in");
const TEST_RS: &str = include_str!("new_policy/test.rs.in");

/// The longest name taken.
const MAX_NAME: usize = 48;

/// Names Rust or cargo keep for themselves (keywords, reserved words, the standard crates).
const RESERVED: &[&str] = &[
    "abstract",
    "alloc",
    "as",
    "async",
    "await",
    "become",
    "box",
    "break",
    "const",
    "continue",
    "core",
    "crate",
    "do",
    "dyn",
    "else",
    "enum",
    "extern",
    "false",
    "final",
    "fn",
    "for",
    "gen",
    "if",
    "impl",
    "in",
    "let",
    "loop",
    "macro",
    "match",
    "mod",
    "move",
    "mut",
    "override",
    "priv",
    "proc_macro",
    "pub",
    "ref",
    "return",
    "self",
    "static",
    "std",
    "struct",
    "super",
    "test",
    "trait",
    "true",
    "try",
    "type",
    "typeof",
    "unsafe",
    "unsized",
    "use",
    "virtual",
    "where",
    "while",
    "yield",
];

/// Names the generated `src/lib.rs` already uses, which the policy's type (NAME in
/// CamelCase) must not shadow.
const TAKEN_TYPES: &[&str] = &[
    "Box",
    "Clone",
    "Copy",
    "CpuId",
    "CustomPolicy",
    "Debug",
    "Default",
    "Err",
    "None",
    "Ok",
    "Option",
    "Placement",
    "PlacementPolicy",
    "Result",
    "Send",
    "Some",
    "String",
    "Topology",
    "View",
];

/// Runs the command: the crate's files written, and one paragraph saying where and what next.
pub(crate) fn run(args: &NewPolicyArgs) -> Result<String, Failure> {
    let name = args.name.as_str();
    let type_name = check_name(name).map_err(Failure::Input)?;
    let root = checkout(args.hybridland.as_deref()).map_err(Failure::Input)?;
    let lock = std::fs::read_to_string(root.join("Cargo.lock")).ok();
    if let Some(lock) = &lock {
        let clash = |n: &str| n.replace('-', "_") == name.replace('-', "_");
        if let Some(taken) = lock_names(lock).find(|n| clash(n)) {
            return Err(Failure::Input(anyhow!(
                "policy name {name:?}: {taken} is already a package of hybridland's build \
                 (its Cargo.lock), which the crate's own name must not repeat; choose another"
            )));
        }
    }
    let root_str = root
        .to_str()
        .filter(|s| !s.chars().any(|c| c == '"' || c == '\\' || c.is_control()))
        .ok_or_else(|| {
            Failure::Input(anyhow!(
                "{}: the checkout's path must be UTF-8 without quotes, backslashes or control \
                 characters to be written into Cargo.toml; pass --hybridland with another path",
                root.display()
            ))
        })?;
    let dir = args.dir.clone().unwrap_or_else(|| PathBuf::from(name));
    check_dir(&dir).map_err(Failure::Input)?;
    let krate = name.replace('-', "_");
    let fill = |template: &str| {
        template
            .replace("@NAME@", name)
            .replace("@CRATE@", &krate)
            .replace("@TYPE@", &type_name)
            .replace("@HYBRIDLAND@", root_str)
    };
    let mut files = vec![
        (PathBuf::from("Cargo.toml"), fill(CARGO_TOML)),
        (PathBuf::from(".gitignore"), "/target\n".to_owned()),
        (PathBuf::from("src/lib.rs"), fill(LIB_RS)),
        (
            PathBuf::from(format!("src/bin/{name}-sim.rs")),
            fill(SIM_RS),
        ),
        (
            PathBuf::from(format!("src/bin/scx_{krate}.rs")),
            fill(LIVE_RS),
        ),
        (PathBuf::from("tests/sim.rs"), fill(TEST_RS)),
    ];
    if let Some(lock) = lock {
        files.push((PathBuf::from("Cargo.lock"), lock));
    }
    for (rel, text) in &files {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| {
                Failure::Output(anyhow!("{}: cannot create: {e}", parent.display()))
            })?;
        }
        crate::output::write_file(&path, text)?;
    }
    let shown = dir.display();
    Ok(format!(
        "{shown}: the crate {name}, its policy {name} (src/lib.rs), {name}-sim (no BPF toolchain \
         needed), scx_{krate} (--features live) and a test (tests/sim.rs), on the hybridland \
         checkout {root_str} (path dependencies; Cargo.toml says how to use git instead)\n\
         next: cd {shown} && cargo test\n"
    ))
}

/// The policy's type name for a valid NAME (`light-first` gives `LightFirst`), or why NAME
/// cannot be a package's, a crate's and a policy's name at once.
fn check_name(name: &str) -> anyhow::Result<String> {
    let valid = name.len() <= MAX_NAME
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name.split('-').all(|part| {
            !part.is_empty()
                && part
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        });
    if !valid {
        return Err(anyhow!(
            "policy name {name:?}: use lowercase letters, digits and single hyphens, starting \
             with a letter, at most {MAX_NAME} characters (it names the package, the crate and \
             `--policy`)"
        ));
    }
    if RESERVED.contains(&name) {
        return Err(anyhow!(
            "policy name {name:?}: Rust or cargo keeps that name; choose another"
        ));
    }
    if hybridland_sim::registry::known_names().contains(&name) {
        return Err(anyhow!(
            "policy name {name:?}: already a policy of hybrid-sim's; choose another"
        ));
    }
    let type_name: String = name
        .split('-')
        .map(|part| {
            let (head, tail) = part.split_at(1);
            head.to_ascii_uppercase() + tail
        })
        .collect();
    if TAKEN_TYPES.contains(&type_name.as_str()) {
        return Err(anyhow!(
            "policy name {name:?}: its type would be {type_name}, a name the crate's code already \
             uses; choose another"
        ));
    }
    Ok(type_name)
}

/// The names of the packages in a Cargo.lock.
fn lock_names(lock: &str) -> impl Iterator<Item = &str> {
    lock.lines()
        .filter_map(|l| l.strip_prefix("name = \""))
        .filter_map(|l| l.strip_suffix('"'))
}

/// The hybridland checkout to depend on, absolute: `given`, else the one this program was built
/// from; it must hold the three packages the crate depends on and the trace its test replays.
fn checkout(given: Option<&Path>) -> anyhow::Result<PathBuf> {
    let built_from = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let root = given.map_or(built_from, Path::to_path_buf);
    let how = if given.is_some() {
        "--hybridland"
    } else {
        "the checkout this hybrid-sim was built from; pass --hybridland DIR"
    };
    let needed = [
        "crates/policy/Cargo.toml",
        "crates/cli/Cargo.toml",
        "crates/scx-frontend/Cargo.toml",
        "examples/traces/seed004-webgl.json",
    ];
    if let Some(missing) = needed.iter().find(|p| !root.join(p).is_file()) {
        return Err(anyhow!(
            "{}: not a hybridland checkout (no {missing}) ({how})",
            root.display()
        ));
    }
    std::fs::canonicalize(&root).map_err(|e| anyhow!("{}: {e} ({how})", root.display()))
}

/// Refuses a directory that is not empty (nothing is overwritten) or a path that is a file.
fn check_dir(dir: &Path) -> anyhow::Result<()> {
    match std::fs::read_dir(dir) {
        Ok(mut entries) => match entries.next() {
            None => Ok(()),
            Some(_) => Err(anyhow!(
                "{}: not empty; new-policy writes a new crate and overwrites nothing",
                dir.display()
            )),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(anyhow!("{}: {e}", dir.display())),
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn names_become_types_and_bad_names_are_refused() {
        assert_eq!(check_name("light-first").unwrap(), "LightFirst");
        assert_eq!(check_name("p2-e4x").unwrap(), "P2E4x");
        for bad in [
            "",
            "Light",
            "light_first",
            "-a",
            "a-",
            "a--b",
            "2fast",
            "a b",
            "é",
        ] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        assert!(check_name(&"a".repeat(MAX_NAME + 1)).is_err());
        let reserved = check_name("test").unwrap_err().to_string();
        assert!(reserved.contains("keeps that name"), "{reserved}");
        let builtin = check_name("spread").unwrap_err().to_string();
        assert!(builtin.contains("already a policy"), "{builtin}");
        let shadow = check_name("view").unwrap_err().to_string();
        assert!(shadow.contains("its type would be View"), "{shadow}");
    }

    #[test]
    fn the_lock_gives_its_package_names() {
        let lock = "[[package]]\nname = \"anyhow\"\nversion = \"1\"\n\n[[package]]\nname = \"hybrid-sim\"\n";
        assert_eq!(
            lock_names(lock).collect::<Vec<_>>(),
            ["anyhow", "hybrid-sim"]
        );
    }

    #[test]
    fn every_placeholder_of_the_templates_is_filled() {
        for t in [CARGO_TOML, LIB_RS, SIM_RS, LIVE_RS, TEST_RS] {
            let filled = t
                .replace("@NAME@", "n")
                .replace("@CRATE@", "n")
                .replace("@TYPE@", "N")
                .replace("@HYBRIDLAND@", "/h");
            assert!(!filled.contains('@'), "{filled}");
        }
    }
}
