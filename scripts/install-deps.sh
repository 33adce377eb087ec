#!/usr/bin/env bash
# Installs every build and test dependency of proxc from Debian 12 packages.
# Run as root (or through sudo). Safe to run again: apt-get skips what is there.
set -euo pipefail
if [ "$(id -u)" -ne 0 ]; then
  exec sudo -E bash "$0" "$@"
fi
export DEBIAN_FRONTEND=noninteractive
packages=(
  build-essential cmake ninja-build pkg-config git
  clang libclang-rt-14-dev
  libhalide14-0-dev
  libfftw3-dev
  nlohmann-json3-dev
  libcli11-dev
  libpng-dev libtiff-dev
  libhdf5-dev libzip-dev
  zlib1g-dev libxxhash-dev
  libgtest-dev libgmock-dev googletest
  libbenchmark-dev
  graphviz
  libopencv-photo-dev
  chromium
  openmpi-bin libopenmpi-dev
)
if ! dpkg -s "${packages[@]%%#*}" >/dev/null 2>&1; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${packages[@]}"
fi
# The Python package (pip install .) needs venv and the interpreter's headers;
# a Python of its own (pyenv, a virtual environment) has both already.
if ! python3 -c 'import venv, sysconfig, os; assert os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h"))' >/dev/null 2>&1; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends python3-venv python3-dev python3-pip
fi
