# shellcheck shell=bash
# tests/lib/recovery_helpers.sh -- helpers for the reliable-fetch / recovery tests
# (tests/integration/recovery/, fetch/test_fetch_*.sh, tests/soak/soak.sh ...). Source it AFTER tests/lib/harness.sh:
#     . "$(dirname "$0")/../../lib/harness.sh"
#     . "$(dirname "$0")/../../lib/recovery_helpers.sh"
#
# The jobs run tests/integration/handlers/rf_job.sh (or rf_killer.sh), which record to plain
# files under $RF_DIR (not to Redis, so a Redis outage or restart cannot lose a record):
#   $RF_DIR/started   "JID WORKER_PID EPOCH QUEUE" each time a job starts
#   $RF_DIR/done      "JID WORKER_PID" each time a job finishes while its worker is alive
#   $RF_DIR/orphaned  "JID WORKER_PID" when a job finished after its worker was killed
#   $RF_DIR/killer    "JID WORKER_PID" each time rf_killer.sh ran (and killed its worker)
#   $RF_DIR/children  "WORKER_PID HANDLER_PID SLEEP_PID" of sleeping handlers
#   $RF_DIR/sleep.NAME  seconds that `rf_job.sh NAME` sleeps (rf_set_sleep)
#
# Functions:
#   rf_payload CLASS JID [QUEUE] [ARGS-JSON]       a Sidekiq 6.4 job payload (float timestamps)
#   rf_push QUEUE CLASS COUNT JIDFILE [ARGS-JSON] [LPUSH|RPUSH] [KEY]
#        pushes COUNT payloads in one pipelined redis-cli --pipe (to queue:QUEUE, or KEY), SADDs
#        QUEUE to `queues` (unless KEY is given), appends the jids to JIDFILE
#   rf_set_sleep NAME SECONDS
#   rf_count FILE JID          how many lines of FILE start with JID
#   rf_expect_once_on_two_workers JIDFILE SECONDS WHAT   the end of an outage test (see below)
#   rf_uniq FILE               number of distinct jids in FILE
#   rf_kill9 PID               kill -9 a worker we started, reap it (no zombie left, which would
#                              look alive to a restarted fixed identity) and kill the handlers
#                              it left behind (checked to be ours first)
#   rf_forget_pid PID          after reaping a worker: drop it from the harness's kill-at-exit list
#   rf_identity LOG            the identity a worker logged at start ("identity=...")
#   rf_inprog                  names of every hiredhand:inprogress:* key (SCAN)
#   rf_inprog_len              total jobs in every in-progress list
#   rf_compare PUSHED DONE     sets RF_PUSHED, RF_COMPLETED (distinct pushed jids done),
#                              RF_LOST (pushed, never done), RF_DUP (done lines beyond the first
#                              per jid), RF_LOST_JIDS (first 10 lost)
#   rf_cpu_ticks PID           utime+stime of PID in clock ticks
#   rf_cmd_calls [CMD...]      sum of INFO commandstats calls (of the given commands only)

RF_HANDLER="$HH_HANDLERS/rf_job.sh"
RF_KILLER="$HH_HANDLERS/rf_killer.sh"
RF_DIR="$HH_TMP/rf"
mkdir -p "$RF_DIR" || fail "cannot create $RF_DIR"
: >"$RF_DIR/started"
: >"$RF_DIR/done"
: >"$RF_DIR/children"
export RF_DIR

rf_payload() {   # CLASS JID [QUEUE] [ARGS-JSON]
    local now; now="$(hh_now)"
    printf '{"retry":true,"queue":"%s","class":"%s","args":[%s],"jid":"%s","created_at":%s,"enqueued_at":%s}' \
        "${3:-default}" "$1" "${4:-}" "$2" "$now" "$now"
}

