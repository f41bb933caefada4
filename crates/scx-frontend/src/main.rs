//! The `scx_hybridland` command: the library's [`scx_hybridland::main_with`] with no policies
//! beside the built-in ones.

fn main() -> std::process::ExitCode {
    scx_hybridland::main_with(&[])
}
