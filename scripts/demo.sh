#!/usr/bin/env bash
# scripts/demo.sh -- `make demo`: a worker running real jobs. Uses
# $REDIS_URL when set, else a throwaway redis-server on a free loopback port.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$(cd "$root" && cd "${HH_BUILD:-build}" && pwd)"   # make demo BUILD=dir passes HH_BUILD
B="$build/hiredhand"
Q=hiredhand_demo   # its own queue: with REDIS_URL set, your queues are left alone
# SADD queues names the demo's queue for the Web UI and `hiredhand queues`;
# an empty queue stays listed there until removed, so the demo removes its
# name when its queue is empty (on your Redis; a throwaway one goes anyway).
forget_queue() {
  if [ -z "${redis_pid:-}" ] && [ -n "${REDIS_URL:-}" ] &&
    [ "$(redis-cli -u "$REDIS_URL" llen "queue:$Q" 2>/dev/null)" = 0 ]; then
    redis-cli -u "$REDIS_URL" srem queues "$Q" >/dev/null 2>&1 || true
  fi
  return 0
}
cleanup() {
  if [ -n "${worker:-}" ]; then
    kill "$worker" 2>/dev/null || true
    wait "$worker" 2>/dev/null || true
    forget_queue
  fi
  if [ -n "${redis_pid:-}" ]; then kill "$redis_pid" 2>/dev/null || true; fi
  if [ -n "${tmp:-}" ]; then rm -rf "$tmp"; fi
  return 0
}
trap cleanup EXIT
if [ -z "${REDIS_URL:-}" ]; then
  tmp=$(mktemp -d)
  for _ in $(seq 1 50); do
    port=$((20000 + RANDOM % 12000))
    (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null || break
  done
  redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$tmp" \
    --logfile "$tmp/redis.log" &
  redis_pid=$!
  export REDIS_URL="redis://127.0.0.1:$port/0"
  for _ in $(seq 1 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
  echo "== throwaway Redis at $REDIS_URL (set REDIS_URL to use yours)"
fi

echo "== pushing jobs with hiredhand push"
echo "HardWorker     $("$B" push HardWorker '["bob", 5]' -q $Q)"
echo "EmailJob       $("$B" push EmailJob '["ann@example.com", "Welcome"]' -q $Q)"
later=$("$B" push EmailJob '["later@example.com", "Scheduled"]' --in 3 -q $Q)
echo "EmailJob (+3s) $later"
echo "FailingJob     $("$B" push FailingJob '[]' --retry 0 -q $Q)"
if command -v ruby >/dev/null && ruby -e 'require "sidekiq"' 2>/dev/null; then
  echo "== pushing a job with Sidekiq's own Ruby client"
  ruby -e 'require "sidekiq"; Redis.silence_deprecations = true
    Sidekiq.configure_client { |c| c.redis = { url: ENV["REDIS_URL"] } }
    puts "EmailJob       " + Sidekiq::Client.push("class" => "EmailJob", "queue" => ARGV[0], "args" => ["ruby@example.com", "From Ruby ✓"])' "$Q"
fi

# --poll-interval 1: the scheduler's first poll otherwise comes 10-15 s after
# the start (Sidekiq's initial wait), long after the +3 s job is due
echo "== running: hiredhand work -r $REDIS_URL -q $Q -c 5 --poll-interval 1 --require example_plugin.so --exec EmailJob=print_job.sh"
"$B" work -r "$REDIS_URL" -q $Q -c 5 --poll-interval 1 --require "$build/example_plugin.so" \
  --exec "EmailJob=$root/examples/handlers/print_job.sh" &
worker=$!
# done when the demo's queue is empty and its scheduled job ran (other
# apps' scheduled jobs on a shared Redis are not waited for)
for _ in $(seq 1 100); do
  left=$(redis-cli -u "$REDIS_URL" llen "queue:$Q")
  if [ "$left" = 0 ] && ! "$B" jobs find "$later" -r "$REDIS_URL" >/dev/null 2>&1; then break; fi
  sleep 0.2
done
sleep 1
kill -TERM "$worker"
wait "$worker" || true
worker=""
forget_queue
echo "== hiredhand stats (FailingJob had retry 0, so it is in the dead set)"
"$B" stats -r "$REDIS_URL"
