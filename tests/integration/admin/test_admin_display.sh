#!/usr/bin/env bash
# What the job management commands (retries, dead, scheduled: list, show, --all actions) find
# and show, from entries Sidekiq's clients and Web UI can hold:
# - `--error TEXT` searches error_class and error_message over their whole length: text after a
#   NUL ("boom\u0000Timeout") is found; `--class` and `--queue` compare whole strings, so
#   "K\u0000Evil" is not K.
# - The CLASS column, show's class: and --json's display_class are the class Sidekiq's Web UI
#   shows (Job#display_class, compared with Sidekiq 6.4's own): Active Job's wrapped class (or
#   args[0]), "Mailer#method" for Action Mailer's delivery jobs, a payload's display_class; and
#   --class finds an entry by that class too.
# - Tables (queues list/show, stats, processes, busy, retries/dead/scheduled list, top) size
#   their columns to their content, as `column -t` does: long and UTF-8 names keep the columns
#   aligned.
# - An error text that was not UTF-8 (a handler's stderr) shows its bytes as \xNN, as the log
#   does, in retries and dead list/show (the worker stores them as that text; --json stays
#   JSON), and --error finds it by what is shown.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
command -v jq >/dev/null || fail "jq is not installed (apt-get install jq)"
hh_redis_start
now=$(date +%s)

entry() {   # JID CLASS QUEUE ERROR_MESSAGE (JSON string bodies) [EXTRA JSON MEMBERS]
    printf '{"retry":true,"queue":"%s","class":"%s","args":[1],"jid":"%s","created_at":%s,"enqueued_at":%s,"retry_count":1,"error_class":"E","error_message":"%s","failed_at":%s%s}' \
        "$3" "$2" "$1" "$now" "$now" "$4" "$now" "${5:-}"
}
jids() { jq -r '.[].jid' <<<"$HH_OUT" | sort | tr '\n' ' '; }

# ---- --error over the whole error_message; --class/--queue over the whole string
for set in retry dead; do
    R zadd "$set" "$now" "$(entry nul1 K default 'boom\u0000Timeout::Error after 5 s')" >/dev/null
    R zadd "$set" "$((now + 1))" "$(entry nul2 'K\u0000Evil' 'default\u0000x' 'plain')" >/dev/null
    R zadd "$set" "$((now + 2))" "$(entry plain1 K default 'Timeout in plain')" >/dev/null
done
for cmd in retries dead; do
    hh_cli "$cmd" list --error Timeout --json -r "$REDIS_URL"
    assert_eq "$HH_RC" 0 "$cmd list --error (stderr: $HH_ERR)"
    assert_eq "$(jids)" "nul1 plain1 " "$cmd list --error finds text after a NUL in error_message"
    hh_cli "$cmd" list --class K --json -r "$REDIS_URL"
    assert_eq "$(jids)" "nul1 plain1 " "$cmd list --class K does not take class K\\u0000Evil"
    hh_cli "$cmd" list --queue default --json -r "$REDIS_URL"
    assert_eq "$(jids)" "nul1 plain1 " "$cmd list --queue default does not take queue default\\u0000x"
done
hh_cli retries delete --all --error 'after 5 s' --yes -r "$REDIS_URL"
assert_eq "$HH_RC" 0 "retries delete --all --error (stderr: $HH_ERR)"
assert_contains "$HH_OUT" "delete: 1 done" "delete --all --error acts on the entry whose match is after a NUL"
assert_eq "$(R zrange retry 0 -1 | jq -r .jid | sort | tr '\n' ' ')" "nul2 plain1 " "the matching entry is gone, the others stay"
R del retry dead >/dev/null

# ---- display_class, as Sidekiq's Web UI shows it
AJ=ActiveJob::QueueAdapters::SidekiqAdapter::JobWrapper
aj_args='[{"job_class":"ReportJob","job_id":"7f","queue_name":"default","arguments":[1],"executions":0}]'
mail_args='[{"job_class":"ActionMailer::MailDeliveryJob","job_id":"8e","arguments":["UserMailer","welcome","deliver_now",{"args":[1]}]}]'
payload() {   # JID CLASS ARGS EXTRA
    printf '{"retry":true,"queue":"default","class":"%s","args":%s,"jid":"%s","created_at":%s,"enqueued_at":%s,"retry_count":1,"error_class":"E","error_message":"m","failed_at":%s%s}' \
        "$2" "$3" "$1" "$now" "$now" "$now" "$4"
}
for set in retry dead schedule; do
    R zadd "$set" "$now" "$(payload aj1 "$AJ" "$aj_args" ',"wrapped":"ReportJob"')" >/dev/null
    R zadd "$set" "$((now + 1))" "$(payload aj2 "$AJ" '["ReportJob",{"x":1}]' '')" >/dev/null
    R zadd "$set" "$((now + 2))" "$(payload mail1 "$AJ" "$mail_args" ',"wrapped":"ActionMailer::MailDeliveryJob"')" >/dev/null
    R zadd "$set" "$((now + 3))" "$(payload dc1 Plain '[]' ',"display_class":"Shown::Name"')" >/dev/null
    R zadd "$set" "$((now + 4))" "$(payload s7 'Sidekiq::ActiveJob::Wrapper' "$aj_args" ',"wrapped":"SevenJob"')" >/dev/null
    R zadd "$set" "$((now + 5))" "$(payload plain2 Plain '[]' '')" >/dev/null
