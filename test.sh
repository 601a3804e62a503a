#!/usr/bin/env bash
# Quick start, tests: installs what is missing, builds, and runs every test with ctest.
# GPU tests (label gpu) skip, saying so, where no GPU is present.
set -euo pipefail
cd "$(dirname "$0")"
scripts/bootstrap.sh
cd build
exec ctest --output-on-failure -j"$(nproc)" "$@"
