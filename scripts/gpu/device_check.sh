#!/usr/bin/env bash
# Runs on the lent GPU machine (tool `device`) from the repository root, with the
# binaries built on the development machine carried in .carry/ (bin/: mpk, test
# binaries; lib/: shared libraries the device image may lack; cache.tgz: megakernel
# cubins compiled ahead, so the device spends no time in nvcc). Writes $OUT/device.log and
# the traces (llama.db, qwen.db).
# Usage: scripts/gpu/device_check.sh [smoke] [tests] [tp] [tptrace] [tpab] [tpbig] [ab] [batch] [big1] [driver] [cli] [hf] [bench] [trace] [qtrace]
#        [path] [attn] [qwen] [micro] [long] [ttft] [variants] [policies] [tinytraces] [stress] [bitcmp] [prefillcmp] [sanitize]
#        (sections run in this order; policies: mpk experiment over every policy on both
#        models on the GPU, the traces xz-compressed into $OUT for mpk calibrate --validate
#        here; tinytraces: the same on tiny and tiny-qwen3, as test data; path: the
#        critical-path tables of 128-step traces of both models, as long as the bench, and
#        (cli: the CLI tests that need a GPU, `mpk run --backend gpu --prompt TEXT`; ttft: the
#        time to the first token after 512 prompt tokens, mpk and PyTorch's prefill)
#        their attention time by position; attn: attention of qwen3-8b's shape with little
#        else running, by position)   (env: GTEST_FILTER for tests; VARIANTS,
#        QVARIANTS: ';'-separated bench arguments for llama-3.2-1b, qwen3-8b, VREPS their repetitions (default 3);
#        REPS: bench repetitions, default 7; TINY_STEPS: steps of the tinytraces runs, default 4;
#        tests run as SHARDS gtest shards at once (default 6, at least one per GPU);
#        tp: the tensor-parallel tests, then `mpk bench --tp` of both models at every rank
#        count the GPUs allow; tptrace: every rank's trace of qwen3-8b at tp 4, or 2, with
#        rank 0's and the last rank's critical-path tables, and tiny's at tp 2 into $OUT/tiny-tp.db; tpab: qwen3-8b at
#        tp 2 and 4 by .carry/bin/mpk-old and mpk, alternated; ab: the same on one GPU
#        for each bench configuration of AB (';'-separated);
#        tpbig: a Llama-3.1-70B shape (scripts/gpu/models/llama-3.1-70b) at tp 4, and 2 on H200s;
#        batch: issue 15's batch figures; big1: a Qwen3-32B shape on one GPU; stress: runs
#        under GPU time-slicing (STRESS_ROUNDS of 3 processes at once, default 4) against one
#        quiet run, per policy, cooperative linears at batch 4 and 1; prefillcmp:
#        bitcmp's comparison for prefilled runs)
set -u
OUT=${OUT:-/tmp/mpk-out}
mkdir -p "$OUT"
LOG=$OUT/device.log  # every section's output (the device returns at most 8 files)
export LD_LIBRARY_PATH=$PWD/.carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export MPK_CACHE_DIR=/tmp/mpk-cache
# NCCL (tensor parallel) comes with PyTorch's nvidia-nccl package there; multicast stays off.
export NCCL_NVLS_ENABLE=0
export MPK_NCCL_LIB=${MPK_NCCL_LIB:-$(python3 -c 'import nvidia.nccl, os; print(os.path.join(nvidia.nccl.__path__[0], "lib", "libnccl.so.2"))' 2>/dev/null)}
GPUS=$(nvidia-smi -L | wc -l)
mkdir -p "$MPK_CACHE_DIR"
[[ -f .carry/cache.tgz ]] && tar xzf .carry/cache.tgz -C "$MPK_CACHE_DIR" --strip-components=1
BIN=$PWD/.carry/bin
REPS=${REPS:-7}
want() { [[ " $SEL " == *" all "* ]] || [[ " $SEL " == *" $1 "* ]]; }
SEL=" ${*:-all} "
step() { echo; echo "=== $* ($(date +%T))"; }

