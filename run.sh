#!/usr/bin/env bash
# Quick start, main job: installs what is missing, builds, and runs `mpk run` on the
# embedded default model (the megakernel on a GPU; the simulator without one).
set -euo pipefail
cd "$(dirname "$0")"
scripts/bootstrap.sh
exec build/tools/mpk run "$@"
