//! `hybrid-sim` with the little-first policy beside the built-in ones: every command
//! (`replay`, `sweep`, `compare`, `--plot`, `--timeline`) takes `--policy little-first`.

fn main() -> std::process::ExitCode {
    hybrid_sim::main_with(&[my_policy::POLICY, my_policy::UP_AT, my_policy::GRADUATE])
}