{
  step environment
  nvidia-smi -L; nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  ldd "$BIN/mpk" | grep -E "not found" || true
  ls "$MPK_CACHE_DIR" | wc -l
  python3 -m pip show nvidia-nccl-cu13 2>/dev/null | grep -E "^Version" || echo "no nvidia-nccl-cu13"
} 2>&1 | tee -a "$LOG"

if want smoke; then
  {
    step smoke: mpk run tiny
    timeout 90 "$BIN/mpk" run --backend gpu --model tiny --steps 16 --prompt 1,2,3
    echo "smoke rc=$?"
  } 2>&1 | tee /tmp/smoke.log | tee -a "$LOG"
  grep -q "smoke rc=0" /tmp/smoke.log || { echo "smoke failed: stopping"; exit 1; }
fi

if want tests; then
  {
    # Several shards a GPU, so that their kernels compile in parallel (every test's
    # kernels on a fresh machine: about 250 s as 6 shards on one H100, over 550 s as 3).
    shards=$(( ${SHARDS:-6} > GPUS ? ${SHARDS:-6} : GPUS ))
    step "gpu tests ($shards shards over $GPUS GPUs)"
    for ((i = 0; i < shards; ++i)); do
      CUDA_VISIBLE_DEVICES=$((i % GPUS)) GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i timeout 540 "$BIN/mpk_gpu_tests" \
        --gtest_color=no --gtest_filter="${GTEST_FILTER:-*}:-*MultiGpu*" > /tmp/shard$i.log 2>&1 &
    done
    wait
    cat /tmp/shard*.log
    ! grep -q "FAILED TEST" /tmp/shard*.log
    echo "gpu tests rc=$?"
  } 2>&1 | tee -a "$LOG" | grep -E "^\[  |rc=|Failure|error|Expected|Which is|actual|Value of" | head -80
fi

if want tp; then
  {
    step "tensor parallel: the group and the megakernels on $GPUS GPUs"
    timeout 400 "$BIN/mpk_gpu_tests" --gtest_color=no --gtest_filter='Tp*'
    echo "tp tests rc=$?"
  } 2>&1 | tee -a "$LOG" | grep -E "^\[  |rc=|Failure|error|Expected|Which is|actual|watchdog said" | head -60
  for m in qwen3-8b llama-3.2-1b; do
    for tp in 0 2 4 8; do
      ((tp <= GPUS)) || continue
      {
        step "bench $m, tp $tp (0: one GPU, unsharded)"
        timeout 300 "$BIN/mpk" bench --model $m --steps 128 --reps "$REPS" $( ((tp)) && echo --tp $tp)
      } 2>&1 | tee -a "$LOG" | grep -E "===|^gpu|^tp |^floor|^megakernel|error"
    done
  done
fi

if want tptrace; then
  tp=$((GPUS >= 4 ? 4 : 2))
  {
    step "critical path: qwen3-8b at tp $tp, every rank's trace of 128 steps"
    timeout 300 "$BIN/mpk" run --backend gpu --model qwen3-8b --tp $tp --steps 128 --max-seq 128 --trace /tmp/tp.db | tail -2
    "$BIN/mpk" trace runs /tmp/tp.db | cut -c1-60
    sqlite3 /tmp/tp.db "SELECT id, rank, rank_offset_ns, substr(options, instr(options, 'rank_clock_ns')) FROM run" 2>/dev/null ||
      python3 -c "import sqlite3; [print(r) for r in sqlite3.connect('/tmp/tp.db').execute(\"SELECT id, rank, rank_offset_ns, substr(options, instr(options, 'rank_clock_ns')) FROM run\")]"
    for run in 1 $tp; do
      echo "--- rank $((run - 1))"
      "$BIN/mpk" trace path /tmp/tp.db --run $run --layers | sed 1,2d
    done
    rm -f /tmp/tp.db "$OUT/tiny-tp.db"
    step "tiny at tp 2 (its 2 kv heads), every rank's trace of 8 steps -> \$OUT/tiny-tp.db"
    timeout 120 "$BIN/mpk" run --backend gpu --model tiny --tp 2 --steps 8 --trace "$OUT/tiny-tp.db" | tail -1
  } 2>&1 | tee -a "$LOG"
