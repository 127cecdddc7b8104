#!/bin/sh
# hgx-info.sh -- hgx-info lists the built protocols and versions, --listen
# prints a loopback address with its port and rejects an unknown protocol,
# --params lists the parameters with a set value shown, --ping gets three
# answers from --serve servers on ofi+tcp, ucx+tcp and Mercury's na+sm, and a
# ping to a closed port fails within its timeout. Traffic stays on lo.
set -u
name=hgx-info
info=${top_builddir:-.}/hgx-info
[ -x "$info" ] || { echo "$name: SKIP: $info not built"; exit 77; }
have() { grep -q "define HGX_HAVE_$1 1" "${top_builddir:-.}/config.h"; }
have_sm() { have UCX || have OFI; } # na+sm is served by ucx+shm, else ofi+shm
out=$(mktemp "${TMPDIR:-/tmp}/hgx-info.XXXXXX") || exit 1
srv_out=$(mktemp "${TMPDIR:-/tmp}/hgx-info-srv.XXXXXX") || exit 1
srv=
stop_server() {
    [ -n "$srv" ] && kill "$srv" 2>/dev/null && wait "$srv"
    srv=
}
trap 'stop_server; rm -f "$out" "$srv_out"' EXIT INT TERM
fail=0
pass() { echo "PASS $name: $1"; }
bad() {
    echo "FAIL $name: $1"
    sed 's/^/    /' "$out"
    fail=1
}
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# --- plain listing: every built protocol, lo, and the versions
"$info" >"$out" 2>&1 || bad "listing exits $?"
expect=" hgx mercury na"
have OFI && expect="$expect ofi+tcp ofi+sockets ofi+shm ofi+tcp;ofi_rxm libfabric"
have UCX && expect="$expect ucx+tcp ucx+shm ucx+all UCX"
have MPI && expect="$expect mpi+static mpi+dynamic MPI"
have_sm && expect="$expect na+sm"
missing=
for word in $expect; do
    grep -q "^  $word " "$out" || missing="$missing $word"
done
grep -q "unknown medium" "$out" && missing="$missing (a protocol without its medium)"
grep -q "^  lo .* loopback 127\.0\.0\.1" "$out" || missing="$missing lo"
if [ -z "$missing" ]; then pass "listing has$expect lo"; else bad "listing lacks$missing"; fi

# --- --params: every parameter with its scope, type and default; a set one shows its value
HGX_NA_SPIN_US=17 "$info" --params >"$out" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -Eq '^  HGX_NA_SPIN_US +core +int +default 50, range 0..100000, now "17"$' "$out" &&
    grep -Eq '^  HG_LOG_LEVEL +core +string +default error(, now .*)?$' "$out" &&
    grep -q '^  HGX_NA_UNEXPECTED_MAX ' "$out"; then
    pass "--params lists $(grep -c '^  [A-Z]' "$out") parameters, HGX_NA_SPIN_US=17 shown as set"
else
    bad "--params (exit $rc)"
fi
# each built plugin lists its own, under its name
missing=
have UCX && { grep -Eq '^  HGX_UCX_SEND_WINDOW +ucx +int ' "$out" || missing="$missing ucx"; }
have MPI && { grep -Eq '^  HGX_MPI_SERVICE +mpi +string +default hgx' "$out" || missing="$missing mpi"; }
if [ -z "$missing" ]; then pass "--params lists the plugins' own parameters"; else bad "--params lacks the parameters of:$missing"; fi

# --- --listen: the advertised address, and a clear error for a bad info
if have OFI; then
    "$info" --listen ofi+tcp://127.0.0.1 >"$out" 2>&1
    rc=$?
    if [ $rc -eq 0 ] && grep -Eqx 'ofi\+tcp://127\.0\.0\.1:[1-9][0-9]*' "$out"; then
        pass "--listen ofi+tcp://127.0.0.1 prints $(cat "$out")"
    else
        bad "--listen ofi+tcp://127.0.0.1 (exit $rc)"
    fi
fi
if have_sm; then
    "$info" --listen na+sm >"$out" 2>&1
    rc=$?
    if [ $rc -eq 0 ] && grep -Eqx 'na\+sm://[^ ]+' "$out"; then
        pass "--listen na+sm prints $(cat "$out")"
    else
        bad "--listen na+sm (exit $rc)"
    fi
fi
"$info" --listen nosuch+proto >"$out" 2>&1
rc=$?
if [ $rc -ne 0 ] && grep -q 'no plugin "nosuch"' "$out" &&
    grep -q 'cannot listen on "nosuch+proto"' "$out"; then
    pass "--listen nosuch+proto fails (exit $rc) with hgx's error"
else
    bad "--listen nosuch+proto (exit $rc)"
fi
"$info" --ping >"$out" 2>&1
rc=$?
if [ $rc -eq 2 ] && grep -q "needs an argument" "$out"; then
    pass "bad usage exits 2"
else
    bad "--ping without ADDR (exit $rc)"
fi

# Starts "$info --serve $1" and sets addr to the address it prints.
start_server() {
    : >"$srv_out" # the old server's address must not be read as the new one
    "$info" --serve "$1" >"$srv_out" 2>&1 &
    srv=$!
    addr=
    for _ in $(seq 100); do
        addr=$(grep -m 1 -E '^[a-z]+\+[a-z]+://' "$srv_out")
        case $addr in *://*) return 0 ;; esac
        kill -0 "$srv" 2>/dev/null || break
        sleep 0.1
    done
    cp "$srv_out" "$out"
    bad "--serve $1 printed no address"
    stop_server
    return 1
}

# --- --ping against a server, then against its closed port
timeout_ms=500
for server in ofi+tcp://127.0.0.1 ucx+tcp://127.0.0.1 na+sm; do
    case $server in
    ofi+*) have OFI || continue ;;
    ucx+*) have UCX || continue ;;
    na+*) have_sm || continue ;;
    esac
    start_server "$server" || continue
    "$info" --ping "$addr" --count 3 --timeout 5000 >"$out" 2>&1
    rc=$?
    answers=$(awk -v a="$addr" '$1 == "ping" && $3 == "answer" && $5 == a &&
        $7 ~ /^[0-9]+\.[0-9]+$/ && $8 == "ms"' "$out" | wc -l)
    if [ $rc -eq 0 ] && [ "$answers" -eq 3 ] && grep -q "^3 sent, 3 answered" "$out"; then
        pass "--ping $addr --count 3: 3 round trips"
    else
        bad "--ping $addr --count 3 (exit $rc, $answers answers)"
    fi
    stop_server
    start=$(now_ms)
    "$info" --ping "$addr" --count 1 --timeout $timeout_ms >"$out" 2>&1
    rc=$?
    elapsed=$(($(now_ms) - start))
    # The timeout bounds the ping; class setup and teardown get a few seconds.
    if [ $rc -ne 0 ] && [ $elapsed -lt $((timeout_ms + 5000)) ] &&
        grep -Eq "no answer within $timeout_ms ms|failed|cannot look up" "$out"; then
        pass "--ping to closed $addr fails in $elapsed ms (exit $rc)"
    else
        bad "--ping to closed $addr (exit $rc after $elapsed ms)"
    fi
done
exit $fail
