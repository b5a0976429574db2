#!/usr/bin/env bash
# hiredhand work -C FILE: a Rails app's config/sidekiq.yml (leading-colon keys, [name, weight]
# queue pairs, an environment section picked by RAILS_ENV) plus hiredhand's own keys configures
# the worker, as Sidekiq's API and redis-cli see its heartbeat; flags override the file (a list
# flag replaces the file's list); the file overrides the environment (REDIS_URL); every bad file
# is refused with FILE:LINE:COLUMN and a reason; ERB's ENV values are read, other ERB is refused
# with a way out; relative handler paths are the file's folder's; Sidekiq's own keys that hiredhand
# cannot apply (a Ruby :require:, :environment:, :strict:, :pidfile:, the Ruby hooks) are accepted
# with one warning each, and so is :logfile:, honoured here but ignored by Sidekiq 6+.
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/heartbeat_helpers.sh"
hh_require_binary
hh_redis_start

cfg="$HH_TMP/sidekiq.yml"
cat >"$cfg" <<YAML
---
# config/sidekiq.yml of a Rails app
:verbose: false
:concurrency: 4
:timeout: 2
:tag: billing
:labels:
  - eu-west
  - blue
:queues:
  - [critical, 3]
  - [default, 2]
  - low
production:
  :concurrency: 6
development:
  :concurrency: 9
# hiredhand's own keys
handlers:
  exec:
    SlowJob: $HH_HANDLERS/sleep.sh 30
redis:
  url: $REDIS_URL
  namespace: ""
YAML

# 1. The file alone (and REDIS_URL pointing nowhere: the file's url wins).
j1="$(hh_jid)"
hb_push SlowJob "$j1" '[1]' low
REDIS_URL=redis://127.0.0.1:1/0 RAILS_ENV=production HH_NO_URL=1 hh_start_worker -C "$cfg"
hb_wait_identity "$WORKER_PID" 20
id="$HB_ID"
HB_EXPECT="{\"identity\":\"$id\",\"tag\":\"billing\",\"labels\":[\"eu-west\",\"blue\"],\"concurrency\":6,\"queues\":[\"critical\",\"default\",\"low\"]}" \
    hh_ruby hb_processset.rb || fail "Sidekiq::ProcessSet does not show the file's settings (see above)"
info="$(R hget "$id" info)"
assert_eq "$(jq -c '[.concurrency, .tag, .queues, .labels]' <<<"$info")" '[6,"billing",["critical","default","low"],["eu-west","blue"]]' \
    "redis-cli HGET $id info"
# the file's exec handler runs the job from the weighted list's unweighted queue
must_wait 20 '[ "$(R llen test:started)" = 1 ]' "the SlowJob from queue low did not start (handlers.exec from the file)"
# :timeout: 2 -- the stop gives the running 30 s job 2 s, not the default 25
t0=$(date +%s)
hh_stop_worker TERM 20
t1=$(date +%s)
assert_ne "$WORKER_RC" 124 "the worker did not exit within 20 s of TERM with :timeout: 2"
assert_between $((t1 - t0)) 0 15 "seconds from TERM to exit with :timeout: 2"
assert_contains "$(R lrange queue:low 0 -1)" "$j1" "the interrupted job is back in queue:low"

# 2. Flags override the file: -c, -g (Sidekiq's tag flag), -q replaces the file's queues.
RAILS_ENV=production hh_start_worker -C "$cfg" -c 2 -g from-flag -q other
hb_wait_identity "$WORKER_PID" 20
HB_EXPECT="{\"identity\":\"$HB_ID\",\"tag\":\"from-flag\",\"concurrency\":2,\"queues\":[\"other\"],\"labels\":[\"eu-west\",\"blue\"]}" \
    hh_ruby hb_processset.rb || fail "flags do not override the file (see above)"
hh_stop_worker TERM 20
# no RAILS_ENV: Sidekiq's default environment, development
RAILS_ENV='' RACK_ENV='' APP_ENV='' hh_start_worker -C "$cfg"
hb_wait_identity "$WORKER_PID" 20
assert_eq "$(R hget "$HB_ID" info | jq .concurrency)" 9 "concurrency of the development section"
hh_stop_worker TERM 20
# -e picks the section as Sidekiq's -e does, over APP_ENV
APP_ENV=development RAILS_ENV='' RACK_ENV='' hh_start_worker -C "$cfg" -e production
hb_wait_identity "$WORKER_PID" 20
assert_eq "$(R hget "$HB_ID" info | jq .concurrency)" 6 "concurrency of the section -e production picks"
hh_stop_worker TERM 20

