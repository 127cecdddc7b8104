#!/bin/sh
# fuzz/run-smoke.sh -- build every libFuzzer target of hgx and run each one for a
# fixed number of inputs over its checked-in corpus. Fails on any crash, leak,
# sanitizer report or build error. Called by `make fuzz-smoke` and by CI.
#
# usage: fuzz/run-smoke.sh [BUILD_DIR] [RUNS]
#   BUILD_DIR  configured hgx build tree (for config.h); fuzz binaries go to
#              BUILD_DIR/fuzz (default: .)
#   RUNS       inputs per target (default: $FUZZ_RUNS or 20000)
# environment: CLANG (default clang), FUZZ_SEED (default 1), FUZZ_TARGETS
#   (space-separated subset), FUZZ_MPICH_INC (mpich include dir for
#   fuzz_mpi_emul_packet; default: pkg-config mpich or the Debian path).
set -eu

srcdir=$(cd "$(dirname "$0")/.." && pwd)
builddir=$(cd "${1:-.}" && pwd)
runs=${2:-${FUZZ_RUNS:-20000}}
seed=${FUZZ_SEED:-1}
CLANG=${CLANG:-clang}
out="$builddir/fuzz"
targets=${FUZZ_TARGETS:-"fuzz_hg_header fuzz_proc_struct fuzz_bulk_deserialize fuzz_bulk_transfer fuzz_na_addr fuzz_mpi_emul_packet"}

die() {
    echo "fuzz-smoke: ERROR: $*" >&2
    exit 1
}

# ---- toolchain checks: never skip silently ---------------------------------
command -v "$CLANG" >/dev/null 2>&1 ||
    die "'$CLANG' not found. The fuzz targets need clang with libFuzzer
  (Debian/Ubuntu: apt-get install clang libclang-rt-14-dev; or set CLANG=clang-NN)."
[ -f "$builddir/config.h" ] ||
    die "$builddir/config.h not found: pass a configured hgx build directory."
mkdir -p "$out/obj"
printf '#include <stdint.h>\n#include <stddef.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' \
    >"$out/obj/probe.c"
"$CLANG" -fsanitize=fuzzer,address,undefined "$out/obj/probe.c" -o "$out/obj/probe" \
    >"$out/obj/probe.log" 2>&1 ||
    die "'$CLANG -fsanitize=fuzzer,address,undefined' cannot link (libFuzzer or the
  sanitizer runtimes are missing; Debian/Ubuntu: apt-get install libclang-rt-14-dev
  for clang 14). Compiler output:
$(cat "$out/obj/probe.log")"

have() { grep -q "^#define $1 1" "$builddir/config.h"; }

SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
CFLAGS="-std=c11 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer $SAN"
INC="-I$builddir -I$builddir/include -I$builddir/include/util -I$srcdir/include -I$srcdir/include/util -I$srcdir/src/util -I$srcdir/src/na -I$srcdir/src/na/util -I$srcdir/src/na/mpi -I$srcdir/src/hg \
-I$srcdir/src/bulk -I$srcdir/src/req -I$srcdir/src/mpi_emul"
LIBS="-lpthread -lm"
pc() { pkg-config "$@" 2>/dev/null || true; }
pclibs() { pkg-config --libs "$1" 2>/dev/null || echo "$2"; }
if have HGX_HAVE_ISAL; then LIBS="$LIBS -lisal"; fi
if have HGX_HAVE_OFI; then INC="$INC $(pc --cflags libfabric)"; LIBS="$LIBS $(pclibs libfabric -lfabric)"; fi
if have HGX_HAVE_UCX; then INC="$INC $(pc --cflags ucx)"; LIBS="$LIBS $(pclibs ucx '-lucp -luct -lucs')"; fi

# ---- the library, instrumented: its sources as the build tree configured them
libsrc=${FUZZ_LIB_SOURCES:?run through make fuzz-smoke, which names the library sources}
INC="$INC ${FUZZ_MPI_CFLAGS:-}"
LIBS="$LIBS ${FUZZ_MPI_LIBS:-}"

echo "fuzz-smoke: building the instrumented library into $out"
objs=""
for s in $libsrc; do
    o="$out/obj/$(echo "$s" | tr / _ | sed 's/\.c$/.o/')"
    # shellcheck disable=SC2086
    "$CLANG" $CFLAGS -fsanitize=fuzzer-no-link $INC -c "$srcdir/$s" -o "$o" ||
        die "compiling $s failed"
    objs="$objs $o"
