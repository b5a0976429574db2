#!/usr/bin/env bash
# As PID 1 (a container without an init), `hiredhand work` reaps the orphaned grandchildren of its
# --exec handlers, without stealing the handlers' own exit statuses. Today's fault: 20 jobs whose
# handler backgrounds a child (`sleep 1 &`) and exits left 20 zombies.
# Run under `unshare --pid --fork --mount-proc` (needs root): 20 BgJobs (exit 0) and one BgFail
# (exit 3), each leaving a `sleep 1` behind. Expected: the 20 succeed (nothing in retry for them),
# BgFail is in the retry set with "exited with status 3"; once the sleeps are over, no process
# in the namespace is a zombie; TERM to the namespace's PID 1 stops the worker, status 0.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
if ! unshare --pid --fork --mount-proc true 2>/dev/null; then
    echo "SKIP: test_pid1_reaps: unshare --pid --fork --mount-proc not permitted here (needs root)"
    exit 77
fi
command -v nsenter >/dev/null || fail "nsenter is not installed"
hh_redis_start
PID1_DIR="$HH_TMP/pid1"
mkdir -p "$PID1_DIR" || fail "mkdir"
: >"$PID1_DIR/ran"
export PID1_DIR

now="$(hh_now)"
ok_jids=()
for ((i = 0; i < 20; i++)); do
    jid="$(hh_jid)"; ok_jids+=("$jid")
    R lpush queue:default "$(printf '{"retry":true,"queue":"default","class":"BgJob","args":[],"jid":"%s","created_at":%s,"enqueued_at":%s}' "$jid" "$now" "$now")" >/dev/null
done
fail_jid="$(hh_jid)"
R lpush queue:default "$(printf '{"retry":true,"queue":"default","class":"BgFail","args":[],"jid":"%s","created_at":%s,"enqueued_at":%s}' "$fail_jid" "$now" "$now")" >/dev/null

LOG="$HH_TMP/worker.log"
HH_WORKER_LOGS+=("$LOG")
setsid unshare --pid --fork --mount-proc "$HIREDHAND" work -r "$REDIS_URL" -c 4 -t 5 \
    --exec "BgJob=$HH_HANDLERS/bg_child.sh" --exec "BgFail=$HH_HANDLERS/bg_child.sh 3" </dev/null >"$LOG" 2>&1 &
UNSHARE_PID=$!
hh_track_pid "$UNSHARE_PID"
NSPID=""
must_wait 10 'NSPID="$(ps -o pid= --ppid "$UNSHARE_PID" | tr -d " ")"; [ -n "$NSPID" ]' "no PID 1 under unshare"
ns_ps() { nsenter --target "$NSPID" --pid --mount ps -e -o pid=,stat=,comm=; }
hh_log "namespace's PID 1 is host pid $NSPID; inside: $(ns_ps | tr '\n' ';')"

must_wait 30 '[ "$(sort -u "$PID1_DIR/ran" | grep -c .)" -ge 21 ]' "not every job ran: $(grep -c . "$PID1_DIR/ran") of 21"
must_wait 15 '[ "$(R zcard retry)" -ge 1 ]' "BgFail not in the retry set"
# the sleeps end a second after their handler; then nothing may be left as a zombie
must_wait 15 '[ -z "$(ns_ps | awk '"'"'$3 == "sleep" && $2 !~ /^Z/'"'"')" ]' "the handlers' sleeps still running after 15 s"
if ! wait_until 5 '[ "$(ns_ps | awk '"'"'$2 ~ /^Z/'"'"' | grep -c .)" = 0 ]'; then
    fail "zombies left in the namespace: $(ns_ps | awk '$2 ~ /^Z/' | grep -c .) ($(ns_ps | tr '\n' ';'))"
fi
assert_eq "$(R zcard retry)" 1 "jobs in the retry set (only BgFail)"
entry="$(R zrange retry 0 -1)"
assert_contains "$entry" "\"jid\":\"$fail_jid\"" "the retry entry is BgFail's"
assert_contains "$entry" "exited with status 3" "BgFail's error message carries its exit status"
assert_eq "$(R zcard dead)" 0 "dead set"
for jid in "${ok_jids[@]}"; do grep -qx "$jid" "$PID1_DIR/ran" || fail "BgJob $jid did not run"; done

kill -TERM "$NSPID"
wait_until 15 "! kill -0 $UNSHARE_PID" || fail "worker under unshare still running 15 s after TERM to its PID 1"
wait "$UNSHARE_PID"; rc=$?
assert_eq "$rc" 0 "exit status of the worker (through unshare) after TERM"
grep -q "INFO: stopped:" "$LOG" || fail "no 'stopped' line: $(tail -n 5 "$LOG")"
pass "as PID 1: 21 handlers' orphans reaped (0 zombies), handlers' statuses intact (exit 3 -> retry), TERM forwarded"