# 3. Every bad file: exit 2, FILE:LINE:COLUMN and the reason; no worker starts.
bad() {   # NAME EXPECTED-SUBSTRING   (the file's text on stdin, not from a pipe: HH_ERR is read after)
    local f="$HH_TMP/$1.yml"
    cat >"$f"
    hh_cli work -r "$REDIS_URL" -C "$f"
    assert_eq "$HH_RC" 2 "exit status for $1 (stderr: $HH_ERR)"
    assert_contains "$HH_ERR" "$f:$2" "error for $1"
}
bad syntax "3:1: YAML" < <(printf ':concurrency: 4\n:queues: [a, b\n')
bad unknown "2:1: unknown key ':concurency'" < <(printf ':concurrency: 4\n:concurency: 5\n')
bad unknown_in_group "3:3: unknown key 'colour' in redis" < <(printf 'redis:\n  url: redis://127.0.0.1:6379\n  colour: red\n')
bad type_mapping "2:3: ':concurrency' wants a value, not a mapping" < <(printf ':concurrency:\n  a: 1\n')
bad type_list "1:7: ':tag' wants a value, not a list" < <(printf ':tag: [a, b]\n')
bad value_number "1:15: in key ':concurrency'" < <(printf ':concurrency: ten\n')
assert_contains "$HH_ERR" "--concurrency: 'ten' is not a number, want 1 to 1000" "the option's own check runs on the file's value"
bad value_range "1:15: in key ':concurrency'" < <(printf ':concurrency: 0\n')
assert_contains "$HH_ERR" "--concurrency: 0 is out of range, want 1 to 1000" "a value out of range gives the library's range, with its location"
bad queue_twice "1:14: in key ':queues'" < <(printf ':queues: [a, a]\n')
bad redis_url "2:8: in key 'url'" < <(printf 'redis:\n  url: "redis://127.0.0.1:notaport/0"\n')
assert_contains "$HH_ERR" "bad port 'notaport'" "a group's Redis URL is checked with the file's other values"
bad empty_value "1:10: ':timeout' wants a value, not empty" < <(printf ':timeout:\n')
bad queue_pair "2:5: ':queues': a queue is a name or a [name, weight] pair" < <(printf ':queues:\n  - [critical, 3, 4]\n')
bad queue_weight "2:6: in key ':queues'" < <(printf ':queues:\n  - [critical, heavy]\n')
bad bool "1:11: ':verbose' wants true or false, not 'maybe'" < <(printf ':verbose: maybe\n')
bad not_mapping "1:1: the file must be a mapping" < <(printf -- '- a\n- b\n')
# a handler's program: a relative path is the config file's folder's, and a missing one is
# refused with its place (and the hint when it exists from the current folder instead)
bad handler_missing "3:14: 'exec' HardJob: program $HH_TMP/bin/nosuch: No such file or directory (a relative program path is resolved against the config file's folder)" \
    < <(printf 'handlers:\n  exec:\n    HardJob: bin/nosuch 1\n')
: >"$HH_TMP/not_a_program"
bad handler_not_exec "3:16: 'serve' ReportJob: program $HH_TMP/not_a_program: is not executable" \
    < <(printf 'handlers:\n  serve:\n    ReportJob: %s\n' "$HH_TMP/not_a_program")
# ERB beyond the ENV values Rails files use is refused with its place and a way out
bad erb_code "1:15: ERB <%= Integer(ENV[\"X\"]) %>: this expression is not supported" \
    < <(printf ':concurrency: <%%= Integer(ENV["X"]) %%>\n')
assert_contains "$HH_ERR" "-C /dev/null for none" "the ERB error names a way out that works for the implicit file"
bad erb_tag "2:1: ERB <% if true %>: Ruby code in <% %>" < <(printf ':tag: x\n<%% if true %%>\n:concurrency: 2\n<%% end %%>\n')
bad erb_unset "1:15: ERB <%= ENV.fetch(\"HH_TEST_UNSET\") %>: HH_TEST_UNSET is not set" \
    < <(printf ':concurrency: <%%= ENV.fetch("HH_TEST_UNSET") %%>\n')
