#!/bin/sh
# perf-smoke.sh: hgx-perf runs every mode briefly and prints a full table
# (lat also with --na, the NA layer alone).
#
# For each transport of $HGX_PERF_SMOKE_TRANSPORTS (default: ofi+tcp and
# ucx+shm; mpi+static runs under mpitests/run-mpi.sh with a rank per process),
# each mode runs with few iterations; rate runs with 3 clients. A run passes when it exits 0 and every
# row of its table has a number in both the hgx and the raw column (cancel
# storm and scale included). Figures are not judged: this is a functional
# check of the benchmark tool, not a timed test.
set -u
perf=${top_builddir:-.}/hgx-perf
[ -x "$perf" ] || { echo "perf-smoke: $perf not built"; exit 1; }
transports=${HGX_PERF_SMOKE_TRANSPORTS:-"ofi+tcp ucx+shm"}
out=$(mktemp "${TMPDIR:-/tmp}/hgx-perf-smoke.XXXXXX") || exit 1
runs=
trap 'rm -f "$out" ${runs:+"$runs"}' EXIT INT TERM
passed=0 failed=0

check() { # label, ranks (mpi+static), then the hgx-perf arguments
    label=$1 ranks=$2
    shift 2
    launch=
    [ "$ranks" -gt 0 ] && launch="$top_srcdir/mpitests/run-mpi.sh $ranks"
    $launch "$perf" "$@" --quiet >"$out" 2>&1
    rc=$?
    if [ $rc -ne 0 ]; then
        echo "FAIL $label: exit status $rc"
        sed 's/^/    /' "$out"
        failed=$((failed + 1))
        return
    fi
    # rows: test param iters hgx raw ratio; hgx-only rows of rate mode
    # (request-layer figures) have "-" for raw by design.
    bad=$(awk '!/^#/ && $1 != "test" && NF >= 6 && $1 !~ /^rate-req/ &&
               ($4 !~ /^[0-9.]+$/ || $5 !~ /^[0-9.]+$/) {print}' "$out")
    rows=$(awk '!/^#/ && $1 != "test" && NF >= 6' "$out" | wc -l)
    if [ -n "$bad" ] || [ "$rows" -eq 0 ]; then
        echo "FAIL $label: rows without figures ($rows rows)"
        sed 's/^/    /' "$out"
        failed=$((failed + 1))
        return
    fi
    echo "PASS $label ($rows rows)"
    passed=$((passed + 1))
}

for t in $transports; do
    case $t in
    ofi+*) grep -q "define HGX_HAVE_OFI 1" "${top_builddir:-.}/config.h" ||
        { echo "SKIP $t: built without libfabric"; continue; } ;;
    ucx+*) grep -q "define HGX_HAVE_UCX 1" "${top_builddir:-.}/config.h" ||
        { echo "SKIP $t: built without UCX"; continue; } ;;
    mpi+*) grep -q "define HGX_HAVE_MPI 1" "${top_builddir:-.}/config.h" ||
        { echo "SKIP $t: built without MPI"; continue; } ;;
    esac
    np=0 np3=0
    case $t in mpi+*) np=2 np3=4 ;; esac
    check "$t lat" $np --transport "$t" --mode lat --sizes 0-1K --iters 200
    check "$t lat, tuned" $np --transport "$t" --mode lat --sizes 0-1K --iters 200 --tuned
    check "$t lat, NA alone" $np --transport "$t" --mode lat --sizes 0-1K --iters 200 --na
    check "$t rate, 3 clients" $np3 --transport "$t" --mode rate --iters 50 --clients 3
    check "$t bw" $np --transport "$t" --mode bw --sizes 4K-1M --iters 5
    check "$t cancel" $np --transport "$t" --mode cancel --iters 5
    check "$t scale" $np --transport "$t" --mode scale --iters 2
done
# --runs: one CSV line per run and row, each with both figures.
t=${transports%% *}
case $t in ofi+* | ucx+*)
    runs=$(mktemp "${TMPDIR:-/tmp}/hgx-perf-runs.XXXXXX") || exit 1
    if "$perf" --transport "$t" --mode lat --sizes 0-4 --iters 100 --repeat 3 \
        --runs "$runs" --quiet >"$out" 2>&1; then
        lines=$(awk -F, 'NR > 1 && $6 ~ /^[0-9.e+-]+$/ && $7 ~ /^[0-9.e+-]+$/' "$runs" |
            wc -l)
        runs_seen=$(awk -F, 'NR > 1 {print $3}' "$runs" | sort -u | wc -l)
    else
        lines=0 runs_seen=0
    fi
    # sizes 0-4: rows 0, 1 and 4 bytes, in each of 3 runs
    if [ "$lines" -eq 9 ] && [ "$runs_seen" -eq 3 ]; then
        echo "PASS $t --runs (9 lines, 3 runs)"
        passed=$((passed + 1))
    else
        echo "FAIL $t --runs: $lines complete lines over $runs_seen runs, want 9 over 3"
        sed 's/^/    /' "$runs" "$out"
        failed=$((failed + 1))
    fi
    rm -f "$runs"
    ;;
esac
# Bad arguments are refused with the usage text, exit status 2.
if "$perf" --mode bw --na >/dev/null 2>&1; then
    echo "FAIL --na outside lat mode was accepted"
    failed=$((failed + 1))
else
    echo "PASS --na outside lat mode refused"
    passed=$((passed + 1))
fi
if "$perf" --mode rate --clients 2 --runs /dev/null >/dev/null 2>&1; then
    echo "FAIL --runs with several clients was accepted"
    failed=$((failed + 1))
else
    echo "PASS --runs with several clients refused"
    passed=$((passed + 1))
fi
if "$perf" --mode lat --clients 2 >/dev/null 2>&1; then
    echo "FAIL --clients outside rate mode was accepted"
    failed=$((failed + 1))
else
    echo "PASS --clients outside rate mode refused"
    passed=$((passed + 1))
fi
echo "perf-smoke: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