done
cat >"$HH_TMP/display.rb" <<'RUBY'
require "helper"
# Sidekiq 6.4 knows only the 6.x wrapper; 7.x adds Sidekiq::ActiveJob::Wrapper, shown the same way
[Sidekiq::RetrySet, Sidekiq::DeadSet, Sidekiq::ScheduledSet].each do |set|
  set.new.each do |e|
    shown = e.klass == "Sidekiq::ActiveJob::Wrapper" ? e["wrapped"] : e.display_class
    puts "#{set.name.split("::").last} #{e.jid} #{shown}"
  end
end
RUBY
want="$(hh_ruby "$HH_TMP/display.rb" | sort)" || fail "Sidekiq's display_class script failed: $want"
assert_contains "$want" "RetrySet mail1 UserMailer#welcome" "Sidekiq's own display_class of a mailer job"
got=""
for cmd in retries dead scheduled; do
    name=$(case $cmd in retries) echo RetrySet ;; dead) echo DeadSet ;; *) echo ScheduledSet ;; esac)
    hh_cli "$cmd" list --json -r "$REDIS_URL"
    assert_eq "$HH_RC" 0 "$cmd list --json (stderr: $HH_ERR)"
    got+="$(jq -r --arg n "$name" '.[] | "\($n) \(.jid) \(.display_class)"' <<<"$HH_OUT")"$'\n'
    assert_eq "$(jq -r '.[] | select(.jid == "aj1") | .class' <<<"$HH_OUT")" "$AJ" "$cmd --json keeps the payload's class"
    hh_cli "$cmd" list -r "$REDIS_URL"
    row="$(grep ' aj1 ' <<<"$HH_OUT")"
    assert_contains "$row" " ReportJob " "$cmd list shows the wrapped class"
    assert_not_contains "$row" "JobWrapper" "$cmd list does not show Active Job's wrapper"
    assert_contains "$(grep ' mail1 ' <<<"$HH_OUT")" " UserMailer#welcome " "$cmd list shows a mailer job as Mailer#method"
    assert_contains "$(grep ' aj2 ' <<<"$HH_OUT")" " ReportJob " "$cmd list shows args[0] when wrapped is missing"
    assert_contains "$(grep ' dc1 ' <<<"$HH_OUT")" " Shown::Name " "$cmd list shows a payload's display_class"
    hh_cli "$cmd" show mail1 -r "$REDIS_URL"
    assert_contains "$HH_OUT" "class:         UserMailer#welcome" "$cmd show shows the class the Web UI shows"
    hh_cli "$cmd" list --class UserMailer#welcome --json -r "$REDIS_URL"
    assert_eq "$(jq -r '.[].jid' <<<"$HH_OUT" | tr '\n' ' ')" "mail1 " "$cmd list --class takes the shown class"
    hh_cli "$cmd" list --class ReportJob --json -r "$REDIS_URL"
    assert_eq "$(jq -r '.[].jid' <<<"$HH_OUT" | sort | tr '\n' ' ')" "aj1 aj2 " "$cmd list --class takes the wrapped class"
done
assert_eq "$(sort <<<"${got%$'\n'}")" "$want" "display_class as Sidekiq 6.4's API computes it (set, jid, class)"
R del retry dead schedule >/dev/null

# ---- tables sized to their content
long=a-very-long-queue-name-that-is-wider-than-any-fixed-column-of-the-old-tables
wide='ünïcödé-qüéüé-ñame'
for q in "$long" "$wide" default; do
    hh_cli push Plain -q "$q" -r "$REDIS_URL" || fail "push to $q: $HH_ERR"
    R zadd retry "$now" "$(entry "r-$q" 'Ünïcödé::Wörker' "$q" 'bööm')" >/dev/null
    R zadd dead "$now" "$(entry "d-$q" K "$q" 'x')" >/dev/null
    R zadd schedule "$now" "$(entry "s-$q" K "$q" 'x')" >/dev/null
