#!/usr/bin/env bash
# Active Job payloads (tests/fixtures/activejob: Rails 6.1 + Sidekiq 6 and Rails 7.1 + Sidekiq 7
# shapes) go to the handler of their "wrapped" class, for --serve and --exec, and reach it
# unchanged; logs, the Busy page (through Sidekiq's API, as its Web UI reads it) and the retry set
# show the wrapped class; a failure is retried as Sidekiq does (class and wrapped kept, retry_count
# 0, the handler's error); a catch-all gets the wrapped class.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start
export SERVE_DIR; SERVE_DIR="$(hh_tmp)"
FIX="$HH_TESTS_DIR/fixtures/activejob"
H="$HH_HANDLERS/serve_test.py"

payload() {   # FIXTURE WRAPPED JID [SED-EXPR]
    sed -e "s/@WRAPPED@/$2/g" -e "s/@JID@/$3/g" -e "s/@NOW@/$(hh_now)/g" -e "${4:-s/^//}" "$FIX/$1.json" | tr -d '\n'
}
push() {      # FIXTURE WRAPPED [SED-EXPR] -> jid (the exact payload in $SERVE_DIR/payload.<jid>)
    local jid; jid="$(hh_jid)"
    payload "$1" "$2" "$jid" "${3:-}" >"$SERVE_DIR/payload.$jid"
    R -x lpush queue:default <"$SERVE_DIR/payload.$jid" >/dev/null
    R sadd queues default >/dev/null
    echo "$jid"
}
ran_class() { grep " $1 " "$SERVE_DIR/ran" 2>/dev/null | cut -d' ' -f3; }
same_json() {  # FILE1 JSON2: equal as JSON
    python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1])) != json.loads(sys.argv[2]))' "$1" "$2"
}

j6="$(push rails61_sidekiq6 Ok)"
j7="$(push rails71_sidekiq7 Ok)"
j6f="$(push rails61_sidekiq6 Fail)"
j7f="$(push rails71_sidekiq7 Fail)"
j7m="$(push rails71_sidekiq7 MailJob)"
j6any="$(push rails61_sidekiq6 Reports::NightlyJob)"
hh_start_worker -c 3 -v --heartbeat-interval 0.5 --serve "Ok=$H" --serve "Fail=$H" --serve "Sleep=$H" \
    --exec "MailJob=$HH_HANDLERS/record.sh" --serve "*=$H"
must_wait 60 '[ "$(R get stat:processed)" = 6 ]' "processed=$(R get stat:processed) retry=$(R zcard retry)"

# routed by the wrapped class, payload unchanged
assert_eq "$(ran_class "$j6")" Ok "6.x payload: handler class"
assert_eq "$(ran_class "$j7")" Ok "7.x payload: handler class"
assert_eq "$(ran_class "$j6any")" Reports::NightlyJob "catch-all: class on the job line is the wrapped one"
for j in "$j6" "$j7" "$j6f"; do
    job="$(grep "$j" "$SERVE_DIR/lines" | python3 -c 'import json,sys; print(json.dumps(json.loads(sys.stdin.read())["job"]))')"
    same_json "$SERVE_DIR/payload.$j" "$job" || fail "--serve: job line's payload differs from what was pushed for $j: $job"
done
assert_eq "$(R lrange test:ran 0 -1 | grep "$j7m")" "$(cat "$SERVE_DIR/payload.$j7m")" "--exec: stdin is the exact payload"
assert_eq "$(R lrange test:meta 0 -1 | grep "$j7m" | cut -d' ' -f2)" MailJob "--exec: HIREDHAND_CLASS is the wrapped class"

# logs name the wrapped class
grep -q "class=Ok jid=$j6 INFO: start" "$WORKER_LOG" || fail "log does not show the wrapped class for $j6"
grep -q "class=Fail jid=$j6f: failed" "$WORKER_LOG" || fail "failure log does not show the wrapped class"

# failures: retried as Sidekiq does, shown by Sidekiq's API with the wrapped class
assert_eq "$(R zcard retry)" 2 "two failures in the retry set"
info="$(hh_ruby activejob_check.rb retry "$j6f")" || fail "Sidekiq::RetrySet does not find $j6f"
for want in '"display_class":"Fail"' '"class":"ActiveJob::QueueAdapters::SidekiqAdapter::JobWrapper"' \
            '"wrapped":"Fail"' '"error_class":"Custom::Error"' '"retry_count":0' \
            '"display_args":[42,{"name":"Ada"' ; do
    assert_contains "$info" "$want" "RetrySet entry of a 6.x Active Job"
done
m7="$(R zrange retry 0 -1 | grep "$j7f")"
for want in '"class":"Sidekiq::ActiveJob::Wrapper"' '"wrapped":"Fail"' '"error_class":"Custom::Error"' '"retry_count":0'; do
    assert_contains "$m7" "$want" "retry entry of a 7.x Active Job"
done
inner="$(printf '%s' "$m7" | python3 -c 'import json,sys; print(json.dumps(json.loads(sys.stdin.read())["args"]))')"
orig="$(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["args"]))' "$SERVE_DIR/payload.$j7f")"
assert_eq "$inner" "$orig" "retry entry keeps Active Job's serialized job unchanged"

# no handler for the wrapped class, no catch-all: NameError names the wrapped class, as the
# adapter's wrapper raises it in Ruby
hh_stop_worker TERM 30
jn="$(push rails61_sidekiq6 Missing::Job)"
hh_start_worker -c 3 -v --heartbeat-interval 0.5 --serve "Ok=$H" --serve "Sleep=$H"
must_wait 60 '[ -n "$(R zrange retry 0 -1 | grep "$jn")" ]' "a job of an unhandled wrapped class is not in the retry set"
mn="$(R zrange retry 0 -1 | grep "$jn")"
assert_contains "$mn" '"error_class":"NameError"' "unhandled wrapped class: error_class"
assert_contains "$mn" '"error_message":"uninitialized constant Missing::Job"' "unhandled wrapped class: error_message"
assert_contains "$mn" '"wrapped":"Missing::Job"' "unhandled wrapped class: payload kept"

# the Busy page (Sidekiq's API, as its Web UI reads it) shows the wrapped class
push rails61_sidekiq6 Sleep 's/"arguments":\[42,/"arguments":[6,/' >/dev/null
must_wait 30 'grep -q sleeping "$SERVE_DIR/sleep" 2>/dev/null' "the Sleep job did not start"
must_wait 10 '[ "$(hh_ruby activejob_check.rb busy)" = "[\"Sleep\"]" ]' \
    "Busy page shows $(hh_ruby activejob_check.rb busy), not [\"Sleep\"]"
must_wait 60 '[ "$(R get stat:processed)" = 8 ]' "the Sleep job did not finish"
hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "exit status"
pass
