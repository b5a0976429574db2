#!/usr/bin/env bash
# A fetch error is logged when it starts (or changes) and once when fetching works again, never
# per attempt. Redis refuses writes (min-replicas-to-write 1 without a replica: the fetch script
# gets NOREPLICAS; a full Redis no longer refuses it) while jobs wait in the queue, for several
# seconds, during which every thread retries its fetch each second (one ERROR line a second
# before). Expected: one `fetch: NOREPLICAS ...` ERROR line for the
# whole outage, then one `fetch restored after N s` once memory is freed, and every job runs.
# The same for acks, retried every 0.1 s: the in-progress list of a running job made a string
# (moved aside) refuses its ack (LREM, WRONGTYPE); one WARN line for the whole time, one
# `acknowledgements restored after N s`, and the entry is gone once the list is back.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start

ran="$(hh_jid_recorder "$HH_TMP/ok.sh")"
n=20
for i in $(seq "$n"); do
    printf 'LPUSH queue:default '"'"'{"retry":false,"queue":"default","class":"OkJob","args":[%d],"jid":"j%023d"}'"'"'\n' "$i" "$i"
done | R >/dev/null
refused() { R info errorstats | tr -d '\r' | awk -F'count=' '/^errorstat_NOREPLICAS:/ { print $2 + 0 }'; }
R config set min-replicas-to-write 1 >/dev/null
hh_start_worker -c 3 --exec "OkJob=$HH_TMP/ok.sh"
# at least 4 refused fetches per thread: 4 s or more of retries that each logged a line before
must_wait 30 '[ "$(refused)" -ge 12 ]' "the fetches were not refused with NOREPLICAS (errorstat_NOREPLICAS: $(refused))"
assert_eq "$(wc -l <"$ran")" 0 "jobs run while Redis refuses the fetch"
assert_eq "$(grep -c 'ERROR: fetch: NOREPLICAS' "$WORKER_LOG")" 1 \
    "ERROR lines for one outage of refused fetches ($(refused) refusals): $(grep 'fetch:' "$WORKER_LOG" | head -n 3)"
R config set min-replicas-to-write 0 >/dev/null
must_wait 30 '[ "$(wc -l <"$ran")" = '"$n"' ]' "the jobs did not run once writes were accepted ($(wc -l <"$ran") of $n)"
must_wait 10 'grep -q "INFO: fetch restored after [0-9]* s" "$WORKER_LOG"' \
    "no 'fetch restored' line: $(tail -n 3 "$WORKER_LOG")"
secs="$(grep -o 'fetch restored after [0-9]* s' "$WORKER_LOG" | grep -o '[0-9]*')"
assert_between "$secs" 3 60 "seconds of the outage in the 'fetch restored' line"
assert_eq "$(grep -c 'ERROR: fetch: NOREPLICAS' "$WORKER_LOG")" 1 "ERROR lines about the fetch after the outage"
assert_eq "$(grep -c 'fetch restored' "$WORKER_LOG")" 1 "'fetch restored' lines"

# acks: a job running when its in-progress list is moved aside for a string
slow="$HH_TMP/slow.sh" started="$HH_TMP/slow.started"
printf '#!/bin/sh\ncat >/dev/null\necho "$HIREDHAND_JID" >>"%s"\nsleep 1\n' "$started" >"$slow"
chmod +x "$slow"
hh_stop_worker TERM 30
hh_start_worker -c 1 --exec "SlowJob=$slow"
R lpush queue:default '{"retry":false,"queue":"default","class":"SlowJob","args":[],"jid":"slow00000000000000000001"}' >/dev/null
must_wait 20 '[ -s "$started" ]' "the slow job did not start"
wt() { R info errorstats | tr -d '\r' | awk -F'count=' '/^errorstat_WRONGTYPE:/ { print $2 + 0 }'; }
ip="$(R --scan --pattern 'hiredhand:inprogress:*' | head -n 1)"
[ -n "$ip" ] || fail "no in-progress list for the running job"
# in one step each way: an ack between two commands would find no list and no entry
R eval "redis.call('rename', KEYS[1], KEYS[2]) redis.call('set', KEYS[1], 'x')" 2 "$ip" aside >/dev/null
# the job ends within 1 s; then its ack is tried every 0.1 s: 20 refusals are 2 s of them
must_wait 30 '[ "$(wt)" -ge 20 ]' "the ack was not refused with WRONGTYPE (errorstat_WRONGTYPE: $(wt))"
R eval "redis.call('rename', KEYS[2], KEYS[1])" 2 "$ip" aside >/dev/null
must_wait 20 'grep -q "INFO: acknowledgements restored after [0-9]* s" "$WORKER_LOG"' \
    "no 'acknowledgements restored' line: $(tail -n 3 "$WORKER_LOG")"
assert_eq "$(grep -c 'acknowledgements refused' "$WORKER_LOG")" 1 \
    "WARN lines for one run of refused acks ($(wt) WRONGTYPE refusals in all)"
must_wait 10 '[ -z "$(R --scan --pattern "hiredhand:inprogress:*" | while read -r k; do R lrange "$k" 0 -1; done)" ]' \
    "the acknowledged job is still in its in-progress list"
hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "exit status"
pass "a refused fetch or ack is logged once when it starts and once when it ends"
