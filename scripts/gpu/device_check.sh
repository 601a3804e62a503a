#!/usr/bin/env bash
# Runs on the lent GPU machine (tool `device`) from the repository root, with the
# binaries built on the development machine carried in .carry/ (bin/: mpk, test
# binaries; lib/: shared libraries the device image may lack). Writes logs to $OUT.
# Usage: scripts/gpu/device_check.sh [smoke] [tests] [bench] [trace] [dump] [variants] [qwen]
#        [sanitize]   (env: GTEST_FILTER for tests; VARIANTS: ';'-separated bench arguments)
set -u
OUT=${OUT:-/tmp/mpk-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/.carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export MPK_CACHE_DIR=/tmp/mpk-cache
BIN=$PWD/.carry/bin
want() { [[ " $* " == *" all "* ]] || [[ " $SEL " == *" $1 "* ]]; }
SEL=" ${*:-all} "
step() { echo; echo "=== $* ($(date +%T))"; }

{
  step environment
  nvidia-smi -L; nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  ldd "$BIN/mpk" | grep -E "not found|sqlite|protobuf" || true
  "$BIN/mpk" run --help | tail -4
} 2>&1 | tee "$OUT/env.log"

if want smoke; then
  {
    step smoke: mpk run tiny
    timeout 90 "$BIN/mpk" run --backend gpu --model tiny --steps 16 --prompt 1,2,3
    rc=$?
    echo "smoke rc=$rc"
  } 2>&1 | tee "$OUT/smoke.log"
  grep -q "smoke rc=0" "$OUT/smoke.log" || { echo "smoke failed: stopping"; exit 1; }
fi

if want tests; then
  {
    step gpu tests
    timeout 420 "$BIN/mpk_gpu_tests" --gtest_color=no ${GTEST_FILTER:+--gtest_filter=$GTEST_FILTER}
    echo "gpu tests rc=$?"
  } 2>&1 | tee "$OUT/tests.log" | grep -E "^\[  |rc=|Failure|error|Expected|Which is|actual" | head -150
fi

if want bench; then
  {
    step mpk run tiny
    timeout 120 "$BIN/mpk" run --backend gpu --model tiny --steps 16 --prompt 1,2,3
    step bench llama-3.2-1b
    timeout 400 "$BIN/mpk" bench --model llama-3.2-1b --steps 128 --mode both --trace-overhead --reps 7
  } 2>&1 | tee "$OUT/bench.log"
fi

if want trace; then
  {
    step trace llama-3.2-1b 16 steps
    rm -f /tmp/llama_trace.db
    timeout 200 "$BIN/mpk" run --backend gpu --model llama-3.2-1b --steps 32 --trace /tmp/llama_trace.db | tail -3
    python3 scripts/gpu/trace_summary.py /tmp/llama_trace.db
  } 2>&1 | tee "$OUT/trace.log"
fi

if want dump; then
  {
    step dump: llama-3.2-1b trace of 4 steps and the megakernel SASS
    timeout 200 "$BIN/mpk" run --backend gpu --model llama-3.2-1b --steps 4 --trace "$OUT/llama4.db" | tail -2
    cubin=$(ls -t /tmp/mpk-cache/*.cubin | head -1)
    cuobjdump -sass "$cubin" | gzip > "$OUT/megakernel.sass.gz"
    ls -la "$OUT"
  } 2>&1 | tee "$OUT/dump.log"
fi

if want variants; then
  {
    # Each variant: extra `mpk bench` arguments, separated by ';'.
    IFS=';' read -ra vs <<< "${VARIANTS:---l2-ahead 0;--l2-ahead 16}"
    for v in "${vs[@]}"; do
      step "bench llama-3.2-1b $v"
      eval timeout 200 "$BIN/mpk" bench --model llama-3.2-1b --steps 128 --reps 3 $v | grep -E "megakernel |slots"
    done
  } 2>&1 | tee "$OUT/variants.log"
fi

if want qwen; then
  {
    step bench qwen3-8b
    timeout 500 "$BIN/mpk" bench --model qwen3-8b --steps 128 --mode both --reps 5
  } 2>&1 | tee "$OUT/qwen.log"
fi

if want sanitize; then
  {
    step compute-sanitizer memcheck tiny
    timeout 300 compute-sanitizer --tool memcheck --error-exitcode 9 "$BIN/mpk" run --backend gpu --model tiny --steps 4 | tail -8
    echo "memcheck rc=${PIPESTATUS[0]}"
    step compute-sanitizer racecheck tiny
    timeout 300 compute-sanitizer --tool racecheck --error-exitcode 9 "$BIN/mpk" run --backend gpu --model tiny --steps 4 | tail -8
    echo "racecheck rc=${PIPESTATUS[0]}"
  } 2>&1 | tee "$OUT/sanitize.log"
fi
