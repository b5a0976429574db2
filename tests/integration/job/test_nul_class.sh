#!/usr/bin/env bash
# A class name holding NUL ("T\u0000Evil") is not T: T's handler must not run for it. No handler
# matches, so it fails as Sidekiq fails a class it cannot constantize (NameError, through the
# retry rules: dropped with retry false, in the retry set with retry true, the class kept).
# The stored error_message holds the class raw, as Sidekiq's NameError message does (NUL or control
# characters included); only what shows it escapes it, once.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start

nul='{"class":"T\u0000Evil","args":[],"jid":"nulclass","retry":false,"queue":"default"}'
nul_retry='{"class":"T\u0000Evil","args":[],"jid":"nulretry","retry":true,"queue":"default"}'
ctl_retry='{"class":"T\u001b[31mEvil","args":[],"jid":"ctlretry","retry":true,"queue":"default"}'
plain='{"class":"T","args":[],"jid":"plain","retry":false,"queue":"default"}'
# oldest first: the marker job runs last
R lpush queue:default "$nul" "$nul_retry" "$ctl_retry" "$plain" >/dev/null

hh_start_worker -c 1 --exec "T=$HH_HANDLERS/record.sh"
wait_until 30 '[ "$(R llen queue:default)" = 0 ] && [ "$(R zcard retry)" = 2 ] && R lrange test:ran 0 -1 | grep -q plain' || fail \
    "the jobs were not all handled within 30 s (queue=$(R llen queue:default) retry=$(R zcard retry) ran=$(R llen test:ran))"
assert_eq "$(R llen test:ran)" 1 "only the real T job may run T's handler"
assert_eq "$(R lindex test:ran 0)" "$plain" "the job T's handler ran"
entry="$(R zrange retry 0 -1 | grep nulretry)"
assert_contains "$entry" '"class":"T\u0000Evil"' "the retry entry keeps the class as it was"
assert_contains "$entry" '"error_class":"NameError"' "the class is unknown: NameError"
assert_contains "$entry" '"error_message":"uninitialized constant T\u0000Evil"' \
    "the error message holds the whole class, raw (not the log's escaping)"
ctl_entry="$(R zrange retry 0 -1 | grep ctlretry)"
assert_contains "$ctl_entry" '"error_message":"uninitialized constant T\u001B[31mEvil"' \
    "the error message holds a class with a control character raw"
assert_eq "$(R zcard dead)" 0 "nothing is buried as malformed"
# the whole class everywhere it is shown: the WARN line, retries show, retries list --json
must_wait 30 'grep -q "jid=nulretry: failed" "$WORKER_LOG"' "no WARN line for nulretry in the log"
assert_contains "$(grep 'jid=nulretry: failed' "$WORKER_LOG")" 'class=T\x00Evil jid=nulretry' "the WARN line shows the whole class"
hh_cli retries show nulretry -r "$REDIS_URL"
assert_eq "$HH_RC" 0 "retries show nulretry (stderr: $HH_ERR)"
assert_contains "$HH_OUT" 'class:         T\x00Evil' "retries show prints the whole class"
assert_contains "$HH_OUT" 'error:         NameError: uninitialized constant T\x00Evil' \
    "retries show escapes the error message once"
assert_not_contains "$HH_OUT" 'T\\x00Evil' "retries show does not escape the error message twice"
hh_cli retries show ctlretry -r "$REDIS_URL"
assert_contains "$HH_OUT" 'error:         NameError: uninitialized constant T\x1b[31mEvil' \
    "retries show escapes a control character in the error message once"
hh_cli retries list -r "$REDIS_URL"
assert_contains "$HH_OUT" 'T\x00Evil' "retries list prints the whole class"
assert_contains "$HH_OUT" 'NameError: uninitialized constant T\x00Evil' "retries list shows the error message escaped once"
assert_not_contains "$HH_OUT" 'T\\x00Evil' "retries list does not escape the error message twice"
hh_cli retries list --json -r "$REDIS_URL"
assert_contains "$HH_OUT" '"class":"T\u0000Evil"' "retries list --json has the whole class"
assert_contains "$HH_OUT" '"error_message":"uninitialized constant T\u0000Evil"' "retries list --json has the raw error message"
assert_contains "$(grep 'jid=nulretry: failed' "$WORKER_LOG")" 'NameError: uninitialized constant T\x00Evil' \
    "the WARN line shows the whole error message, escaped once"
hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "worker exit status after SIGTERM"
pass
