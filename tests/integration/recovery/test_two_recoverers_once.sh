#!/usr/bin/env bash
# two live workers scanning together: each orphaned job is requeued
# exactly once.
# Orphaned in-progress lists are made by hand: RPUSH of OkJob payloads into
# hiredhand:inprogress:ghost-R-N|default, with no ghost-R-N heartbeat hash. Round 1: 8 lists of
# 300 jobs made before both workers start (2400 jobs: one drain takes longer than the 0.5 s scan
# lock of --recovery-interval 1, so the two workers' scans overlap on the same lists); round 2:
# 6 lists of 150 made while both run.
# Two workers (dynamic identities, -c 3, --recovery-interval 1) recover and run them.
# Expected per round: every orphaned jid starts exactly once (never twice, never lost); the
# "pushed back" lines of both logs together name each jid exactly once; no ghost list is left;
# hiredhand:recoveries:<jid> is 1 for every job (a requeue that lost the race must not count).
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/recovery_helpers.sh"
hh_require_binary
hh_redis_start


make_ghosts() {   # ROUND JIDFILE NLISTS PER
    local n
    NLISTS=$3 PER=$4
    for ((n = 1; n <= NLISTS; n++)); do
        R del "ghost-$1-$n" >/dev/null
        rf_push default OkJob "$PER" "$2" "" RPUSH "hiredhand:inprogress:ghost-$1-$n|default"
    done
}

check_round() {   # ROUND JIDFILE
    local round="$1" jids="$2" total=$((NLISTS * PER)) bad lines
    must_wait 400 '[ "$(sort -u "$jids" | comm -12 - <(cut -d" " -f1 "$RF_DIR/started" | sort -u) | grep -c .)" -ge '"$total"' ]' \
        "[round $round] only $(sort -u "$jids" | comm -12 - <(cut -d' ' -f1 "$RF_DIR/started" | sort -u) | grep -c .) of $total orphaned jobs started within 400 s (ghost lists left: $(R --scan --pattern "hiredhand:inprogress:ghost-$round-*" | tr '\n' ' '), queue=$(R llen queue:default))"
    must_wait 20 '[ -z "$(R --scan --pattern "hiredhand:inprogress:ghost-$round-*")" ] && [ "$(R llen queue:default)" = 0 ]' \
        "[round $round] ghost lists or queued jobs left: $(R --scan --pattern "hiredhand:inprogress:ghost-$round-*" | tr '\n' ' ') queue=$(R llen queue:default)"
    sleep 3   # a second, duplicate requeue would show up as a second start by now
    # starts per jid
    bad="$(awk 'NR == FNR { want[$1 ""] = 1; next } ($1 "") in want { n[$1 ""]++ }
                END { for (j in want) if (n[j] != 1) print j "=" n[j] + 0 }' "$jids" "$RF_DIR/started" | head -n 10)"
    [ -z "$bad" ] || fail "[round $round] orphaned jobs not started exactly once (jid=starts): $bad; starts by worker: $(cut -d' ' -f2 "$RF_DIR/started" | sort | uniq -c | tr '\n' ' ')"
    # "pushed back" log lines per jid, both workers together
    lines="$(cat "${HH_WORKER_LOGS[@]}" | grep -o 'jid=[0-9a-f]* owner=ghost-'"$round"'-[0-9]* queue=default: pushed back' | cut -d' ' -f1 | cut -d= -f2)"
    bad="$(printf '%s\n' "$lines" | awk 'NR == FNR { want[$1 ""] = 1; next } { n[$1 ""]++ }
                END { for (j in want) if (n[j] != 1) print j "=" n[j] + 0 }' "$jids" - | head -n 10)"
    [ -z "$bad" ] || fail "[round $round] recoveries logged per jid is not exactly 1 (jid=lines): $bad"
    hh_log "[round $round] pushed back by worker 1: $(grep -c "owner=ghost-$round-.*pushed back" "$log1"), by worker 2: $(grep -c "owner=ghost-$round-.*pushed back" "$log2")"
    # recovery counters: one requeue each, so 1 each (checked after both rounds, below)
    bad="$(while read -r j; do printf '%s ' "$j"; R get "hiredhand:recoveries:$j"; done <"$jids" | awk '$2 != "1"')"
    if [ -n "$bad" ]; then
        COUNT_ERRORS+=("[round $round] $(printf '%s\n' "$bad" | grep -c .) of $((NLISTS * PER)) jobs requeued once have hiredhand:recoveries:<jid> != 1 (counts: $(printf '%s\n' "$bad" | awk '{ print $2 }' | sort | uniq -c | tr -s ' \n' ' '); e.g. $(printf '%s\n' "$bad" | head -n 3 | tr '\n' ';'))")
    fi
}
COUNT_ERRORS=()

j1="$HH_TMP/round1.jids"; : >"$j1"
make_ghosts 1 "$j1" 8 300
assert_eq "$(rf_inprog_len)" $((NLISTS * PER)) "jobs in the ghost lists before the workers start"
handlers=(--exec "OkJob=$RF_HANDLER")
hh_start_worker -c 3 --fetch reliable --recovery-interval 1 "${handlers[@]}"; w1=$WORKER_PID; log1=$WORKER_LOG
hh_start_worker -c 3 --fetch reliable --recovery-interval 1 "${handlers[@]}"; w2=$WORKER_PID; log2=$WORKER_LOG
check_round 1 "$j1"

j2="$HH_TMP/round2.jids"; : >"$j2"
make_ghosts 2 "$j2" 6 150
check_round 2 "$j2"

assert_alive "$w1" "worker 1 died"
assert_alive "$w2" "worker 2 died"
assert_eq "$(R zcard retry) $(R zcard dead)" "0 0" "ZCARD retry, dead"
for w in "$w1" "$w2"; do
    WORKER_PID=$w hh_stop_worker TERM 15
    assert_eq "$WORKER_RC" 0 "exit status of worker $w after SIGTERM"
done
# (the two worker logs hold thousands of recovery lines: keep them out of the failure dump, so
# run.sh's tail shows the message; HH_KEEP=1 keeps them)
[ ${#COUNT_ERRORS[@]} = 0 ] || HH_WORKER_LOGS=()
[ ${#COUNT_ERRORS[@]} = 0 ] || fail "every orphaned job was requeued and run exactly once, but the recovery counters are wrong: ${COUNT_ERRORS[*]} -- a recoverer that loses the requeue race still INCRs the counter, so a job can reach --max-recoveries (dead set, hiredhand::PoisonPill) after fewer real recoveries"
pass "3300 orphaned jobs in 14 ghost lists, each requeued and run exactly once by two concurrent recoverers"