# the library's limit, the same as the flag's (later keys win, as in YAML loaders)
f="$HH_TMP/limit.yml"; printf ':concurrency: 4\n:concurrency: 0\n' >"$f"
hh_cli work -r "$REDIS_URL" -C "$f"
assert_eq "$HH_RC" 2 "exit status for concurrency 0 (stderr: $HH_ERR)"
assert_contains "$HH_ERR" "--concurrency: 0 is out of range, want 1 to 1000" "the library's limit on the file's value"
hh_cli work -r "$REDIS_URL" -C "$HH_TMP/missing.yml"
assert_eq "$HH_RC" 2 "exit status for a missing file"
assert_contains "$HH_ERR" "cannot read --config $HH_TMP/missing.yml" "error for a missing file"
# a mapping that is neither an option group nor an environment in use: warned with its place
# (a typo or a plug-in's section must not pass unseen); the other environments stay quiet
printf 'concurrency: 2\nhtttp:\n  bind: 127.0.0.1:9\nproduction:\n  concurrency: 3\n:schedule:\n  x: 1\n' >"$HH_TMP/typo.yml"
hh_cli work -r "$REDIS_URL" -C "$HH_TMP/typo.yml" --help
assert_eq "$HH_RC" 0 "--help with a file holding unknown sections"
assert_contains "$HH_ERR" "typo.yml:2:1: warning: section 'htttp' skipped" "a misspelt group is warned about"
assert_contains "$HH_ERR" "section ':schedule' skipped" "a plug-in's section is warned about"
assert_not_contains "$HH_ERR" "production" "an environment not in use is skipped quietly"

# The ERB Rails files use: values from ENV, with defaults, || and .to_i, read as Sidekiq reads
# them (its ERB runs before YAML); an implicit file with other ERB names -C /dev/null, which works.
cat >"$HH_TMP/erb.yml" <<'YAML'
:concurrency: <%= (ENV["HH_T_C"] || "4").to_i %>
:tag: <%= ENV.fetch("HH_T_TAG") { "erbtag" } %>
:labels:
  - <%= ENV.fetch("HH_T_L", 'lbl') %>
  - <%= ENV['HH_T_SET'] %>
<%# a comment %>
redis:
  url: <%= ENV.fetch("REDIS_URL") %>
YAML
HH_T_SET=fromenv HH_NO_URL=1 hh_start_worker -C "$HH_TMP/erb.yml"
hb_wait_identity "$WORKER_PID" 20
assert_eq "$(R hget "$HB_ID" info | jq -c '[.concurrency, .tag, .labels]')" '[4,"erbtag",["lbl","fromenv"]]' \
    "the ERB values of the file"
hh_stop_worker TERM 20
mkdir -p "$HH_TMP/erbapp/config"
printf ':concurrency: <%%= Rails.env.production? ? 10 : 2 %%>\n' >"$HH_TMP/erbapp/config/sidekiq.yml"
pushd "$HH_TMP/erbapp" >/dev/null
hh_cli work -r "$REDIS_URL" --help
assert_eq "$HH_RC" 2 "an implicit file with unsupported ERB stops the start (stderr: $HH_ERR)"
assert_contains "$HH_ERR" "./config/sidekiq.yml:1:15: ERB" "the implicit file's ERB error has its place"
hh_cli work -r "$REDIS_URL" -C /dev/null --help
assert_eq "$HH_RC" 0 "-C /dev/null, the way out the error names, reads no file (stderr: $HH_ERR)"
popd >/dev/null

# 4. A real Sidekiq app's file: every Sidekiq key is accepted; those with nothing to apply to
# warn once, with their place, and the worker runs with the rest.
mkdir -p "$HH_TMP/app/config"
: >"$HH_TMP/app/config/boot.rb"
cat >"$HH_TMP/app/config/sidekiq.yml" <<YAML
---
:concurrency: 3
:require: ./config/boot.rb
:environment: production
:strict: false
:pidfile: ./tmp/pids/sidekiq.pid
:logfile: ./log/sidekiq.log
:verbose: false
:max_retries: 7
:dead_max_jobs: 50
:dead_timeout_in_seconds: 3600
:poll_interval_average: 4
:average_scheduled_poll_interval: 3
:on_complex_arguments: :raise
:lifecycle_events:
  startup: []
:capsules:
  single:
    :concurrency: 1
    :queues: [serial]
:queues:
  - default
production:
  :require: .
  :concurrency: 2
YAML
mkdir -p "$HH_TMP/app/log"
pushd "$HH_TMP/app" >/dev/null
RAILS_ENV=production hh_cli work -r "$REDIS_URL" -C config/sidekiq.yml --help
assert_eq "$HH_RC" 0 "a Sidekiq app's sidekiq.yml is accepted (stderr: $HH_ERR)"
for w in "3:11: warning: ':require' ./config/boot.rb skipped: it names Ruby code" \
         "4:1: warning: ':environment' has no effect in hiredhand" "5:1: warning: ':strict' has no effect" \
         "6:1: warning: ':pidfile' has no effect" "14:1: warning: ':on_complex_arguments' has no effect" \
         "15:1: warning: ':lifecycle_events' has no effect" "17:1: warning: ':capsules' has no effect" \
         "7:1: warning: ':logfile' is honoured: hiredhand appends its log to that file; Sidekiq 6 and later ignore" \
         "24:13: warning: ':require' . skipped: it names Ruby code"; do
    assert_contains "$HH_ERR" "config/sidekiq.yml:$w" "warning for a Sidekiq key"
