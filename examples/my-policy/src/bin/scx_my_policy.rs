//! `scx_hybridland` with the little-first policy beside the built-in ones: run it live with
//! `scx_my_policy --policy little-first` (root, a sched_ext kernel). Built with the `live`
//! feature (`cargo build --release -p my-policy --features live`), which needs the BPF toolchain.

fn main() -> std::process::ExitCode {
    scx_hybridland::main_with(&[my_policy::POLICY, my_policy::UP_AT, my_policy::GRADUATE])
}