fi

if want tpab; then
  # .carry/bin/mpk-old against mpk, alternated, on the same GPUs: qwen3-8b at tp 2 and 4.
  for tp in 2 4 2 4; do
    ((tp <= GPUS)) || continue
    for b in mpk-old mpk; do
      {
        step "A/B $b qwen3-8b tp $tp"
        timeout 200 "$BIN/$b" bench --model qwen3-8b --steps 128 --reps "$REPS" --tp $tp
      } 2>&1 | tee -a "$LOG" | grep -E "===|^tp |^megakernel|rror"
    done
  done
fi

if want tpbig; then
  # 141 GB of random weights: the memory of these machines grows as it is used, so the
  # budget is given rather than read from MemTotal.
  for tp in 4 2; do
    ((tp <= GPUS)) || continue
    [[ $tp == 2 ]] && ! nvidia-smi -L | grep -q H200 && continue  # 70 GB a GPU: H200 only
    {
      step "bench llama-3.1-70b shape, tp $tp"
      MPK_MEMORY_BUDGET_MIB=400000 timeout 400 "$BIN/mpk" bench --model scripts/gpu/models/llama-3.1-70b/config.json \
        --steps 128 --reps 3 --tp $tp
    } 2>&1 | tee -a "$LOG" | grep -E "===|^gpu|^tp |^floor|^megakernel|rror"
  done
fi

if want ab; then
  # .carry/bin/mpk-old against mpk, alternated, on one GPU: each ';'-separated list of
  # `mpk bench` arguments in AB (default: both models at 128 steps and their long decodes).
  IFS=';' read -ra cfgs <<< "${AB:-llama-3.2-1b;llama-3.2-1b --steps 1024;qwen3-8b;qwen3-8b --steps 2048}"
  for c in "${cfgs[@]}"; do
    for b in mpk-old mpk; do
      {
        step "A/B $b $c"
        read -ra args <<< "$c"
        timeout 300 "$BIN/$b" bench --model "${args[@]}" --reps "${VREPS:-3}" --warmup 1
      } 2>&1 | tee -a "$LOG" | grep -E "===|^megakernel |rror"
    done
  done
fi

if want batch; then
  for a in "llama-3.2-1b --batch 8 --mode both" "llama-3.2-1b --batch 16" "qwen3-8b --batch 8" "llama-3.2-1b"; do
    {
      step "bench $a"
      read -ra args <<< "$a"
      timeout 200 "$BIN/mpk" bench --model "${args[@]}" --steps 128 --reps "$REPS"
    } 2>&1 | tee -a "$LOG" | grep -E "===|^gpu|^floor|^megakernel|^per-op|^speedup|rror"
  done
fi

if want big1; then
  {
    step "bench a Qwen3-32B shape on one GPU (65 GB of weights, packed once)"
    MPK_MEMORY_BUDGET_MIB=110000 timeout 300 "$BIN/mpk" bench --model scripts/gpu/models/qwen3-32b/config.json \
      --steps 128 --reps 3
  } 2>&1 | tee -a "$LOG" | grep -E "===|^gpu|^floor|^megakernel|rror"
fi

if want driver; then
  {
    step "driver gpu tests"
    timeout 300 "$BIN/mpk_driver_tests" --gtest_color=no --gtest_filter='*Gpu*'
    echo "driver gpu tests rc=$?"
  } 2>&1 | tee -a "$LOG" | grep -E "^\[  |rc=|Failure|Expected|Which is" | head -40
