#!/usr/bin/env bash
# The dashboard's live graph against stat:processed over real time: a hiredhand worker runs
# jobs pushed at a steady pace (about 5 a second) for HH_LIVE_GRAPH_SECONDS (default 60) while a
# real headless chromium keeps `hiredhand web`'s dashboard open in real time (driven over the
# DevTools pipe, tests/lib/cdp.py: no virtual time). Then, read from the live DOM:
#  - the page polled in real time (about one poll per 5 s of the window);
#  - the points it plotted sum to the growth of stat:processed between its first and last
#    poll, and that growth is every job pushed (its first poll came before the load, its last
#    after stat:processed settled);
#  - the polyline drawn is those points (its y coordinates), failed points are all 0, and
#    most intervals of the load show jobs.
# SKIP (exit 77) only when chromium is missing.
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/heartbeat_helpers.sh"
. "$(dirname "$0")/../../lib/web_helpers.sh"
web_require_chromium
window="${HH_LIVE_GRAPH_SECONDS:-60}"
case "$window" in '' | *[!0-9]*) fail "HH_LIVE_GRAPH_SECONDS=$window: want whole seconds" ;; esac
hh_redis_start
R set stat:processed 1000 >/dev/null
hh_start_worker -c 4 -q live --heartbeat-interval 1 --exec "LiveJob=/bin/true"
hh_worker_wait_ready 15
web_start

hb_cdp_open "$WEB_URL/#/"
hb_cdp_eval 30 "document.body.getAttribute('data-ready') === 'dashboard' && document.querySelector('#live svg') !== null" \
    >/dev/null || fail "the dashboard did not render in chromium: $HB_CDP_OUT $(tail -n 3 "$HH_TMP/chromium.err")"

# the load: a steady pace for the window, one line per job pushed
pushed="$HH_TMP/pushed"
: >"$pushed"
start="$(date +%s)"
(
    end=$(($(date +%s) + window))
    while [ "$(date +%s)" -lt "$end" ]; do
        "$HIREDHAND" push LiveJob '[1]' -q live -r "$REDIS_URL" >>"$pushed" || exit 1
        sleep 0.2   # the pace of the load, not a wait for an event
    done
) &
loader=$!
hh_track_pid "$loader"
must_wait $((window + 30)) '! kill -0 "$loader" 2>/dev/null' "the load did not end"
wait "$loader" || fail "a push failed"
elapsed=$(($(date +%s) - start))
n="$(grep -c . "$pushed")"
[ "$n" -ge "$window" ] || fail "only $n jobs pushed in $window s"
final=$((1000 + n))
must_wait 60 '[ "$(R get stat:processed)" = "$final" ]' \
    "stat:processed did not reach $final (1000 + $n jobs): $(R get stat:processed)"
# the page's last poll after stat:processed settled
hb_cdp_eval 30 "(function () { var p = document.querySelector('#live svg').getAttribute('data-polled').split(',');
    return p[p.length - 1] === '$final' && p.join(','); })()" >/dev/null \
    || fail "the page did not poll stat:processed=$final: $HB_CDP_OUT"
graph="$(hb_cdp_eval 5 "(function () { var s = document.querySelector('#live svg');
    return JSON.stringify({ polled: s.getAttribute('data-polled'), processed: s.getAttribute('data-processed'),
      failed: s.getAttribute('data-failed'), line: s.querySelector('polyline.p').getAttribute('points') }); })()")" \
    || fail "cannot read the live graph: $HB_CDP_OUT"
hb_cdp_close
hh_log "live graph after ${elapsed}s of load ($n jobs): $graph"

python3 - "$graph" "$elapsed" "$n" <<'EOF' || fail "the live graph does not match stat:processed (graph: $graph)"
import json, sys
g = json.loads(json.loads(sys.argv[1]))
elapsed, n = int(sys.argv[2]), int(sys.argv[3])
ints = lambda s: [int(x) for x in s.split(",") if x != ""]
polled, points, failed = ints(g["polled"]), ints(g["processed"]), ints(g["failed"])
def check(ok, what):
    if not ok:
        print("FAIL: " + what, file=sys.stderr)
        sys.exit(1)
check(len(polled) == len(points) + 1, "one poll more than points: %d polls, %d points" % (len(polled), len(points)))
# real time: a poll per 5 s of the load (and the few seconds of settling after it)
check(elapsed // 5 - 1 <= len(points) <= elapsed // 5 + 12, "%d points for %d s of load" % (len(points), elapsed))
check(sum(points) == polled[-1] - polled[0],
      "the points sum to %d, stat:processed grew by %d between the first and last poll (%d -> %d)"
      % (sum(points), polled[-1] - polled[0], polled[0], polled[-1]))
check(polled[0] == 1000 and polled[-1] == 1000 + n, "first and last poll %d, %d: want 1000 (before the load), %d"
      % (polled[0], polled[-1], 1000 + n))
check(all(p >= q for p, q in zip(polled[1:], polled)), "stat:processed as polled went down: %s" % polled)
check(sum(failed) == 0 and len(failed) == len(points), "failed points: %s" % failed)
busy = sum(1 for p in points[:elapsed // 5] if p > 0)
check(busy >= (elapsed // 5) // 2, "only %d intervals of the load show jobs: %s" % (busy, points))
# the polyline is those points: y = 155 - v * 150 / max (the graph's scale)
top = max([1] + points + failed)
ys = [float(xy.split(",")[1]) for xy in g["line"].split()]
check(len(ys) == len(points) and all(abs(y - (155 - v * 150 / top)) < 0.06 for y, v in zip(ys, points)),
      "the polyline's y coordinates %s are not the points %s" % (ys, points))
EOF
pass
