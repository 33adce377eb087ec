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
#    compare_runs.py: every example and conformance solve, which the source
#    build's proxc, $PROXC_SOURCE_CLI, default build/dev/tools/proxc/proxc,
#    solves here first; its build folder also gives the examples' data maker
#    and C++ plugin).
# The package index is reached as this machine reaches it: pip's settings
# that say where and how (index URLs, trusted hosts, certificates, proxies,
# timeouts; $PIP_* and pip's configuration files, and the files they name)
# go into the root, in a file only root reads.
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
source_cli="$(realpath "$source_cli")"
source_build="$(dirname "$(dirname "$(dirname "$source_cli")")")"
maker="$source_build/examples/proxc_make_example_data"
plugin="$source_build/examples/libproxc_lens_blur.so"
for f in "$maker" "$plugin"; do
  [ -e "$f" ] || { echo "scripts/test-wheel.sh: the source build has no $f (bash scripts/build.sh dev)" >&2; exit 2; }
done
conformance="${PROXC_CONFORMANCE:-../shared/conformance}"
[ -f "$conformance/cases.json" ] || { echo "scripts/test-wheel.sh: no conformance cases at $conformance" >&2; exit 2; }

top="$(realpath -m build/bare-root)"
# Never remove a tree with a file system mounted in it (debootstrap mounts
# /proc and /sys in its target and unmounts them, unless it was killed).
refuse_mounted() {
  if findmnt -rn -o TARGET | grep -q "^$1\(/\|$\)"; then
    echo "scripts/test-wheel.sh: $1 has file systems mounted in it; unmount them first" >&2
    exit 1
  fi
}
base="$top/base"
if [ ! -f "$base/.complete" ]; then
  refuse_mounted "$base"
  rm -rf --one-file-system "$base"
  mkdir -p "$top"
  # The machine's own Debian mirror, as apt is set up here: a stanza of
  # bookworm's main over http(s); debootstrap's default otherwise.
  mirror="$(python3 - <<'EOF'
import glob, re
stanzas = []
for f in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
    stanzas += [dict(re.findall(r"^(\w[\w-]*):\s*(.*)$", s, re.M)) for s in open(f).read().split("\n\n")]
for line in open("/etc/apt/sources.list").read().splitlines() if glob.glob("/etc/apt/sources.list") else []:
    m = re.match(r"deb\s+(?:\[[^]]*\]\s+)?(\S+)\s+(\S+)\s+(.*)", line)
    if m:
        stanzas.append({"URIs": m[1], "Suites": m[2], "Components": m[3]})
for s in stanzas:
    uri = s.get("URIs", "").split()[0] if s.get("URIs") else ""
    if ("bookworm" in s.get("Suites", "").split() and "main" in s.get("Components", "").split()
            and re.match(r"https?://", uri)):
        print(uri)
        break
EOF
)"
  echo "making a bare Debian 12 root (debootstrap --variant=minbase, python3, python3-venv)"
  start=$(date +%s)
  debootstrap --variant=minbase --include=python3,python3-venv bookworm "$base" ${mirror:+"$mirror"} \
    >"$top/debootstrap.log" 2>&1 || { tail -n 20 "$top/debootstrap.log"; exit 1; }
  touch "$base/.complete"
  echo "  made in $(( $(date +%s) - start )) s"
fi

run="$top/run"
refuse_mounted "$run"
rm -rf --one-file-system "$run"
cp -a "$base" "$run"
work="$run/work"
mkdir -p "$work/conformance" "$work/tests" "$work/plugins"
cp "$wheel" "$work/"
cp -r examples "$work/examples"
cp -r tests/wheel tests/python "$work/tests/"
cp -r "$conformance/cases.json" "$conformance/data" "$work/conformance/"
# The photographs' degraded inputs (examples/photos, examples/volume), as the
# demo makes them, and the examples' C++ operator (a plugin: libstdc++ and
# libc alone), for the lens example: every example is solved.
"$maker" "$work/examples" --photos >/dev/null
cp "$plugin" "$work/plugins/"

# The source build's results of the solves the wheel's must equal (only the
# results are compared: the case files name each side's own paths).
echo "solving the comparison cases with the source build ($source_cli)"
python3 tests/wheel/compare_runs.py run "$source_cli" "$work" "$work/source"

# The machine's resolver and hosts, and pip's settings, so that pip reaches the index as here.
cp /etc/resolv.conf "$run/etc/resolv.conf"
cp /etc/hosts "$run/etc/hosts"
env_file="$work/pip.env"
install -m 600 /dev/null "$env_file"
carry() {  # copies a file the settings name into the root, at the same path
  local f
  f="$(realpath -m "$1")"
  if [ -f "$f" ]; then
    mkdir -p "$run$(dirname "$f")"
    cp "$f" "$run$f"
  fi
  printf '%s' "$f"
}
for name in PIP_INDEX_URL PIP_EXTRA_INDEX_URL PIP_TRUSTED_HOST PIP_DEFAULT_TIMEOUT PIP_RETRIES PIP_TIMEOUT \
            PIP_PROXY PIP_DISABLE_PIP_VERSION_CHECK http_proxy https_proxy HTTP_PROXY HTTPS_PROXY no_proxy NO_PROXY; do
  [ -n "${!name:-}" ] && printf 'export %s=%q\n' "$name" "${!name}" >>"$env_file"
done
for name in PIP_CERT PIP_CLIENT_CERT SSL_CERT_FILE REQUESTS_CA_BUNDLE PIP_CONFIG_FILE; do
  [ -n "${!name:-}" ] && printf 'export %s=%q\n' "$name" "$(carry "${!name}")" >>"$env_file"
done
for conf in /etc/pip.conf /etc/xdg/pip/pip.conf "$HOME/.config/pip/pip.conf" "$HOME/.pip/pip.conf"; do
  [ -f "$conf" ] || continue
  mkdir -p "$run/etc"
  # Into the root's site-wide file; the certificates it names go in too.
  cat "$conf" >>"$run/etc/pip.conf"
  sed -n 's/^\s*\(cert\|client-cert\)\s*=\s*\(.*\)$/\2/p' "$conf" | while read -r f; do carry "$f" >/dev/null; done
done

cat >"$work/in_root.sh" <<'EOF'
set -eu
cd /work
. /work/pip.env
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
echo "installing $(basename "$wheel") into the bare root and checking it"
# /proc and /dev for the root, mounted in a mount namespace of the run's own
# (private: gone with it, never seen outside), whose processes end with it.
unshare --mount --propagation private --fork --kill-child /bin/sh -c '
  mount -t proc proc "$1/proc" && mount --rbind /dev "$1/dev" && shift &&
  exec chroot "$@"' sh "$run" "$run" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/root LANG=C.UTF-8 \
  /bin/sh /work/in_root.sh
