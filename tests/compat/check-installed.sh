#!/bin/sh
# check-installed.sh: check that an installed hgx serves Mercury programs.
#
#   tests/compat/check-installed.sh [PREFIX]
#
# Without PREFIX (e.g. from `make check`, run in the build tree): stages
# `make install DESTDIR=$tmp` from the current build tree. With PREFIX: uses
# an hgx already installed there.
# Then checks what Mercury installs: the pkg-config files mercury (2.4.1), na
# (6.0.0) and mercury_util (4.0.0), NA_HAS_OFI in na_config.h, every function
# of Mercury 2.4.1's list declared by the installed headers; builds
# tests/compat/mercury_prog.c, util_prog.c, util_more.c, util_harness.c and the C++ cxx_prog.cc (C++11 to
# C++20 with pkg-config, the compiler's default with CMake) against that install --
#   1. cc $(pkg-config --cflags --libs mercury)
#   2. cmake with find_package(mercury REQUIRED) + target_link_libraries(prog mercury)
#      (and util_prog, util_more, util_harness with the mercury_util target; CMakeLists.txt checks the
#      na target and the version too)
# -- and mercury_prog once more with -lmercury -lna -lmercury_util alone (the library
# names a program may link by), and runs each over ofi+tcp; checks that mercury_proc.h,
# mercury_macros.h, mercury.h and na_types.h make visible the system headers Mercury's do. When it staged the install itself, it then
# runs `make uninstall DESTDIR=...` and requires that no file remains.
# Exits 0 only if every step passes.
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

# ---- 0. Mercury's pkg-config names and versions, and the plugin defines
for pv in mercury=2.4.1 na=6.0.0 mercury_util=4.0.0; do
    got=$(PKG_CONFIG_PATH=$libdir/pkgconfig pkg-config --modversion "${pv%%=*}" 2>/dev/null)
    if [ "$got" = "${pv#*=}" ]; then say "pkg-config ${pv%%=*}: $got"
    else say "FAIL: pkg-config ${pv%%=*} gives '$got', expected ${pv#*=}"; fail=1; fi
done
na_config=$(find "$root" -name na_config.h | head -n 1)
if [ -n "$na_config" ] && grep -q '^#define NA_HAS_OFI' "$na_config"; then
    say "na_config.h: $(grep -o '^#define NA_HAS_[A-Z]*' "$na_config" | sed 's/#define //' | tr '\n' ' ')"
else
    say "FAIL: no NA_HAS_OFI in the installed na_config.h"; fail=1
fi
# Let the programs find the staged libhgx at run time.
LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH

# ---- 0b. the installed headers declare every Mercury 2.4.1 function (check-api.sh)
incdir=$(PKG_CONFIG_PATH=$libdir/pkgconfig pkg-config $define_prefix --variable=includedir mercury)
if [ "$(basename "$incdir")" != include ]; then
    say "FAIL: includedir $incdir does not end in include/"; fail=1
elif top_srcdir=$(dirname "$incdir") top_builddir=$(dirname "$incdir") \
    sh "$srcdir/check-api.sh" >"$tmp/api.log" 2>&1; then
    say "installed headers: $(grep -o '[0-9]* Mercury 2.4.1 functions checked, [0-9]* missing' "$tmp/api.log")"
else
    cat "$tmp/api.log"; say "FAIL: installed headers miss Mercury 2.4.1 functions"; fail=1
fi

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

# ---- 1b. Mercury's utility headers and log calls, with pkg-config mercury_util
flags_util=$(PKG_CONFIG_PATH=$libdir/pkgconfig pkg-config $define_prefix --cflags --libs mercury_util)
# util_prog: threads, time, atomics, logs, poll sets; util_more: dl, event,
# atomic queue, hash table, memory pool, spin lock, huge pages; util_harness:
# log outlets, subsystems, STAILQ queues and CPU affinity as Mercury's harness.
for prog in util_prog util_more util_harness; do
    say "build 1b: ${CC:-cc} -std=c11 $prog.c \$(pkg-config --cflags --libs mercury_util)"
    # shellcheck disable=SC2086
    if [ -n "$flags_util" ] &&
        ${CC:-cc} -std=c11 -Wall -Wextra -Werror -o "$tmp/${prog}_pc" "$srcdir/$prog.c" $flags_util &&
        "$tmp/${prog}_pc"; then
        say "mercury_util ($prog): PASS"
    else
        say "mercury_util ($prog): FAIL"; fail=1
    fi
done

# ---- 1c. A C++ program (as Thallium and the Mochi services are), pkg-config mercury
cxx=${CXX:-c++}
if ! command -v "$cxx" >/dev/null 2>&1; then
    say "C++ build: FAIL ($cxx not installed)"; fail=1
else
    for std in c++11 c++14 c++17 c++20; do
        say "build 1c: $cxx -std=$std cxx_prog.cc \$(pkg-config --cflags --libs mercury)"
        # shellcheck disable=SC2086
        if $cxx -std=$std -Wall -Wextra -Werror -o "$tmp/cxx_prog_$std" "$srcdir/cxx_prog.cc" \
            $flags; then
            if "$tmp/cxx_prog_$std" "$info"; then say "C++ build ($std): PASS"
            else say "C++ build ($std): FAIL (run)"; fail=1; fi
        else
            say "C++ build ($std): FAIL (compile)"; fail=1
        fi
    done