done
ident="host-with-a-rather-long-name.example.com:4242:0123456789ab"
R sadd processes "$ident" short:1:a >/dev/null
for id in "$ident" short:1:a; do
    R hset "$id" info "{\"hostname\":\"h\",\"pid\":1,\"tag\":\"tägged-äpp\",\"concurrency\":25,\"queues\":[\"q\"],\"identity\":\"$id\",\"started_at\":$now}" \
        beat "$now" busy 1 quiet false rss 123456 >/dev/null
    R hset "$id:work" "thread-$id" "{\"queue\":\"$long\",\"payload\":\"{\\\"class\\\":\\\"Wörker\\\",\\\"args\\\":[],\\\"jid\\\":\\\"w1\\\"}\",\"run_at\":$now}" >/dev/null
done
tables=()
table() {   # ALIGN WHAT -- HH_OUT (from its first row on) must line up; checked at the end
    assert_eq "$HH_RC" 0 "$2 (stderr: $HH_ERR)"
    local f="$HH_TMP/table.${#tables[@]}"
    printf '%s\n' "$HH_OUT" >"$f"
    tables+=("$1" "$f")
}
hh_cli queues list -r "$REDIS_URL";            table lrll "queues list"
assert_contains "$HH_OUT" "$long" "queues list shows the long name whole"
hh_cli push 'Ünïcödé::Longer::Wörker' -q "$long" -r "$REDIS_URL" || fail "push: $HH_ERR"
hh_cli queues show "$long" -r "$REDIS_URL";    HH_OUT="$(tail -n +2 <<<"$HH_OUT")"; table rlll "queues show"
hh_cli stats -r "$REDIS_URL";                  HH_OUT="$(sed -n '/^Queue /,$p' <<<"$HH_OUT")"; table lrl stats
hh_cli processes -r "$REDIS_URL";              table llrrlr processes
hh_cli busy -r "$REDIS_URL";                   table llllll busy
hh_cli retries list -r "$REDIS_URL";           table llllrl "retries list"
hh_cli dead list -r "$REDIS_URL";              table llllrl "dead list"
hh_cli scheduled list -r "$REDIS_URL";         table llllrl "scheduled list"
hh_cli top --count 1 -r "$REDIS_URL"
top_out="$HH_OUT"
HH_OUT="$(sed -n '/^QUEUE /,/^$/p' <<<"$top_out")";   table lrl "top's queues"
HH_OUT="$(sed -n '/^PROCESS /,$p' <<<"$top_out")";    table lllrlr "top's processes"
hh_ruby table_check.rb "${tables[@]}" || fail "the columns of a table do not line up (above)"

# ---- error text that is not UTF-8
R del retry dead >/dev/null
printf '#!/bin/sh\nprintf "bad \\377\\376 bytes\\n" >&2\nexit 1\n' >"$HH_TMP/badbytes.sh"
chmod +x "$HH_TMP/badbytes.sh"
hh_cli push BadBytes -q bytesq -r "$REDIS_URL";  rj="$HH_OUT"
hh_cli push BadBytes -q bytesq --retry 0 -r "$REDIS_URL";  dj="$HH_OUT"
# a short program path: the list's ERROR column holds 80 bytes of "class: message"
cd "$HH_TMP" || fail "cd $HH_TMP"
hh_start_worker -c 1 -q bytesq --exec "BadBytes=./badbytes.sh"
cd - >/dev/null || fail "cd back"
must_wait 30 '[ "$(R zcard retry)" = 1 ] && [ "$(R zcard dead)" = 1 ]' "the two failures did not land in retry and dead"
hh_stop_worker TERM 30
assert_contains "$(cat "$WORKER_LOG")" 'bad \xff\xfe bytes' "the log shows the bytes as \\xNN"
for cmd in retries dead; do
    jid=$([ "$cmd" = retries ] && echo "$rj" || echo "$dj")
    hh_cli "$cmd" list -r "$REDIS_URL"
    assert_contains "$HH_OUT" 'bad \xff\xfe bytes' "$cmd list shows the bytes as \\xNN"
    hh_cli "$cmd" show "$jid" -r "$REDIS_URL"
    assert_contains "$HH_OUT" 'error:         hiredhand::ExecFailed: ' "$cmd show shows the error"
    assert_contains "$HH_OUT" 'bad \xff\xfe bytes' "$cmd show shows the bytes as \\xNN"
    hh_cli "$cmd" list --json -r "$REDIS_URL"
    jq -e . <<<"$HH_OUT" >/dev/null || fail "$cmd list --json is not JSON: $HH_OUT"
    assert_contains "$(jq -r '.[0].error_message' <<<"$HH_OUT")" 'bad \xff\xfe bytes' "$cmd --json's error_message"
    hh_cli "$cmd" list --error '\xff\xfe' --json -r "$REDIS_URL"
    assert_eq "$(jq -r '.[].jid' <<<"$HH_OUT")" "$jid" "$cmd list --error finds the text as shown"
done
pass
