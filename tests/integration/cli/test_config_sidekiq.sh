#!/usr/bin/env bash
# hiredhand work reads a Sidekiq app's config/sidekiq.yml as Sidekiq reads it: a queue name,
# tag or label written as a Ruby Symbol (`- :mailers`, or the name of a [name, weight] pair)
# names it without the colon (a quoted ":x" keeps it), so the queue Sidekiq serves is the one
# served here; without -C, ./config/sidekiq.yml is read (else sidekiq.yml.erb, as in Sidekiq);
# YAML merge keys (`<<: *defaults`, `<<: [*a, *b]`) apply as in Ruby's YAML; RAILS_MAX_THREADS is the concurrency when neither -c nor the file sets one; :logfile:,
# which Sidekiq 6+ ignores, is honoured with one warning; a key no one knows (a plug-in's) is
# ignored with a warning, as Sidekiq ignores it, but a near miss of a known key is refused.
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/heartbeat_helpers.sh"
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

# 2. No -C: ./config/sidekiq.yml is read, and said so in the log; a -C file replaces it.
mkdir -p "$HH_TMP/app/config" "$HH_TMP/erbapp/config"
printf ':concurrency: 3\n:queues:\n  - from_default_file\n' >"$HH_TMP/app/config/sidekiq.yml"
printf ':concurrency: 2\n' >"$HH_TMP/other.yml"
pushd "$HH_TMP/app" >/dev/null
hh_start_worker
popd >/dev/null
hb_wait_identity "$WORKER_PID" 20
assert_eq "$(R hget "$HB_ID" info | jq -c '[.concurrency, .queues]')" '[3,["from_default_file"]]' \
    "./config/sidekiq.yml is read without -C"
assert_contains "$(cat "$WORKER_LOG")" "INFO: config: read ./config/sidekiq.yml (no -C given" "the file read is logged"
hh_stop_worker TERM 20
pushd "$HH_TMP/app" >/dev/null
hh_start_worker -C "$HH_TMP/other.yml"
popd >/dev/null
hb_wait_identity "$WORKER_PID" 20
assert_eq "$(R hget "$HB_ID" info | jq -c '[.concurrency, .queues]')" '[2,["default"]]' "-C replaces ./config/sidekiq.yml"
assert_not_contains "$(cat "$WORKER_LOG")" "config: read" "nothing logged about a default file with -C"
hh_stop_worker TERM 20
# only the ERB template: read, as Sidekiq reads it, with its ENV values
printf ':concurrency: <%%= ENV.fetch("N", 4) %%>\n:queues:\n  - <%%= ENV["Q"] || "erb_default" %%>\n' \
    >"$HH_TMP/erbapp/config/sidekiq.yml.erb"
pushd "$HH_TMP/erbapp" >/dev/null
N=7 hh_start_worker
popd >/dev/null
hb_wait_identity "$WORKER_PID" 20
assert_eq "$(R hget "$HB_ID" info | jq -c '[.concurrency, .queues]')" '[7,["erb_default"]]' "an ERB-only config is read"
assert_contains "$(cat "$WORKER_LOG")" "INFO: config: read ./config/sidekiq.yml.erb" "the ERB-only config is named as read"
hh_stop_worker TERM 20

# 3. Merge keys: the merged mappings' keys apply unless the mapping sets them; the first of a
# list wins; the anchored sections themselves are no environment and no typo (no warning).
cat >"$HH_TMP/merge.yml" <<'YAML'
defaults: &defaults
  :concurrency: 3
  :queues:
    - a
    - b
  :tag: from-defaults
extra: &extra
  :tag: from-extra
  :labels: [from-extra]
production:
  <<: [*defaults, *extra]
  :concurrency: 4
staging:
  :tag: own
  <<: *defaults
YAML
RAILS_ENV=production hh_start_worker -C "$HH_TMP/merge.yml"
hb_wait_identity "$WORKER_PID" 20
assert_eq "$(R hget "$HB_ID" info | jq -c '[.concurrency, .queues, .tag, .labels]')" '[4,["a","b"],"from-defaults",["from-extra"]]' \
    "production merges defaults then extra under its own keys"
assert_not_contains "$(cat "$WORKER_LOG")" "warning" "no warning for merged sections"
hh_stop_worker TERM 20
# a key set above the '<<': YAML keeps it, Ruby's reader takes the merged value; said so
RAILS_ENV=staging hh_cli work -r "$REDIS_URL" -C "$HH_TMP/merge.yml" --help
assert_eq "$HH_RC" 0 "a file with merge keys is accepted (stderr: $HH_ERR)"
assert_contains "$HH_ERR" "merge.yml:14:3: warning: ':tag' is set here and by the '<<' merge below it" \
    "a key the merge would override in Ruby is named"
printf 'production:\n  <<: 5\n' >"$HH_TMP/merge_bad.yml"
RAILS_ENV=production hh_cli work -r "$REDIS_URL" -C "$HH_TMP/merge_bad.yml"
assert_eq "$HH_RC" 2 "a merge of a scalar is refused"
assert_contains "$HH_ERR" "merge_bad.yml:2:7: '<<' merges a mapping" "the reason for a bad merge"

