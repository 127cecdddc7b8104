#!/bin/sh
# netns-agent.sh -- ssh replacement for simulated hosts (tests/multihost/hosts.sh):
#   netns-agent.sh [ssh options] HOST COMMAND...
# enters HOST's network namespace (through `ip netns exec`, which also mounts
# its /etc/hosts) and its UTS namespace (its hostname) and runs COMMAND with
# sh -c, as sshd would: in $HOME, with a fresh environment (PATH, HOME and
# HGX_MH_DIR only), so that what a launcher fails to forward fails here too.
# ssh options are accepted and ignored. The hosts come from $HGX_MH_DIR/HOST
# ("NETNS UTS-HOLDER-PID INDEX").
while [ $# -gt 0 ]; do
    case $1 in
    -[bcDEeFIiJLlmOopQRSWw]) shift 2 ;;
    -*) shift ;;
    *) break ;;
    esac
done
[ $# -ge 2 ] || { echo "usage: netns-agent.sh [ssh options] HOST COMMAND..." >&2; exit 255; }
host=${1#*@}
shift
state=${HGX_MH_DIR:-}/$host
[ -n "${HGX_MH_DIR:-}" ] && [ -r "$state" ] || { echo "netns-agent.sh: unknown host '$host'" >&2; exit 255; }
read -r ns uts_pid _ <"$state"
cd "${HOME:-/}" || exit 255
exec env -i PATH="$PATH" HOME="${HOME:-/}" HGX_MH_DIR="$HGX_MH_DIR" \
    ip netns exec "$ns" nsenter --uts="/proc/$uts_pid/ns/uts" -- sh -c "$*"
