#!/usr/bin/env bash
# tests/soak/soak.sh -- kill and restart workers at random during a
# run of thousands of jobs; print jobs pushed, completed, lost (must be 0) and duplicated.
# Run by `make soak` (not by CI). Own redis-server on a free loopback port (tests/lib/harness.sh).
#
# Three worker slots, -c 4 each, --fetch reliable --recovery-interval 2 -t 3:
#   slot 1 and 2: fixed identities soak-fixed-1 / soak-fixed-2 (their restart pushes back what the
#   killed incarnation left); slot 3: a dynamic identity (host:pid:random) each start, so what a
#   killed one leaves is found by the others' recovery scan after its heartbeat hash expires (60 s).
# For SOAK_SECONDS (default 150) jobs are pushed at about SOAK_RATE per second (default 25; 80 %
# ShortJob 0.02 s, 20 % LongJob 0.5 s; handlers/rf_job.sh, which records a jid as done only when
# it finished under a live worker) while, every 2-6 s, a random slot is hit: kill -9 (70 %) or
# SIGTERM (30 %) of a live worker, restarted at once or left down until the next hit.
# Then every slot is started again and the run drains (bounded by SOAK_DRAIN, default 200 s:
# dynamic identities need their 60 s TTL). Output, last line:
#     pushed N completed N lost L duplicated D
# lost = pushed jids never recorded done; duplicated = done records beyond the first per jid (a
# job that completed and still ran again: its ack was lost with its worker). Jobs interrupted by a
# kill (their handler is killed too) run again and are reported as "started more than once".
# Exit status 1 when lost > 0 (or nothing ran).
#   SOAK_SECONDS=60 SOAK_RATE=20 tests/soak/soak.sh     a shorter run
#   HH_KEEP=1                                           keep logs and records
HH_VERBOSE="${HH_VERBOSE:-1}"
. "$(dirname "$0")/../lib/harness.sh"
. "$(dirname "$0")/../lib/recovery_helpers.sh"
hh_require_binary
hh_redis_start

SOAK_SECONDS="${SOAK_SECONDS:-150}"
SOAK_RATE="${SOAK_RATE:-25}"
SOAK_DRAIN="${SOAK_DRAIN:-200}"
SOAK_CONC="${SOAK_CONC:-4}"
PUSHED="$HH_TMP/pushed.jids"; : >"$PUSHED"
wargs=(-c "$SOAK_CONC" -t 3 --fetch reliable --recovery-interval 2
       --exec "ShortJob=$RF_HANDLER 0.02" --exec "LongJob=$RF_HANDLER 0.5")

declare -a slot_pid=("" "" "" "")
kills=0; terms=0; starts=0; refused=0

start_slot() {   # SLOT
    local s="$1" id=()
    [ "$s" -le 2 ] && id=(--identity "soak-fixed-$s")
    hh_start_worker "${wargs[@]}" "${id[@]}" >/dev/null 2>&1
    slot_pid[$s]=$WORKER_PID
    starts=$((starts + 1))
}

slot_alive() { [ -n "${slot_pid[$1]}" ] && kill -0 "${slot_pid[$1]}" 2>/dev/null; }

reap_slot() {   # SLOT: a worker that exited on its own (or refused to start) is noticed here
    local s="$1" rc
    [ -n "${slot_pid[$s]}" ] || return 0
    slot_alive "$s" && return 0
    wait "${slot_pid[$s]}" 2>/dev/null; rc=$?
    rf_forget_pid "${slot_pid[$s]}"
    [ "$rc" != 0 ] && [ "$rc" != 137 ] && [ "$rc" != 143 ] && {
        refused=$((refused + 1))
        hh_log "slot $s: worker ${slot_pid[$s]} exited with status $rc on its own"
    }
    slot_pid[$s]=""
}

hit_slot() {   # SLOT
    local s="$1" pid="${slot_pid[$1]}"
    if [ $((RANDOM % 10)) -lt 7 ]; then
        rf_kill9 "$pid" 2>/dev/null
        kills=$((kills + 1))
    else
        kill -TERM "$pid" 2>/dev/null
        wait_until 10 "! kill -0 $pid" || { hh_log "slot $s: worker $pid still up 10 s after SIGTERM; kill -9"; rf_kill9 "$pid"; }
        wait "$pid" 2>/dev/null
        rf_forget_pid "$pid"
        terms=$((terms + 1))
    fi
    slot_pid[$s]=""
}

