#!/usr/bin/env bash
# with real Sidekiq 6.4 reading the same Redis, Sidekiq::ProcessSet
# lists the hiredhand process with the right hostname, pid, tag, labels, concurrency, queues, busy
# count, quiet flag and a fresh beat; Sidekiq::Workers lists each running hiredhand job with its
# queue, payload (class, jid, args) and run_at. Identity is hostname:pid:12-hex-nonce; with $DYNO
# set, the hostname is $DYNO (as Sidekiq does). When the jobs end, busy 0 and no Workers rows.
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/heartbeat_helpers.sh"
hh_require_binary
hh_redis_start

host="$(hostname)"
j1="$(hh_jid)"; j2="$(hh_jid)"
hb_push SlowJob "$j1" '[1,"two",{"k":"v"}]' critical
hb_push SlowJob "$j2" '["x"]' default

t_before=$(date +%s)
hh_start_worker -c 3 -q critical -q default --tag hbtag --label hb-label-1 --label hb-label-2 \
    --exec "SlowJob=$HH_HANDLERS/sleep.sh 30"
hb_wait_identity "$WORKER_PID" 15
id="$HB_ID"
[[ "$id" =~ ^"$host":"$WORKER_PID":[0-9a-f]{12}$ ]] || fail "identity [$id] is not hostname:pid:12-hex ($host:$WORKER_PID:...)"
must_wait 10 '[ "$(R llen test:started)" = 2 ]' "the 2 SlowJobs did not start within 10 s (started: $(R lrange test:started 0 -1 | tr '\n' ' '))"
t_after=$(date +%s)
# busy is written by the beat after the jobs started (up to one interval later)
must_wait 8 '[ "$(R hget "$id" busy)" = 2 ]' "HGET $id busy did not become 2 within one beat (is [$(R hget "$id" busy)])"

expect=$(cat <<JSON
{"identity":"$id","hostname":"$host","pid":$WORKER_PID,"tag":"hbtag","labels":["hb-label-1","hb-label-2"],
 "concurrency":3,"queues":["critical","default"],"busy":2,"quiet":"false","beat_max_age":7,
 "jobs":[{"jid":"$j1","class":"SlowJob","args":[1,"two",{"k":"v"}],"queue":"critical"},
         {"jid":"$j2","class":"SlowJob","args":["x"],"queue":"default"}],
 "run_at_min":$t_before,"run_at_max":$t_after}
JSON
)
HB_EXPECT="$expect" hh_ruby hb_processset.rb || fail "Sidekiq::ProcessSet / Workers checks while 2 jobs run (see above)"

# The beat keeps being fresh: check again two beats later (beat advances, TTL refreshed).
hb_wait_next_beat "$id" 8
hb_wait_next_beat "$id" 8
HB_EXPECT="$expect" hh_ruby hb_processset.rb || fail "Sidekiq::ProcessSet / Workers checks two beats later"
ttl=$(R ttl "$id")
assert_between "$ttl" 1 60 "TTL $id"

# Second process with $DYNO: hostname (in the identity and in info) is $DYNO.
DYNO=hb-dyno.1 hh_start_worker -c 1 -q other
dyno_pid=$WORKER_PID
hb_wait_identity "$dyno_pid" 15
[[ "$HB_ID" =~ ^hb-dyno\.1:"$dyno_pid":[0-9a-f]{12}$ ]] || fail "with DYNO=hb-dyno.1 the identity is [$HB_ID]"
HB_EXPECT="{\"identity\":\"$HB_ID\",\"hostname\":\"hb-dyno.1\",\"pid\":$dyno_pid,\"tag\":\"\",\"labels\":[],\"concurrency\":1,\"queues\":[\"other\"],\"busy\":0,\"quiet\":\"false\"}" \
    hh_ruby hb_processset.rb || fail "Sidekiq::ProcessSet checks of the DYNO process"

# Both jobs finish (30 s): the next beat shows busy 0 and Sidekiq::Workers has no row of $id.
must_wait 35 '[ "$(R llen test:ran)" = 2 ]' "the SlowJobs did not finish within 35 s"
must_wait 8 '[ "$(R hget "$id" busy)" = 0 ]' "busy did not go back to 0 within one beat after the jobs ended"
HB_EXPECT="{\"identity\":\"$id\",\"busy\":0,\"quiet\":\"false\",\"jobs\":[]}" \
    hh_ruby hb_processset.rb || fail "Sidekiq::ProcessSet / Workers after the jobs ended"
pass
