#!/usr/bin/env bash
# Quick start, tests: installs what is missing, builds, and runs every test with ctest.
# GPU tests (label gpu) skip, saying so, where no GPU is present. Then the sanitizer build
# (scripts/sanitize.sh) runs the hostile-input tests and each fuzz target for 10 seconds.
set -euo pipefail
cd "$(dirname "$0")"
scripts/bootstrap.sh
(cd build && ctest --output-on-failure -j"$(nproc)" "$@")
scripts/sanitize.sh
