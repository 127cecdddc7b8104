#!/bin/bash
# Install dependencies, build every configuration and run every test.
# Used by .ci/run. Exits non-zero on any failure, including a transport
# that did not run at all.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
sh tools/install-deps.sh
autoreconf -fi >/dev/null 2>&1 || autoreconf -fi
jobs=$(nproc)
logdir=$top/build-ci/logs
rm -rf "$top/build-ci"
mkdir -p "$logdir"

# One configuration: name, configure flags...; runs make check, keeps the log.
run_config() {
    local name=$1
    shift
    echo "=== [$name] configure $*"
    mkdir -p "$top/build-ci/$name"
    (cd "$top/build-ci/$name" && "$top/configure" --enable-werror "$@" >"$logdir/$name.configure" 2>&1) ||
        { tail -30 "$logdir/$name.configure"; return 1; }
    grep -A12 "configuration summary" "$logdir/$name.configure" || true
    echo "=== [$name] make"
    make -C "$top/build-ci/$name" -j"$jobs" >"$logdir/$name.make" 2>&1 ||
        { tail -40 "$logdir/$name.make"; return 1; }
    echo "=== [$name] make check"
    make -C "$top/build-ci/$name" check 2>&1 | tee "$logdir/$name.check"
    return "${PIPESTATUS[0]}"
}

status=0
run_config release || status=1
run_config asan --enable-sanitizers || status=1

echo "=== [valgrind] NA tests over ofi+tcp"
if [ -x "$top/build-ci/release/tests/test_na" ]; then
    (cd "$top/build-ci/release" && HGX_TEST_TRANSPORTS=ofi+tcp \
        libtool --mode=execute valgrind -q --error-exitcode=99 --leak-check=full \
        --errors-for-leak-kinds=definite --suppressions="$top/tools/valgrind.supp" \
        ./tests/test_na) 2>&1 | tee "$logdir/valgrind.log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
else
    status=1
fi

# No transport may be skipped as a whole: each must have run its test group.
for t in ofi+tcp ofi+shm ofi+sockets; do
    for cfg in release asan; do
        if ! grep -q "na/$t" "$logdir/$cfg.check" 2>/dev/null; then
            echo "hgx CI: transport $t did not run in the $cfg build"
            status=1
        fi
    done
done

sum_of() {
    cat "$logdir"/*.check "$logdir/valgrind.log" 2>/dev/null |
        awk -v tag="$1" 'index($0, "[  " tag "  ] ") == 1 && $5 ~ /^test/ {n += $4} END {print n + 0}'
}
echo "hgx CI: $(sum_of PASSED) passed, $(sum_of FAILED) failed"
exit $status
