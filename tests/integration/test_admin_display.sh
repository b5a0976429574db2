#!/usr/bin/env bash
# What the job management commands (retries, dead, scheduled: list, show, --all actions) find
# and show, from entries Sidekiq's clients and Web UI can hold:
# - `--error TEXT` searches error_class and error_message over their whole length: text after a
#   NUL ("boom\u0000Timeout") is found; `--class` and `--queue` compare whole strings, so
#   "K\u0000Evil" is not K.
. "$(dirname "$0")/../lib/harness.sh"
hh_require_binary
command -v jq >/dev/null || fail "jq is not installed (apt-get install jq)"
hh_redis_start
now=$(date +%s)

entry() {   # JID CLASS QUEUE ERROR_MESSAGE (JSON string bodies) [EXTRA JSON MEMBERS]
    printf '{"retry":true,"queue":"%s","class":"%s","args":[1],"jid":"%s","created_at":%s,"enqueued_at":%s,"retry_count":1,"error_class":"E","error_message":"%s","failed_at":%s%s}' \
        "$3" "$2" "$1" "$now" "$now" "$4" "$now" "${5:-}"
}
jids() { jq -r '.[].jid' <<<"$HH_OUT" | sort | tr '\n' ' '; }

# ---- --error over the whole error_message; --class/--queue over the whole string
for set in retry dead; do
    R zadd "$set" "$now" "$(entry nul1 K default 'boom\u0000Timeout::Error after 5 s')" >/dev/null
    R zadd "$set" "$((now + 1))" "$(entry nul2 'K\u0000Evil' 'default\u0000x' 'plain')" >/dev/null
    R zadd "$set" "$((now + 2))" "$(entry plain1 K default 'Timeout in plain')" >/dev/null
done
for cmd in retries dead; do
    hh_cli "$cmd" list --error Timeout --json -r "$REDIS_URL"
    assert_eq "$HH_RC" 0 "$cmd list --error (stderr: $HH_ERR)"
    assert_eq "$(jids)" "nul1 plain1 " "$cmd list --error finds text after a NUL in error_message"
    hh_cli "$cmd" list --class K --json -r "$REDIS_URL"
    assert_eq "$(jids)" "nul1 plain1 " "$cmd list --class K does not take class K\\u0000Evil"
    hh_cli "$cmd" list --queue default --json -r "$REDIS_URL"
    assert_eq "$(jids)" "nul1 plain1 " "$cmd list --queue default does not take queue default\\u0000x"
done
hh_cli retries delete --all --error 'after 5 s' --yes -r "$REDIS_URL"
assert_eq "$HH_RC" 0 "retries delete --all --error (stderr: $HH_ERR)"
assert_contains "$HH_OUT" "delete: 1 done" "delete --all --error acts on the entry whose match is after a NUL"
assert_eq "$(R zrange retry 0 -1 | jq -r .jid | sort | tr '\n' ' ')" "nul2 plain1 " "the matching entry is gone, the others stay"
R del retry dead >/dev/null
pass
