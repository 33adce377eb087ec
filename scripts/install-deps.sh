#!/usr/bin/env bash
# Installs every build and test dependency of proxc: Debian 12 packages, and
# from the Python package index Halide 21 and a CMake that can read its
# package (the `halide` and `cmake` wheels, in a virtual environment of
# their own: $PROXC_VENV, default /opt/proxc/venv).
# Run as root (or through sudo). Safe to run again: apt-get skips what is there.
set -euo pipefail
if [ "$(id -u)" -ne 0 ]; then
  exec sudo -E bash "$0" "$@"
fi
export DEBIAN_FRONTEND=noninteractive
packages=(
  build-essential cmake ninja-build pkg-config git
  debootstrap
  clang libclang-rt-14-dev
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
  pocl-opencl-icd ocl-icd-opencl-dev clinfo
  libclfft-dev
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

# Halide 21 (its LLVM linked in and hidden: no clash with the LLVM that
# PoCL's OpenCL compiler loads into the same process) with its autoscheduler
# plugins and CMake package; CMake 3.28 or later, which that package needs.
# cmake, ctest and cpack are linked into /usr/local/bin, ahead of Debian's.
venv="${PROXC_VENV:-/opt/proxc/venv}"
halide_spec="halide==21.0.0"
cmake_spec="cmake>=3.28,<5"
if ! "$venv/bin/python" -c 'from importlib.metadata import version; assert version("halide") == "21.0.0"' >/dev/null 2>&1 ||
   [ ! -x "$venv/bin/cmake" ]; then
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip
  "$venv/bin/python" -m pip install --quiet "$halide_spec" "$cmake_spec"
fi
for tool in cmake ctest cpack; do
  ln -sf "$venv/bin/$tool" "/usr/local/bin/$tool"
done
