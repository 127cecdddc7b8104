#!/bin/sh
# run-tput.sh [OUT.md] -- server throughput over every transport (make tput).
#
# For each transport and each number of clients: the raw transport's message
# rate (hgx-perf --raw --mode rate: each client keeps TPUT_WINDOW echo
# messages in flight against a busy-polling raw server), then hgx-tput with
# 1, 2 and 4 server contexts (a progress thread each, the default mode).
# Prints markdown tables (small RPCs against raw, then 64 KiB pulls) with the
# CPU time each side used per RPC, and writes them to OUT.md (default
# tput.md). A row is marked "falls" when a context count gives less than
# TPUT_DROP (default 0.8) times the one-context rate, and names any cell
# where one RPC's round trip took longer than TPUT_SLOW_MS (default 50 ms).
#
# Environment:
#   HGX_TPUT, HGX_PERF   programs to run (default ./hgx-tput, ./hgx-perf)
#   TPUT_TRANSPORTS      default "ofi+tcp ucx+tcp ofi+shm ucx+shm"
#   TPUT_CLIENTS         default "1 2 4 8"
#   TPUT_CONTEXTS        default "1 2 4"
#   TPUT_RPCS, TPUT_PULLS  timed RPCs per cell, split over the clients
#                        (default 40000 and 8000)
#   TPUT_WINDOW          RPCs each client keeps outstanding (default 16)
#   TPUT_REPEAT          runs of each cell, medians shown (default 1); off-target
#                        counts and the longest round trip are the runs' largest
#   TPUT_RAW=0           leave out the raw baseline
set -u
out=${1:-tput.md}
tput=${HGX_TPUT:-./hgx-tput}
perf=${HGX_PERF:-./hgx-perf}
transports=${TPUT_TRANSPORTS:-"ofi+tcp ucx+tcp ofi+shm ucx+shm"}
clients=${TPUT_CLIENTS:-"1 2 4 8"}
contexts=${TPUT_CONTEXTS:-"1 2 4"}
rpcs=${TPUT_RPCS:-40000}
pulls=${TPUT_PULLS:-8000}
window=${TPUT_WINDOW:-16}
repeat=${TPUT_REPEAT:-1}
drop=${TPUT_DROP:-0.8}
stall_us=$((${TPUT_SLOW_MS:-50} * 1000))
export HG_LOG_LEVEL="${HG_LOG_LEVEL:-error}" FI_TCP_IFACE="${FI_TCP_IFACE:-lo}" \
    UCX_NET_DEVICES="${UCX_NET_DEVICES:-lo}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
csv=$tmp/tput.csv raw=$tmp/raw.csv log=${out%.md}.log
: >"$log"
echo "transport,clients,raw_ops_per_s" >"$raw"

for t in $transports; do
    for n in $clients; do
        if [ "${TPUT_RAW:-1}" != 0 ]; then
            echo "tput: $t raw, $n client(s)" >&2
            # hgx-perf's rate iterations are per client and in-flight count (x4).
            it=$((rpcs / n / 4))
            if "$perf" --transport "$t" --mode rate --raw --clients "$n" \
                --iters "$it" --quiet --csv "$tmp/r.csv" >>"$log" 2>&1; then
                awk -F, -v t="$t" -v n="$n" -v w="$window" \
                    '$3 == "rate-ops/s" && $4 == w {print t "," n "," $7}' \
                    "$tmp/r.csv" >>"$raw"
            else
                echo "tput: raw $t with $n clients failed (see $log)" >&2
            fi
        fi
        # Rounds over the context counts, so that the machine's drift
        # reaches every count alike.
        for round in $(seq "$repeat"); do
            for c in $contexts; do
                echo "tput: $t, $n client(s), $c context(s), round $round" >&2
                # A phase that stalls fails the run; the cell then says so.
                if ! "$tput" --transport "$t" --clients "$n" --contexts "$c" \
                    --window "$window" --iters $((rpcs / n)) --pull-iters $((pulls / n)) \
                    --csv "$csv" >>"$log" 2>&1; then
                    echo "tput: $t, $n clients, $c contexts FAILED (see $log)" >&2
                    echo "$t,failed,$c,$n" >>"$csv"
                fi
            done
        done
    done
done

