#!/bin/bash
# Install dependencies, build every configuration and run every test.
# Used by .ci/run. Exits non-zero on any failure, including a transport
# that did not run at all.
set -uo pipefail
cd "$(dirname "$0")/.."
top=$PWD
# README.md, docs/ and code comments describe the product, never its development
# history; a hit fails the run (the rest still runs, to report everything at once).
history_status=0
sh tools/check-history.sh || history_status=1
sh tools/install-deps.sh || { echo "hgx CI: installing dependencies failed"; exit 1; }
autoreconf -fi >/dev/null 2>&1 || autoreconf -fi || exit 1
jobs=$(nproc)
logdir=$top/build-ci/logs
rm -rf "$top/build-ci"
mkdir -p "$logdir"

# One configuration: name, tests ("all" or a list for TESTS=), configure flags...;
# runs make check, keeps the log.
run_config() {
    local name=$1 tests=$2
    shift 2
    echo "=== [$name] configure $*"
    mkdir -p "$top/build-ci/$name"
    (cd "$top/build-ci/$name" && "$top/configure" --enable-werror "$@" >"$logdir/$name.configure" 2>&1) ||
        { tail -30 "$logdir/$name.configure"; return 1; }
    grep -A12 "configuration summary" "$logdir/$name.configure" || true
    echo "=== [$name] make"
    make -C "$top/build-ci/$name" -j"$jobs" >"$logdir/$name.make" 2>&1 ||
        { tail -40 "$logdir/$name.make"; return 1; }
    echo "=== [$name] make check"
    if [ "$tests" = all ]; then
        make -C "$top/build-ci/$name" check 2>&1 | tee "$logdir/$name.check"
    else
        make -C "$top/build-ci/$name" check TESTS="$tests" 2>&1 | tee "$logdir/$name.check"
    fi
    return "${PIPESTATUS[0]}"
}

status=$history_status
# Every test with Open MPI; the MPI tests again with MPICH (one tree per MPI);
# every non-MPI test under AddressSanitizer + UBSan.
mpi_tests="mpitests/test_na_mpi.sh mpitests/test_hgx_mpi.sh mpitests/test_mpi_emul_cancel.sh \
mpitests/test_mpi_dynamic.sh mpitests/perf-mpi-smoke.sh mpitests/test_bulk_forge_mpi.sh \
mpitests/test_na_mpi_compat.sh mpitests/test_na_conformance_mpi.sh \
mpitests/test_na_mpi_single.sh mpitests/test_na_mpi_held.sh mpitests/test_na_mpi_late.sh mpitests/test_hg_events_mpi.sh tests/test_emul_state tests/multihost/mpi-static.sh"
run_config openmpi all MPICC=mpicc.openmpi || status=1
run_config mpich "$mpi_tests" MPICC=mpicc.mpich || status=1
# (the installed-program check links a plain program, so it is not run against
# the instrumented library)
asan_tests="tests/test_na tests/test_na_idle tests/test_na_conformance tests/test_proc \
tests/test_hg tests/test_hgx tests/test_na_ucx_pending tests/test_na_ucx_am tests/test_na_ucx_credit examples/hg_hello \
examples/hg_save examples/hg_timeout tests/perf-smoke.sh tests/test_bulk_forge tests/quickstart.sh \
tests/util/test_hgx_list tests/util/test_hgx_lock tests/util/test_hgx_param tests/util/test_hgx_assert \
tests/util/test_na_seg_cursor tests/util/test_na_peer_map tests/util/test_na_progress_util \
tests/test_na_plugins tests/compat/util_prog tests/tput-smoke.sh tests/test_na_ucx_lazy \
tests/test_na_ucx_conn tests/test_na_ucx_rma tests/test_na_ucx_ctx tests/test_na_ucx_peers tests/test_na_ucx_wait tests/test_ofi_cancel_state tests/test_na_cancel_pull tests/compat/test_margo tests/test_na_threads tests/util/test_na_lead tests/test_hg_events tests/test_bulk_eager tests/test_init_info tests/test_na_late tests/compat/test_wait_threads"
run_config asan "$asan_tests" --without-mpi --enable-sanitizers || status=1

