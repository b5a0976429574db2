# shellcheck shell=bash
# tests/lib/web_helpers.sh -- `hiredhand web` for the dashboard's tests (test_web_*.sh).
# Source after harness.sh (and heartbeat_helpers.sh for the browser):
#   web_require_chromium           the binary must be built; SKIP (exit 77) when chromium is missing
#   web_seed [DB]                  Sidekiq 6.4 writes the test's jobs (tests/ruby/web_data.rb) into
#                                  db DB (default 0); sets WEB_DATA (its JSON line)
#   web_start ARGS...              `hiredhand web -r $REDIS_URL --http 127.0.0.1:<free port> ARGS`;
#                                  waits for its "listening" line; sets WEB_URL, WEB_PID, WEB_LOG
#   web_token                      prints the CSRF token of the cookie the page sets
#   web_post PATH JSON [CURL ARGS] POST /api/PATH as the page does (token in cookie and header,
#                                  same Origin); sets WEB_STATUS and WEB_BODY
#   web_state DB                   the job data of db DB, normalized for comparison: every list and
#                                  set of Sidekiq's model, payloads parsed, times that differ
#                                  between two runs of one operation (enqueued_at, scores) dropped
#   web_copy_db                    copies every key of db 0 into db 1 (the admin commands' copy)
#   web_cli1 ARGS...               `hiredhand ARGS -r <db 1> --yes` (the admin command on the copy);
#                                  fails the test when it fails
#   web_same WHAT                  fails unless db 0 (changed through the dashboard) and db 1
#                                  (changed by the admin command) hold the same job data (web_state)
#   web_cron_state DB              the periodic-job data of db DB (cron* keys: hashes, sets, lists,
#                                  zsets; queue:* lists), normalized as web_state and with jids, run
#                                  times, floats and last_enqueue_time masked: two runs of one operation
#                                  leave equal states

web_require_chromium() {
    hh_require_binary
    if ! hb_chromium_ensure; then
        echo "SKIP: $HH_TEST_NAME: chromium is not installed"
        exit 77
    fi
}

web_seed() {
    local url="${REDIS_URL%/*}/${1:-0}"
    WEB_DATA="$(REDIS_URL="$url" hh_ruby "$HH_ROOT/tests/ruby/web_data.rb")" || fail "web_data.rb failed: $WEB_DATA"
    export WEB_DATA
}

web_start() {
    local port
    port="$(hh_pick_free_port)"
    WEB_LOG="$(hh_tmp)/web.log"
    setsid "$HIREDHAND" web -r "$REDIS_URL" --http "127.0.0.1:$port" "$@" >"$WEB_LOG" 2>&1 &
    WEB_PID=$!
    hh_track_pid "$WEB_PID"
    WEB_URL="http://127.0.0.1:$port"
    must_wait 10 'grep -q listening "$WEB_LOG" || ! kill -0 "$WEB_PID"' "hiredhand web did not listen within 10 s"
    grep -q listening "$WEB_LOG" || fail "hiredhand web did not start: $(cat "$WEB_LOG")"
    export WEB_URL WEB_PID WEB_LOG
}

web_copy_db() {
    local k
    for k in $(R keys '*'); do R copy "$k" "$k" db 1 >/dev/null || fail "COPY $k db 1 failed"; done
}

web_cli1() {
    hh_cli "$@" -r "${REDIS_URL%/*}/1" --yes
    [ "$HH_RC" = 0 ] || fail "hiredhand $*: $HH_ERR"
}

web_same() {
    assert_eq "$(web_state 0)" "$(web_state 1)" "$1: the dashboard and the admin command left different data"
}

web_token() {
    curl -s -D - -o /dev/null "$WEB_URL/" | tr -d '\r' | sed -n 's/^Set-Cookie: hh_csrf=\([0-9a-f]*\);.*/\1/p'
}

web_post() {
    local path="$1" body="$2" tok out
    shift 2
    tok="$(web_token)"
    out="$(hh_tmp)/post"
    WEB_STATUS="$(curl -s -o "$out" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
        -H "X-CSRF-Token: $tok" -H "Cookie: hh_csrf=$tok" -H "Origin: $WEB_URL" "$@" \
        --data-binary "$body" "$WEB_URL/api/$path")"
    WEB_BODY="$(cat "$out")"
    export WEB_STATUS WEB_BODY
}

web_state() {
    redis-cli -h 127.0.0.1 -p "$REDIS_PORT" -n "$1" --raw eval '
        local out = {}
        for _, k in ipairs(redis.call("keys", "*")) do
          local t = redis.call("type", k).ok
          if t == "zset" then out[#out+1] = {k, t, redis.call("zrange", k, 0, -1)}
          elseif t == "list" then out[#out+1] = {k, t, redis.call("lrange", k, 0, -1)}
          elseif t == "set" then out[#out+1] = {k, t, redis.call("smembers", k)}
          end
        end
        return cjson.encode(out)' 0 | python3 -c '
import json, sys
raw = sys.stdin.buffer.read().decode("utf-8", "replace").strip()
state = {}
for key, typ, members in json.loads(raw):
    # the bookkeeping of a worker (on db 0 only), not job data
    if key.startswith("stat:") or key in ("processes", "hiredhand:fetchers") or ":work" in key: continue
    norm = []
    for m in members:
        try:
            j = json.loads(m)
            if isinstance(j, dict):
                for t in ("enqueued_at", "retried_at", "failed_at"): j.pop(t, None)
            norm.append(json.dumps(j, sort_keys=True))
        except ValueError:
            norm.append(m)
    state[key] = sorted(norm) if typ != "list" else norm
print(json.dumps(state, sort_keys=True, indent=1))'
}

web_cron_state() {
    redis-cli -h 127.0.0.1 -p "$REDIS_PORT" -n "$1" --raw eval '
        local out = {}
        for _, pat in ipairs({"cron*", "queue:*"}) do
          for _, k in ipairs(redis.call("keys", pat)) do
            local t = redis.call("type", k).ok
            local v
            if t == "hash" then v = redis.call("hgetall", k)
            elseif t == "zset" then v = redis.call("zrange", k, 0, -1)
            elseif t == "list" then v = redis.call("lrange", k, 0, -1)
            elseif t == "set" then v = redis.call("smembers", k)
            else v = {} end
            out[#out+1] = {k, t, v}
          end
        end
        return cjson.encode(out)' 0 | python3 -c '
import json, sys
MASK = {"jid", "enqueued", "enqueued_at", "created_at", "last_enqueue_time"}
def norm(v):
    if isinstance(v, str):
        try:
            j = json.loads(v)
        except ValueError:
            return v
        return json.dumps(norm(j), sort_keys=True) if isinstance(j, (dict, list)) else v
    if isinstance(v, dict):
        return {k: ("*" if k in MASK else norm(x)) for k, x in v.items()}
    if isinstance(v, list):
        return [norm(x) for x in v]
    return "*" if isinstance(v, float) else v   # date_as_argument: the run time as last argument
raw = sys.stdin.buffer.read().decode("utf-8", "replace").strip()
state = {}
for key, typ, members in json.loads(raw):
    if isinstance(members, dict): members = []   # cjson: an empty table is {}
    if typ == "hash":
        h = dict(zip(members[0::2], members[1::2]))
        state[key] = {k: ("*" if k in MASK else norm(x)) for k, x in h.items()}
    else:
        m = [norm(x) for x in members]
        state[key] = [typ, m if typ == "list" else sorted(m, key=str)]
print(json.dumps(state, sort_keys=True, indent=1))'
}
