#!/bin/sh
# tools/check-format.sh -- every C file of the tree is formatted as .clang-format
# says: lists each file clang-format would change and fails if there is one.
#
# usage: tools/check-format.sh [FILE...]
#   With no FILE, checks the C sources and headers under src/, include/,
#   tests/, perf/, tools/, fuzz/ and examples/. CLANG_FORMAT names the binary
#   (default clang-format).
set -eu

srcdir=$(cd "$(dirname "$0")/.." && pwd)
cf=${CLANG_FORMAT:-clang-format}
command -v "$cf" >/dev/null 2>&1 || {
    echo "check-format: FAIL: $cf not found (apt-get install clang-format, or set CLANG_FORMAT)" >&2
    exit 1
}
cd "$srcdir"
if [ $# -eq 0 ]; then
    set -- $(find src include tests perf tools fuzz examples -type f \( -name '*.c' -o -name '*.h' -o -name '*.cc' \) | sort)
fi

bad=0
for f in "$@"; do
    if ! "$cf" --style=file "$f" | cmp -s - "$f"; then
        echo "check-format: not formatted: $f (run: $cf -i $f)"
        bad=$((bad + 1))
    fi
done
if [ "$bad" -gt 0 ]; then
    echo "check-format: FAIL ($bad of $# files)"
    exit 1
fi
echo "check-format: PASS ($# files)"
