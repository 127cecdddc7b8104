# addr-lib.sh -- sourced by loopback-addr.sh and netns-addr.sh: start a
# test_load server with an info string, check the address it advertises,
# and make one RPC whose handler pulls 1 MiB from the client (data checked).
# Needs $bin (test_load) and $name (the script's name for messages).

srv_pgid=
stop_server() {
    [ -n "$srv_pgid" ] && kill -TERM -- "-$srv_pgid" 2>/dev/null
    srv_pgid=
}

# addr_case "SERVER_CMD_PREFIX" SERVER_INFO "CLIENT_CMD_PREFIX" CLIENT_INFO ADDR_GLOB
# Prefixes run a command elsewhere ("ip netns exec NS") or are empty.
# ADDR_GLOB: the advertised address must match it (e.g. "ofi+tcp://127.0.0.1:*").
addr_case() {
    out=$(mktemp)
    setsid $1 "$bin" --serve "$2" >"$out" 2>&1 &
    srv_pgid=$!
    for _ in $(seq 100); do [ -s "$out" ] && break; sleep 0.1; done
    addr=$(head -n1 "$out")
    rc=0
    case $addr in
    $5)
        if $3 timeout 60 "$bin" --call "$addr" 1048576 10000 "$4" >"$out.call" 2>&1; then
            echo "$name: server \"$2\" advertised $addr; client \"$4\": RPC + 1 MiB pull OK"
        else
            echo "$name: server \"$2\" advertised $addr; client \"$4\": FAILED: $(cat "$out.call")"
            rc=1
        fi ;;
    *)
        echo "$name: server \"$2\": advertised \"$addr\", want $5: $(tail -n3 "$out")"
        rc=1 ;;
    esac
    stop_server
    rm -f "$out" "$out.call"
    return $rc
}
