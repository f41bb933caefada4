# Environment for building the BPF side of scx_hybridland (sourced by scripts/test.sh and
# usable by hand: `source scripts/env.sh`). scx_cargo needs clang >= 18; bindgen needs libclang.
if command -v clang-19 >/dev/null 2>&1; then
  export BPF_CLANG=${BPF_CLANG:-clang-19}
  export LIBCLANG_PATH=${LIBCLANG_PATH:-/usr/lib/llvm-19/lib}
fi