fi

if want cli; then
  {
    step "CLI tests on the GPU (text streamed by the kernel, stop at EOS)"
    # The tests run the CLIs from the build folder they were built with.
    bindir=$(strings "$BIN/mpk_tools_tests" | grep -m1 -o '/[^ ]*/build$' || true)
    mkdir -p "$bindir/tools" && ln -sf "$BIN/mpk" "$bindir/tools/mpk" && ln -sf "$BIN/mpk-opt" "$bindir/tools/mpk-opt"
    timeout 300 "$BIN/mpk_tools_tests" --gtest_color=no --gtest_filter='*Gpu*'
    echo "cli gpu tests rc=$?"
  } 2>&1 | tee -a "$LOG" | grep -E "^\[  |rc=|Failure|Expected|Which is" | head -40
fi

if want hf; then
  {
    step "transformers against mpk: random tiny llama, qwen2, qwen3 checkpoints"
    timeout 300 python3 scripts/gpu/hf_compare.py "$BIN/mpk" /tmp/hf cpu gpu
    echo "hf rc=$?"
  } 2>&1 | tee -a "$LOG"
fi

if want bench; then
  {
    step bench llama-3.2-1b
    timeout 300 "$BIN/mpk" bench --model llama-3.2-1b --steps 128 --mode both --trace-overhead --reps "$REPS"
  } 2>&1 | tee -a "$LOG"
fi

if want trace; then
  {
    step "trace: llama-3.2-1b 8 steps (max_seq 128, as the bench)"
    rm -f "$OUT/llama.db"
    timeout 200 "$BIN/mpk" run --backend gpu --model llama-3.2-1b --steps 8 --max-seq 128 --trace "$OUT/llama.db" | tail -3
  } 2>&1 | tee -a "$LOG"
fi

if want qtrace; then
  {
    step "trace: qwen3-8b 3 steps (max_seq 128, as the bench)"
    rm -f "$OUT/qwen.db"
    timeout 300 "$BIN/mpk" run --backend gpu --model qwen3-8b --steps 3 --max-seq 128 --trace "$OUT/qwen.db" | tail -3
  } 2>&1 | tee -a "$LOG"
fi

if want path; then
  for m in llama-3.2-1b qwen3-8b; do
    {
      step "critical path: $m, a trace of 128 steps (the bench's length; the trace stays on the device)"
      timeout 300 "$BIN/mpk" run --backend gpu --model $m --steps 128 --max-seq 128 --trace /tmp/path.db | tail -2
      "$BIN/mpk" trace path /tmp/path.db --layers | sed 1,2d
      python3 scripts/gpu/attention_positions.py /tmp/path.db
      rm -f /tmp/path.db
    } 2>&1 | tee -a "$LOG"
  done
fi

if want attn; then
  {
    step "attention alone: qwen3-8b's heads (32 q, 8 kv, head_dim 128) over a 512-wide model, 128 steps"
    rm -f /tmp/attn.db
    timeout 200 "$BIN/mpk" run --backend gpu --model scripts/gpu/models/qwen3-attention.json --steps 128 \
      --max-seq 128 --trace /tmp/attn.db | tail -2
    python3 scripts/gpu/attention_positions.py /tmp/attn.db
  } 2>&1 | tee -a "$LOG"
fi

if want qwen; then
  {
    step bench qwen3-8b
    timeout 400 "$BIN/mpk" bench --model qwen3-8b --steps 128 --mode both --reps "$REPS"
  } 2>&1 | tee -a "$LOG"
fi

if want micro; then
  {
    step "dispatch microbenchmark (tests/bench/gpu_dispatch_bench)"
    timeout 200 "$BIN/gpu_dispatch_bench"
  } 2>&1 | tee -a "$LOG"
fi

