#!/usr/bin/env bash
# Real Rails 6.1 Active Job (Debian's ruby-activejob, Sidekiq 6.4's adapter): perform_later and
# set(wait: ...).perform_later run by the handler of the wrapped class, a --serve Python handler
# and an --exec shell handler; a failure sits in Sidekiq's RetrySet shown with the wrapped class.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
ruby -e 'require "active_job"' 2>/dev/null || fail "ruby-activejob is not installed (scripts/deps.sh test)"
hh_redis_start
export SERVE_DIR; SERVE_DIR="$(hh_tmp)"
H="$HH_HANDLERS/serve_test.py"

j_now="$(hh_ruby activejob_push.rb now Ok 42 hello)" || fail "perform_later failed"
j_mail="$(hh_ruby activejob_push.rb now Billing::InvoiceMailJob 7)" || fail "perform_later failed"
j_fail="$(hh_ruby activejob_push.rb now Fail 1)" || fail "perform_later failed"
j_later="$(hh_ruby activejob_push.rb later 2 Ok 99 later)" || fail "set(wait:).perform_later failed"
assert_eq "$(R zcard schedule)" 1 "set(wait:) job is in the schedule set"
assert_contains "$(R lrange queue:default 0 -1 | grep "$j_now")" '"class":"ActiveJob::QueueAdapters::SidekiqAdapter::JobWrapper"' "Rails 6.1 pushes the wrapper class"

hh_start_worker -c 2 --poll-interval 0.5 --serve "Ok=$H" --serve "Fail=$H" --exec "Billing::InvoiceMailJob=$HH_HANDLERS/record.sh"
must_wait 60 '[ "$(grep -c " $j_now Ok " "$SERVE_DIR/ran" 2>/dev/null)" = 1 ]' "perform_later job not run by the Ok --serve handler"
must_wait 60 '[ "$(grep -c " $j_later Ok " "$SERVE_DIR/ran" 2>/dev/null)" = 1 ]' "set(wait:) job not run by the Ok --serve handler"
must_wait 60 '[ "$(R lrange test:meta 0 -1 | grep -c "$j_mail Billing::InvoiceMailJob ")" = 1 ]' "mail job not run by the --exec handler"
must_wait 60 '[ "$(R zcard retry)" = 1 ]' "Fail job not in the retry set"
line="$(grep "$j_now" "$SERVE_DIR/lines")"
assert_contains "$line" '"job_class":"Ok"' "Active Job's serialization reaches the handler"
assert_contains "$line" '"arguments":[42,"hello"]' "Active Job's arguments reach the handler"
info="$(hh_ruby activejob_check.rb retry "$j_fail")" || fail "Sidekiq::RetrySet does not find $j_fail"
assert_contains "$info" '"display_class":"Fail"' "RetrySet shows the wrapped class"
assert_contains "$info" '"error_class":"Custom::Error"' "RetrySet has the handler's error class"
assert_contains "$info" '"wrapped":"Fail"' "retry entry keeps wrapped"
assert_eq "$(R zcard schedule)$(R llen queue:default)" "00" "nothing left to run"
hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "exit status"
pass
