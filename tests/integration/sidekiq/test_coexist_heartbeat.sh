#!/usr/bin/env bash
# a hiredhand process and a real Ruby Sidekiq 6.4 process on one Redis
# both show, each with its running job; neither removes the other:
#   - Sidekiq::ProcessSet lists both (right pid, queues, busy 1 each), Sidekiq::Workers lists both
#     jobs, `hiredhand processes --json` lists both (it reads Sidekiq's hash too), over 3+ beats;
#   - hiredhand stopping cleanly (SIGTERM) removes only itself: the Sidekiq process, its hash, its
#     work hash and its running job stay listed;
#   - a second hiredhand started next to it, then Sidekiq stopped cleanly: the hiredhand process
#     and its job stay listed.
# The two sides fetch from different queues (sidekiq: default, hiredhand: hhq) so each runs its own.
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/heartbeat_helpers.sh"
hh_require_binary
command -v sidekiq >/dev/null || fail "the sidekiq command (ruby-sidekiq) is not installed"
hh_redis_start

# Sidekiq's job: SlowWorker(40) on default, pushed with Sidekiq's own client
sk_jid="$(REDIS_URL="$REDIS_URL" timeout 60 ruby -W0 -I "$HH_RUBY_DIR" -e 'require_relative "'"$HH_RUBY_DIR"'/app"; puts Sidekiq::Client.push("class" => "SlowWorker", "args" => [40, "sk"])')" \
    || fail "could not push the SlowWorker with Sidekiq's client"
hh_sidekiq_start app.rb -q default -c 2
hh_sidekiq_wait_ready 40
skid="$(hb_identity_of_pid "$SIDEKIQ_PID")"
[ -n "$skid" ] || fail "no identity for the sidekiq pid $SIDEKIQ_PID"
must_wait 10 '[ "$(R hget "$skid" busy)" = 1 ]' "sidekiq's busy did not become 1 (SlowWorker not running?)"

hh_jid1="$(hh_jid)"
hb_push SlowJob "$hh_jid1" '[40,"hh"]' hhq
hh_start_worker -c 2 -t 2 -q hhq --tag coexist --exec "SlowJob=$HH_HANDLERS/sleep.sh 40"
hh1_pid=$WORKER_PID
hb_wait_identity "$hh1_pid" 15
hid="$HB_ID"
must_wait 8 '[ "$(R hget "$hid" busy)" = 1 ]' "hiredhand's busy did not become 1"

both_listed() {   # ID1 JID1 ID2 JID2 CONTEXT
    local procs workers ids
    procs="$(hh_ruby hb_api.rb processes)" || fail "$5: hb_api.rb processes failed"
    workers="$(hh_ruby hb_api.rb workers)" || fail "$5: hb_api.rb workers failed"
    ids="$(printf '%s' "$procs" | ruby -rjson -e 'JSON.parse($stdin.read)["list"].each { |p| puts [p["identity"], p["pid"], p["busy"], p["queues"].join(",")].join(" ") }')"
    assert_contains "$ids" "$1 " "$5: Sidekiq::ProcessSet lists $1"
    assert_contains "$ids" "$3 " "$5: Sidekiq::ProcessSet lists $3"
    assert_contains "$workers" "$2" "$5: Sidekiq::Workers lists job $2"
    assert_contains "$workers" "$4" "$5: Sidekiq::Workers lists job $4"
    hh_cli processes --json -r "$REDIS_URL"
    assert_eq "$HH_RC" 0 "$5: hiredhand processes --json exit status"
    assert_contains "$HH_OUT" "\"$1\"" "$5: hiredhand processes --json lists $1"
    assert_contains "$HH_OUT" "\"$3\"" "$5: hiredhand processes --json lists $3"
}

for round in 1 2 3; do
    both_listed "$skid" "$sk_jid" "$hid" "$hh_jid1" "beat round $round"
    assert_between "$(R ttl "$skid")" 1 60 "round $round: TTL of sidekiq's hash"
    assert_between "$(R ttl "$hid")" 1 60 "round $round: TTL of hiredhand's hash"
    hb_wait_next_beat "$hid" 8
done
ids="$(hh_ruby hb_api.rb processes | ruby -rjson -e 'JSON.parse($stdin.read)["list"].each { |p| puts "#{p["identity"]} #{p["pid"]} #{p["busy"]} #{p["queues"].join(",")}" }')"
assert_contains "$ids" "$skid $SIDEKIQ_PID 1 default" "sidekiq's row (identity pid busy queues)"
assert_contains "$ids" "$hid $hh1_pid 1 hhq" "hiredhand's row (identity pid busy queues)"

# hiredhand stops cleanly: sidekiq stays
hh_stop_worker TERM 15
assert_eq "$WORKER_RC" 0 "hiredhand exit status after SIGTERM"
assert_eq "$(R sismember processes "$hid")" 0 "hiredhand left processes"
assert_eq "$(R sismember processes "$skid")" 1 "sidekiq still in processes after hiredhand's stop"
assert_eq "$(R hget "$skid" busy)" 1 "sidekiq's hash intact after hiredhand's stop"
assert_eq "$(R exists "$skid:workers")" 1 "sidekiq's work hash intact after hiredhand's stop"
procs="$(hh_ruby hb_api.rb processes)"
assert_contains "$procs" "$skid" "Sidekiq::ProcessSet still lists sidekiq after hiredhand's stop"
assert_not_contains "$procs" "$hid" "Sidekiq::ProcessSet no longer lists the stopped hiredhand"
assert_contains "$(hh_ruby hb_api.rb workers)" "$sk_jid" "Sidekiq::Workers still lists sidekiq's job"
hh_cli processes --json -r "$REDIS_URL"
assert_contains "$HH_OUT" "\"$skid\"" "hiredhand processes --json still lists sidekiq"

# a second hiredhand; then sidekiq stops cleanly: hiredhand stays
hh_jid2="$(hh_jid)"
hb_push SlowJob "$hh_jid2" '[40,"hh2"]' hhq2
hh_start_worker -c 2 -t 2 -q hhq2 --exec "SlowJob=$HH_HANDLERS/sleep.sh 40"
hb_wait_identity "$WORKER_PID" 15
hid2="$HB_ID"
must_wait 8 '[ "$(R hget "$hid2" busy)" = 1 ]' "second hiredhand's busy did not become 1"
both_listed "$skid" "$sk_jid" "$hid2" "$hh_jid2" "with the second hiredhand"
hb_wait_next_beat "$skid" 8     # sidekiq beats (and prunes) with hiredhand present
hh_sidekiq_stop
assert_eq "$(R sismember processes "$skid")" 0 "sidekiq left processes after its stop"
assert_eq "$(R sismember processes "$hid2")" 1 "hiredhand still in processes after sidekiq's stop"
assert_eq "$(R hget "$hid2" busy)" 1 "hiredhand's hash intact after sidekiq's stop"
assert_eq "$(R exists "$hid2:workers" "$hid2:work")" 2 "hiredhand's work hashes intact after sidekiq's stop"
procs="$(hh_ruby hb_api.rb processes)"
assert_contains "$procs" "$hid2" "Sidekiq::ProcessSet still lists hiredhand after sidekiq's stop"
assert_not_contains "$procs" "$skid" "Sidekiq::ProcessSet no longer lists the stopped sidekiq"
assert_contains "$(hh_ruby hb_api.rb workers)" "$hh_jid2" "Sidekiq::Workers still lists hiredhand's job"
hb_wait_next_beat "$hid2" 8
assert_eq "$(R sismember processes "$hid2")" 1 "hiredhand still registered one beat later"
pass