if want long; then
  {
    step "bench llama-3.2-1b, 1024 steps"
    timeout 300 "$BIN/mpk" bench --model llama-3.2-1b --steps 1024 --reps 3 --warmup 1
  } 2>&1 | tee -a "$LOG"
fi

if want ttft; then
  for m in llama-3.2-1b qwen3-8b; do
    {
      step "time to the first token after 512 prompt tokens: $m"
      timeout 300 "$BIN/mpk" bench --model $m --steps 128 --prompt-len 512 --reps 3 --warmup 1 | grep -E "floor|megakernel  [0-9]|ttft|prompt token"
    } 2>&1 | tee -a "$LOG"
  done
  {
    step "PyTorch prefill of the same shapes (tests/bench/torch_prefill_bench.py)"
    timeout 300 python3 tests/bench/torch_prefill_bench.py --model llama-3.2-1b --prompt-len 512
    timeout 200 python3 tests/bench/torch_prefill_bench.py --model qwen3-8b --prompt-len 512 --no-compile
  } 2>&1 | tee -a "$LOG"
fi

if want variants; then
  {
    # Each variant: extra `mpk bench` arguments, separated by ';' (VARIANTS: llama-3.2-1b,
    # QVARIANTS: qwen3-8b).
    for mv in "llama-3.2-1b|${VARIANTS---policy round-robin;--policy locality}" "qwen3-8b|${QVARIANTS-}"; do
      IFS=';' read -ra vs <<< "${mv#*|}"
      for v in "${vs[@]}"; do
        step "bench ${mv%%|*} $v"
        eval timeout 200 "$BIN/mpk" bench --model "${mv%%|*}" --steps 128 --reps "${VREPS:-3}" $v | grep -E "megakernel |floor|slots"
      done
    done
  } 2>&1 | tee -a "$LOG"
fi

POLICIES=critical-path,round-robin,locality,zig-zag,wave,pool,chain-aware
if want policies; then
  {
    for ms in llama-3.2-1b:4 qwen3-8b:3; do
      step "experiment ${ms%%:*}: every policy on the GPU, ${ms##*:} steps, max_seq 128"
      rm -f "/tmp/policies-${ms%%:*}.db"
      timeout 300 "$BIN/mpk" experiment --backend gpu --model "${ms%%:*}" --policies $POLICIES \
        --steps "${ms##*:}" --max-seq 128 -o "/tmp/policies-${ms%%:*}.db" --report "$OUT/policies-${ms%%:*}"
    done
    step "traces compressed for mpk calibrate --validate on the development machine"
    (cd /tmp && tar cf - policies-*.db | xz -T0 -6 | split -b 15M - "$OUT/policies.tar.xz.")
    ls -la "$OUT"
  } 2>&1 | tee -a "$LOG"
fi

if want tinytraces; then
  {
    step "experiment tiny, tiny-qwen3: every policy on the GPU, ${TINY_STEPS:-4} steps (test data)"
    rm -f "$OUT/tiny-gpu.db"
    timeout 200 "$BIN/mpk" experiment --backend gpu --model tiny,tiny-qwen3 --policies $POLICIES --steps "${TINY_STEPS:-4}" \
      -o "$OUT/tiny-gpu.db" --report /tmp/tiny-gpu
  } 2>&1 | tee -a "$LOG"
fi

if want stress; then
  {
    step "stress: 3 processes at once (time-slicing) against one quiet run"
    stress_one() {  # batch policy
      local prompt="1,7,3;38,44,40;75,81,77;112,118,114"; [[ $1 == 1 ]] && prompt="1,7,3"
      "$BIN/mpk" run --backend gpu --model tiny-qwen2 --batch "$1" --weights-seed 11 --prompt-ids "$prompt" \
        --steps 32 --pipeline "decompose{coop=on,coop-unit=8},infer-deps,assign-sm{policy=$2}" 2>/dev/null |
        grep generated | md5sum | cut -c1-8
    }
    for batch in 4 1; do
      for policy in critical-path zig-zag round-robin pool; do
        ref=$(stress_one "$batch" "$policy") wrong=0 n=0
        for ((r = 0; r < ${STRESS_ROUNDS:-4}; ++r)); do
          for i in 1 2 3; do stress_one "$batch" "$policy" > /tmp/stress$i & done
          wait
          for i in 1 2 3; do n=$((n + 1)); [[ $(cat /tmp/stress$i) == "$ref" ]] || wrong=$((wrong + 1)); done
        done
        printf "stress: batch %-2s %-14s other tokens in %d of %d runs\n" "$batch" "$policy" "$wrong" "$n"
      done
    done
  } 2>&1 | tee -a "$LOG" | grep -E "^stress|^==="
