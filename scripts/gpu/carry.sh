#!/usr/bin/env bash
# Fills .carry/ (git-ignored) for a run on the lent GPU machine (scripts/gpu/device_check.sh
# reads it): bin/ the built mpk and GPU test/bench binaries, lib/ the shared libraries the
# device image lacks (protobuf, SQLite), cache.tgz the megakernel cubins compiled here
# ahead of time with `mpk bench --compile-only`, so the device spends no time in nvcc.
# Usage: [MPK_OLD=path/to/older/mpk] scripts/gpu/carry.sh ['MODEL [mpk bench options]'] ...
#   MPK_OLD: also carry an earlier build as bin/mpk-old (device_check.sh bitcmp), its cubins
#   for the same configurations compiled too (those it cannot compile are skipped)
#   default: 'llama-3.2-1b' 'qwen3-8b' 'llama-3.2-1b --steps 1024' (the bench's configurations)
set -euo pipefail
cd "$(dirname "$0")/../.."
for d in /usr/local/cuda/bin /usr/local/cuda-13.0/bin; do
  [[ -x $d/nvcc ]] && export PATH="$d:$PATH" && break
done
configs=("$@")
((${#configs[@]})) || configs=("llama-3.2-1b" "qwen3-8b" "llama-3.2-1b --steps 1024")
rm -rf .carry && mkdir -p .carry/bin .carry/lib .carry/cache
for b in tools/mpk tools/mpk-opt tests/mpk_gpu_tests tests/mpk_driver_tests tests/mpk_tools_tests tests/gpu_dispatch_bench; do
  [[ -x build/$b ]] && cp "build/$b" .carry/bin/
done
for lib in $(ldd build/tools/mpk | awk '/libprotobuf|libsqlite3|libutf8proc|libpcre2/ {print $3}'); do cp -L "$lib" .carry/lib/; done
export MPK_CACHE_DIR=$PWD/.carry/cache
for c in "${configs[@]}"; do
  read -ra a <<< "$c"
  echo "== compiling: ${a[*]}"
  build/tools/mpk bench --compile-only --model "${a[@]}"
done
if [[ -n ${MPK_OLD:-} ]]; then
  cp "$MPK_OLD" .carry/bin/mpk-old
  for c in "${configs[@]}"; do
    read -ra a <<< "$c"
    .carry/bin/mpk-old bench --compile-only --model "${a[@]}" || echo "(mpk-old cannot compile: ${a[*]})"
  done
fi
[[ -x build/tests/gpu_dispatch_bench ]] && build/tests/gpu_dispatch_bench --compile-only
tar czf .carry/cache.tgz -C .carry cache && rm -rf .carry/cache
du -sh .carry
