#!/usr/bin/env bash
# The HTTP endpoints (`hiredhand work --http [HOST:]PORT --liveness-max-age S`):
#   - a bare port listens on 127.0.0.1 only; [::1]:PORT listens on IPv6 loopback (when present);
#   - GET /healthz is 200 {"status":"ok"} after start;
#   - GET /stats is JSON with every documented field, and processed/failed/fetched grow as
#     jobs pushed with `hiredhand push` run;
#   - GET /metrics is Prometheus text 0.0.4 (Content-Type, HELP/TYPE, every sample line parses,
#     label values escaped, the info metric carries the identity);
#   - HEAD works, unknown paths are a JSON 404, other methods a 405 with an Allow header;
#   - a port in use or a bad address makes `hiredhand work` exit 2 with a clear message;
#   - liveness: with --heartbeat-interval 1 --liveness-max-age 3, stopping Redis turns /healthz
#     503 (with a reason) within ~5 s while the process stays up, and restarting Redis on the
#     same port brings it back to 200 within a few seconds;
#   - after TERM the worker exits 0 and the port is closed.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
command -v curl >/dev/null || fail "curl is not installed (apt-get install curl)"
command -v jq >/dev/null || fail "jq is not installed (apt-get install jq)"
hh_redis_start

# http_req [CURL-ARGS...] URL: sets HTTP_CODE, HTTP_BODY, HTTP_HEADERS (bounded at 5 s).
http_req() {
    local hdr="$HH_TMP/http.hdr" body="$HH_TMP/http.body"
    : >"$hdr"; : >"$body"
    HTTP_CODE="$(curl -sS -g --max-time 5 -D "$hdr" -o "$body" -w '%{http_code}' "$@" 2>"$HH_TMP/http.err")" || HTTP_CODE=000
    HTTP_BODY="$(cat "$body")"
    HTTP_HEADERS="$(tr -d '\r' <"$hdr")"
}
header_of() {   # NAME: the value of that response header in HTTP_HEADERS (case-insensitive)
    printf '%s\n' "$HTTP_HEADERS" | awk -v n="$1" 'BEGIN { n = tolower(n) ":" }
        tolower(substr($0, 1, length(n))) == n { sub(/^[^:]*:[ \t]*/, ""); print; exit }'
}

port="$(hh_pick_free_port)"
base="http://127.0.0.1:$port"
odd_queue='odd"q\x'   # a queue name that needs escaping as a Prometheus label value
hh_start_worker -c 2 --heartbeat-interval 1 --liveness-max-age 3 --http "$port" \
    -q default -q "$odd_queue" \
    --exec "OkJob=$HH_HANDLERS/record.sh" --exec "FailJob=$HH_HANDLERS/fail.sh"
main_pid="$WORKER_PID"
main_log="$WORKER_LOG"

# ------------------------------------------------------------------ /healthz after start
must_wait 10 '[ "$(hh_http_code "$base/healthz")" = 200 ]' "/healthz did not answer 200 within 10 s of start"
http_req "$base/healthz"
assert_eq "$HTTP_CODE" 200 "/healthz status"
assert_eq "$(jq -r .status <<<"$HTTP_BODY")" ok "/healthz status field ($HTTP_BODY)"
assert_contains "$(header_of Content-Type)" "application/json" "/healthz Content-Type"
assert_contains "$(cat "$main_log")" "http://127.0.0.1:$port" "the worker logs where it serves"

# ------------------------------------------------------------------ bare port: 127.0.0.1 only
hexport="$(printf '%04X' "$port")"
listen4="$(awk -v p=":$hexport" '$4 == "0A" && substr($2, length($2) - 4) == p { print $2 }' /proc/net/tcp)"
assert_eq "$listen4" "0100007F:$hexport" "a bare --http port listens on 127.0.0.1 only (/proc/net/tcp)"
if [ -r /proc/net/tcp6 ]; then
    listen6="$(awk -v p=":$hexport" '$4 == "0A" && substr($2, length($2) - 4) == p { print $2 }' /proc/net/tcp6)"
    assert_eq "$listen6" "" "a bare --http port does not listen on IPv6"
fi
other_ip="$(hostname -I 2>/dev/null | tr ' ' '\n' | grep -E '^[0-9]+\.' | grep -v '^127\.' | head -n 1)"
if [ -n "$other_ip" ]; then
    assert_eq "$(hh_http_code "http://$other_ip:$port/healthz")" 000 "/healthz must not answer on $other_ip"
else
    hh_log "no non-loopback IPv4 address: skipped the connect-from-elsewhere check"