# rf_push QUEUE CLASS COUNT JIDFILE [ARGS-JSON] [LPUSH|RPUSH] [KEY]
rf_push() {
    local q="$1" klass="$2" count="$3" jidfile="$4" args="${5:-}" cmd="${6:-LPUSH}" key="${7:-}"
    local proto="$HH_TMP/rf_push.$$.resp" prefix now i jid p out
    [ -n "$key" ] || key="queue:$q"
    prefix="$(hh_jid | cut -c1-8)"
    now="$(hh_now)"
    : >"$proto"
    # printf -v, not $(...): no subshell per job (thousands of forks on a loaded machine took
    # most of a test's time)
    for ((i = 0; i < count; i++)); do
        printf -v jid '%s%016x' "$prefix" "$i"
        printf -v p '{"retry":true,"queue":"%s","class":"%s","args":[%s],"jid":"%s","created_at":%s,"enqueued_at":%s}' \
            "$q" "$klass" "$args" "$jid" "$now" "$now"
        printf '*3\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n' \
            "${#cmd}" "$cmd" "${#key}" "$key" "${#p}" "$p"
        echo "$jid" >>"$jidfile"
    done >>"$proto"
    case "$key" in queue:*) R sadd queues "$q" >/dev/null || fail "SADD queues $q failed" ;; esac
    out="$(R --pipe <"$proto" 2>&1)" || fail "redis-cli --pipe failed pushing $count $klass to $key: $out"
    case "$out" in *"errors: 0, replies: $count"*) ;; *) fail "pushing $count $klass to $key: $out" ;; esac
    rm -f "$proto"
}

rf_set_sleep() { echo "$2" >"$RF_DIR/sleep.$1"; }

rf_count() {   # FILE JID
    [ -f "$1" ] || { echo 0; return; }
    awk -v j="$2" '($1 "") == (j "") { n++ } END { print n + 0 }' "$1"
}

rf_uniq() {   # FILE
    [ -f "$1" ] || { echo 0; return; }
    awk '{ print $1 }' "$1" | sort -u | grep -c .
}

rf_kill9() {   # PID
    local pid="$1" w h s
    [ -n "$pid" ] || return 0
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null   # a child of this shell: reap it now
    rf_forget_pid "$pid"
    # Handlers it spawned run in their own process groups (the sleep in the handler's group):
    # kill those groups, but only after checking that pid is still one of our rf_job.sh
    # handlers (pids are recycled quickly on a busy machine).
    while read -r w h s; do
        [ "$w" = "$pid" ] || continue
        rf_is_our_handler "$h" && kill -KILL -- "-$h" 2>/dev/null
    done <"$RF_DIR/children"
    hh_log "killed worker $pid with SIGKILL"
}

rf_is_our_handler() {   # PID -> 0 when PID runs rf_job.sh with this test's RF_DIR, orphaned
    local pp
    tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -q 'rf_job\.sh' || return 1
    tr '\0' '\n' <"/proc/$1/environ" 2>/dev/null | grep -qxF "RF_DIR=$RF_DIR" || return 1
    # a recycled pid may be a handler of another, live worker: leave those alone
    pp="$(awk '{ print $4 }' "/proc/$1/stat" 2>/dev/null)"
    [ "$(cat "/proc/$pp/comm" 2>/dev/null)" != hiredhand ]
}

# rf_forget_pid PID: a worker we reaped; drop it from the harness's exit-time kill list, so the
# cleanup never signals a recycled pid (or process group) that is no longer ours.
rf_forget_pid() {
    local keep=() p
    for p in "${HH_PIDS[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
    HH_PIDS=("${keep[@]}")
    # the harness's guard (for a test shell killed with SIGKILL) reads $HH_PIDLIST, when it has one
    if [ -n "${HH_PIDLIST:-}" ] && [ -f "$HH_PIDLIST" ]; then
        grep -vx "$1" "$HH_PIDLIST" >"$HH_PIDLIST.rf" 2>/dev/null; cat "$HH_PIDLIST.rf" >"$HH_PIDLIST"; rm -f "$HH_PIDLIST.rf"
    fi
}

