#!/bin/sh
# check-installed.sh: check that an installed hgx serves Mercury programs.
#
#   tests/compat/check-installed.sh [PREFIX]
#
# Without PREFIX (e.g. from `make check`, run in the build tree): stages
# `make install DESTDIR=$tmp` from the current build tree. With PREFIX: uses
# an hgx already installed there.
# Then builds tests/compat/mercury_prog.c twice against that install --
#   1. cc $(pkg-config --cflags --libs mercury)
#   2. cmake with find_package(mercury REQUIRED) + target_link_libraries(prog mercury)
# -- and runs each over ofi+tcp. Exits 0 only if both builds and both runs pass.
#
# A DESTDIR staging keeps the configured prefix inside the .pc files, so the
# pkg-config step uses --define-prefix (prefix recomputed from the .pc file's
# own location); the CMake package finds its staging root the same way.
set -u

srcdir=$(cd "$(dirname "$0")" && pwd)
info=${HGX_COMPAT_INFO:-ofi+tcp://127.0.0.1}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/hgx-compat.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
fail=0

say() { printf 'check-installed: %s\n' "$*"; }

if [ $# -ge 1 ]; then
    root=$1
    say "using the hgx installed under $root"
    libdir=""
    for d in "$root/lib" "$root/lib64" "$root"/lib/*-linux-gnu; do
        [ -f "$d/pkgconfig/mercury.pc" ] && { libdir=$d; break; }
    done
    define_prefix=""
else
    [ -f Makefile ] || { say "run from the build tree or give an install PREFIX"; exit 1; }
    say "staging: make install DESTDIR=$tmp/stage"
    if ! ${MAKE:-make} install DESTDIR="$tmp/stage" >"$tmp/install.log" 2>&1; then
        tail -20 "$tmp/install.log"; say "FAIL: make install"; exit 1
    fi
    pcfile=$(find "$tmp/stage" -name mercury.pc -path '*/pkgconfig/*' | head -n 1)
    libdir=${pcfile:+$(dirname "$(dirname "$pcfile")")}
    root=$tmp/stage
    define_prefix=--define-prefix
fi
if [ -z "$libdir" ] || [ ! -f "$libdir/pkgconfig/mercury.pc" ]; then
    say "FAIL: no mercury.pc under $root"; exit 1
fi
say "libdir: $libdir"
# Let the programs find the staged libhgx at run time.
LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH

# ---- 1. pkg-config
flags=$(PKG_CONFIG_PATH=$libdir/pkgconfig pkg-config $define_prefix --cflags --libs mercury)
if [ $? -ne 0 ]; then
    say "FAIL: pkg-config mercury"; fail=1
else
    say "pkg-config --cflags --libs mercury: $flags"
    say "build 1: ${CC:-cc} -std=c11 mercury_prog.c \$(pkg-config ...)"
    # shellcheck disable=SC2086
    if ${CC:-cc} -std=c11 -Wall -Wextra -Werror -o "$tmp/prog_pc" "$srcdir/mercury_prog.c" $flags; then
        say "run 1: prog_pc $info"
        if "$tmp/prog_pc" "$info"; then say "pkg-config build: PASS"
        else say "pkg-config build: FAIL (run)"; fail=1; fi
    else
        say "pkg-config build: FAIL (compile)"; fail=1
    fi
fi

# ---- 1b. Mercury's utility headers (header-only mercury_util) from the install
if [ -n "${flags:-}" ]; then
    say "build 1b: ${CC:-cc} -std=c11 util_prog.c \$(pkg-config ...)"
    # shellcheck disable=SC2086
    if ${CC:-cc} -std=c11 -Wall -Wextra -Werror -o "$tmp/util_pc" "$srcdir/util_prog.c" $flags &&
        "$tmp/util_pc"; then
        say "mercury_util headers: PASS"
    else
        say "mercury_util headers: FAIL"; fail=1
    fi
fi

# ---- 2. CMake find_package(mercury)
cmake_dir=$(dirname "$(find "$root" -name mercury-config.cmake 2>/dev/null | head -n 1)")
if ! command -v cmake >/dev/null 2>&1; then
    say "cmake build: FAIL (cmake not installed)"; fail=1
elif [ ! -f "$cmake_dir/mercury-config.cmake" ]; then
    say "cmake build: FAIL (no mercury-config.cmake under $root)"; fail=1
else
    say "build 2: cmake -Dmercury_DIR=$cmake_dir (find_package(mercury REQUIRED), target mercury)"
    if cmake -S "$srcdir" -B "$tmp/cmake" -Dmercury_DIR="$cmake_dir" >"$tmp/cmake.log" 2>&1 &&
        cmake --build "$tmp/cmake" >>"$tmp/cmake.log" 2>&1; then
        grep 'mercury .* found' "$tmp/cmake.log" | sed 's/^/check-installed: /'
        say "run 2: mercury_prog $info"
        if "$tmp/cmake/mercury_prog" "$info" && "$tmp/cmake/util_prog"; then say "cmake build: PASS"
        else say "cmake build: FAIL (run)"; fail=1; fi
    else
        tail -25 "$tmp/cmake.log"; say "cmake build: FAIL (configure/compile)"; fail=1
    fi
fi

if [ $fail -eq 0 ]; then say "PASS: both builds ran"; else say "FAIL"; fi
exit $fail
