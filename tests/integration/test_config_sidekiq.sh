#!/usr/bin/env bash
# hiredhand work reads a Sidekiq app's config/sidekiq.yml as Sidekiq reads it: a queue name,
# tag or label written as a Ruby Symbol (`- :mailers`, or the name of a [name, weight] pair) names it without the
# colon (a quoted ":x" keeps it), so the queue Sidekiq serves is the one served here.
. "$(dirname "$0")/../lib/harness.sh"
. "$(dirname "$0")/../lib/heartbeat_helpers.sh"
hh_require_binary
hh_redis_start

# 1. Symbols: as Sidekiq 6.4's cli.rb reads them (to_s of the Symbol).
cat >"$HH_TMP/symbols.yml" <<'YAML'
:tag: :billing
:labels:
  - :eu
:queues:
  - :mailers
  - - :critical     # a [name, weight] pair (the flow form [:critical, 2] is no YAML)
    - 2
  - ":quoted"
  - plain
YAML
hh_start_worker -C "$HH_TMP/symbols.yml"
hb_wait_identity "$WORKER_PID" 20
assert_eq "$(R hget "$HB_ID" info | jq -c '[.tag, .labels, .queues]')" '["billing",["eu"],["mailers","critical",":quoted","plain"]]' \
    "Symbol queue names, tag and label lose their colon; a quoted one keeps it"
j="$(hh_jid)"
hb_push NoSuchJob "$j" '[]' mailers
must_wait 20 '[ "$(R llen queue:mailers)" = 0 ]' "a job pushed to queue mailers (- :mailers) is not fetched"
hh_stop_worker TERM 20
pass