fi

# ---- 1d. Linking by Mercury's library names, without pkg-config or CMake
say "build 1d: ${CC:-cc} -std=c11 mercury_prog.c -I$incdir -L$libdir -lmercury -lna -lmercury_util"
if ${CC:-cc} -std=c11 -Wall -Wextra -Werror -o "$tmp/prog_names" "$srcdir/mercury_prog.c" \
    -I"$incdir" -L"$libdir" -lmercury -lna -lmercury_util; then
    needed=$(LC_ALL=C readelf -d "$tmp/prog_names" 2>/dev/null | sed -n 's/.*NEEDED.*\[\(libhgx[^]]*\)\].*/\1/p')
    if [ -z "$needed" ]; then
        say "library names: FAIL (the program does not record libhgx)"; fail=1
    elif "$tmp/prog_names" "$info"; then
        say "library names: PASS (the program needs $needed)"
    else
        say "library names: FAIL (run)"; fail=1
    fi
else
    say "library names: FAIL (link)"; fail=1
fi

# ---- 1e. System headers that Mercury's headers make visible: programs written
# for Mercury rely on them without including them (an encoder's memcpy).
visible() { # header, code using what it must make visible
    printf '#include <%s>\nint use(void *d, const void *s, unsigned n);\nint use(void *d, const void *s, unsigned n) { %s }\n' \
        "$1" "$2" >"$tmp/visible.c"
    if ${CC:-cc} -std=c11 -Wall -Wextra -Werror -c -o "$tmp/visible.o" -I"$incdir" "$tmp/visible.c"; then
        say "$1 makes its system headers visible: PASS"
    else
        say "$1 makes its system headers visible: FAIL"; fail=1
    fi
}
visible mercury_proc.h 'memcpy(d, s, n); return (int)strlen((const char *)s);'
visible mercury_macros.h 'memset(d, 0, n); (void)s; return 0;'
visible mercury.h '(void)d; (void)s; return fprintf(stderr, "%u", n);'
visible na_types.h '(void)d; (void)s; return n > INT_MAX;'

# ---- 1f. A module built with hidden symbols exports what HG_UTIL_PLUGIN marks,
# and a program finds it with hg_dl_open/hg_dl_sym (Mercury's dl test).
cat >"$tmp/module.c" <<'EOF'
#include <mercury_util_config.h>
HG_UTIL_PLUGIN int hgx_module_answer(void);
HG_UTIL_PLUGIN int hgx_module_answer(void) { return 42; }
int hgx_module_hidden(void);
int hgx_module_hidden(void) { return 1; }
EOF
cat >"$tmp/loader.c" <<'EOF'
#include <mercury_dl.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    HG_DL_HANDLE h = argc > 1 ? hg_dl_open(argv[1]) : NULL;
    if (!h) { fprintf(stderr, "hg_dl_open: %s\n", hg_dl_error()); return 1; }
    int (*answer)(void) = (int (*)(void))hg_dl_sym(h, "hgx_module_answer");
    int ok = answer && answer() == 42 && hg_dl_sym(h, "hgx_module_hidden") == NULL;
    return hg_dl_close(h) == 0 && ok ? 0 : 1;
}
EOF
if ${CC:-cc} -std=c11 -Wall -Wextra -Werror -fPIC -shared -fvisibility=hidden -I"$incdir" \
        -o "$tmp/module.so" "$tmp/module.c" &&
    ${CC:-cc} -std=c11 -Wall -Wextra -Werror -I"$incdir" -o "$tmp/loader" "$tmp/loader.c" -ldl &&
    "$tmp/loader" "$tmp/module.so"; then
    say "HG_UTIL_PLUGIN module through hg_dl_open: PASS"
else
    say "HG_UTIL_PLUGIN module through hg_dl_open: FAIL"; fail=1
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
        if "$tmp/cmake/mercury_prog" "$info" && "$tmp/cmake/util_prog" &&
            "$tmp/cmake/util_more" && "$tmp/cmake/util_harness" &&
            "$tmp/cmake/na_version" &&
            "$tmp/cmake/cxx_prog" "$info"; then say "cmake build: PASS"
        else say "cmake build: FAIL (run)"; fail=1; fi
    else
        tail -25 "$tmp/cmake.log"; say "cmake build: FAIL (configure/compile)"; fail=1
    fi
fi

# ---- 3. make uninstall leaves no file behind (staged installs only)
if [ -z "$define_prefix" ]; then
    say "uninstall: not checked (install under $root not made here)"
elif ! ${MAKE:-make} uninstall DESTDIR="$tmp/stage" >"$tmp/uninstall.log" 2>&1; then
    tail -20 "$tmp/uninstall.log"; say "FAIL: make uninstall"; fail=1
else
    left=$(find "$tmp/stage" ! -type d)
    if [ -n "$left" ]; then
        printf '%s\n' "$left" | sed 's/^/check-installed: left after uninstall: /'
        say "FAIL: make uninstall left $(printf '%s\n' "$left" | wc -l) file(s)"; fail=1
    else
        say "make uninstall: no file left ($(find "$tmp/stage" -type d | wc -l) empty directories)"
    fi
fi

if [ $fail -eq 0 ]; then say "PASS: every step"; else say "FAIL"; fi
exit $fail