done
assert_eq "$(grep -c warning <<<"$HH_ERR")" 9 "one warning per Sidekiq key that has no effect (stderr: $HH_ERR)"
assert_not_contains "$HH_ERR" "dlopen" "a Ruby :require: is not loaded as a plug-in"
# it runs, with the keys hiredhand honours (the production section's concurrency)
RAILS_ENV=production hh_start_worker -C config/sidekiq.yml
popd >/dev/null
hb_wait_identity "$WORKER_PID" 20
assert_eq "$(R hget "$HB_ID" info | jq -c '[.concurrency, .queues]')" '[2,["default"]]' "the Sidekiq file's settings"
assert_contains "$(cat "$WORKER_LOG")" "warning: --average-scheduled-poll-interval has no effect: --poll-interval" \
    "both poll settings given: the one that has no effect is named (Sidekiq's precedence)"
hh_stop_worker TERM 20
# a .so :require: keeps hiredhand's meaning: a C plug-in, loaded (and refused when missing)
printf ':require: ./nosuch_plugin.so\n' >"$HH_TMP/plugin.yml"
hh_cli work -r "$REDIS_URL" -C "$HH_TMP/plugin.yml"
assert_eq "$HH_RC" 2 "a missing .so plug-in from :require: is still an error (stderr: $HH_ERR)"
assert_contains "$HH_ERR" "nosuch_plugin.so" "the plug-in's error names it"
# a key given twice: the last one counts, as Ruby's YAML reader takes it (a list key such as
# queues does not add up), and the skipped one is named
printf ':queues: [a]\n:concurrency: 3\n:queues: [b]\n:concurrency: 4\n' >"$HH_TMP/dup.yml"
hh_cli work -r "$REDIS_URL" -C "$HH_TMP/dup.yml" --help
assert_contains "$HH_ERR" "dup.yml:1:1: warning: ':queues' is given again at line 3" "a repeated key is named"
assert_contains "$HH_ERR" "dup.yml:2:1: warning: ':concurrency' is given again at line 4" "a repeated key is named"
hh_start_worker -C "$HH_TMP/dup.yml"
hb_wait_identity "$WORKER_PID" 20
assert_eq "$(R hget "$HB_ID" info | jq -c '[.concurrency, .queues]')" '[4,["b"]]' "the last of a repeated key counts"
hh_stop_worker TERM 20

# 5. docs/configuration.md's example file, as printed there (only its Redis URL and HTTP port changed),
# read as ./config/sidekiq.yml without -C: it starts with no warning, and its handlers run, also
# when the worker starts elsewhere (relative handler paths are the file's folder's).
readme="$HH_TMP/readme"
R flushdb >/dev/null   # the jobs left by the runs above are no concern of this one
mkdir -p "$readme/config" "$readme/bin"
awk '/^```yaml/ {y = 1; next} y && /^```/ {exit} y' "$HH_ROOT/docs/configuration.md" |
    sed -e "s|redis://127.0.0.1:6379/0|$REDIS_URL|" -e "s|127.0.0.1:7433|127.0.0.1:$(hh_pick_free_port)|" \
        >"$readme/config/sidekiq.yml"
grep -q '^:queues:' "$readme/config/sidekiq.yml" || fail "no example config/sidekiq.yml found in docs/configuration.md"
ran5="$(hh_jid_recorder "$readme/bin/hard_job")"
cp "$HH_HANDLERS/serve_test.py" "$readme/bin/report_server"
j5="$(hh_jid)"
hb_push HardJob "$j5" '[1]' low
pushd "$readme" >/dev/null
hh_start_worker
popd >/dev/null
must_wait 20 'grep -q "$j5" "$ran5"' \
    "the docs example's HardJob did not run (log: $(tail -5 "$WORKER_LOG"))"
assert_contains "$(cat "$WORKER_LOG")" "config: read ./config/sidekiq.yml" "the example is read as the implicit file"
warns="$(grep -iE 'WARN|warning' "$WORKER_LOG" || true)"
[ -z "$warns" ] || fail "the docs example starts with warnings: $warns"
hh_stop_worker TERM 20
# the same file given with -C from another folder: its handlers' relative paths still hold
j6="$(hh_jid)"
hb_push HardJob "$j6" '[2]' low
pushd / >/dev/null
hh_start_worker -C "$readme/config/sidekiq.yml"
popd >/dev/null
must_wait 20 'grep -q "$j6" "$ran5"' "the docs example's HardJob did not run from another folder (log: $(tail -5 "$WORKER_LOG"))"
hh_stop_worker TERM 20
pass
