#!/bin/sh
# tput-smoke.sh: hgx-tput briefly, 2 clients against a server of 2 contexts
# (a progress thread each), over ofi+tcp and ucx+tcp on loopback: a few
# hundred small RPCs and pulls of 64 KiB, every pulled word checked
# (--verify). hgx-tput fails unless every RPC completed once, every reply and
# every pulled buffer checked out, and the server answered exactly as many;
# a phase that does not finish within 60 s is reported as a stall and fails.
# Each RPC must also run on the context its handle aimed at (--check-target).
# Figures are not judged.
set -u
tput=${top_builddir:-.}/hgx-tput
[ -x "$tput" ] || { echo "tput-smoke: $tput not built"; exit 1; }
out=$(mktemp "${TMPDIR:-/tmp}/hgx-tput-smoke.XXXXXX") || exit 1
trap 'rm -f "$out"' EXIT INT TERM
passed=0 failed=0 ran=0

for t in ofi+tcp ucx+tcp; do
    case $t in
    ofi+*) grep -q "define HGX_HAVE_OFI 1" "${top_builddir:-.}/config.h" ||
        { echo "SKIP $t: built without libfabric"; continue; } ;;
    ucx+*) grep -q "define HGX_HAVE_UCX 1" "${top_builddir:-.}/config.h" ||
        { echo "SKIP $t: built without UCX"; continue; } ;;
    esac
    ran=$((ran + 1))
    if "$tput" --transport "$t" --contexts 2 --clients 2 --iters 300 --pull-iters 100 \
        --verify --check-target --timeout 60 >"$out" 2>&1; then
        rows=$(awk '$1 == "rpc" || $1 == "pull"' "$out" | wc -l)
        if [ "$rows" -eq 2 ]; then
            echo "PASS $t: 2 clients, 2 contexts ($(awk '$1 == "rpc" || $1 == "pull" {
                printf "%s%s %s RPCs, %s off target", n++ ? "; " : "", $1, $2, $10 }' "$out"))"
            passed=$((passed + 1))
            continue
        fi
        echo "FAIL $t: $rows result rows, want 2"
    else
        echo "FAIL $t: hgx-tput failed"
    fi
    sed 's/^/    /' "$out"
    failed=$((failed + 1))
done
# Bad arguments are refused with exit status 2.
for bad in "--contexts 5" "--clients 0" "--window 65" "--pull-size 100" "--transport mpi+static"; do
    # shellcheck disable=SC2086 # each set of arguments is split on purpose
    "$tput" $bad >/dev/null 2>&1
    if [ $? -eq 2 ]; then
        passed=$((passed + 1))
    else
        echo "FAIL hgx-tput $bad was not refused"
        failed=$((failed + 1))
    fi
done
echo "tput-smoke: $passed passed, $failed failed"
[ "$ran" -gt 0 ] || { echo "tput-smoke: no transport built"; exit 77; }
[ "$failed" -eq 0 ]
