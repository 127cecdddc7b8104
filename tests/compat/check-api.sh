#!/bin/sh
# check-api.sh: every function of Mercury 2.4.1's public headers
# (mercury-2.4.1-api.txt beside this script) must be declared by hgx's
# include/ headers and, run from a build tree, defined in its libhgx.
#
#   tests/compat/check-api.sh            (from make check, in the build tree)
#
# One C file takes the address of every listed function (and one more per
# header, including that header alone, for the functions listed under it); the compiler's
# "undeclared" errors name the missing declarations, the linker's "undefined
# reference" errors the missing definitions. The na_mpi.h names are checked
# only when libhgx was built with its MPI plugin (NA_HAS_MPI in the generated
# na_config.h), as only then does hgx install na_mpi.h.
# Exits 0 when nothing is missing, 1 otherwise.
set -u

here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=${top_srcdir:-$here/../..}
inc=$(cd "$top_srcdir/include" && pwd)
# Where configure wrote the generated headers (na_config.h, mercury_config.h).
gen_inc=${top_builddir:-.}/include
list=$here/mercury-2.4.1-api.txt
# Compiler and MPI flags as configure found them (from the build tree's Makefile).
mkvar() { [ -f Makefile ] && sed -n "s/^$1 = //p" Makefile | head -n 1; }
cc=${CC:-$(mkvar CC)}
cc=${cc:-cc}
mpi_cflags=${MPI_CFLAGS-$(mkvar MPI_CFLAGS)}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/hgx-api.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

say() { printf 'check-api: %s\n' "$*"; }

have_mpi=0
grep -q '^#define NA_HAS_MPI' "$gen_inc/na_config.h" 2>/dev/null && have_mpi=1

# name header, for the headers whose names are checked here
awk -v have_mpi="$have_mpi" '
    /^# header: / { hdr = $3; next }
    /^#/ || NF == 0 { next }
    hdr == "na_mpi.h" && have_mpi != 1 { skipped++; next }
    { print $1, hdr }
    END { if (skipped) printf "%d na_mpi.h names skipped: built without MPI\n", skipped > "/dev/stderr" }
' "$list" >"$tmp/names" 2>"$tmp/skipped" || exit 1
[ -s "$tmp/skipped" ] && say "$(cat "$tmp/skipped")"
total=$(wc -l <"$tmp/names")

{
    for h in "$inc"/mercury*.h "$inc"/na*.h; do
        [ "$have_mpi" = 0 ] && [ "$(basename "$h")" = na_mpi.h ] && continue
        printf '#include "%s"\n' "$(basename "$h")"
    done
    # One function per name so that each missing one is reported.
    awk '{ printf "void *ref_%d(void) { return (void *) &%s; }\n", NR, $1 }' "$tmp/names"
    printf 'int main(void) { return 0; }\n'
} >"$tmp/api.c"

# shellcheck disable=SC2086
$cc -std=c11 -c -I"$gen_inc" -I"$gen_inc/util" -I"$inc" -I"$inc/util" $mpi_cflags -o "$tmp/api.o" "$tmp/api.c" >"$tmp/cc.log" 2>&1
sed -n "s/.*error: .\([A-Za-z_0-9]*\). undeclared.*/\1/p" "$tmp/cc.log" | sort -u >"$tmp/undeclared"
if [ ! -f "$tmp/api.o" ] && [ ! -s "$tmp/undeclared" ]; then
    cat "$tmp/cc.log"; say "FAIL: the headers do not compile"; exit 1
fi
fail=0
while read -r name; do
    say "NOT DECLARED: $name ($(awk -v n="$name" '$1 == n { print $2 }' "$tmp/names"))"
    fail=1
done <"$tmp/undeclared"

# A program that includes one header alone gets its functions, as with Mercury.
for hdr in $(awk '{ print $2 }' "$tmp/names" | sort -u); do
    {
        printf '#include "%s"\n' "$hdr"
        awk -v h="$hdr" '$2 == h { printf "void *ref_%d(void) { return (void *) &%s; }\n", NR, $1 }' \
            "$tmp/names"
    } >"$tmp/one.c"
    # shellcheck disable=SC2086
    $cc -std=c11 -c -I"$gen_inc" -I"$gen_inc/util" -I"$inc" -I"$inc/util" $mpi_cflags \
        -o "$tmp/one.o" "$tmp/one.c" >"$tmp/one.log" 2>&1
    for name in $(sed -n "s/.*error: .\([A-Za-z_0-9]*\). undeclared.*/\1/p" "$tmp/one.log" |
        sort -u); do
        grep -qx "$name" "$tmp/undeclared" && continue
        say "NOT DECLARED by $hdr alone: $name"
        echo "$name" >>"$tmp/undeclared"
        fail=1
    done
    if [ ! -f "$tmp/one.o" ] && [ "$fail" = 0 ]; then
        cat "$tmp/one.log"; say "FAIL: $hdr does not compile alone"; fail=1
    fi
    rm -f "$tmp/one.o"
done

# Declared names must link too (from a build tree holding libhgx).
lib=""
for d in .libs ../.libs; do
    [ -f "$d/libhgx.so" ] && { lib=$(cd "$d" && pwd); break; }
done
if [ "$fail" = 0 ] && [ -n "$lib" ]; then
    # shellcheck disable=SC2086
    $cc -o "$tmp/api" "$tmp/api.o" -L"$lib" -Wl,-rpath,"$lib" -lhgx $(mkvar MPI_LIBS) \
        >"$tmp/ld.log" 2>&1
    sed -n "s/.*undefined reference to .\([A-Za-z_0-9]*\)'.*/\1/p" "$tmp/ld.log" |
        sort -u >"$tmp/undefined"
    while read -r name; do
        say "NOT DEFINED in libhgx: $name"
        fail=1
    done <"$tmp/undefined"
    if [ "$fail" = 0 ] && [ ! -x "$tmp/api" ]; then
        cat "$tmp/ld.log"; say "FAIL: link"; exit 1
    fi
elif [ -z "$lib" ]; then
    say "no libhgx.so here (not in a build tree): declarations checked only"
fi

missing=$(cat "$tmp/undeclared" "$tmp/undefined" 2>/dev/null | wc -l)
say "$total Mercury 2.4.1 functions checked, $missing missing"
[ "$fail" = 0 ] && say "PASS" || say "FAIL"
exit "$fail"