push_batch() {   # N
    local n="$1" nl=$(( $1 / 5 ))
    [ "$nl" -gt 0 ] && rf_push default LongJob "$nl" "$PUSHED"
    rf_push default ShortJob $((n - nl)) "$PUSHED"
}

hh_log "soak: ${SOAK_SECONDS} s of chaos, ~${SOAK_RATE} jobs/s, 3 workers x -c $SOAK_CONC"
for s in 1 2 3; do start_slot "$s"; done
t_start=$SECONDS
last_push=$SECONDS
next_hit=$((SECONDS + 2 + RANDOM % 5))
while [ $((SECONDS - t_start)) -lt "$SOAK_SECONDS" ]; do
    now=$SECONDS
    if [ "$now" -gt "$last_push" ]; then
        push_batch $(( (now - last_push) * SOAK_RATE ))
        last_push=$now
    fi
    for s in 1 2 3; do reap_slot "$s"; done
    if [ "$now" -ge "$next_hit" ]; then
        s=$((1 + RANDOM % 3))
        if slot_alive "$s"; then
            hit_slot "$s"
            [ $((RANDOM % 2)) = 0 ] && start_slot "$s"   # else: down until the next hit
        else
            start_slot "$s"
        fi
        next_hit=$((SECONDS + 2 + RANDOM % 5))
    fi
    sleep 0.3
done
t_chaos=$((SECONDS - t_start))
npushed="$(grep -c . "$PUSHED")"
hh_log "chaos over after ${t_chaos} s: pushed $npushed, $kills kill -9, $terms SIGTERM, $starts starts; restarting every slot and draining"
for s in 1 2 3; do reap_slot "$s"; slot_alive "$s" || start_slot "$s"; done

done_all() { [ "$(awk '{ print $1 }' "$RF_DIR/done" | sort -u | comm -12 - <(sort -u "$PUSHED") | grep -c .)" -ge "$npushed" ]; }
t_drain=$SECONDS
while ! { done_all && [ "$(R llen queue:default)" = 0 ] && [ "$(rf_inprog_len)" = 0 ]; }; do
    [ $((SECONDS - t_drain)) -lt "$SOAK_DRAIN" ] || { hh_log "drain not finished after $SOAK_DRAIN s: queue=$(R llen queue:default), in progress=$(rf_inprog_len) in $(rf_inprog | tr '\n' ' ')"; break; }
    for s in 1 2 3; do reap_slot "$s"; slot_alive "$s" || start_slot "$s"; done
    sleep 1
done
hh_log "drain took $((SECONDS - t_drain)) s"

rf_compare "$PUSHED" "$RF_DIR/done"
recov="$(cat "${HH_WORKER_LOGS[@]}" | grep -c ': pushed back to the queue (recovery')"
poison="$(cat "${HH_WORKER_LOGS[@]}" | grep -c 'moved to the dead set')"
orph="$( [ -f "$RF_DIR/orphaned" ] && grep -c . "$RF_DIR/orphaned" || echo 0)"
rerun="$(awk '{ n[$1 ""]++ } END { for (j in n) if (n[j] > 1) c++; print c + 0 }' "$RF_DIR/started")"
echo "soak: ${t_chaos} s of chaos + $((SECONDS - t_drain)) s drain; $kills kill -9, $terms SIGTERM, $starts worker starts ($refused exited on their own); $recov jobs pushed back by recovery, $poison sent to the dead set as poison pills; retry=$(R zcard retry) dead=$(R zcard dead) queue=$(R llen queue:default) in-progress=$(rf_inprog_len); $rerun jobs started more than once (running at a kill or a shutdown; $orph handlers finished after their worker died and did not count as done)"
[ "$RF_LOST" = 0 ] || echo "soak: lost jids (first 10): $RF_LOST_JIDS"
echo "pushed $RF_PUSHED completed $RF_COMPLETED lost $RF_LOST duplicated $RF_DUP"
[ "$RF_PUSHED" -gt 0 ] || { echo "soak: nothing was pushed" >&2; exit 1; }
[ "$RF_LOST" = 0 ] || exit 1
for s in 1 2 3; do
    if slot_alive "$s"; then WORKER_PID=${slot_pid[$s]} hh_stop_worker TERM 15; fi
done
exit 0
