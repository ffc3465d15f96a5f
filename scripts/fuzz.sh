#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan+UBSan) into build-fuzz/ (or $FUZZ_BUILD_DIR) and runs
# one of them, or all, for a fixed time each.
#
#   scripts/fuzz.sh TARGET SECONDS   run fuzz_TARGET for SECONDS (e.g. scripts/fuzz.sh pep440 600)
#   scripts/fuzz.sh all SECONDS      run every target for SECONDS each (CI: a short time)
#   scripts/fuzz.sh list             the target names
#   scripts/fuzz.sh build            build only
#
# Each run starts from the seed corpus fuzz/corpus/TARGET and replays every input in
# fuzz/regressions/TARGET (inputs that once crashed; all must pass). New inputs go to
# build-fuzz/corpus/TARGET (the repository is not written); a crash leaves its input in
# build-fuzz/artifacts/TARGET/ and the script fails. Extra arguments after SECONDS go to libFuzzer.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${FUZZ_BUILD_DIR:-build-fuzz}
targets=(framing jsonrpc session script_metadata pep508 pep440 markers zygote_protocol result_channel)

usage() { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[ $# -ge 1 ] || usage
what=$1; shift

if [ "$what" = list ]; then printf '%s\n' "${targets[@]}"; exit 0; fi

build() {
  local cxx=${FUZZ_CXX:-clang++-14} cc=${FUZZ_CC:-clang-14}
  command -v "$cxx" >/dev/null || { echo "fuzz: $cxx not found (scripts/install-deps.sh installs clang-14)" >&2; exit 1; }
  local launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  CC=$cc CXX=$cxx cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMPES_FUZZ=ON \
    -DMPES_BUILD_TESTS=OFF -DMPES_WERROR=ON "${launcher[@]}" >/dev/null
  cmake --build "$build_dir" --target fuzz_all -j"$(nproc)"
}

run_one() {  # run_one TARGET SECONDS [libFuzzer args...]
  local name=$1 seconds=$2; shift 2
  local bin="$build_dir/fuzz_$name"
  [ -x "$bin" ] || { echo "fuzz: no target '$name' (scripts/fuzz.sh list)" >&2; return 2; }
  local work="$build_dir/corpus/$name" artifacts="$build_dir/artifacts/$name"
  mkdir -p "$work" "$artifacts"
  local dirs=("$work" "fuzz/corpus/$name")
  [ -d "fuzz/regressions/$name" ] && dirs+=("fuzz/regressions/$name")
  local dict=()
  [ -f "fuzz/dict/$name.dict" ] && dict=(-dict="fuzz/dict/$name.dict")
  local log="$build_dir/logs/$name.log"
  mkdir -p "$build_dir/logs"
  echo "fuzz: $name for ${seconds}s" >&2
  local rc=0
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1} \
  UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
    "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
      -print_final_stats=1 -artifact_prefix="$artifacts/" "${dict[@]}" "$@" "${dirs[@]}" \
      >"$log" 2>&1 || rc=$?
  if ((rc != 0)); then
    tail -n 80 "$log" >&2
    echo "fuzz: $name FAILED (exit $rc); input in $artifacts/, full log $log" >&2
    return 1
  fi
  local runs cov
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  cov=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | grep -o 'cov: [0-9]*' | head -1)
  echo "fuzz: $name ok: ${runs:-?} inputs, ${cov:-cov: ?}, corpus $(ls "$work" | wc -l) new" >&2
}

build
case "$what" in
  build) ;;
  all)
    [ $# -ge 1 ] || usage
    seconds=$1; shift
    failed=()
    for t in "${targets[@]}"; do run_one "$t" "$seconds" "$@" || failed+=("$t"); done
    if ((${#failed[@]})); then echo "fuzz: FAILED: ${failed[*]}" >&2; exit 1; fi
    echo "fuzz: ${#targets[@]} targets passed" >&2
    ;;
  *)
    [ $# -ge 1 ] || usage
    seconds=$1; shift
    run_one "$what" "$seconds" "$@"
    ;;
esac