fi

if want bitcmp; then
  {
    # .carry/bin/mpk-old: an earlier build (with its own --prompt flag), to show that a change
    # left every logit bit-identical.
    step "logits of .carry/bin/mpk-old against mpk on the GPU, 3 policies per model"
    for ms in tiny:16 tiny-qwen3:16 llama-3.2-1b:8 qwen3-8b:4; do
      for p in critical-path round-robin locality; do
        m=${ms%%:*} n=${ms##*:}
        timeout 120 "$BIN/mpk-old" run --backend gpu --model $m --policy $p --steps $n --max-seq 128 --prompt 1,2,3 \
          --dump-logits /tmp/old.f32 > /dev/null
        timeout 120 "$BIN/mpk" run --backend gpu --model $m --policy $p --steps $n --max-seq 128 --prompt-ids 1,2,3 \
          --dump-logits /tmp/new.f32 > /dev/null
        cmp -s /tmp/old.f32 /tmp/new.f32 && r=identical || r=DIFFERENT
        printf "%-13s %-14s %s (%s bytes)\n" $m $p $r "$(stat -c %s /tmp/new.f32)"
      done
    done
  } 2>&1 | tee -a "$LOG"
fi

if want prefillcmp; then
  {
    # The same for a prefilled run: the prompt in chunks, then the decode.
    step "prefilled logits of .carry/bin/mpk-old against mpk on the GPU"
    ids=$(seq -s, 1 100)
    for ms in tiny:16:8 tiny-qwen3:16:5 llama-3.2-1b:16:16; do
      IFS=: read -r m n c <<< "$ms"
      for b in mpk-old mpk; do
        timeout 200 "$BIN/$b" run --backend gpu --model $m --steps $((100 + n)) --max-seq 512 --prompt-ids "$ids" \
          --prefill-chunk $c --dump-logits /tmp/$b.f32 > /dev/null || echo "$b failed on $m"
      done
      cmp -s /tmp/mpk-old.f32 /tmp/mpk.f32 && r=identical || r=DIFFERENT
      printf "%-13s chunk %-3s %s (%s bytes)\n" $m $c $r "$(stat -c %s /tmp/mpk.f32)"
    done
  } 2>&1 | tee -a "$LOG"
fi

if want sanitize; then
  {
    step compute-sanitizer memcheck tiny
    timeout 300 compute-sanitizer --tool memcheck --error-exitcode 9 "$BIN/mpk" run --backend gpu --model tiny --steps 4 | tail -8
    echo "memcheck rc=${PIPESTATUS[0]}"
    step compute-sanitizer racecheck tiny
    timeout 300 compute-sanitizer --tool racecheck --error-exitcode 9 "$BIN/mpk" run --backend gpu --model tiny --steps 4 | tail -8
    echo "racecheck rc=${PIPESTATUS[0]}"
    step compute-sanitizer memcheck llama-3.2-1b 2 steps
    timeout 400 compute-sanitizer --tool memcheck --error-exitcode 9 "$BIN/mpk" run --backend gpu --model llama-3.2-1b --steps 2 --max-seq 128 | tail -4
    echo "memcheck llama rc=${PIPESTATUS[0]}"
  } 2>&1 | tee -a "$LOG"
fi
