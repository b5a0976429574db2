#!/usr/bin/env bash
# Handlers get the worker's environment as Sidekiq exports it: RAILS_ENV and RACK_ENV are always
# set, to -e, else APP_ENV, RAILS_ENV or RACK_ENV, else development (Sidekiq's cli.rb sets both
# whatever the source). Before, they were set only with -e: a Rails handler under APP_ENV=staging
# booted in development.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start

seen="$HH_TMP/seen"
job="$HH_TMP/env.sh"
printf '#!/bin/sh\ncat >/dev/null\necho "$HIREDHAND_JID ${RAILS_ENV-unset} ${RACK_ENV-unset}" >>"%s"\n' "$seen" >"$job"
chmod +x "$job"
: >"$seen"

case_env() { # NAME WANT ENV-ASSIGNMENTS... -- WORKER-ARGS...
    local name="$1" want="$2" vars=() jid
    shift 2
    while [ "$1" != -- ]; do vars+=("$1"); shift; done
    shift
    jid="$(hh_push_job EnvJob '[1]')"
    env -u APP_ENV -u RAILS_ENV -u RACK_ENV "${vars[@]}" "$HIREDHAND" work -r "$REDIS_URL" -c 1 -C /dev/null \
        --exec "EnvJob=$job" "$@" >"$HH_TMP/$name.log" 2>&1 &
    local pid=$!
    _hh_register "$pid"
    must_wait 20 'grep -q "^$jid " "$seen"' "($name) the job did not run: $(tail -n 3 "$HH_TMP/$name.log")"
    assert_eq "$(grep "^$jid " "$seen" | cut -d' ' -f2-)" "$want $want" "($name) RAILS_ENV RACK_ENV in the handler"
    kill -TERM "$pid"
    wait "$pid" || fail "($name) exit status $?"
}

case_env none development --
case_env app_env staging APP_ENV=staging --
case_env rails_env production RAILS_ENV=production --
case_env rack_env qa RACK_ENV=qa --
case_env app_over_rails staging APP_ENV=staging RAILS_ENV=production --
case_env flag_wins canary APP_ENV=staging RAILS_ENV=production -- -e canary
pass "RAILS_ENV and RACK_ENV reach handlers as Sidekiq sets them: -e, APP_ENV, RAILS_ENV, RACK_ENV, development"
