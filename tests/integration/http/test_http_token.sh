#!/usr/bin/env bash
# The optional bearer token of the HTTP endpoint (docs/security.md):
#   - --http-token-file FILE: /stats and /metrics answer 401 (WWW-Authenticate: Bearer) without
#     "Authorization: Bearer <token>", or with a wrong one (also one differing only in the last
#     byte, a prefix, or a longer one), and 200 with it; the scheme is matched without case;
#   - /healthz stays open and tells only status and ages: no identity, host, queue or Redis
#     error, also when unhealthy;
#   - HIREDHAND_HTTP_TOKEN does the same, and an --exec handler does not inherit it;
#   - a bad token file (missing, empty, with a space) is a usage error (exit 2);
#   - without a token, /stats stays open (the default).
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
command -v curl >/dev/null || fail "curl is not installed (apt-get install curl)"
command -v jq >/dev/null || fail "jq is not installed (apt-get install jq)"
hh_redis_start

token="s3cr3t-Token_0123456789abcdef"
printf '%s\n' "$token" >"$HH_TMP/token"
port="$(hh_pick_free_port)"
base="http://127.0.0.1:$port"
hh_start_worker -c 1 --heartbeat-interval 1 --liveness-max-age 3 --http "$port" \
    --http-token-file "$HH_TMP/token" -q secretqueue
must_wait 10 '[ "$(hh_http_code "$base/healthz")" = 200 ]' "/healthz did not answer 200 within 10 s of start"
assert_not_contains "$(tr '\0' ' ' </proc/"$WORKER_PID"/cmdline)" "$token" "the token is not on the command line"

for path in /stats /metrics; do
    assert_eq "$(hh_http_code "$base$path")" 401 "$path without a token"
    assert_eq "$(hh_http_code -H "Authorization: Bearer wrong" "$base$path")" 401 "$path with a wrong token"
    assert_eq "$(hh_http_code -H "Authorization: Bearer ${token%?}X" "$base$path")" 401 "$path, last byte wrong"
    assert_eq "$(hh_http_code -H "Authorization: Bearer ${token%?}" "$base$path")" 401 "$path with a prefix of the token"
    assert_eq "$(hh_http_code -H "Authorization: Bearer ${token}x" "$base$path")" 401 "$path with a longer token"
    assert_eq "$(hh_http_code -H "Authorization: Basic $token" "$base$path")" 401 "$path with another scheme"
    assert_eq "$(hh_http_code -H "Authorization: Bearer $token" "$base$path")" 200 "$path with the token"
    assert_eq "$(hh_http_code -H "Authorization: bearer $token" "$base$path")" 200 "$path, scheme in lower case"
done
hdr="$(curl -s -D - -o "$HH_TMP/body" --max-time 3 "$base/stats" | tr -d '\r')"
assert_contains "$hdr" 'WWW-Authenticate: Bearer' "401 names the scheme"
assert_not_contains "$(cat "$HH_TMP/body")" "secretqueue" "a 401 reveals no queue"
body="$(curl -s --max-time 3 -H "Authorization: Bearer $token" "$base/stats")"
assert_eq "$(jq -r '.queues[0].name' <<<"$body")" secretqueue "/stats with the token"

# /healthz: status and ages only, healthy and unhealthy
body="$(curl -s --max-time 3 "$base/healthz")"
assert_eq "$(jq -r '.status' <<<"$body")" ok "/healthz status"
assert_eq "$(jq -r 'keys | sort | join(",")' <<<"$body")" "heartbeat_age,liveness_max_age,status" "/healthz fields"
hh_redis_stop
must_wait 10 '[ "$(hh_http_code "$base/healthz")" = 503 ]' "/healthz did not turn 503 with Redis down"
body="$(curl -s --max-time 3 "$base/healthz")"
assert_eq "$(jq -r 'keys | sort | join(",")' <<<"$body")" "heartbeat_age,liveness_max_age,reason,status" \
    "unhealthy /healthz fields ($body)"
assert_not_contains "$body" "$REDIS_PORT" "/healthz reveals no Redis address"
assert_not_contains "$body" "$(hostname)" "/healthz reveals no host name"
hh_redis_restart
hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "worker exit status"

# HIREDHAND_HTTP_TOKEN, and a handler does not inherit it
cat >"$HH_TMP/env.sh" <<EOS
#!/bin/sh
env >"$HH_TMP/handler.env"
EOS
chmod +x "$HH_TMP/env.sh"
HIREDHAND_HTTP_TOKEN="$token" hh_start_worker -c 1 --http "$port" --exec "EnvJob=$HH_TMP/env.sh"
must_wait 10 '[ "$(hh_http_code "$base/healthz")" = 200 ]' "/healthz (env token) did not answer 200"
assert_eq "$(hh_http_code "$base/stats")" 401 "/stats without the env token"
assert_eq "$(hh_http_code -H "Authorization: Bearer $token" "$base/stats")" 200 "/stats with the env token"
R lpush queue:default '{"class":"EnvJob","args":[],"jid":"'"$(hh_jid)"'","queue":"default","retry":false,"created_at":1700000000.0,"enqueued_at":1700000000.0}' >/dev/null
must_wait 15 '[ -s "$HH_TMP/handler.env" ]' "the handler did not run"
assert_not_contains "$(cat "$HH_TMP/handler.env")" "$token" "a handler's environment holds no token"
hh_stop_worker TERM 30

# bad token files
hh_cli work -r "$REDIS_URL" --http "$port" --http-token-file "$HH_TMP/missing"
assert_eq "$HH_RC" 2 "a missing token file"
assert_contains "$HH_ERR" "http-token-file" "the error names the option"
: >"$HH_TMP/empty"
hh_cli work -r "$REDIS_URL" --http "$port" --http-token-file "$HH_TMP/empty"
assert_eq "$HH_RC" 2 "an empty token file"
printf 'two words\n' >"$HH_TMP/space"
hh_cli work -r "$REDIS_URL" --http "$port" --http-token-file "$HH_TMP/space"
assert_eq "$HH_RC" 2 "a token with a space"
assert_not_contains "$HH_ERR" "two words" "the error does not print the token"

# no token: open, as before
hh_start_worker -c 1 --http "$port"
must_wait 10 '[ "$(hh_http_code "$base/stats")" = 200 ]' "/stats without a token configured"
hh_stop_worker TERM 30
pass
