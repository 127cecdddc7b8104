#!/bin/sh
# tools/check-exports.sh -- libhgx exports exactly the functions its public
# headers declare: fails listing every extra symbol (an internal name leaking
# out of the library) and every missing one (a declared call with no
# definition, or one the export list hid).
#
# usage: tools/check-exports.sh [BUILD_DIR]   (a built hgx tree, default .)
set -eu

builddir=$(cd "${1:-.}" && pwd)
lib="$builddir/.libs/libhgx.so"
[ -f "$lib" ] || {
    echo "check-exports: FAIL: $lib not found (build the tree first)" >&2
    exit 1
}
command -v nm >/dev/null 2>&1 || {
    echo "check-exports: FAIL: nm not found (apt-get install binutils)" >&2
    exit 1
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The headers' declarations, as the build tree's compiler and flags see them.
make -s -C "$builddir" hgx-export-list >"$tmp/declared"
# Defined dynamic symbols: code, data and weak ones (not undefined imports).
nm -D --defined-only "$lib" | awk '$2 ~ /^[TtDdBbRrWwVvi]$/ { print $3 }' |
    sed 's/@.*//' | sort -u >"$tmp/exported"

extra=$(comm -13 "$tmp/declared" "$tmp/exported")
missing=$(comm -23 "$tmp/declared" "$tmp/exported")
n_decl=$(wc -l <"$tmp/declared")
n_exp=$(wc -l <"$tmp/exported")
if [ -n "$extra" ] || [ -n "$missing" ]; then
    [ -z "$extra" ] || printf 'check-exports: exported but not in a public header:\n%s\n' "$extra"
    [ -z "$missing" ] || printf 'check-exports: declared in a public header but not exported:\n%s\n' "$missing"
    echo "check-exports: FAIL ($n_exp exported, $n_decl declared)"
    exit 1
fi
echo "check-exports: PASS ($n_exp symbols, all declared in include/*.h)"
