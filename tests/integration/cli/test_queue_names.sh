#!/usr/bin/env bash
# Queue names as Sidekiq's clients write them: -q (push and work) takes names up to 1024 bytes
# (a worker fetches from such a queue) and refuses a longer one with status 2 and the limit;
# `queues list` prints control characters escaped (\x1b, \n, a backslash as \\) and
# `queues show` / `queues clear` take the name in that same escaped form. The empty name (a job
# whose "queue" is "" lands in `queue:`): list shows it as '', `queues show ''` and
# `queues clear ''` reach it; `work -q ''` stays refused.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start

# --- long names: 1024 bytes are taken, 1025 refused with a clear error
long="$(head -c 1024 /dev/zero | tr '\0' 'q')"
hh_cli push K '[1]' -q "$long"
assert_eq "$HH_RC" 0 "push -q with a 1024-byte queue name (stderr: $HH_ERR)"
assert_eq "$(R llen "queue:$long")" 1 "the job is in queue:<1024 bytes>"
hh_cli push K '[1]' -q "${long}q"
assert_eq "$HH_RC" 2 "push -q with a 1025-byte queue name"
assert_contains "$HH_ERR" "longer than 1024 bytes" "the error says the limit"
hh_start_worker -c 1 -q "$long" --exec "K=$HH_HANDLERS/record.sh"
must_wait 30 '[ "$(R llen test:ran)" = 1 ]' "the worker did not run the job of the 1024-byte queue within 30 s"
hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "the worker exits 0"
hh_cli work -q "${long}q" --exec "K=$HH_HANDLERS/record.sh" -r "$REDIS_URL"
assert_eq "$HH_RC" 2 "work -q with a 1025-byte queue name"
assert_contains "$HH_ERR" "longer than 1024 bytes" "work's error says the limit"

# --- control characters: escaped by list, taken escaped by show and clear
esc=$'a\x1b]0;x\x07b'
nl=$'line\nbreak'
bs='back\slash'
for q in "$esc" "$nl" "$bs"; do
    printf '{"retry":true,"queue":"x","class":"K","args":[],"jid":"%s","enqueued_at":%s}' "$(hh_jid)" "$(hh_now)" |
        R -x lpush "queue:$q" >/dev/null
    R sadd queues "$q" >/dev/null
done
hh_cli queues list
assert_eq "$HH_RC" 0 "queues list (stderr: $HH_ERR)"
case "$HH_OUT" in *$'\e'*|*$'\a'*) fail "queues list printed a raw control character: $(printf '%s' "$HH_OUT" | cat -v)" ;; esac
assert_contains "$HH_OUT" 'a\x1b]0;x\x07b' "queues list escapes ESC and BEL as \\xNN"
assert_contains "$HH_OUT" 'line\nbreak' "queues list escapes a newline as \\n"
assert_contains "$HH_OUT" 'back\\slash' "queues list doubles a backslash"

hh_cli queues show 'a\x1b]0;x\x07b'
assert_eq "$HH_RC" 0 "queues show with the escaped name (stderr: $HH_ERR)"
assert_contains "$HH_OUT" '1 jobs' "queues show finds the queue's job: $HH_OUT"
hh_cli queues show 'line\nbreak' --json
assert_eq "$HH_RC" 0 "queues show of a name with a newline (stderr: $HH_ERR)"
assert_eq "$(jq -r .size <<<"$HH_OUT")" 1 "its size"
hh_cli queues show 'back\\slash' --json
assert_eq "$(jq -r .size <<<"$HH_OUT")" 1 "a backslash written as \\\\"
hh_cli queues show 'a\xZZ'
assert_eq "$HH_RC" 2 "a bad \\x escape is a usage error"
assert_contains "$HH_ERR" "two hex digits" "and says what is wrong"

hh_cli queues clear 'a\x1b]0;x\x07b' --yes
assert_eq "$HH_RC" 0 "queues clear with the escaped name (stderr: $HH_ERR)"
assert_eq "$(R exists "queue:$esc")" 0 "the queue with ESC in its name is gone"
assert_eq "$(R sismember queues "$esc")" 0 "and out of the queues set"
assert_eq "$(R exists "queue:$nl")" 1 "the other queues stay"

# --- the empty name: `queue:`, reached by show and clear as ''
ejid="$(hh_jid)"
printf '{"retry":true,"queue":"","class":"K","args":[],"jid":"%s","enqueued_at":%s}' "$ejid" "$(hh_now)" |
    R -x lpush "queue:" >/dev/null
R sadd queues "" >/dev/null
hh_cli queues list
assert_eq "$HH_RC" 0 "queues list with the empty-named queue (stderr: $HH_ERR)"
assert_contains "$HH_OUT" "''  " "queues list shows the empty name as ''"
hh_cli queues show ''
assert_eq "$HH_RC" 0 "queues show '' (stderr: $HH_ERR)"
assert_contains "$HH_OUT" "queue '': 1 jobs" "queues show '' finds the job in queue:"
hh_cli queues show '' --json
assert_eq "$(jq -r '.jobs[0].jid' <<<"$HH_OUT")" "$ejid" "queues show '' --json names its job"
hh_cli queues clear '' --yes
assert_eq "$HH_RC" 0 "queues clear '' (stderr: $HH_ERR)"
assert_contains "$HH_OUT" "(1 jobs)" "queues clear '' says what it removed"
assert_eq "$(R exists "queue:")" 0 "queue: is gone"
assert_eq "$(R sismember queues "")" 0 "and the empty name is out of the queues set"
assert_eq "$(R exists "queue:$nl")" 1 "the other queues stay"
hh_cli work -q '' --exec "K=$HH_HANDLERS/record.sh" -r "$REDIS_URL"
assert_eq "$HH_RC" 2 "work -q '' stays refused"
assert_contains "$HH_ERR" "empty" "and says the name is empty"
pass
