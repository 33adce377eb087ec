#!/usr/bin/env bash
# proxc's linearized ADMM against ProxImaL's own fused Halide L-ADMM (its "user-problem" generator:
# isotropic TV denoising with nonneg, one iteration and its convergence metrics per call), both
# checking every iteration; ms per iteration at each size.
#
#   bash bench/proximal_halide/run.sh PROXIMAL DATA [SIZES]
#
# PROXIMAL: a checkout of github.com/comp-imaging/ProxImaL (its sources are built here, in a
# temporary folder; nothing of it enters this repository). DATA: a folder written by
# `python3 bench/accuracy.py --out DATA --write-only` (noisy.npy, noisy1024.npy, noisy2048.npy).
# SIZES: default "512 1024 2048". Needs Debian's libhalide14-0-dev (ProxImaL's generator builds
# against Halide 14 with one API rename; its meson build targets later Halides) and
# librange-v3-dev (its headers use range-v3). PROXC: the proxc binary (default the release build).
# Each ProxImaL library is built twice: with its hand schedule (scheduleForCPU) and with the
# Mullapudi2016 autoscheduler and the parameters of its meson.build (parallelism 4, cache
# 6291000, balance 40, mu = 1/9, lmb = 1, n_iter = 1). Best of 3 runs each.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
if [ "$#" -lt 2 ]; then
  sed -n '2,16p' "$0" >&2
  exit 2
fi
src="$1/proximal/halide/src"
data="$(cd "$2" && pwd)"
sizes="${3:-512 1024 2048}"
proxc="${PROXC:-$root/build/release/tools/proxc/proxc}"
for need in "$src/user-problem/linearized-admm-gen.cpp" /usr/include/halide14/Halide.h \
  /usr/src/halide14/GenGen.cpp /usr/include/range/v3/algorithm/transform.hpp "$proxc"; do
  if [ ! -e "$need" ]; then
    echo "run.sh: $need is missing (ProxImaL checkout, apt-get install libhalide14-0-dev librange-v3-dev, or scripts/build.sh release)" >&2
    exit 2
  fi
done
mullapudi=/usr/lib/x86_64-linux-gnu/halide14/libautoschedule_mullapudi2016.so
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "| size | ProxImaL hand schedule, ms/it | ProxImaL Mullapudi2016 | proxc ladmm, check every 1 | proxc ladmm, unchecked | hand ÷ proxc | Mullapudi ÷ proxc |"
echo "|---|---|---|---|---|---|---|"
for n in $sizes; do
  b="$work/$n"
  mkdir -p "$b/src"
  cp -r "$src/algorithm" "$src/core" "$src/user-problem" "$b/src/"
  # The problem's sizes are compile-time constants of ProxImaL's generator.
  sed -i -E "s/(constexpr auto (input|output)_(width|height) = )[0-9]+;/\1$n;/" "$b/src/user-problem/problem-config.h"
  sed -i 's/using_autoscheduler()/auto_schedule/' "$b/src/user-problem/linearized-admm-gen.cpp"
  g++ -std=c++20 -O1 -I/usr/include/halide14 -I"$b/src/user-problem" -I"$b/src/algorithm" -I"$b/src/core" \
    "$b/src/user-problem/linearized-admm-gen.cpp" /usr/src/halide14/GenGen.cpp -lHalide14 -lpthread -ldl -o "$b/gen"
  calls=$((200 * 512 * 512 / (n * n) + 10))
  declare -A ms=()
  for kind in hand mullapudi; do
    mkdir -p "$b/$kind"
    if [ "$kind" = hand ]; then
      "$b/gen" -o "$b/$kind" -g ladmm_iter -e static_library,h target=host n_iter=1 mu=0.11111 lmb=1.0 >/dev/null 2>&1
    else
      "$b/gen" -o "$b/$kind" -g ladmm_iter -e static_library,h target=host -p "$mullapudi" -s Mullapudi2016 \
        auto_schedule=true machine_params=4,6291000,40 n_iter=1 mu=0.11111 lmb=1.0 >/dev/null 2>&1
    fi
    g++ -std=c++17 -O2 -I/usr/include/halide14 -I"$b/$kind" "$here/driver.cpp" "$b/$kind/ladmm_iter.a" -lpthread -ldl \
      -o "$b/$kind/driver"
    ms[$kind]="$("$b/$kind/driver" "$n" "$calls" 3 2>/dev/null | awk '{print $2}')"
  done
  noisy="noisy.npy"
  [ "$n" = 512 ] || noisy="noisy$n.npy"
  ln -s "$data/$noisy" "$b/noisy.npy"
  printf 'b = load("noisy.npy")\nx = variable(shape(b))\nminimize sum_squares(x - b) + 0.1 * group_norm1(grad(x), [2]) + nonneg(x)\n' \
    >"$b/iso.prox"
  iters=$((500 * 512 * 512 / (n * n) + 20))
  for every in 1 "$iters"; do
    best=""
    for rep in 0 1 2 3; do
      s="$("$proxc" solve "$b/iso.prox" --solver ladmm --iters "$iters" --eps-abs 0 --eps-rel 0 --check-every "$every" \
        --json -o "$b/x.npy" --cache-dir "$work/cache" --allow-path "$data" | python3 -c 'import json,sys; print(json.load(sys.stdin)["seconds"]["iterate"])')"
      [ "$rep" = 0 ] && continue  # the first run compiles
      best="$(python3 -c "print(min(${best:-1e30}, $s * 1000 / $iters))")"
    done
    ms[proxc$every]="$best"
  done
  python3 -c "
h, m, c, u = ${ms[hand]}, ${ms[mullapudi]}, ${ms[proxc1]}, ${ms[proxc$iters]}
print(f'| {$n}² | {h:.3f} | {m:.3f} | {c:.3f} | {u:.3f} | {h / c:.2f} | {m / c:.2f} |')"
done