fi

# ------------------------------------------------------------------ /stats
http_req "$base/stats"
assert_eq "$HTTP_CODE" 200 "/stats status"
assert_contains "$(header_of Content-Type)" "application/json" "/stats Content-Type"
for f in identity started_at concurrency busy quiet stopping processed failed recovered \
         heartbeat_last_pushed_at heartbeat_age heartbeat_last_error redis_connected healthy queues; do
    jq -e "has(\"$f\")" <<<"$HTTP_BODY" >/dev/null || fail "/stats lacks \"$f\": $HTTP_BODY"
done
assert_eq "$(jq -r .concurrency <<<"$HTTP_BODY")" 2 "/stats concurrency"
assert_eq "$(jq -r .healthy <<<"$HTTP_BODY")" true "/stats healthy"
assert_eq "$(jq -r .redis_connected <<<"$HTTP_BODY")" true "/stats redis_connected"
assert_eq "$(jq -r .quiet <<<"$HTTP_BODY")" false "/stats quiet"
assert_eq "$(jq -r .processed <<<"$HTTP_BODY")" 0 "/stats processed before any job"
assert_eq "$(jq -r '[.queues[].name] | join(",")' <<<"$HTTP_BODY")" "default,$odd_queue" "/stats queue names"
jq -e '.queues[0] | has("name") and has("fetched") and has("size") and has("latency")' <<<"$HTTP_BODY" >/dev/null \
    || fail "/stats queue entries lack name/fetched/size/latency: $HTTP_BODY"
identity="$(jq -r .identity <<<"$HTTP_BODY")"
assert_eq "$identity" "$(R smembers processes | head -n 1)" "/stats identity is the heartbeat identity"
assert_between "$(jq -r .heartbeat_age <<<"$HTTP_BODY")" 0 3 "/stats heartbeat_age"

for i in 1 2 3; do
    hh_cli push OkJob "[$i]"
    assert_eq "$HH_RC" 0 "hiredhand push OkJob (stderr: $HH_ERR)"
done
hh_cli push FailJob '["x"]' --retry false
assert_eq "$HH_RC" 0 "hiredhand push FailJob (stderr: $HH_ERR)"
stat_field() { curl -s --max-time 3 "$base/stats" | jq -r "$1"; }
must_wait 15 '[ "$(stat_field .processed)" -ge 4 ]' "/stats processed did not reach 4 after 4 pushes: $(curl -s "$base/stats")"
must_wait 5 '[ "$(stat_field .failed)" -ge 1 ]' "/stats failed did not count the FailJob"
assert_eq "$(R llen test:ran)" 3 "the three OkJobs ran"
http_req "$base/stats"
assert_between "$(jq -r '.queues[0].fetched' <<<"$HTTP_BODY")" 4 100 "/stats default queue fetched"
processed="$(jq -r .processed <<<"$HTTP_BODY")"
failed="$(jq -r .failed <<<"$HTTP_BODY")"

# queue sizes are read per beat: wait for one that saw the queue drained
must_wait 5 '[ "$(stat_field ".queues[0].size")" = 0 ]' "/stats default queue size did not come back to 0"

# ------------------------------------------------------------------ /metrics
http_req "$base/metrics"
assert_eq "$HTTP_CODE" 200 "/metrics status"
assert_eq "$(header_of Content-Type)" "text/plain; version=0.0.4; charset=utf-8" "/metrics Content-Type"
metrics="$HTTP_BODY"
bad="$(printf '%s\n' "$metrics" | grep -v '^#' | grep -v '^$' | grep -Ev '^[a-z_]+(\{.*\})? ([0-9.eE+-]+|[+-]Inf|NaN)$' || true)"
assert_eq "$bad" "" "/metrics lines that do not parse"
bad="$(printf '%s\n' "$metrics" | grep '^#' | grep -Ev '^# (HELP [a-z_]+ .+|TYPE [a-z_]+ (counter|gauge|histogram))$' || true)"
assert_eq "$bad" "" "/metrics comment lines that are not HELP/TYPE"
for m in hiredhand_jobs_processed_total:counter hiredhand_jobs_failed_total:counter \
         hiredhand_jobs_recovered_total:counter hiredhand_busy:gauge hiredhand_concurrency:gauge \
         hiredhand_quiet:gauge hiredhand_heartbeat_last_pushed_timestamp_seconds:gauge \
         hiredhand_heartbeat_age_seconds:gauge hiredhand_queue_size:gauge \
         hiredhand_queue_latency_seconds:gauge hiredhand_queue_fetched_total:counter hiredhand_info:gauge; do
    name="${m%%:*}" type="${m##*:}"
    assert_contains "$metrics" "# TYPE $name $type" "/metrics TYPE line of $name"
    assert_contains "$metrics" "# HELP $name " "/metrics HELP line of $name"
    grep -Eq "^$name(\{.*\})? " <<<"$metrics" || fail "/metrics has no sample of $name"
