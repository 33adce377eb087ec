#!/usr/bin/env bash
# The public API's boundary: every header in include/proxc compiles alone
# with only include/ on the include path (no header of src/, no Halide.h),
# and the proxc command includes nothing but public headers, its own and CLI11.
#
#   public_headers_test.sh SOURCE_DIR CXX
set -euo pipefail
src="$1"
cxx="$2"
status=0
err="$(mktemp)"
trap 'rm -f "$err"' EXIT
for h in "$src"/include/proxc/*.h; do
  if ! echo "#include <proxc/$(basename "$h")>" |
      "$cxx" -std=c++17 -fsyntax-only -Wall -Wextra -Wpedantic -Werror -I "$src/include" -x c++ - 2>"$err"; then
    echo "does not compile alone: ${h#$src/}"; cat "$err"; status=1
  fi
  if grep -n -E '#include [<"](Halide|halide|ir/|support/|step/|solvers/|passes/|frontend/|emulate/|check/|io/|module/)' "$h"; then
    echo "includes an internal header: ${h#$src/}"; status=1
  fi
done
# The command's own headers (tools/proxc/*.h) are its files; they too include
# nothing but public headers.
own="$(cd "$src/tools/proxc" && ls *.h 2>/dev/null | sed 's/[.]/[.]/g' | paste -sd'|' -)"
bad="$(grep -n -E '^#include "' "$src"/tools/proxc/*.cpp "$src"/tools/proxc/*.h | grep -v '"proxc/' |
  grep -v -E "\"(${own:-none})\"" || true)"
if [ -n "$bad" ]; then
  echo "tools/ includes internal headers:"; echo "$bad"; status=1
fi
[ "$status" = 0 ] && echo "public headers: ok"
exit "$status"
