# Environment for building the BPF side of scx_hybridland (sourced by scripts/test.sh and
# usable by hand: `source scripts/env.sh`). scx_cargo needs clang >= 18 (BPF_CLANG); bindgen
# needs the libclang of the same version (LIBCLANG_PATH). Both come from the clang that
# scripts/lib/clang.sh finds, the same one scripts/install-scx-deps.sh chose; values already
# set are kept. After the installer has run a plain cargo build works without this file; it
# is for machines where an older `clang` comes first on PATH.
# shellcheck source=scripts/lib/clang.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/clang.sh"
if _hl_found=$(hl_find_clang); then
  read -r _hl_cmd _hl_ver <<<"$_hl_found"
  export BPF_CLANG=${BPF_CLANG:-$_hl_cmd}
  if _hl_dir=$(hl_libclang_dir "$_hl_ver"); then
    export LIBCLANG_PATH=${LIBCLANG_PATH:-$_hl_dir}
  fi
  unset _hl_cmd _hl_ver _hl_dir
fi
unset _hl_found
