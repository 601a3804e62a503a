#!/usr/bin/env bash
# Builds mpk with clang, AddressSanitizer, UndefinedBehaviorSanitizer and libFuzzer into
# build-sanitize/ (no CUDA, no studio), then runs the hostile-input tests against the
# sanitized CLIs and every fuzz target for FUZZ_SECONDS (default 10) each.
#   scripts/sanitize.sh                     # as the test command runs it
#   FUZZ_SECONDS=3600 scripts/sanitize.sh   # a long campaign (docs/threat-model.md)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-10}
echo "== configuring (build-sanitize/, clang, ASan+UBSan+libFuzzer)"
mkdir -p build-sanitize
CC=clang CXX=clang++ cmake -S . -B build-sanitize -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" -DMPK_SANITIZE=ON -DMPK_FUZZ=ON -DMPK_WITH_CUDA=OFF \
  -DMPK_WITH_STUDIO=OFF -DMPK_FUZZ_SECONDS="$seconds" >build-sanitize/configure.log 2>&1 ||
  { cat build-sanitize/configure.log; exit 1; }
echo "== building the sanitized CLIs, hostile-input tests and fuzz targets"
targets=(mpk mpk-opt mpk_hostile_tests)
mapfile -t fuzzers < <(sed -n 's/^mpk_fuzz_target(\([a-z_0-9]*\).*/mpk_fuzz_\1/p' fuzz/CMakeLists.txt)
cmake --build build-sanitize -j"$(nproc)" --target "${targets[@]}" "${fuzzers[@]}"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allocator_may_return_null=0:max_allocation_size_mb=8192
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
cd build-sanitize
exec ctest --output-on-failure -j"$(nproc)" -L 'hostile|fuzz' "$@"
