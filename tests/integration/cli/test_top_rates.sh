#!/usr/bin/env bash
# `hiredhand top` rates under a steady load: the counters move only when the worker beats (here
# every second), yet top reading every 0.2 s shows every snapshot's processed/s near the true
# rate (the jobs the handler finished over top's run), never the zeros and spikes of two reads'
# difference; the first snapshot waits for the rates rather than print none.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start

done_log="$HH_TMP/done.log"
printf '#!/bin/sh\ncat >/dev/null\nsleep 0.1\ndate +%%s.%%N >>"%s"\n' "$done_log" >"$HH_TMP/steady.sh"
chmod +x "$HH_TMP/steady.sh"
for i in $(seq 1 600); do echo "[$i]"; done >"$HH_TMP/args.jsonl"
hh_cli push Steady --bulk "$HH_TMP/args.jsonl" -r "$REDIS_URL"
assert_eq "$HH_RC" 0 "push --bulk (stderr: $HH_ERR)"
hh_start_worker -c 2 --heartbeat-interval 1 --exec "Steady=$HH_TMP/steady.sh"
hh_worker_wait_ready
must_wait 20 '[ "$(R get stat:processed)" -ge 20 ] 2>/dev/null' "the steady jobs did not start"

hh_cli top -r "$REDIS_URL" --json --interval 0.2 --count 15
assert_eq "$HH_RC" 0 "top --json --count 15 (stderr: $HH_ERR)"
printf '%s\n' "$HH_OUT" >"$HH_TMP/top.jsonl"
[ "$(R llen queue:default)" -gt 0 ] || fail "the queue ran dry during top's run: the load was not steady"
check="$(python3 - "$HH_TMP/top.jsonl" "$done_log" 2>&1 <<'PY'
import json, sys
snaps = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
assert len(snaps) == 15, "15 snapshots, got %d" % len(snaps)
done = [float(l) for l in open(sys.argv[2]) if l.strip()]
t0, t1 = snaps[0]["time"], snaps[-1]["time"]
# the true rate: the jobs finished over top's run, from its first rate's window on
start = t0 - snaps[0]["window"]
true = len([t for t in done if start <= t <= t1]) / (t1 - start)
rates = [s["processed_per_s"] for s in snaps]
assert all(isinstance(r, float) for r in rates), "a snapshot without a rate: %r" % rates
bad = [r for r in rates if not 0.5 * true <= r <= 1.6 * true]
# (two reads' difference gives 0 and 5 times it)
assert not bad, "rates %s, true rate %.1f/s: %s out of 0.5-1.6 times it" % (
    ", ".join("%.1f" % r for r in rates), true, ", ".join("%.1f" % r for r in bad))
print("ok %.1f/s: %s" % (true, " ".join("%.1f" % r for r in rates)))
PY
)" || fail "top's rates under a steady load: $check"
hh_log "$check"
pass
