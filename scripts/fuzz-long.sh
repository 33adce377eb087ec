#!/usr/bin/env bash
# Long fuzz runs of every target: scripts/fuzz-long.sh [SECONDS] [TARGET...]
#
# The suite's smoke runs mutate for 8 s each; this runs each target for
# SECONDS (default 600) from its seed corpus, as many at once as there are
# cores, with libFuzzer's malloc limit at the 64 MiB memory budget the
# targets set (fuzz/fuzz_targets.cpp): an allocation larger than the budget
# is a finding, as a crash, a sanitizer report, a leak or a hang (-timeout)
# are. fuzz_hdf5 runs without the malloc limit: libhdf5 1.10 itself asks
# malloc for absurd sizes on some corrupt files and handles the null answer
# (fuzz/CMakeLists.txt). New inputs and findings go to build/fuzz-long/, never
# into the checkout; the summary lists each target's runs, coverage and
# findings, and the exit code is 1 when any target found something.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-600}"
shift || true
targets=("$@")
[ "${#targets[@]}" -gt 0 ] || targets=(prox json npy png tiff npz hdf5)
jobs="$(nproc 2>/dev/null || echo 2)"
budget_mb=64
for t in "${targets[@]}"; do
  [ -x "build/fuzz/fuzz/fuzz_$t" ] || {
    echo "build/fuzz/fuzz/fuzz_$t is not built: bash scripts/build.sh fuzz fuzz_$t" >&2
    exit 2
  }
done
out=build/fuzz-long
mkdir -p "$out"
export LSAN_OPTIONS="suppressions=$PWD/fuzz/lsan-suppressions.txt"
run_one() {
  local t="$1" limit="$budget_mb"
  local dir="$out/$t"
  rm -rf "$dir" && mkdir -p "$dir/corpus" "$dir/findings"
  if [ "$t" = hdf5 ]; then
    limit=0
    export ASAN_OPTIONS=allocator_may_return_null=1
  fi
  "build/fuzz/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb="$limit" \
    -print_final_stats=1 -artifact_prefix="$dir/findings/" "$dir/corpus" "fuzz/corpus/$t" >"$dir/log.txt" 2>&1
}
pids=()
names=()
status=0
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do sleep 5; done
  run_one "$t" &
  pids+=("$!")
  names+=("$t")
done
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || true
done
for t in "${targets[@]}"; do
  dir="$out/$t"
  runs="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$dir/log.txt" | grep -o '[0-9]*$' || echo '?')"
  cov="$(grep -o 'cov: [0-9]*' "$dir/log.txt" | tail -1 | grep -o '[0-9]*' || echo '?')"
  found="$(find "$dir/findings" -type f | wc -l)"
  echo "fuzz_$t: ${seconds} s, $runs runs, coverage $cov, findings $found"
  if [ "$found" -gt 0 ]; then
    status=1
    find "$dir/findings" -type f | sed 's/^/  /'
    grep -m3 -E 'ERROR|SUMMARY|malloc\(' "$dir/log.txt" | sed 's/^/  /' || true
  fi
done
exit "$status"
