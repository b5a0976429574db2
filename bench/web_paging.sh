#!/usr/bin/env bash
# bench/web_paging.sh -- how fast `hiredhand web` pages a big retry set: fills a private
# redis-server's retry set with N entries (default 1,000,000), then times GET /api/set pages
# at ranks 0, N/2 and N-25 (one ZRANGE by index each), the reverse order, and a filtered page
# (a scan bounded at CLI_WEB_FILTER_SCAN entries per request). Measured once for
# docs/web-dashboard.md; not a test. Usage: bench/web_paging.sh [BUILD_DIR] [N]
set -eu
build="${1:-build}"
n="${2:-1000000}"
port=$((21000 + RANDOM % 5000))
wport=$((port + 1))
dir="$(mktemp -d)"
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" --daemonize yes >/dev/null
trap 'redis-cli -p "$port" shutdown nosave >/dev/null 2>&1; kill "$wpid" 2>/dev/null; rm -rf "$dir"' EXIT
until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.1; done
redis-cli -p "$port" eval '
  for i = 1, tonumber(ARGV[1]) do
    redis.call("zadd", "retry", 1800000000 + i, "{\"class\":\"Job" .. (i % 50) .. "\",\"args\":[" .. i ..
      "],\"jid\":\"" .. string.format("%024x", i) .. "\",\"queue\":\"default\",\"retry_count\":1," ..
      "\"error_class\":\"RuntimeError\",\"error_message\":\"failure " .. i .. "\",\"failed_at\":1700000000.5}")
  end
  return redis.call("zcard", "retry")' 0 "$n" >/dev/null
"$build/hiredhand" web -r "redis://127.0.0.1:$port/0" --http "127.0.0.1:$wport" >"$dir/web.log" 2>&1 &
wpid=$!
until grep -q listening "$dir/web.log" 2>/dev/null; do sleep 0.1; done
echo "retry set: $(redis-cli -p "$port" zcard retry) entries; used_memory $(redis-cli -p "$port" info memory | tr -d '\r' | sed -n 's/^used_memory_human://p')"
t() {   # LABEL QUERY
    local s
    s="$(curl -s -o /dev/null -w '%{time_total}' "http://127.0.0.1:$wport/api/set?$2")"
    printf '%-40s %6.1f ms\n' "$1" "$(echo "$s * 1000" | bc -l)"
}
t "page at rank 0 (25 rows)" "set=retry&start=0&count=25"
t "page at rank $((n / 2)) (25 rows)" "set=retry&start=$((n / 2))&count=25"
t "page at rank $((n - 25)) (25 rows)" "set=retry&start=$((n - 25))&count=25"
t "last page, newest first (reverse=1)" "set=retry&start=0&count=25&reverse=1"
t "page of 500 rows at rank $((n / 2))" "set=retry&start=$((n / 2))&count=500"
t "filter class=Job7 (25 matches)" "set=retry&class=Job7&count=25"
t "filter error=nomatch (bounded scan)" "set=retry&error=nomatch&count=25"
