#!/usr/bin/env bash
# A broken or hostile Redis never makes the worker dereference NULL: through a proxy
# (tests/lib/hostile_redis.rb) that answers one command with a reply of the wrong shape, the
# worker keeps running (it may log errors) and stops cleanly on SIGTERM. Shapes: SCAN with a
# non-string cursor or non-array keys, SMEMBERS with non-string members (the recovery scan), the
# fetch script (EVALSHA) with wrong element types in its {queue index, payload} pairs, EXEC with
# the wrong number of replies (the heartbeat), INFO and CLIENT ID on connect, HMGET of a fixed
# identity's hash, LLEN/LINDEX of the queues shown by --http.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start

run_case() {   # LABEL COMMAND REPLY [WORKER-ARGS...]
    local label="$1" cmd="$2" reply="$3" d port
    shift 3
    d="$(hh_tmp)"
    printf 'SUBSCRIBE\t-ERR no push messages through this proxy\\r\\n\n%s\t%s\n' "$cmd" "$reply" >"$d/rules"
    : >"$d/log"
    port="$(hh_pick_free_port)"
    setsid ruby "$HH_LIB_DIR/hostile_redis.rb" "$port" "$REDIS_PORT" "$d/rules" "$d/log" >"$d/proxy.out" 2>&1 &
    local proxy=$!
    hh_track_pid "$proxy"
    must_wait 10 "hh_port_in_use $port" "$label: the proxy did not listen"
    R flushall >/dev/null
    R sadd queues default >/dev/null   # no job: whatever runs came from a hostile reply
    # an orphaned in-progress list and a dead fetcher, for the recovery scan
    R lpush "hiredhand:inprogress:gone-host:1:abc:default" '{"class":"OkJob","jid":"aa"}' >/dev/null
    R sadd hiredhand:fetchers gone-host:1:abc >/dev/null
    HH_NO_URL=1 hh_start_worker -r "redis://127.0.0.1:$port/0" -c 2 --recovery-interval 1 \
        --heartbeat-interval 0.5 --exec "OkJob=$HH_HANDLERS/record.sh" "$@"
    must_wait 30 "[ \"\$(grep -c '^${cmd%%@*}\$' '$d/log')\" -ge ${HOSTILE_TIMES:-3} ]" \
        "$label: the worker was not answered the hostile $cmd ${HOSTILE_TIMES:-3} times (log: $(tail -3 "$WORKER_LOG" 2>/dev/null))"
    assert_alive "$WORKER_PID" "$label: the worker died (log: $(tail -5 "$WORKER_LOG" 2>/dev/null))"
    hh_stop_worker TERM 30
    [ "$WORKER_RC" -lt 124 ] || fail "$label: the worker did not stop cleanly (status $WORKER_RC; log: $(tail -5 "$WORKER_LOG" 2>/dev/null))"
    kill "$proxy" 2>/dev/null
    # nothing made up from a reply that held no payload: no job run, buried or retried
    assert_eq "$(R llen test:ran)" 0 "$label: handler runs"
    assert_eq "$(R zcard dead)" 0 "$label: dead set entries ($(R zrange dead 0 -1))"
    assert_eq "$(R zcard retry)" 0 "$label: retry set entries"
    hh_log "$label: survived"
}

run_case "SCAN: integer cursor"          SCAN     '*2\r\n:0\r\n*0\r\n'
run_case "SCAN: nil cursor, nil keys"    SCAN     '*2\r\n$-1\r\n$-1\r\n'
run_case "SCAN: keys that are integers"  SCAN     '*2\r\n$1\r\n0\r\n*2\r\n:1\r\n$-1\r\n'
run_case "SMEMBERS: non-string members"  SMEMBERS '*3\r\n:1\r\n$-1\r\n*0\r\n'
run_case "fetch script: integer payload" 'EVALSHA@3=queue:' '*2\r\n:1\r\n:7\r\n'
run_case "fetch script: nil payload"     'EVALSHA@3=queue:' '*2\r\n:1\r\n$-1\r\n'
run_case "fetch script: string index"    'EVALSHA@3=queue:' '*2\r\n$1\r\n1\r\n$2\r\n{}\r\n'
run_case "EXEC: too few replies"         EXEC     '*1\r\n:1\r\n'
run_case "EXEC: nested nils"             EXEC     '*3\r\n$-1\r\n*-1\r\n:0\r\n'
run_case "INFO: an array"                INFO     '*1\r\n:1\r\n'
run_case "CLIENT ID: nil"                CLIENT   '$-1\r\n'
HOSTILE_TIMES=1 run_case "HMGET: integers" HMGET    '*2\r\n:1\r\n:2\r\n' --identity hostile-1
run_case "LINDEX: an array"              LINDEX   '*2\r\n$-1\r\n:3\r\n' --http "$(hh_pick_free_port)"
run_case "LLEN: nil"                     LLEN     '$-1\r\n' --http "$(hh_pick_free_port)"
pass
