#!/usr/bin/env bash
# Job management on jobs a real Sidekiq 6.4 server failed, read back through Sidekiq's own API:
#   - `retries list --json` shows Sidekiq's entries (class, queue, retry_count, error fields);
#     --error and --class filter them; `show` and `jobs find` find one;
#   - `retries retry JID`: Sidekiq::Queue finds it at once with retry_count - 1 and a fresh
#     enqueued_at, Sidekiq::RetrySet no longer holds it; Sidekiq then runs it, and fails it again
#     into the RetrySet with retry_count 0;
#   - `retries kill JID`: Sidekiq::DeadSet holds the entry byte for byte, scored now;
#   - `dead retry JID` and `retries delete JID`; a jid nowhere exits 1;
#   - `busy` and `jobs find` show a job Sidekiq is running (its <identity>:workers hash).
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start

j1="$(hh_ruby admin_real.rb push FailWorker '[1]')" || fail "push 1"
j2="$(hh_ruby admin_real.rb push FailWorker '[2]')" || fail "push 2"
j3="$(hh_ruby admin_real.rb push FailWorker '[3]')" || fail "push 3"
hh_sidekiq_start app.rb
must_wait 60 '[ "$(R zcard retry)" = 3 ]' "sidekiq did not fail the 3 jobs into the retry set (retry=$(R zcard retry))"
hh_sidekiq_stop

hh_cli retries list --json
assert_eq "$HH_RC" 0 "retries list --json (stderr: $HH_ERR)"
for j in "$j1" "$j2" "$j3"; do assert_contains "$HH_OUT" "\"jid\":\"$j\"" "retries list shows $j"; done
assert_contains "$HH_OUT" '"class":"FailWorker","queue":"default"' "retries list shows class and queue"
assert_contains "$HH_OUT" '"retry_count":0,"error_class":"RuntimeError","error_message":"boom [2]"' "retries list shows Sidekiq's error fields"
hh_cli retries list --error 'boom [2]'
assert_eq "$HH_RC" 0 "retries list --error"
assert_contains "$HH_OUT" "$j2" "--error 'boom [2]' keeps $j2"
assert_not_contains "$HH_OUT" "$j1" "--error 'boom [2]' drops $j1"
hh_cli retries list --class OkWorker --json
assert_eq "$HH_OUT" "[]" "--class OkWorker matches nothing"
hh_cli retries show "$j3"
assert_eq "$HH_RC" 0 "retries show"
assert_contains "$HH_OUT" "error:         RuntimeError: boom [3]" "retries show prints the error"
hh_cli jobs find "$j3"
assert_contains "$HH_OUT" "retry, at" "jobs find says the job is in the retry set"

hh_ruby admin_real.rb snapshot "$j1" "$HH_TMP/j1.json" || fail "snapshot j1"
hh_ruby admin_real.rb snapshot "$j2" "$HH_TMP/j2.json" || fail "snapshot j2"
hh_cli retries retry "$j1"
assert_eq "$HH_RC" 0 "retries retry $j1 (stderr: $HH_ERR)"
hh_ruby admin_real.rb retried "$j1" "$HH_TMP/j1.json" || fail "Sidekiq's API disagrees after 'retries retry'"
hh_cli jobs find "$j1" --json
assert_contains "$HH_OUT" '"where":"queue","queue":"default","position":0' "jobs find: in the queue, next to run"

hh_cli retries kill "$j2"
assert_eq "$HH_RC" 0 "retries kill $j2 (stderr: $HH_ERR)"
hh_ruby admin_real.rb killed "$j2" "$HH_TMP/j2.json" || fail "Sidekiq's API disagrees after 'retries kill'"
hh_cli retries kill "$j2"
assert_eq "$HH_RC" 1 "killing it again: not found (exit 1)"

hh_cli retries delete "$j3"
assert_eq "$HH_RC" 0 "retries delete"
hh_ruby admin_real.rb gone "$j3" || fail "deleted job still visible to Sidekiq's API"
hh_cli jobs find "$j3"
assert_eq "$HH_RC" 1 "jobs find of a deleted jid exits 1"

# Sidekiq runs the retried job and fails it again: retry_count -1 + 1 = 0
hh_sidekiq_start app.rb
must_wait 60 '[ "$(hh_ruby admin_real.rb refailed "$j1")" = "retry 0 retried_at" ]' \
    "Sidekiq did not fail the retried job back into RetrySet with retry_count 0 (state: $(hh_ruby admin_real.rb refailed "$j1"))"

# dead retry: back to the queue, where the running Sidekiq takes it and fails it into RetrySet
hh_cli dead retry "$j2"
assert_eq "$HH_RC" 0 "dead retry (stderr: $HH_ERR)"
must_wait 60 '[ "$(hh_ruby admin_real.rb refailed "$j2")" != absent ]' "the job retried from the dead set did not run and fail again in Sidekiq"
assert_eq "$(R zcard dead)" 0 "the dead set is empty after 'dead retry'"

# busy: a job Sidekiq is running right now
js="$(hh_ruby admin_real.rb push SlowWorker '[40]')" || fail "push SlowWorker"
must_wait 30 '"$HIREDHAND" busy --json | grep -q "\"jid\":\"$js\""' "hiredhand busy did not show Sidekiq's running SlowWorker ($("$HIREDHAND" busy --json))"
hh_cli busy --json
assert_contains "$HH_OUT" '"queue":"default","class":"SlowWorker"' "busy shows queue and class"
assert_contains "$HH_OUT" ":$SIDEKIQ_PID:" "busy shows Sidekiq's identity"
hh_cli busy
assert_contains "$HH_OUT" "SlowWorker" "busy text output"
hh_cli jobs find "$js" --json
assert_contains "$HH_OUT" '"where":"running"' "jobs find: running"
pass