rf_identity() {   # LOG -> identity (waits up to 10 s for the start line)
    local log="$1" id="" i
    for ((i = 0; i < 50; i++)); do
        id="$(grep -o 'identity=[^ ]*' "$log" 2>/dev/null | head -n 1 | cut -d= -f2-)"
        [ -n "$id" ] && break
        sleep 0.2
    done
    [ -n "$id" ] || fail "no 'identity=' start line in $log: $(tail -n 5 "$log")"
    echo "$id"
}

rf_inprog() { R --scan --pattern 'hiredhand:inprogress:*'; }

rf_inprog_len() {
    local k n=0
    for k in $(rf_inprog); do n=$((n + $(R llen "$k"))); done
    echo "$n"
}

rf_compare() {   # PUSHED_JIDS_FILE DONE_FILE (regular files: each is read several times)
    local pushed="$1" done="$2"
    RF_PUSHED="$(sort -u "$pushed" | grep -c .)"
    RF_COMPLETED="$(awk '{ print $1 }' "$done" | sort -u | comm -12 - <(sort -u "$pushed") | grep -c .)"
    RF_LOST=$((RF_PUSHED - RF_COMPLETED))
    RF_LOST_JIDS="$(awk '{ print $1 }' "$done" | sort -u | comm -13 - <(sort -u "$pushed") | head -n 10 | tr '\n' ' ')"
    RF_DUP=$(( $(grep -c . "$done") - $(awk '{ print $1 }' "$done" | sort -u | grep -c .) ))
}

rf_cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null; }

rf_cmd_calls() {   # [CMD...] -> total calls in INFO commandstats (lower-case command names)
    local filter=" $* "
    R info commandstats | tr -d '\r' | awk -F'[:=,]' -v f="$filter" '
        /^cmdstat_/ { c = substr($1, 9); if (f == "  " || index(f, " " c " ")) n += $3 }
        END { print n + 0 }'
}

# rf_expect_once_on_two_workers JIDFILE SECONDS WHAT
#   After a fault with long jobs running on two workers ($wa/$loga, $wb/$logb): waits up to
#   SECONDS for every job of JIDFILE to finish and leave every list (or for a job to start
#   twice), then asserts each started once, none lost, no recovery logged, both workers alive
#   and each stops with status 0. WHAT names the fault in the messages and the pass line.
rf_expect_once_on_two_workers() {
    local jids="$1" secs="$2" what="$3" j w n
    n="$(grep -c . "$jids")"
    must_wait "$secs" '[ "$(rf_uniq "$RF_DIR/done")" -ge '"$n"' ] && [ "$(rf_inprog_len)" = 0 ] && [ "$(R llen queue:default)" = 0 ] || [ "$(grep -c . "$RF_DIR/started")" -gt '"$n"' ]' \
        "jobs did not complete: done $(rf_uniq "$RF_DIR/done")/$n, in progress $(rf_inprog_len), queue $(R llen queue:default)"
    while read -r j; do
        assert_eq "$(rf_count "$RF_DIR/started" "$j")" 1 "starts of $j (a live worker's running job recovered after $what: $(grep -h 'recovery:' "$loga" "$logb" | head -n 4))"
    done <"$jids"
    rf_compare "$jids" "$RF_DIR/done"
    assert_eq "$RF_LOST" 0 "jobs lost: $RF_LOST_JIDS"
    assert_eq "$(grep -c 'recovery: class=' "$loga" "$logb" | awk -F: '{ n += $NF } END { print n }')" 0 "recoveries logged"
    assert_eq "$(R llen queue:default)" 0 "LLEN queue:default at the end"
    assert_alive "$wa" "worker A died"
    assert_alive "$wb" "worker B died"
    for w in "$wa" "$wb"; do
        WORKER_PID=$w hh_stop_worker TERM 20
        assert_eq "$WORKER_RC" 0 "exit status of $w after SIGTERM"
    done
    pass "$what with $n long jobs on 2 workers: none started twice, none lost"
}
