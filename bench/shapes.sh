#!/usr/bin/env bash
# shapes.sh -- hiredhand's drain cost in many shapes: queues (strict and
# weighted), concurrency, worker processes, reliable and basic fetch.
# For each shape: jobs/s, Redis CPU per job (INFO cpu), worker CPU per job,
# Redis commands per job (INFO commandstats, script-internal calls
# included) and the workers' peak RSS. Starts a private redis-server on a
# free loopback port; builds bench/shapes_driver.c against the build folder.
#
#   bench/shapes.sh [--build DIR] [--lib DIR] [-n JOBS] [--quick] [--only REGEX] [--commands]
#     --build DIR  the build folder holding libhiredhand.so (default build)
#     --lib DIR    load libhiredhand from DIR instead (to measure another build)
#     -n JOBS      jobs per shape (default 100000; --quick: 20000)
#     --only RE    run only the shapes whose label matches RE (grep -E)
#     --commands   also print each command's calls per job
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=$here/build lib="" n="" quick=0 only=""
while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$(cd "$2" && pwd); shift 2 ;;
    --lib) lib=$(cd "$2" && pwd); shift 2 ;;
    -n) n=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    --only) only=$2; shift 2 ;;
    --commands) export SHAPES_COMMANDS=1; shift ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "shapes.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
[ -n "$n" ] || { [ $quick = 1 ] && n=20000 || n=100000; }
[ -f "$build/libhiredhand.so" ] || { echo "shapes.sh: no libhiredhand.so in $build (build first)" >&2; exit 2; }
work=$(mktemp -d)
redis_pid=""
cleanup() { [ -n "$redis_pid" ] && kill "$redis_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
cc -O2 -std=c11 -D_GNU_SOURCE -Wall -Werror -I"$here/include" -I"$build/include" -o "$work/driver" "$here/bench/shapes_driver.c" \
    -L"$build" -lhiredhand -lhiredis -pthread
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" --daemonize no \
    >"$work/redis.log" 2>&1 &
redis_pid=$!
for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
export LD_LIBRARY_PATH=${lib:-$build}
# label | driver arguments
shapes=(
    "1q c=10|-q 1 -c 10"
    "1q c=1|-q 1 -c 1"
    "1q c=100|-q 1 -c 100"
    "1q c=500|-q 1 -c 500"
    "10q strict c=10|-q 10 -c 10"
    "100q strict c=10|-q 100 -c 10"
    "1000q strict c=10|-q 1000 -c 10"
    "10q weighted c=10|-q 10 -c 10 --weighted"
    "100q weighted c=10|-q 100 -c 10 --weighted"
    "1000q weighted c=10|-q 1000 -c 10 --weighted"
    "1q c=10 2 procs|-q 1 -c 10 -p 2"
    "1q c=10 4 procs|-q 1 -c 10 -p 4"
    "1q c=10 basic|-q 1 -c 10 --basic"
    "1q c=100 basic|-q 1 -c 100 --basic"
    "100q strict c=10 basic|-q 100 -c 10 --basic"
    "1q c=100 1ms jobs|-q 1 -c 100 --sleep-us 1000"
    "10q weighted c=100 1ms jobs|-q 10 -c 100 --weighted --sleep-us 1000"
)
printf '%-26s %9s %10s %11s %9s %9s %s\n' shape jobs/s redis_us/j worker_us/j cmds/job rss_MiB ok
status=0
for s in "${shapes[@]}"; do
    label=${s%%|*} args=${s#*|}
    if [ -n "$only" ] && ! grep -Eq -- "$only" <<<"$label"; then continue; fi
    # shellcheck disable=SC2086
    if ! line=$("$work/driver" -u "redis://127.0.0.1:$port" -n "$n" $args); then status=1; fi
    first=$(head -1 <<<"$line")
    get() { sed -n "s/.*\b$1=\([^ ]*\).*/\1/p" <<<"$first"; }
    printf '%-26s %9s %10s %11s %9s %9.1f %s\n' "$label" "$(get jobs_s)" "$(get redis_us_job)" \
        "$(get worker_us_job)" "$(get cmds_job)" "$(awk -v k="$(get peak_rss_kib)" 'BEGIN { print k / 1024 }')" "$(get ok)"
    tail -n +2 <<<"$line"
done
exit $status
