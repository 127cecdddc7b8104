#!/bin/sh
# run-bench.sh OUT.md -- short hgx-perf run over every transport (make bench).
# Writes a markdown table: RPC round trip (0 B, median) and bulk pull/push at
# 4 MiB, hgx against the raw transport in the same run, and idle server CPU.
#
# Environment:
#   HGX_PERF        hgx-perf to run (default ./hgx-perf)
#   HGX_PERF_MPICH  an hgx-perf built against MPICH (optional; run with mpirun.mpich)
#   MPIRUN          Open MPI launcher (default mpirun.openmpi, else mpirun)
#   BENCH_ITERS     round trips per point (default 1000)
#   BENCH_REPEAT    runs per point, medians reported (default 3)
set -u
out=${1:?usage: run-bench.sh OUT.md}
perf=${HGX_PERF:-./hgx-perf}
iters=${BENCH_ITERS:-1000}
repeat=${BENCH_REPEAT:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
mpirun_ompi=${MPIRUN:-$(command -v mpirun.openmpi || command -v mpirun || true)}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HG_LOG_LEVEL=${HG_LOG_LEVEL:-error}

# field N of the CSV row "test,param" in file F (hgx=6, raw=7, ratio=8, best=9)
field() { awk -F, -v t="$2" -v p="$3" -v n="$4" '$3==t && $4==p {print $n}' "$1"; }

run() { # label launcher... ; appends one table row
    label=$1; shift
    rm -f "$tmp"/*.csv
    "$@" --mode lat --sizes 0-0 --iters "$iters" --repeat "$repeat" --quiet --csv "$tmp/lat.csv" >"$tmp/lat.out" 2>"$tmp/lat.err"
    rl=$?
    "$@" --mode bw --sizes 4M-4M --iters 20 --repeat "$repeat" --quiet --csv "$tmp/bw.csv" >"$tmp/bw.out" 2>"$tmp/bw.err"
    rb=$?
    if [ $rl -ne 0 ] && [ $rb -ne 0 ]; then
        echo "| $label | failed | | | | | | | | | | | | |" >>"$out"
        return
    fi
    l=$tmp/lat.csv b=$tmp/bw.csv
    printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$label" \
        "$(field $l rpc-rtt-us 0 6)" "$(field $l rpc-rtt-us 0 7)" "$(field $l rpc-rtt-us 0 8)" \
        "$(field $l rpc-rtt-us 0 9)" \
        "$(field $b pull-MiB/s 4194304 6)" "$(field $b pull-MiB/s 4194304 7)" \
        "$(field $b pull-MiB/s 4194304 8)" "$(field $b pull-MiB/s 4194304 9)" \
        "$(field $b push-MiB/s 4194304 6)" "$(field $b push-MiB/s 4194304 7)" \
        "$(field $b push-MiB/s 4194304 8)" "$(field $b push-MiB/s 4194304 9)" \
        "$(field $l idle-cpu-pct 0 6)" >>"$out"
}

{
    echo "hgx-perf short run, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $(uname -m)."
    echo "RPC: 0 B input, empty output, median of $iters round trips (us); every figure the"
    echo "median of $repeat runs, hgx/raw the median of the per-run ratios; best: the best"
    echo "hgx run over the best raw run (VMs that switch between a fast and a slow state)."
    echo "Bulk: 4 MiB HG_Bulk_transfer vs fi_read/fi_write, ucp_get/put, MPI messages (MiB/s)."
    echo
    echo "| transport | RPC hgx us | raw us | hgx/raw | best | pull hgx MiB/s | raw | hgx/raw | best | push hgx MiB/s | raw | hgx/raw | best | idle CPU % |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
} >"$out"

for t in ofi+tcp ofi+shm ucx+tcp ucx+shm; do
    echo "bench: $t" >&2
    run "$t" "$perf" --transport "$t"
    run "$t (tuned: NA_THREAD_MODE_SINGLE)" "$perf" --transport "$t" --tuned
done
# Busy polling like the raw loop: no CQ wait fd (tcp's costs ~2 us a round trip).
echo "bench: ofi+tcp (NA_NO_BLOCK)" >&2
run "ofi+tcp (NA_NO_BLOCK)" "$perf" --transport ofi+tcp --no-block
# hgx by default against a raw loop whose CQ has a wait fd too.
echo "bench: ofi+tcp (raw CQ wait fd)" >&2
run "ofi+tcp (raw CQ wait fd)" "$perf" --transport ofi+tcp --raw-wait
if [ -n "$mpirun_ompi" ] && "$perf" --help 2>/dev/null | grep -q mpi+static; then
    echo "bench: mpi+static (Open MPI)" >&2
    run "mpi+static (Open MPI)" "$mpirun_ompi" --oversubscribe --bind-to core -np 2 "$perf" --transport mpi+static
fi
if [ -n "${HGX_PERF_MPICH:-}" ] && command -v mpirun.mpich >/dev/null; then
    echo "bench: mpi+static (MPICH)" >&2
    run "mpi+static (MPICH)" mpirun.mpich -bind-to core -np 2 "$HGX_PERF_MPICH" --transport mpi+static
fi
echo "bench: table written to $out" >&2
