//! What the `hybrid-sim` end-to-end tests share: the binary, run from the repository root so
//! the bundled examples' relative paths work as the README writes them.

// Each test file is its own crate and uses only some of these.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The repository root.
pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `hybrid-sim ARGS` from the repository root. The caller's `RUST_LOG` is dropped so that the
/// `-v` flags alone decide what is logged.
pub(crate) fn hybrid_sim(args: &[&str]) -> Output {
    hybrid_sim_env(args, &[])
}

/// [`hybrid_sim`] with extra environment variables.
pub(crate) fn hybrid_sim_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hybrid-sim"))
        .args(args)
        .current_dir(root())
        .env_remove("RUST_LOG")
        .envs(env.iter().copied())
        .output()
        .expect("run hybrid-sim")
}

/// `hybrid-sim ARGS` with its standard output going to `/dev/full`, where every write fails
/// (ENOSPC).
pub(crate) fn hybrid_sim_to_full(args: &[&str]) -> Output {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("open /dev/full");
    Command::new(env!("CARGO_BIN_EXE_hybrid-sim"))
        .args(args)
        .current_dir(root())
        .env_remove("RUST_LOG")
        .stdout(full)
        .output()
        .expect("run hybrid-sim")
}

/// Output bytes as text.
pub(crate) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
