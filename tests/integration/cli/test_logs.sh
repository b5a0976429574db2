#!/usr/bin/env bash
# Job log lines in Sidekiq 6.4's layout: every job logs "start" and "done" or "fail" at INFO with
# class=, jid= (ActiveJob's "wrapped" as the class) and, on done/fail, elapsed=; a line matches,
# field for field, what Sidekiq's own Pretty formatter writes for the same context (time, pid,
# tid and elapsed values aside), and its JSON formatter's keys with --log-format json (every line
# parses); a job's lines share one tid, the one `hiredhand busy` (the Busy page) shows for it;
# --log-level warn drops the INFO lines
# and keeps the failure, --log-level error drops that too; a bad level or format is a usage error.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start
ok="$("$HIREDHAND" push OkJob '[1]' -r "$REDIS_URL")" || fail "push OkJob"
bad="$("$HIREDHAND" push FailJob '[2]' -r "$REDIS_URL" --retry false)" || fail "push FailJob"
aj="$(hh_jid)"
R lpush queue:default "{\"class\":\"ActiveJob::QueueAdapters::SidekiqAdapter::JobWrapper\",\"wrapped\":\"MailJob\",\"queue\":\"default\",\"args\":[{}],\"jid\":\"$aj\",\"retry\":false}" >/dev/null
hh_start_worker -c 2 --exec "OkJob=$HH_HANDLERS/record.sh" --exec "FailJob=$HH_HANDLERS/fail.sh" \
    --exec "MailJob=$HH_HANDLERS/record.sh"  # Active Job: the handler of its wrapped class
must_wait 30 'grep -q "jid=$ok elapsed=.* INFO: done" "$WORKER_LOG" && grep -q "jid=$bad elapsed=.* INFO: fail" "$WORKER_LOG" && grep -q "jid=$aj elapsed=.* INFO: done" "$WORKER_LOG"' \
    "no done/fail lines for the three jobs"
T='[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z'
P="pid=$WORKER_PID tid=[0-9a-z]+"
grep -Eq "^$T $P class=OkJob jid=$ok INFO: start$" "$WORKER_LOG" || fail "no start line for OkJob: $(grep "$ok" "$WORKER_LOG")"
grep -Eq "^$T $P class=OkJob jid=$ok elapsed=[0-9]+\.[0-9]{1,3} INFO: done$" "$WORKER_LOG" || fail "bad done line: $(grep "$ok" "$WORKER_LOG")"
grep -Eq "^$T $P class=FailJob jid=$bad elapsed=[0-9]+\.[0-9]{1,3} INFO: fail$" "$WORKER_LOG" || fail "bad fail line: $(grep "$bad" "$WORKER_LOG")"
grep -Eq "^$T $P class=MailJob jid=$aj INFO: start$" "$WORKER_LOG" || fail "ActiveJob's wrapped class: $(grep "$aj" "$WORKER_LOG")"
# the start and done lines of one job come from one thread
t1="$(grep "jid=$ok INFO: start" "$WORKER_LOG" | grep -o 'tid=[0-9a-z]*')"
t2="$(grep "jid=$ok elapsed" "$WORKER_LOG" | grep -o 'tid=[0-9a-z]*')"
assert_eq "$t2" "$t1" "start and done on one tid"

# field for field what Sidekiq's Pretty formatter writes
norm() { sed -E "s/^$T pid=[0-9]+ tid=[0-9a-z]+ /TIME pid=PID tid=TID /; s/elapsed=[0-9.]+/elapsed=E/"; }
ours="$(grep "jid=$ok elapsed" "$WORKER_LOG" | norm)"
theirs="$(hh_ruby log_format.rb pretty OkJob "$ok" 0.012 done | norm)"
assert_eq "$ours" "$theirs" "done line vs Sidekiq::Logger::Formatters::Pretty"
ours="$(grep "jid=$ok INFO: start" "$WORKER_LOG" | norm)"
theirs="$(hh_ruby log_format.rb pretty OkJob "$ok" - start | norm)"
assert_eq "$ours" "$theirs" "start line vs Sidekiq's Pretty"
hh_stop_worker TERM 30
R del queue:default >/dev/null