# Tables: one row per transport and client count; per context count the
# rate, hgx/raw (small RPCs), and CPU us per RPC of the server / all clients.
awk -F, -v drop="$drop" -v ctxs="$contexts" -v kinds="rpc pull" -v stall_us="$stall_us" '
FNR == 1 { file++; next }
file == 1 { raw[$1 "," $2] = $3; next }
function median(cell, f,    n, i, j, t, v) {
    n = runs[cell]
    for (i = 1; i <= n; i++) v[i] = val[cell, f, i] + 0
    for (i = 2; i <= n; i++)
        for (j = i; j > 1 && v[j - 1] > v[j]; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
    return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
{
    key = $1 "," $4
    if (!(key in seen)) { seen[key] = 1; order[++nrow] = key }
}
$2 == "failed" { fail[key "," $3] = 1; next }
{
    cell = $2 "," key "," $3
    k = ++runs[cell]
    for (f = 9; f <= 12; f++) val[cell, f, k] = $f
    if (k == 1 || $14 > off[cell]) off[cell] = $14
    if (k == 1 || $16 > maxrt[cell]) maxrt[cell] = $16
}
END {
    for (cell in runs) {
        rate[cell] = median(cell, 9); mib[cell] = median(cell, 10)
        scpu[cell] = median(cell, 11); ccpu[cell] = median(cell, 12)
    }
    nc = split(ctxs, cx, " ")
    nk = split(kinds, kd, " ")
    for (ki = 1; ki <= nk; ki++) {
        k = kd[ki]
        if (k == "rpc") {
            print "### Small RPCs (RPC/s; hgx/raw; CPU us per RPC: server / all clients)"
            print ""
            hdr = "| transport | clients | raw msg/s |"; sep = "|---|---:|---:|"
        } else {
            print ""
            print "### RPCs that pull 64 KiB from the client (RPC/s; MiB/s; CPU us per RPC: server / all clients)"
            print ""
            hdr = "| transport | clients |"; sep = "|---|---:|"
        }
        for (i = 1; i <= nc; i++) {
            hdr = hdr " " cx[i] " ctx |"; sep = sep "---:|"
        }
        print hdr " contexts added |"
        print sep "---|"
        for (r = 1; r <= nrow; r++) {
            split(order[r], p, ",")
            line = "| " p[1] " | " p[2] " |"
            if (k == "rpc")
                line = line " " ((order[r] in raw) ? sprintf("%.0f", raw[order[r]]) : "-") " |"
            base = ""; worst = ""; verdict = "no drop"
            for (i = 1; i <= nc; i++) {
                cell = k "," order[r] "," cx[i]
                if ((order[r] "," cx[i]) in fail) verdict = "FAILED"
                if (!(cell in rate)) {
                    line = line ((order[r] "," cx[i]) in fail ? " FAILED |" : " - |")
                    continue
                }
                v = rate[cell] + 0
                extra = k == "rpc" ? ((order[r] in raw) && raw[order[r]] > 0 ? sprintf("%.2fx", v / raw[order[r]]) : "-") \
                                   : sprintf("%.0f MiB/s", mib[cell])
                line = line sprintf(" %.0f; %s; %.1f / %.1f%s |", v, extra, scpu[cell], ccpu[cell],
                                    off[cell] > 0 ? sprintf("; %d off target", off[cell]) : "")
                if (base == "") base = v
                else if (v < drop * base && verdict != "FAILED" && (worst == "" || v / base < worst)) {
                    worst = v / base
                    verdict = sprintf("falls (%.2fx at %s ctx)", worst, cx[i])
                }
                if (maxrt[cell] > stall_us)
                    slow = slow sprintf("; an RPC took %.0f ms at %s ctx", maxrt[cell] / 1000, cx[i])
            }
            print line " " verdict slow " |"
            slow = ""
        }
    }
}' "$raw" "$csv" >"$tmp/tables.md"

{
    echo "hgx-tput run, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $(uname -m), load average" \
        "$(cut -d' ' -f1-3 /proc/loadavg) at the end."
    echo "Server: one process, N contexts with a progress thread each (HG_Progress +"
    echo "HG_Trigger, default thread-safe mode). Clients: processes with $window RPCs"
    echo "outstanding each, handles spread over the contexts with HG_Set_target_id;"
    echo "$rpcs small RPCs and $pulls pulls per cell, split over the clients. Raw: hgx-perf"
    echo "--raw --mode rate, the same clients with $window echo messages in flight each."
    [ "$repeat" -gt 1 ] && echo "Each cell: the median of $repeat runs (off-target counts and" \
        "the longest round trip: the largest)."
    echo
    cat "$tmp/tables.md"
} >"$out"
cat "$out"
echo "tput: tables written to $out, process output in $log" >&2
