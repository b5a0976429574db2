#!/usr/bin/env bash
# The heartbeat is written
# atomically, always with its TTL, and busy matches the work hash.
#   -c 3, two SlowJob(12)s; `redis-cli MONITOR` captured from before the start over 4+ beats and
#   the clean stop. Checked:
#   - every HSET <id> is inside MULTI/EXEC together with SADD processes <id> and EXPIRE <id> 60;
#     every HSET <id>:work / <id>:workers with its EXPIRE 60 in the same transaction; no HSET of
#     those keys outside a transaction; no EXPIRE <id> other than 60;
#   - the first beat comes right at start-up (< 3 s);
#   - sampled every 0.3 s in one MULTI: HGET <id> busy == HLEN <id>:work == HLEN <id>:workers,
#     TTL <id> in [1,60], TTL <id>:work(ers) in [1,60] whenever the key exists (never -1);
#     busy is 2 while the jobs sleep and 0 after;
#   - after SIGTERM: no SADD/HSET of <id> follows the SREM (no ghost re-registration), the work
#     hashes are gone and the <id> hash still has a TTL in [1,60] (never -1).
# The MONITOR parser is first checked on a synthetic bad capture, so it can fail.
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/heartbeat_helpers.sh"
hh_require_binary

# --- self-check of the parser: these captures must be rejected
bad="$HH_TMP/bad.monitor"
cat >"$bad" <<'CAP'
1.0 [0 127.0.0.1:1] "MULTI"
1.1 [0 127.0.0.1:1] "SADD" "processes" "h:1:abc"
1.2 [0 127.0.0.1:1] "HSET" "h:1:abc" "busy" "0"
1.3 [0 127.0.0.1:1] "EXEC"
1.4 [0 127.0.0.1:1] "EXPIRE" "h:1:abc" "60"
CAP
hb_check_atomic "$bad" h:1:abc >/dev/null 2>&1 && fail "parser self-check: HSET without EXPIRE in its transaction was not detected"
printf '%s\n' '1.0 [0 127.0.0.1:1] "HSET" "h:1:abc:work" "t1" "{}"' >"$bad"
hb_check_atomic "$bad" h:1:abc >/dev/null 2>&1 && fail "parser self-check: HSET of the work hash outside MULTI was not detected"

hh_redis_start
mon="$HH_TMP/monitor.txt"
hb_monitor_start "$mon"
j1="$(hh_jid)"; j2="$(hh_jid)"
hb_push SlowJob "$j1" '[12]' default
hb_push SlowJob "$j2" '[12]' default
hh_start_worker -c 3 --exec "SlowJob=$HH_HANDLERS/sleep.sh 12"
hb_wait_identity "$WORKER_PID" 3
id="$HB_ID"

sample() {   # -> "busy hlen_work hlen_workers ttl_id ttl_work ttl_workers"
    printf 'MULTI\nHGET %s busy\nHLEN %s:work\nHLEN %s:workers\nTTL %s\nTTL %s:work\nTTL %s:workers\nEXEC\n' \
        "$id" "$id" "$id" "$id" "$id" "$id" | R | tail -n 6 | tr '\n' ' '
}
nsamples=0; seen2=0; seen0_after=0; beats=0; last=""
deadline=$((SECONDS + 24))
while [ $SECONDS -lt $deadline ]; do
    read -r busy lw lws tid tw tws <<<"$(sample)"
    nsamples=$((nsamples + 1))
    [ "$busy" = "$lw" ] && [ "$lw" = "$lws" ] \
        || fail "sample $nsamples: HGET busy=[$busy] HLEN :work=[$lw] HLEN :workers=[$lws] differ"
    assert_between "$tid" 1 60 "sample $nsamples: TTL $id"
    if [ "$lw" -gt 0 ]; then
        assert_between "$tw" 1 60 "sample $nsamples: TTL $id:work"
        assert_between "$tws" 1 60 "sample $nsamples: TTL $id:workers"
    fi
    [ "$tw" != -1 ] || fail "sample $nsamples: $id:work has no TTL"
    [ "$tws" != -1 ] || fail "sample $nsamples: $id:workers has no TTL"
    [ "$busy" = 2 ] && seen2=1
    [ "$busy" = 0 ] && [ "$(R llen test:ran)" = 2 ] && seen0_after=1
    b="$(hb_beat "$id")"; [ "$b" != "$last" ] && { beats=$((beats + 1)); last="$b"; }
    sleep 0.3
done
hh_log "$nsamples samples over $beats beats"
[ $seen2 = 1 ] || fail "never saw busy == 2 while the two SlowJobs slept"
[ $seen0_after = 1 ] || fail "never saw busy == 0 after the SlowJobs ended (test:ran=$(R llen test:ran))"
[ $beats -ge 4 ] || fail "only $beats beats in 24 s (expected one every 5 s)"

hh_stop_worker TERM 15
assert_eq "$WORKER_RC" 0 "exit status after SIGTERM"
sleep 0.5
hb_monitor_stop
assert_eq "$(R sismember processes "$id")" 0 "SISMEMBER processes after the clean stop"
assert_eq "$(R exists "$id:work" "$id:workers")" 0 "work hashes after the clean stop"
assert_between "$(R ttl "$id")" 1 60 "TTL $id after the clean stop (expires by itself, never -1)"

grep -q '"SREM" "processes" "'"$id"'"' "$mon" || fail "no SREM processes $id in the MONITOR capture"
after_srem="$(awk -v id="$id" 'index($0, "\"SREM\" \"processes\" \"" id "\"") { s = 1; next } s' "$mon" \
    | grep -E '"(SADD|HSET|HMSET)" "(processes|'"$id"')' || true)"
assert_eq "$after_srem" "" "registry writes after the unregistering SREM (ghost process)"
res="$(hb_check_atomic "$mon" "$id")" || fail "heartbeat atomicity violations in the MONITOR capture (above); $res"
hh_log "MONITOR: $res"
nb="${res##*beats=}"
[ "$nb" -ge 4 ] || fail "the MONITOR capture has only $nb heartbeat transactions"
pass