# the tid of a running job's lines is the thread the Busy page shows
slow="$("$HIREDHAND" push SlowJob '[]' -r "$REDIS_URL")" || fail "push SlowJob"
hh_start_worker -c 1 --heartbeat-interval 1 --exec "SlowJob=$HH_HANDLERS/sleep.sh 20" -t 1
must_wait 30 '"$HIREDHAND" busy --json -r "$REDIS_URL" | grep -q "$slow"' "SlowJob not on the Busy page"
busy_tid="$("$HIREDHAND" busy --json -r "$REDIS_URL" | grep -o '"thread":"[0-9a-z]*"' | cut -d'"' -f4)"
log_tid="$(grep "jid=$slow INFO: start" "$WORKER_LOG" | grep -o 'tid=[0-9a-z]*' | cut -d= -f2)"
assert_eq "$log_tid" "$busy_tid" "the start line's tid is the Busy page's thread"
hh_stop_worker TERM 10
R del queue:default >/dev/null

# --log-format json: every line one JSON object, Sidekiq's keys
ok2="$("$HIREDHAND" push OkJob '[3]' -r "$REDIS_URL")" || fail "push OkJob 2"
hh_start_worker -c 1 --log-format json --exec "OkJob=$HH_HANDLERS/record.sh"
must_wait 30 'grep -q "\"jid\":\"$ok2\",\"elapsed\"" "$WORKER_LOG"' "no JSON done line: $(tail -n 5 "$WORKER_LOG")"
hh_stop_worker TERM 30
hh_ruby log_format.rb json OkJob "$ok2" 0.012 done >"$HH_TMP/theirs.json" || fail "Sidekiq's JSON formatter"
grep "\"jid\":\"$ok2\",\"elapsed\"" "$WORKER_LOG" >"$HH_TMP/ours.json"
ruby -rjson -e '
  lines = File.readlines(ARGV[0]).reject { |l| l.start_with?("[") } # the harness'"'"'s own lines
  lines.each { |l| JSON.parse(l) rescue abort("not JSON: #{l}") }
  ours = JSON.parse(File.read(ARGV[1])); theirs = JSON.parse(File.read(ARGV[2]))
  abort("keys #{ours.keys} vs Sidekiq #{theirs.keys}") unless ours.keys == theirs.keys
  abort("ctx keys #{ours["ctx"].keys} vs #{theirs["ctx"].keys}") unless ours["ctx"].keys == theirs["ctx"].keys
  abort("values") unless ours["lvl"] == "INFO" && ours["msg"] == "done" && ours["ctx"]["class"] == "OkJob" && ours["ctx"]["elapsed"].is_a?(Float) && ours["pid"].is_a?(Integer)
  abort("ts") unless ours["ts"] =~ /\A\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\z/
' "$WORKER_LOG" "$HH_TMP/ours.json" "$HH_TMP/theirs.json" || fail "JSON log lines differ from Sidekiq's JSON formatter (see above)"

# --log-level
bad2="$("$HIREDHAND" push FailJob '[4]' -r "$REDIS_URL" --retry false)" || fail "push FailJob 2"
hh_start_worker -c 1 --log-level warn --exec "FailJob=$HH_HANDLERS/fail.sh"
must_wait 30 'grep -q "WARN: class=FailJob jid=$bad2" "$WORKER_LOG"' "no WARN failure line with --log-level warn"
hh_stop_worker TERM 30
assert_eq "$(grep -c ' INFO: ' "$WORKER_LOG")" 0 "--log-level warn logs no INFO line"
bad3="$("$HIREDHAND" push FailJob '[5]' -r "$REDIS_URL" --retry false)" || fail "push FailJob 3"
hh_start_worker -c 1 --log-level error --exec "FailJob=$HH_HANDLERS/fail.sh"
must_wait 30 '[ "$(R get stat:failed)" -ge 3 ]' "FailJob 3 not run (stat:failed $(R get stat:failed))"
hh_stop_worker TERM 30
assert_eq "$(grep -c 'WARN: \| INFO: ' "$WORKER_LOG")" 0 "--log-level error logs no WARN or INFO line"

hh_cli work --log-level loud
assert_eq "$HH_RC" 2 "bad --log-level"
hh_cli work --log-format xml
assert_eq "$HH_RC" 2 "bad --log-format"
pass
