#!/usr/bin/env bash
# The main job: installs the dependencies, builds proxc (release) and runs it on
# a bundled example. Run from anywhere as root on Debian 12.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh release proxc
mkdir -p out
example=examples/deconv_tv.prox
echo "== proxc parse $example --verify-roundtrip"
build/release/tools/proxc/proxc parse "$example" --verify-roundtrip
build/release/tools/proxc/proxc parse "$example" --emit json -o out/deconv_tv.json
build/release/tools/proxc/proxc parse "$example" --emit dot -o out/deconv_tv.dot
build/release/tools/proxc/proxc parse "$example" --emit latex -o out/deconv_tv.tex
echo "== wrote out/deconv_tv.json, out/deconv_tv.dot, out/deconv_tv.tex"
