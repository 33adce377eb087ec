#!/usr/bin/env bash
# Installs proxc's wheel where nothing was installed, and checks it there.
#
#   bash scripts/test-wheel.sh [WHEEL]    (as root; default: build/wheelhouse/proxc-*.whl, from scripts/wheel.sh)
#
# 1. A bare Debian 12 root (debootstrap --variant=minbase, plus python3 and
#    python3-venv and nothing else) in build/bare-root/base, made once; each
#    run works in a fresh copy of it (build/bare-root/run).
# 2. There, in a fresh virtual environment: pip install of the wheel, with its
#    dependencies (NumPy, the `halide` wheel) from the package index; the
#    wheel's size and the install's time are printed.
# 3. tests/wheel/check_installed.py there: no compiler and no -dev package;
#    ldd of every shared object and program of the package; a ProxImaL
#    script (examples/python/deconv_tv.py) on the compiled backend; `proxc
#    solve examples/deconv_tv.prox --report`; HDF5 and TIFF z-stacks written
#    by h5py and tifffile; a prox function written in Python; ProxImaL's
#    conformance cases (tests/python/test_conformance.py, with pytest); and
#    the wheel's results against the source build's (tests/wheel/
#    compare_runs.py: the source build's proxc, $PROXC_SOURCE_CLI, default
#    build/dev/tools/proxc/proxc, runs the same solves here first).
# The package index is reached as this machine reaches it: pip's settings
# ($PIP_* and /etc/pip.conf, and the certificates they name) go into the root.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then
  echo "scripts/test-wheel.sh: run as root (debootstrap and chroot)" >&2
  exit 2
fi
wheel="${1:-}"
if [ -z "$wheel" ]; then
  wheels=(build/wheelhouse/proxc-*.whl)
  wheel="${wheels[0]}"
fi
[ -f "$wheel" ] || { echo "scripts/test-wheel.sh: no wheel at $wheel (bash scripts/wheel.sh makes it)" >&2; exit 2; }
source_cli="${PROXC_SOURCE_CLI:-build/dev/tools/proxc/proxc}"
[ -x "$source_cli" ] || { echo "scripts/test-wheel.sh: no source build's proxc at $source_cli (bash scripts/build.sh dev)" >&2; exit 2; }
conformance="${PROXC_CONFORMANCE:-../shared/conformance}"
[ -f "$conformance/cases.json" ] || { echo "scripts/test-wheel.sh: no conformance cases at $conformance" >&2; exit 2; }

top=build/bare-root
base="$top/base"
if [ ! -f "$base/.complete" ]; then
  rm -rf "$base"
  mkdir -p "$top"
  # The machine's own Debian mirror, as apt is set up here (debootstrap's default otherwise).
  mirror="$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v security | head -n1 || true)"
  [ -n "$mirror" ] || mirror="$(sed -n 's/^deb \(\[[^]]*\] \)\?\([^ ]*\) .*/\2/p' /etc/apt/sources.list 2>/dev/null | grep -v security | head -n1 || true)"
  echo "making a bare Debian 12 root (debootstrap --variant=minbase, python3, python3-venv)"
  start=$(date +%s)
  debootstrap --variant=minbase --include=python3,python3-venv bookworm "$base" ${mirror:+"$mirror"} \
    >"$top/debootstrap.log" 2>&1 || { tail -n 20 "$top/debootstrap.log"; exit 1; }
  touch "$base/.complete"
  echo "  made in $(( $(date +%s) - start )) s"
fi

run="$top/run"
# (The root's /proc and /dev are mounted in a mount namespace of the run's
# own, gone with it; never remove a copy that still has one.)
if grep -q " $PWD/$run/" /proc/mounts; then
  echo "scripts/test-wheel.sh: $run still has file systems mounted in it" >&2
  exit 1
fi
rm -rf "$run"
cp -a "$base" "$run"
work="$run/work"
mkdir -p "$work/conformance" "$work/tests"
cp "$wheel" "$work/"
cp -r examples "$work/examples"
cp -r tests/wheel tests/python "$work/tests/"
cp -r "$conformance/cases.json" "$conformance/data" "$work/conformance/"
# The photographs' degraded inputs (examples/photos, examples/volume), as the
# demo makes them, where the source build has the program.
maker="$(dirname "$source_cli")/../../examples/proxc_make_example_data"
if [ -x "$maker" ]; then
  "$maker" "$work/examples" --photos >/dev/null
fi
# The examples' C++ operator (a plugin: libstdc++ and libc alone), for the lens example.
mkdir -p "$work/plugins"
cp "$(dirname "$maker")"/libproxc_lens_blur.so "$work/plugins/" 2>/dev/null || true

# The source build's results of the solves the wheel's must equal. Written
# with the root's paths (the same text on both sides): solved from $run/work,
# whose files are the root's /work.
echo "solving the comparison cases with the source build ($source_cli)"
python3 tests/wheel/compare_runs.py run "$PWD/$source_cli" "$PWD/$work" "$PWD/$run/source-out"

# The machine's resolver and pip's settings, so that pip reaches the index as here.
cp /etc/resolv.conf "$run/etc/resolv.conf"
pip_env=()
while IFS='=' read -r name value; do
  case "$name" in
    PIP_FIND_LINKS) ;;  # a folder of this machine's
    PIP_*|http_proxy|https_proxy|HTTP_PROXY|HTTPS_PROXY|no_proxy|NO_PROXY) pip_env+=("$name=$value") ;;
  esac
done < <(env)
for f in /etc/pip.conf "${PIP_CERT:-}" "${SSL_CERT_FILE:-}"; do
  if [ -n "$f" ] && [ -f "$f" ]; then
    mkdir -p "$run$(dirname "$f")"
    cp "$f" "$run$f"
  fi
done

cat >"$run/work/in_root.sh" <<'EOF'
set -eu
cd /work
wheel="$(ls /work/proxc-*.whl)"
echo "wheel: $(basename "$wheel"), $(du -k "$wheel" | cut -f1) KiB"
start=$(date +%s.%N)
python3 -m venv /opt/venv
/opt/venv/bin/python -m pip install --quiet "$wheel"
echo "installed (with NumPy and halide from the package index) in $(python3 -c "import time; print(f'{time.time() - $start:.1f}')") s"
# Test tools only, after the install: pytest (the conformance cases), h5py and tifffile (files to read).
/opt/venv/bin/python -m pip install --quiet pytest h5py tifffile
export PATH="/opt/venv/bin:$PATH" HOME=/root
exec python /work/tests/wheel/check_installed.py /work /work/out
EOF
# The source build's results, with their case files, where the checks read them.
mv "$run/source-out" "$work/source"
echo "installing $(basename "$wheel") into the bare root and checking it"
unshare --mount --fork /bin/sh -c '
  mount -t proc proc "$1/proc" && mount --rbind /dev "$1/dev" && shift &&
  exec chroot "$@"' sh "$run" "$run" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/root LANG=C.UTF-8 "${pip_env[@]}" \
  /bin/sh /work/in_root.sh