done
# every sample's metric was declared by a TYPE line before it
undeclared="$(printf '%s\n' "$metrics" | awk '/^# TYPE / { t[$3] = 1; next } /^#/ || /^$/ { next }
    { n = $1; sub(/\{.*/, "", n); h = n; sub(/_(bucket|sum|count)$/, "", h); if (!(n in t) && !(h in t)) print n }')"
assert_eq "$undeclared" "" "/metrics samples without a TYPE line"
sample() { printf '%s\n' "$metrics" | awk -v n="$1" '$1 == n { print $2; exit }'; }
# the counters agree with /stats read just before (nothing new was pushed since)
assert_eq "$(sample hiredhand_jobs_processed_total)" "$processed" "/metrics processed_total"
assert_eq "$(sample hiredhand_jobs_failed_total)" "$failed" "/metrics failed_total"
assert_eq "$(sample hiredhand_concurrency)" 2 "/metrics concurrency"
assert_eq "$(sample hiredhand_quiet)" 0 "/metrics quiet"
assert_contains "$metrics" "hiredhand_info{identity=\"$identity\",version=\"" "/metrics info metric"
assert_contains "$metrics" 'hiredhand_queue_size{queue="default",scope="cluster"} 0' "/metrics default queue size"
assert_contains "$metrics" 'hiredhand_queue_fetched_total{queue="odd\"q\\x"} 0' "/metrics escapes label values"
labelled="$(printf '%s\n' "$metrics" | grep -v '^#' | grep 'identity=' | grep -v '^hiredhand_info{' || true)"
assert_eq "$labelled" "" "identity is a label of hiredhand_info only"

# ------------------------------------------------------------------ HEAD, 404, 405
http_req -I "$base/stats"   # with -I curl writes the headers where the body would go
assert_eq "$HTTP_CODE" 200 "HEAD /stats"
assert_contains "$(header_of Content-Type)" "application/json" "HEAD /stats Content-Type"
assert_eq "$(curl -s --max-time 5 -I -o /dev/null -w '%{size_download}' "$base/stats")" 0 "HEAD /stats has no body"
http_req "$base/nope"
assert_eq "$HTTP_CODE" 404 "GET /nope"
assert_eq "$(jq -r .error <<<"$HTTP_BODY")" "not found" "404 body is JSON ($HTTP_BODY)"
http_req "$base/healthz/"
assert_eq "$HTTP_CODE" 404 "GET /healthz/ (no prefix matching)"
http_req -X POST -d 'x=1' "$base/healthz"
assert_eq "$HTTP_CODE" 405 "POST /healthz"
assert_contains "$(header_of Allow)" "GET" "405 Allow header"
assert_contains "$(header_of Allow)" "HEAD" "405 Allow header"
assert_eq "$(jq -r .error <<<"$HTTP_BODY")" "method not allowed" "405 body is JSON ($HTTP_BODY)"
assert_eq "$(hh_http_code -X DELETE "$base/nope")" 405 "DELETE /nope"
assert_eq "$(hh_http_code "$base/healthz")" 200 "/healthz still answers after the error paths"

# ------------------------------------------------------------------ port in use, bad addresses
expect_exit2() {   # HTTP-ARG NEEDLE...
    local arg="$1"; shift
    hh_cli work -r "$REDIS_URL" --http "$arg" --exec "OkJob=$HH_HANDLERS/record.sh"
    assert_eq "$HH_RC" 2 "exit status of 'hiredhand work --http $arg' (stderr: $HH_ERR)"
    local n
    for n in "$@"; do assert_contains "$HH_ERR" "$n" "message of 'hiredhand work --http $arg'"; done
    # refused with the other options, before the worker starts: a usage
    # error, not a worker's log line
    assert_contains "$HH_ERR" "hiredhand: http: " "'hiredhand work --http $arg' refused as a usage error"
    assert_not_contains "$HH_ERR" "pid=" "'hiredhand work --http $arg' refused before the worker logged anything"
}
expect_exit2 "$port" "cannot listen on 127.0.0.1:$port" "Address already in use"
expect_exit2 "127.0.0.1:$port" "cannot listen on 127.0.0.1:$port" "Address already in use"
expect_exit2 "example.com:$port" "bad --http address"
expect_exit2 "::1:$port" "bad --http address" "brackets"
expect_exit2 "70000" "bad --http port"
assert_alive "$main_pid" "the first worker died while others failed to bind its port"
assert_eq "$(hh_http_code "$base/healthz")" 200 "/healthz of the first worker after the failed binds"

# ------------------------------------------------------------------ [::1]:PORT and localhost:PORT
if grep -q '^00000000000000000000000000000001 ' /proc/net/if_inet6 2>/dev/null; then
    p6="$(hh_pick_free_port)"
    hh_start_worker -c 1 --http "[::1]:$p6" --exec "OkJob=$HH_HANDLERS/record.sh"
    must_wait 10 '[ "$(hh_http_code "http://[::1]:$p6/healthz")" = 200 ]' "/healthz on [::1]:$p6 did not answer 200"
    assert_eq "$(hh_http_code "http://127.0.0.1:$p6/healthz")" 000 "[::1]:PORT must not answer on 127.0.0.1"
    hh_stop_worker TERM 30
    assert_eq "$WORKER_RC" 0 "exit status of the [::1] worker after TERM"
else
    hh_log "no IPv6 loopback: skipped the [::1]:PORT check"
fi
pl="$(hh_pick_free_port)"
hh_start_worker -c 1 --http "localhost:$pl" --exec "OkJob=$HH_HANDLERS/record.sh"
must_wait 10 '[ "$(hh_http_code "http://127.0.0.1:$pl/healthz")" = 200 ]' "/healthz on localhost:$pl (127.0.0.1) did not answer 200"
hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "exit status of the localhost worker after TERM"
WORKER_PID="$main_pid" WORKER_LOG="$main_log"

# ------------------------------------------------------------------ liveness: Redis goes away
assert_eq "$(hh_http_code "$base/healthz")" 200 "/healthz before stopping Redis"
t0=$(date +%s%N)
hh_redis_stop
wait_until 8 '[ "$(hh_http_code "$base/healthz")" = 503 ]' \
    || fail "/healthz still $(hh_http_code "$base/healthz") 8 s after Redis stopped (liveness max age 3 s, beats every 1 s)"
t_503=$(( ($(date +%s%N) - t0) / 1000000 ))
hh_log "/healthz turned 503 ${t_503} ms after Redis stopped"
[ "$t_503" -ge 1500 ] || fail "/healthz turned 503 after only ${t_503} ms (max age is 3 s)"
[ "$t_503" -le 5500 ] || fail "/healthz took ${t_503} ms to turn 503 (want within ~5 s)"
http_req "$base/healthz"
assert_eq "$HTTP_CODE" 503 "/healthz with Redis down"
assert_eq "$(jq -r .status <<<"$HTTP_BODY")" unhealthy "503 status field ($HTTP_BODY)"
assert_ne "$(jq -r '.reason // ""' <<<"$HTTP_BODY")" "" "503 reason"
assert_between "$(jq -r .heartbeat_age <<<"$HTTP_BODY")" 3 30 "503 heartbeat_age"
# the probe port may face a network: the Redis error (host names) is in /stats only
jq -e 'has("last_error") | not' <<<"$HTTP_BODY" >/dev/null || fail "503 body reveals last_error: $HTTP_BODY"
http_req "$base/stats"
assert_eq "$HTTP_CODE" 200 "/stats with Redis down (no Redis round trip)"
assert_eq "$(jq -r .healthy <<<"$HTTP_BODY")" false "/stats healthy with Redis down"
assert_eq "$(hh_http_code "$base/metrics")" 200 "/metrics with Redis down"
sleep 1
assert_alive "$main_pid" "the worker exited while Redis was down"
assert_eq "$(hh_http_code "$base/healthz")" 503 "/healthz stays 503 while Redis is down"

t0=$(date +%s%N)
hh_redis_restart
wait_until 10 '[ "$(hh_http_code "$base/healthz")" = 200 ]' \
    || fail "/healthz did not return to 200 within 10 s of Redis coming back: $(curl -s "$base/healthz")"
hh_log "/healthz back to 200 $(( ($(date +%s%N) - t0) / 1000000 )) ms after Redis restarted"
assert_alive "$main_pid" "the worker exited after Redis came back"
assert_eq "$(stat_field .redis_connected)" true "/stats redis_connected after the restart"

# ------------------------------------------------------------------ stop closes the port
hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "exit status after TERM"
assert_eq "$(hh_http_code "$base/healthz")" 000 "the HTTP port is closed after the worker stopped"
pass