done
rm -f "$out/obj/libhgx-fuzz.a"
# shellcheck disable=SC2086
ar rcs "$out/obj/libhgx-fuzz.a" $objs

# ---- the targets ----------------------------------------------------------------
mpich_inc=${FUZZ_MPICH_INC:-$(pc --cflags-only-I mpich | sed 's/^-I//; s/ .*//')}
[ -n "$mpich_inc" ] || mpich_inc=/usr/include/x86_64-linux-gnu/mpich

build_target() {
    t=$1
    case $t in
    fuzz_mpi_emul_packet)
        # The sources of src/mpi_emul against the MPI stub in the target (MPICH
        # ABI: integer handles); no MPI library is linked.
        [ -f "$mpich_inc/mpi.h" ] ||
            die "fuzz_mpi_emul_packet needs MPICH's mpi.h (apt-get install libmpich-dev,
  or set FUZZ_MPICH_INC=/path/to/mpich/include)."
        # shellcheck disable=SC2086
        "$CLANG" $CFLAGS -fsanitize=fuzzer -I"$mpich_inc" $INC \
            "$srcdir/fuzz/$t.c" "$srcdir"/src/mpi_emul/*.c \
            "$srcdir/src/util/hgx_log.c" "$srcdir/src/util/hgx_param.c" \
            "$srcdir/src/util/hgx_assert.c" -o "$out/$t" $LIBS
        ;;
    fuzz_bulk_transfer)
        # The server and attacks of tests/bulk_forge.c, over ofi+tcp.
        have HGX_HAVE_OFI || die "fuzz_bulk_transfer needs libfabric (ofi+tcp)."
        # shellcheck disable=SC2086
        "$CLANG" $CFLAGS -fsanitize=fuzzer $INC -I"$srcdir/tests" "$srcdir/fuzz/$t.c" \
            "$srcdir/tests/bulk_forge.c" "$out/obj/libhgx-fuzz.a" -o "$out/$t" $LIBS
        ;;
    fuzz_hg_header)
        # shellcheck disable=SC2086
        "$CLANG" $CFLAGS -fsanitize=fuzzer $INC "$srcdir/fuzz/$t.c" \
            "$srcdir/src/hg/hg_header.c" "$srcdir/src/hg/hg_crc64.c" -o "$out/$t" $LIBS
        ;;
    *)
        # shellcheck disable=SC2086
        "$CLANG" $CFLAGS -fsanitize=fuzzer $INC "$srcdir/fuzz/$t.c" \
            "$out/obj/libhgx-fuzz.a" -o "$out/$t" $LIBS
        ;;
    esac
}

fail=0
summary=""
for t in $targets; do
    echo "fuzz-smoke: building $t"
    build_target "$t" || die "building $t failed"
done
for t in $targets; do
    corpus="$srcdir/fuzz/corpus/$t"
    [ -d "$corpus" ] || die "no seed corpus at $corpus"
    work="$out/work-$t"
    rm -rf "$work"
    mkdir -p "$work"
    log="$out/$t.log"
    echo "fuzz-smoke: running $t for $runs inputs (seed $seed)"
    start=$(date +%s)
    # Fresh inputs go to $work, never into the checked-in corpus.
    if HG_LOG_LEVEL=${FUZZ_LOG_LEVEL:-none} ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
        UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        "$out/$t" -runs="$runs" -seed="$seed" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="$out/$t-" "$work" "$corpus" >"$log" 2>&1; then
        status=ok
    else
        status=FAILED
        fail=1
        echo "fuzz-smoke: $t FAILED; last lines of $log:" >&2
        tail -40 "$log" >&2
    fi
    secs=$(($(date +%s) - start))
    done_line=$(grep -E '^Done [0-9]+ runs' "$log" | tail -1 || true)
    ran=$(echo "$done_line" | sed -n 's/^Done \([0-9]*\) runs.*/\1/p')
    [ -n "$ran" ] || ran="?"
    summary="$summary
  $t: $status, $ran inputs in ${secs}s"
done
echo "fuzz-smoke: summary (runs requested per target: $runs, seed $seed):$summary"
exit $fail
