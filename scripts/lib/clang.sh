# Sourced, not run: finds the clang the BPF side of scx_hybridland builds with. Shared by
# scripts/install-scx-deps.sh (what to install) and scripts/env.sh (what to export), so the two
# never disagree. scx_cargo refuses clang older than 18; 18 to 21 are the versions known here.
HL_CLANG_MIN=18
HL_CLANG_MAX=21

# The major version of the clang command $1, or failure when it is not clang or does not run.
hl_clang_major() {
  local out
  out=$("$1" --version 2>/dev/null) || return 1
  [[ $out =~ clang\ version\ ([0-9]+) ]] || return 1
  echo "${BASH_REMATCH[1]}"
}

# Prints "COMMAND MAJOR" for an installed clang >= HL_CLANG_MIN: plain `clang` first (what
# scx_utils' build script runs), then the newest versioned one; fails when there is none.
hl_find_clang() {
  local c v n
  for c in clang $(for ((n = HL_CLANG_MAX; n >= HL_CLANG_MIN; n--)); do echo "clang-$n"; done); do
    command -v "$c" >/dev/null 2>&1 || continue
    v=$(hl_clang_major "$c") || continue
    if ((v >= HL_CLANG_MIN)); then
      echo "$c $v"
      return 0
    fi
  done
  return 1
}

# The directory holding libclang for clang major version $1 (Debian's layout), if present.
hl_libclang_dir() {
  local d=/usr/lib/llvm-$1/lib
  compgen -G "$d/libclang*.so*" >/dev/null && echo "$d"
}
