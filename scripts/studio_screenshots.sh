#!/usr/bin/env bash
# Renders docs/studio.md's screenshots of a trace.db: every view of run RUN (default: the
# last), compared with run COMPARE (default: the one before it), under Xvfb.
#   scripts/studio_screenshots.sh TRACE.db OUTDIR [RUN [COMPARE]]
# The docs' images come from a simulated GPU-shaped trace:
#   build/tests/studio_frame_bench --make t.db llama-3.2-1b 8 0 round-robin
#   build/tests/studio_frame_bench --make t.db llama-3.2-1b 8 0 critical-path
#   scripts/studio_screenshots.sh t.db docs/img
# and the same command takes a real one (mpk run --backend gpu --trace t.db).
set -euo pipefail
cd "$(dirname "$0")/.."
trace=${1:?usage: scripts/studio_screenshots.sh TRACE.db OUTDIR [RUN [COMPARE]]}
out=${2:?usage: scripts/studio_screenshots.sh TRACE.db OUTDIR [RUN [COMPARE]]}
studio=build/studio/mpk-studio
[[ -x $studio ]] || { echo "error: $studio is not built (ninja -C build mpk-studio)" >&2; exit 1; }
command -v sqlite3 >/dev/null || { echo "error: needs sqlite3 (apt-get install sqlite3)" >&2; exit 1; }
command -v xvfb-run >/dev/null || { echo "error: needs xvfb-run (apt-get install xvfb xauth)" >&2; exit 1; }
[[ -f $trace ]] || { echo "error: $trace: no such file" >&2; exit 1; }
q() { sqlite3 -batch -noheader "$trace" "$1"; }
run=${3:-$(q "SELECT max(id) FROM run")}
compare=${4:-$(q "SELECT max(id) FROM run WHERE id < $run")}
[[ -n $run ]] || { echo "error: $trace has no runs" >&2; exit 1; }
# Step 1 (or 0) of the run: a window on it, and its last task for the why-idle walk.
step=$(q "SELECT CASE WHEN max(step) >= 1 THEN 1 ELSE 0 END FROM step WHERE run = $run")
read -r s0 s1 < <(q "SELECT start_ns, end_ns FROM step WHERE run = $run AND step = $step" | tr '|' ' ')
last=$(q "SELECT task FROM execution WHERE run = $run AND step = $step ORDER BY end_ns DESC LIMIT 1")
# The step's last fifth: the tail of the step, where the critical path ends.
w0=$(( s1 - (s1 - s0) / 5 ))
mkdir -p "$out"
shot() {
  local name=$1; shift
  xvfb-run -a -s "-screen 0 1600x1000x24" "$studio" --screenshot "$out/$name.png" --size 1600x900 \
    --run "$run" "$@" "$trace"
}
shot studio_timeline_fit
shot studio_timeline --window "${w0}ns:${s1}ns" --select "$last:$step" --why-idle
shot studio_stats --view stats
shot studio_workers --view workers
if [[ -n $compare ]]; then shot studio_compare --view compare --compare-run "$compare"; fi
shot studio_graph --view graph
shot studio_pipeline --view pipeline
echo "screenshots of run $run${compare:+ (compared with run $compare)} of $trace in $out"
