//! The `hybrid-sim` command: the library's [`hybrid_sim::main_with`] with no policies beside
//! the built-in ones.

fn main() -> std::process::ExitCode {
    hybrid_sim::main_with(&[])
}
