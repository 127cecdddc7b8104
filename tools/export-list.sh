#!/bin/sh
# tools/export-list.sh -- the functions hgx's public headers declare, one name a
# line, sorted: the symbols libhgx exports (libhgx.sym) and nothing else.
#
# usage: tools/export-list.sh CC "CPPFLAGS" HEADER...
#   CC        a GCC driver (its -aux-info lists every declaration with its file)
#   CPPFLAGS  what the headers need to compile (config.h, include/, MPI's flags)
#   HEADER    the public headers to read
# The compiler parses the headers, so macros, #if blocks and multi-line
# declarations count exactly as a program including them sees them.
set -eu

[ $# -ge 3 ] || {
    echo "usage: $0 CC \"CPPFLAGS\" HEADER..." >&2
    exit 2
}
cc=$1
cppflags=$2
shift 2

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for h in "$@"; do
    printf '#include "%s"\n' "$h"
done >"$tmp/all.c"
# shellcheck disable=SC2086
$cc $cppflags -fsyntax-only -aux-info "$tmp/aux.txt" "$tmp/all.c" || {
    echo "$0: $cc could not parse the public headers" >&2
    exit 1
}
# A line per declaration: "/* FILE:LINE:NC */ extern TYPE NAME (ARGS);". Keep
# those from the given headers, and the last word before the argument list.
dirs=$(for h in "$@"; do dirname "$h"; done | sort -u)
for d in $dirs; do
    grep -F "/* $d/" "$tmp/aux.txt" || true
done | grep ' \*/ extern ' |
    sed 's|^/\* [^*]* \*/ extern \([^(]*\) (.*|\1|; s|.*[ *]||' | sort -u