# 4. RAILS_MAX_THREADS: -c > file > RAILS_MAX_THREADS > 10, as Sidekiq 6.4's cli.rb.
RAILS_MAX_THREADS=7 hh_start_worker
hb_wait_identity "$WORKER_PID" 20
assert_eq "$(R hget "$HB_ID" info | jq .concurrency)" 7 "RAILS_MAX_THREADS without -c or a file"
hh_stop_worker TERM 20
RAILS_MAX_THREADS=7 hh_start_worker -C "$HH_TMP/other.yml"
hb_wait_identity "$WORKER_PID" 20
assert_eq "$(R hget "$HB_ID" info | jq .concurrency)" 2 "the file's concurrency over RAILS_MAX_THREADS"
hh_stop_worker TERM 20
RAILS_MAX_THREADS=7 hh_start_worker -c 5
hb_wait_identity "$WORKER_PID" 20
assert_eq "$(R hget "$HB_ID" info | jq .concurrency)" 5 "-c over RAILS_MAX_THREADS"
hh_stop_worker TERM 20
RAILS_MAX_THREADS=many hh_cli work -r "$REDIS_URL"
assert_eq "$HH_RC" 2 "a RAILS_MAX_THREADS that is no number is refused"
assert_contains "$HH_ERR" "RAILS_MAX_THREADS: 'many' is not a number" "the variable is named"
RAILS_MAX_THREADS=many hh_cli work -r "$REDIS_URL" -c 3 --help
assert_eq "$HH_RC" 0 "a RAILS_MAX_THREADS that does not apply is not checked"

# 5. :logfile: is honoured, with one warning (once, though the section sets it again); one that
#    cannot be opened is warned about and the log stays on stderr.
printf ':logfile: %s\nproduction:\n  :logfile: %s\n' "$HH_TMP/a.log" "$HH_TMP/b.log" >"$HH_TMP/logfile.yml"
RAILS_ENV=production hh_start_worker -C "$HH_TMP/logfile.yml"
must_wait 20 '[ -s "$HH_TMP/b.log" ]' "the log did not go to the section's :logfile:"
assert_eq "$(grep -c "is honoured: hiredhand appends its log to that file; Sidekiq 6 and later ignore this key" "$WORKER_LOG")" 1 \
    "one warning for :logfile: (stderr: $(cat "$WORKER_LOG"))"
assert_contains "$(cat "$WORKER_LOG")" "logfile.yml:1:1: warning: ':logfile' is honoured" "the warning has the key's place"
hh_stop_worker TERM 20
# a :logfile: in a folder that does not exist (Sidekiq 6+ never opened it): a warning, the log on
# stderr, the worker runs; the same path given with -l is still refused
printf ':logfile: %s\n' "$HH_TMP/no/such/dir/sidekiq.log" >"$HH_TMP/nodir.yml"
hh_start_worker -C "$HH_TMP/nodir.yml"
hh_worker_wait_ready 20
assert_contains "$(cat "$WORKER_LOG")" "warning: $HH_TMP/nodir.yml: cannot open log file $HH_TMP/no/such/dir/sidekiq.log" \
    "the warning for a :logfile: that cannot be opened"
assert_contains "$(cat "$WORKER_LOG")" "INFO: hiredhand" "the log on stderr"
hh_stop_worker TERM 20
assert_eq "$WORKER_RC" 0 "exit status with a :logfile: that cannot be opened"
hh_cli work -r "$REDIS_URL" -l "$HH_TMP/no/such/dir/sidekiq.log"
assert_eq "$HH_RC" 2 "exit status for -l in a folder that does not exist"

# 6. Unknown keys: sidekiq-scheduler's are warned about and the worker runs with the rest.
cat >"$HH_TMP/plugin.yml" <<'YAML'
:concurrency: 3
:dynamic: true
:enabled: true
:schedule:
  hello:
    cron: "0 * * * * *"
    class: HelloJob
production:
  :listened_queues_only: false
YAML
RAILS_ENV=production hh_start_worker -C "$HH_TMP/plugin.yml"
hb_wait_identity "$WORKER_PID" 20
assert_eq "$(R hget "$HB_ID" info | jq .concurrency)" 3 "a file with a plug-in's keys runs"
for w in "plugin.yml:2:1: warning: unknown key ':dynamic' ignored, as Sidekiq ignores keys it does not know" \
         "plugin.yml:3:1: warning: unknown key ':enabled' ignored" "plugin.yml:9:3: warning: unknown key ':listened_queues_only' ignored"; do
    assert_contains "$(cat "$WORKER_LOG")" "$w" "a plug-in's key is named as ignored"
done
hh_stop_worker TERM 20
# a near miss of a known key is a typo whose value would be lost: refused, with the key meant
printf ':concurrency: 4\n:timout: 5\n' >"$HH_TMP/typo.yml"
hh_cli work -r "$REDIS_URL" -C "$HH_TMP/typo.yml"
assert_eq "$HH_RC" 2 "a near miss of a known key is refused (stderr: $HH_ERR)"
assert_contains "$HH_ERR" "typo.yml:2:1: unknown key ':timout': did you mean 'timeout'?" "the key meant is named"
printf 'handlers: 3\n' >"$HH_TMP/group.yml"
hh_cli work -r "$REDIS_URL" -C "$HH_TMP/group.yml"
assert_eq "$HH_RC" 2 "a group given a scalar is refused"
assert_contains "$HH_ERR" "group.yml:1:11: 'handlers' groups options: it wants a mapping, not a scalar" "the group's error"

# 7. Groups in the environment section replace the top level's (a Redis per environment).
cat >"$HH_TMP/envgroup.yml" <<YAML
:concurrency: 3
redis:
  url: redis://127.0.0.1:1/0
production:
  :concurrency: 4
  redis:
    url: $REDIS_URL
YAML
RAILS_ENV=production HH_NO_URL=1 hh_start_worker -C "$HH_TMP/envgroup.yml"
hb_wait_identity "$WORKER_PID" 20
assert_eq "$(R hget "$HB_ID" info | jq .concurrency)" 4 "the production section's Redis and concurrency apply"
hh_stop_worker TERM 20
pass