# ThreadSanitizer over the parts that run threads: the contexts of one class
# sharing its transport (test_na_threads, test_na_lead), a thread in poll(2) on
# a context's events fd woken by another's progress (test_hg_events), threads
# in HG_Progress and hg_request_wait woken by others' work (test_wait_threads), the MPI
# progress thread behind hgx_request_to_mpi (mpi+dynamic's accept thread is not covered: Open MPI's
# dynamic-process code crashes under TSan before reaching hgx).
# UCX's memory hooks (pulled in by Open MPI and by hgx) crash threads under TSan
# when a thread exits; they are turned off for this stage only.
TSAN_OPTIONS="suppressions=$top/tools/tsan.supp exitcode=66" UCX_MEM_MMAP_HOOK_MODE=none \
    UCX_MEM_MALLOC_HOOKS=no UCX_MEM_EVENTS=no run_config tsan "mpitests/test_hgx_mpi.sh tests/test_na_threads tests/util/test_na_lead tests/test_hg_events tests/compat/test_wait_threads" MPICC=mpicc.openmpi --enable-sanitizers=thread ||
    status=1

echo "=== [valgrind] NA and HG tests over ofi+tcp and ucx+tcp"
: >"$logdir/valgrind.log"
for t in tests/test_na tests/test_hg; do
    if [ -x "$top/build-ci/openmpi/$t" ]; then
        (cd "$top/build-ci/openmpi" && HG_LOG_LEVEL=none HGX_TEST_TRANSPORTS="ofi+tcp ucx+tcp" \
            ./libtool --mode=execute valgrind -q --error-exitcode=99 --leak-check=full \
            --errors-for-leak-kinds=definite --show-possibly-lost=no --suppressions="$top/tools/valgrind.supp" \
            "./$t") 2>&1 | tee -a "$logdir/valgrind.log"
        [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
    else
        echo "hgx CI: $t was not built"
        status=1
    fi
done

echo "=== [exports] only the public API leaves libhgx (openmpi tree)"
sh tools/check-exports.sh "$top/build-ci/openmpi" 2>&1 | tee "$logdir/exports.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1

# Formatting of every C file against the checked-in .clang-format
# (HGX_CHECK_FORMAT=0 skips it, e.g. with another clang-format version).
if [ "${HGX_CHECK_FORMAT:-1}" = 1 ]; then
    echo "=== [format] tools/check-format.sh"
    sh tools/check-format.sh 2>&1 | tee "$logdir/format.log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi

echo "=== [fuzz] make fuzz-smoke (every target, fixed input count)"
make -C "$top/build-ci/asan" fuzz-smoke 2>&1 | tee "$logdir/fuzz.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
# The same target in an MPI-enabled tree (the MPI emulation's fuzz target and
# the MPI link flags), with fewer inputs.
echo "=== [fuzz] make fuzz-smoke in the Open MPI tree"
make -C "$top/build-ci/openmpi" fuzz-smoke FUZZ_RUNS=200 2>&1 | tee "$logdir/fuzz-openmpi.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1

# The API reference: every public call, parameter and return documented
# (Doxygen fails on any warning).
echo "=== [doc] make doc (the API reference, no Doxygen warning allowed)"
if ! make -C "$top/build-ci/openmpi" doc >"$logdir/doc.log" 2>&1 ||
    grep -qE '(warning|error):' "$logdir/doc.log"; then
    cat "$logdir/doc.log"
    status=1
fi

# The release: the tarball must build, pass every test of its configuration,
# install and uninstall cleanly outside the source tree (Makefile.am says how
# it is configured). The namespace tests, already run above as root, skip.
echo "=== [distcheck] make distcheck"
if HGX_NO_NETNS_TESTS=1 make -C "$top/build-ci/openmpi" distcheck >"$logdir/distcheck.log" 2>&1 &&
    grep -q "archives ready for distribution" "$logdir/distcheck.log"; then
    grep -E "^# (TOTAL|PASS|SKIP|FAIL|ERROR):" "$logdir/distcheck.log"
    grep -A1 "archives ready for distribution" "$logdir/distcheck.log"
else
    tail -40 "$logdir/distcheck.log"
    # The tests print to the log as they run: show the 60 lines before each
    # failed test's verdict, which the tail above does not reach.
    awk '{ keep[NR % 60] = $0 }
         /^(FAIL|ERROR|XPASS): / { print "--- distcheck: " $0;
             for (i = NR - 59; i <= NR; i++) if (i > 0) print keep[i % 60] }' \
        "$logdir/distcheck.log"
    echo "hgx CI: make distcheck failed"
    status=1
fi

# No transport may be skipped as a whole: each must have run its test group.
for t in ofi+tcp ofi+shm ofi+sockets ucx+tcp ucx+shm; do
    for cfg in openmpi asan; do
        for layer in na hg hgx; do
            if ! grep -qF "group $layer/$t" "$logdir/$cfg.check" 2>/dev/null; then
                echo "hgx CI: $layer tests over $t did not run in the $cfg build"
                status=1
            fi
        done
    done
done
for t in tests/test_faults tests/test_load tests/netns-cut.sh tests/netns-addr.sh tests/loopback-addr.sh \
    tests/compat/check-installed.sh tests/multihost/rpc.sh tests/multihost/fault.sh tests/multihost/mpi-dynamic.sh; do
    if ! grep -q "^PASS: $t" "$logdir/openmpi.check" 2>/dev/null; then
        echo "hgx CI: $t did not pass in the openmpi build"
        status=1
    fi
done
# Forged bulk descriptors: zero violations, hangs and crashes on every transport.
for cfg in openmpi asan; do
    if ! grep -q "^PASS: tests/test_bulk_forge" "$logdir/$cfg.check" 2>/dev/null; then
        echo "hgx CI: tests/test_bulk_forge did not pass in the $cfg build"
        status=1
    fi
done
for t in mpitests/test_hgx_mpi.sh tests/test_na_threads tests/util/test_na_lead tests/test_hg_events; do
    if ! grep -q "^PASS: $t" "$logdir/tsan.check" 2>/dev/null; then
        echo "hgx CI: $t did not pass in the tsan build"
        status=1
    fi
done
for cfg in openmpi mpich; do
    for t in $mpi_tests; do
        if ! grep -q "^PASS: $t" "$logdir/$cfg.check" 2>/dev/null; then
            echo "hgx CI: $t did not pass in the $cfg build"
            status=1
        fi
    done
done

sum_of() {
    cat "$logdir"/*.check "$logdir/valgrind.log" 2>/dev/null |
        awk -v tag="$1" 'index($0, "[  " tag "  ] ") == 1 && $5 ~ /^test/ {n += $4} END {print n + 0}'
}
# A program can fail with all its cases passed (a leak found at exit, a
# server that exited badly): automake's FAIL/ERROR lines and cmocka's group
# errors count too.
programs_failed() {
    cat "$logdir"/*.check "$logdir/valgrind.log" 2>/dev/null |
        grep -c -E '^(FAIL|ERROR): |^\[  ERROR   \] ' || true
}
# The CI keeps only the tail of this output: name every failure here, each
# failed case with its group and the lines (assertion, log) before its verdict.
for f in "$logdir"/*.check "$logdir/valgrind.log" "$logdir/distcheck.log"; do
    [ -f "$f" ] || continue
    awk -v name="$(basename "$f")" '
        { keep[NR % 8] = $0 }
        /^\[----------\] group / { group = $3 }
        /^\[ RUN      \] / { running = $4 }
        /^(FAIL|ERROR): / { print "failed (" name "): " $0 }
        /^\[  FAILED  \] / && $4 == running {
            print "failed (" name ", group " group "): " running
            for (i = NR - 7; i < NR; i++) if (i > 0) print "    " keep[i % 8]
            running = ""
        }' "$f"
done | head -120
echo "summary: $(sum_of PASSED) passed, $(($(sum_of FAILED) + $(programs_failed))) failed"
exit $status
