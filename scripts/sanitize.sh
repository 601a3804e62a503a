#!/usr/bin/env bash
# Builds mpk with clang, AddressSanitizer, UndefinedBehaviorSanitizer and libFuzzer into
# build-sanitize/ (no CUDA, no studio), then either
#   scripts/sanitize.sh              runs the hostile-input tests against the sanitized CLIs
#                                    and every fuzz target for FUZZ_SECONDS (default 10) each
#                                    (the test command does this), or
#   scripts/sanitize.sh campaign N [TARGET...]
#                                    runs every fuzz target (or the ones named) for N
#                                    executions (two at a time), keeping what it finds under
#                                    build-sanitize/fuzz/campaign/, and prints executions,
#                                    seconds and findings per target.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-tests}
echo "== configuring (build-sanitize/, clang, ASan+UBSan+libFuzzer)"
mkdir -p build-sanitize
CC=clang CXX=clang++ cmake -S . -B build-sanitize -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS_DEBUG="-O1 -gline-tables-only" -DMPK_SANITIZE=ON -DMPK_FUZZ=ON -DMPK_WITH_CUDA=OFF \
  -DMPK_WITH_STUDIO=OFF -DMPK_FUZZ_SECONDS="${FUZZ_SECONDS:-10}" >build-sanitize/configure.log 2>&1 ||
  { cat build-sanitize/configure.log; exit 1; }
echo "== building the sanitized CLIs, hostile-input tests and fuzz targets"
mapfile -t targets < <(sed -n 's/^mpk_fuzz_target(\([a-z_0-9]*\).*/\1/p' fuzz/CMakeLists.txt)
cmake --build build-sanitize -j"$(nproc)" --target mpk mpk-opt mpk_hostile_tests "${targets[@]/#/mpk_fuzz_}"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allocator_may_return_null=0:max_allocation_size_mb=8192
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

if [[ $mode == tests ]]; then
  cd build-sanitize
  exec ctest --output-on-failure -j"$(nproc)" -L 'hostile|fuzz'
fi
[[ $mode == campaign && ${2:-} =~ ^[0-9]+$ ]] || { echo "usage: $0 [campaign RUNS]" >&2; exit 2; }
runs=$2
if (($# > 2)); then
  for t in "${@:3}"; do
    printf '%s\n' "${targets[@]}" | grep -qx "$t" || { echo "unknown fuzz target '$t' (${targets[*]})" >&2; exit 2; }
  done
  targets=("${@:3}")
fi
out=build-sanitize/fuzz/campaign
mkdir -p "$out"
fuzz_one() {  # target -> $out/target.log; a finding is written as $out/target-crash-*
  local t=$1 start=$SECONDS
  mkdir -p "$out/$t.corpus"
  build-sanitize/fuzz/mpk_fuzz_"$t" -runs="$runs" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix="$out/$t-" "$out/$t.corpus" "fuzz/corpus/$t" >"$out/$t.log" 2>&1
  echo "rc=$? seconds=$((SECONDS - start))" >>"$out/$t.log"
}
export -f fuzz_one; export out runs
printf '%s\n' "${targets[@]}" | xargs -P 2 -I{} bash -c 'fuzz_one {}'
printf '%-16s %12s %8s %s\n' target executions seconds findings
bad=0
for t in "${targets[@]}"; do
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/$t.log" | tail -1)
  secs=$(sed -n 's/^rc=.* seconds=//p' "$out/$t.log")
  found=$(find "$out" -maxdepth 1 -name "$t-*" | wc -l)
  grep -q '^rc=0 ' "$out/$t.log" || found=$((found > 0 ? found : 1))
  printf '%-16s %12s %8s %s\n' "$t" "${execs:-?}" "${secs:-?}" "$found"
  ((found == 0)) || bad=1
done
exit $bad
