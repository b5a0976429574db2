#!/usr/bin/env bash
# tests/integration/run.sh -- run hiredhand's integration tests.
#
#   bash tests/integration/run.sh [-j N] [NAME...]
#
# Runs every tests/integration/<group>/test_*.sh (or only those whose group/name contains one of
# NAME...: `test_serve_pool`, `serve_pool` or a whole group as `recovery/`),
# at most N at a time (default $HH_JOBS or 2: every test starts its own redis-server, so they
# can run side by side). Each test is bounded by HH_TEST_TIMEOUT seconds (default 300).
# Prints "PASS name (Ns)" / "FAIL name (Ns)" per test, the output of each failed test, and a
# final line exactly "N passed, M failed". Exits 1 when any test failed (or none ran).
# HIREDHAND=/path/to/binary is passed through to the tests.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
jobs="${HH_JOBS:-2}"
per_test_timeout="${HH_TEST_TIMEOUT:-300}"
filters=()
while [ $# -gt 0 ]; do
    case "$1" in
        -j) jobs="$2"; shift 2 ;;
        -j*) jobs="${1#-j}"; shift ;;
        -h|--help) sed -n 2,12p "$0"; exit 0 ;;
        *) filters+=("$1"); shift ;;
    esac
done
case "$jobs" in ''|*[!0-9]*|0) echo "run.sh: -j wants a positive number" >&2; exit 2 ;; esac

tests=()
for t in "$here"/*/test_*.sh; do
    [ -f "$t" ] || continue
    name="$(basename "$t" .sh)"
    group="$(basename "$(dirname "$t")")"
    if [ ${#filters[@]} -gt 0 ]; then
        keep=0
        for f in "${filters[@]}"; do case "$group/$name" in *"$f"*) keep=1 ;; esac; done
        [ $keep = 1 ] || continue
    fi
    tests+=("$t")
done
if [ ${#tests[@]} = 0 ]; then
    echo "0 passed, 0 failed"
    exit 1
fi

outdir="$(mktemp -d "${TMPDIR:-/tmp}/hh-run.XXXXXX")"
declare -A pid_name=() pid_start=()
passed=0
failed=0
failed_names=()
running=0

# On ^C / TERM: stop the running tests (each cleans up its own processes on TERM).
stop_all() {
    local p
    for p in "${!pid_name[@]}"; do kill -TERM "$p" 2>/dev/null; done
    wait
    rm -rf "$outdir"
    exit 130
}
trap stop_all INT TERM

reap_one() {
    local done_pid rc name dur
    wait -n -p done_pid
    rc=$?
    name="${pid_name[$done_pid]}"
    dur=$((SECONDS - pid_start[$done_pid]))
    unset "pid_name[$done_pid]" "pid_start[$done_pid]"
    running=$((running - 1))
    if [ "$rc" = 0 ]; then
        passed=$((passed + 1))
        echo "PASS $name (${dur}s)"
    else
        failed=$((failed + 1))
        failed_names+=("$name")
        [ "$rc" = 124 ] && echo "FAIL $name (${dur}s, timed out after ${per_test_timeout}s)" || echo "FAIL $name (${dur}s, exit $rc)"
        echo "----- output of $name -----"
        tail -n 80 "$outdir/$name.log"
        echo "----- end of $name -----"
    fi
}

for t in "${tests[@]}"; do
    while [ "$running" -ge "$jobs" ]; do reap_one; done
    name="$(basename "$t" .sh)"
    # timeout sends TERM (the test's trap kills its redis/workers), then KILL 15 s later
    timeout -k 15 "$per_test_timeout" bash "$t" >"$outdir/$name.log" 2>&1 &
    pid_name[$!]="$name"
    pid_start[$!]=$SECONDS
    running=$((running + 1))
done
while [ "$running" -gt 0 ]; do reap_one; done

rm -rf "$outdir"
[ $failed -gt 0 ] && echo "failed: ${failed_names[*]}"
echo "$passed passed, $failed failed"
[ $failed = 0 ]
