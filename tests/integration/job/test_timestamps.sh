#!/usr/bin/env bash
# Timestamps are read in either encoding (JSON real = seconds, integer = ms)
# and written in the configured layout, never corrupted.
#   - `hiredhand stats --json` latency of queues whose job has float, int-ms, mixed or no stamps:
#     all in [0, 60] s;
#   - float layout (default) and --timestamps millis: a failed job's retry member keeps created_at
#     as the same JSON token and gets failed_at in the layout's encoding; schedule members (one with
#     an int-ms created_at, one already carrying a float enqueued_at) moved by hiredhand's
#     scheduler parse with Ruby's JSON, keep created_at's token and get one enqueued_at in the
#     layout's encoding; in float layout Sidekiq::Queue#latency of the queue they moved to is a
#     small non-negative number;
#   - `retries retry --all` with the layout's --timestamps: the job pushed back gets enqueued_at in
#     the layout's encoding (float seconds, or 13-digit integer ms).
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start

for layout in float millis; do
    R flushall >/dev/null
    hh_ruby ts_check.rb push || fail "[$layout] push failed"
    if [ "$layout" = float ]; then
        hh_cli stats --json -r "$REDIS_URL"
        assert_eq "$HH_RC" 0 "stats --json exit status (stderr: $HH_ERR)"
        printf '%s' "$HH_OUT" >"$HH_TMP/stats.json"
        hh_ruby ts_check.rb latency "$HH_TMP/stats.json" || fail "queue latencies from 'hiredhand stats --json' are wrong: $HH_OUT"
    fi
    targs=()
    [ "$layout" = millis ] && targs=(--timestamps millis)
    hh_start_worker -c 2 --poll-interval 1 "${targs[@]}" -q ts1 -q ts2 -q ts3 -q ts4 -q default \
        --exec "OkJob=$HH_HANDLERS/record.sh" --exec "FailJob=$HH_HANDLERS/fail.sh"
    must_wait 30 '[ "$(R llen test:ran)" -ge 4 ] && [ "$(R zcard retry)" -ge 2 ] && [ "$(R llen queue:parked)" -ge 2 ]' \
        "[$layout] not done within 30 s: ran=$(R llen test:ran) retry=$(R zcard retry) parked=$(R llen queue:parked) schedule=$(R zcard schedule)"
    hh_stop_worker TERM 30
    assert_eq "$WORKER_RC" 0 "[$layout] worker exit status after SIGTERM"
    hh_ruby ts_check.rb verify "$layout" || fail "[$layout] timestamp checks failed (see above)"
    hh_cli retries retry --all --yes -r "$REDIS_URL" --timestamps "$layout"
    assert_eq "$HH_RC" 0 "[$layout] retries retry --all --timestamps $layout (stderr: $HH_ERR)"
    moved=$(for k in $(R keys 'queue:*'); do R lrange "$k" 0 -1; done | grep FailJob)
    [ -n "$moved" ] || fail "[$layout] no FailJob pushed back by 'retries retry --all'"
    if [ "$layout" = millis ]; then want='"enqueued_at": ?[0-9]{13}[,}]'; else want='"enqueued_at": ?[0-9]{10}\.[0-9]+'; fi
    printf '%s\n' "$moved" | grep -Eq "$want" || fail "[$layout] 'retries retry' wrote enqueued_at not as $layout: $moved"
    hh_log "[$layout] ok"
done
pass
