#!/usr/bin/env bash
# The layers: each internal library sees only its own include root and those
# of the libraries it links (docs/architecture.md). With the include flags of
# a low layer, its own headers compile and a higher layer's do not.
#
#   layers_test.sh BUILD_DIR SOURCE_DIR CXX
set -euo pipefail
roots="$1/include_roots"
src="$2"
cxx="$3"
status=0
# compiles LIBS... -- HEADER: whether HEADER compiles with the roots of LIBS.
compiles() {
  local flags=(-I "$src/include")
  while [ "$1" != "--" ]; do flags+=(-I "$roots/$1"); shift; done
  shift
  echo "#include \"$1\"" | "$cxx" -std=c++17 -fsyntax-only "${flags[@]}" -x c++ - 2>/dev/null
}
expect() {  # expect yes|no LIBS... -- HEADER
  local want="$1"; shift
  local got=no
  if compiles "$@"; then got=yes; fi
  if [ "$got" != "$want" ]; then echo "expected '${*: -1}' to compile: $want, got $got (roots: ${*%% --*})"; status=1; fi
}
# ir: support and blackbox below it; it reads no file (JSON and data files are the frontend's).
expect yes ir support blackbox -- ir/problem.h
expect no ir support blackbox -- passes/pass.h
expect no ir support blackbox -- frontend/parser.h
expect no ir support blackbox -- frontend/json.h
expect no ir support blackbox -- io/array_io.h
expect no ir support blackbox -- solvers/solver.h
# passes: the IR alone (the norm oracle and the instrumentation come from src/pipeline).
expect yes passes ir support blackbox -- passes/pass_manager.h
expect no passes ir support blackbox -- check/check.h
expect no passes ir support blackbox -- emulate/emulate_backend.h
expect no passes ir support blackbox -- pipeline/pipeline.h
# support is the bottom: nothing above it.
expect yes support -- support/array.h
expect no support -- ir/expr.h
expect no support -- io/npy.h
# solvers: step programs and the Backend interface (the passes and the objective are pipeline's).
expect yes solvers step ir support blackbox -- solvers/algorithm.h
expect no solvers step ir support blackbox -- pipeline/pipeline.h
expect no solvers step ir support blackbox -- passes/pass.h
expect no solvers step ir support blackbox -- check/check.h
expect no solvers step ir support blackbox -- emulate/emulate_backend.h
# step sees ir, not the solvers or the Halide backend.
expect yes step ir support blackbox -- step/step.h
expect no step ir support blackbox -- halide/halide_backend.h
[ "$status" = 0 ] && echo "layers: ok"
exit "$status"
