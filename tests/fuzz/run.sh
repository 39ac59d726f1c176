#!/usr/bin/env bash
# Builds the libFuzzer targets (clang-14, ASan+UBSan) and runs each for SECONDS (default 30)
# over a scratch copy of its seed corpus. Exits non-zero when any target finds a crash, a
# sanitizer report, a hang, an out-of-memory or a failed round trip; the reproducer is left in
# BUILD/artifacts/ (TARGET-crash-*, -timeout-*, -oom-*) and named in the output.
#
#   tests/fuzz/run.sh [SECONDS]        build folder: build-fuzz/ or $SOLAR_FUZZ_BUILD
set -euo pipefail

seconds="${1:-30}"
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${SOLAR_FUZZ_BUILD:-$root/build-fuzz}"
targets=(fuzz_text_graph fuzz_json_graph fuzz_loopir_lift)
# The longest input each target is given (its seeds are shorter): loop-language OpTraces
# (tests/fuzz/corpus/fuzz_loopir_lift/, saved with `solar analyze --save-trace`) are longer
# than graphs.
declare -A max_len=([fuzz_text_graph]=8192 [fuzz_json_graph]=8192 [fuzz_loopir_lift]=16384)
CC="${CC:-clang-14}"
CXX="${CXX:-clang++-14}"

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if [[ ! -f "$build/CMakeCache.txt" ]]; then
  CC="$CC" CXX="$CXX" cmake -S "$root" -B "$build" "${generator[@]}" -DSOLAR_FUZZ=ON \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS="-fsanitize=address,undefined,fuzzer-no-link -fno-sanitize-recover=all -g -O1"
fi
cmake --build "$build" --target "${targets[@]}" -j "${SOLAR_FUZZ_JOBS:-2}"

status=0
mkdir -p "$build/artifacts"
for t in "${targets[@]}"; do
  work="$build/corpus-run/$t"
  rm -rf "$work"
  mkdir -p "$work"
  cp "$root/tests/fuzz/corpus/$t/"* "$work/" 2>/dev/null || true
  echo "== $t: ${seconds}s"
  if ! "$build/tests/fuzz/$t" "$work" -max_total_time="$seconds" -timeout=5 -rss_limit_mb=2048 \
         -max_len="${max_len[$t]}" -print_final_stats=1 -artifact_prefix="$build/artifacts/$t-" 2>&1 |
       tail -n 40; then
    echo "!! $t found a problem; reproducer in $build/artifacts/ (rerun: $build/tests/fuzz/$t FILE)"
    status=1
  fi
done
exit $status
