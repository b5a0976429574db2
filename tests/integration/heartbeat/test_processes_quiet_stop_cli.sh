#!/usr/bin/env bash
# CLI: `hiredhand processes [--json]`, `hiredhand quiet ID`,
# `hiredhand stop ID` behave like the Web UI's Busy page and its buttons:
#   - processes --json lists every live process with identity, hostname, pid, tag, queues,
#     concurrency, busy, quiet, beat/beat_age, rss, agreeing with Sidekiq::ProcessSet; it prunes a
#     member of `processes` whose hash is gone (as ProcessSet.new does); the table form shows them;
#   - quiet ID sends exactly MULTI / LPUSH ID-signals TSTP / EXPIRE ID-signals 60 / EXEC (what the
#     Quiet button sends), exits 0, and the process turns quiet (hash, --json, ProcessSet) and
#     fetches nothing more;
#   - quiet / stop / dump on an unknown identity, or one whose hash expired, exit 1 with a message
#     and write nothing; a missing ID is a usage error;
#   - stop ID: the process exits 0 within one beat + -t + slack, its job goes back to the queue, it
#     leaves `processes` at once; the other process stays listed.
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/heartbeat_helpers.sh"
hh_require_binary
hh_redis_start
BEAT=5
host="$(hostname)"

slow="$(hh_jid)"
slow_payload="$(hb_payload SlowJob "$slow" '[60]' default)"
R sadd queues default >/dev/null
R lpush queue:default "$slow_payload" >/dev/null
hh_start_worker -c 2 -t 2 --tag clitag --exec "SlowJob=$HH_HANDLERS/sleep.sh 60" --exec "OkJob=$HH_HANDLERS/record.sh"
w1=$WORKER_PID
hb_wait_identity "$w1" 15
id1="$HB_ID"
must_wait 10 '[ "$(R lrange test:started 0 -1)" = "'"$slow"'" ]' "the SlowJob did not start"
must_wait $((BEAT + 2)) '[ "$(R hget "$id1" busy)" = 1 ]' "busy did not become 1 within one beat"
hh_start_worker -c 3 -q other --label second
w2=$WORKER_PID
hb_wait_identity "$w2" 15
id2="$HB_ID"

# ---------------------------------------------------------------- processes
R sadd processes "ghost.example:1:000000000000" >/dev/null     # member without hash: pruned
hh_cli processes --json -r "$REDIS_URL"
assert_eq "$HH_RC" 0 "processes --json exit status (stderr: $HH_ERR)"
json="$HH_OUT"
ruby_procs="$(hh_ruby hb_api.rb processes)" || fail "hb_api.rb processes failed"
HB_CLI="$json" HB_RUBY="$ruby_procs" ruby -rjson -e '
  cli = JSON.parse(ENV["HB_CLI"]); rb = JSON.parse(ENV["HB_RUBY"])["list"]
  id1, id2, pid1, pid2, host = ARGV
  errs = []
  errs << "--json is not an array: #{ENV["HB_CLI"][0, 200]}" unless cli.is_a?(Array)
  cli = [] unless cli.is_a?(Array)
  errs << "identities #{cli.map { |p| p["identity"] }.sort} != ProcessSet #{rb.map { |p| p["identity"] }.sort}" unless cli.map { |p| p["identity"] }.sort == rb.map { |p| p["identity"] }.sort
  errs << "ghost member listed" if cli.any? { |p| p["identity"].to_s.start_with?("ghost.example") }
  want = { id1 => { "hostname" => host, "pid" => pid1.to_i, "tag" => "clitag", "queues" => ["default"], "concurrency" => 2, "busy" => 1, "quiet" => false },
           id2 => { "hostname" => host, "pid" => pid2.to_i, "tag" => "", "queues" => ["other"], "concurrency" => 3, "busy" => 0, "quiet" => false } }
  want.each do |id, w|
    p = cli.find { |x| x["identity"] == id }
    r = rb.find { |x| x["identity"] == id }
    (errs << "#{id} missing from --json"; next) unless p
    w.each { |k, v| errs << "#{id} #{k}: #{p[k].inspect} != #{v.inspect}" unless p[k] == v }
    %w[busy concurrency tag pid hostname queues].each { |k| errs << "#{id} #{k}: --json #{p[k].inspect} vs ProcessSet #{r && r[k].inspect}" unless r && p[k] == r[k] }
    errs << "#{id} quiet: --json #{p["quiet"].inspect} vs ProcessSet #{r && r["quiet"].inspect}" unless r && p["quiet"] == (r["quiet"] == "true")
    errs << "#{id} beat_age #{p["beat_age"].inspect} not in [0, 7]" unless p["beat_age"].is_a?(Numeric) && p["beat_age"] >= -0.5 && p["beat_age"] <= 7
    errs << "#{id} beat #{p["beat"].inspect} differs from ProcessSet #{r && r["beat"].inspect}" unless r && (p["beat"].to_f - r["beat"].to_f).abs < 6
    errs << "#{id} rss #{p["rss"].inspect}" unless p["rss"].is_a?(Integer) && p["rss"] > 0
  end
  abort(errs.map { |e| "  - #{e}" }.join("\n")) unless errs.empty?
' "$id1" "$id2" "$w1" "$w2" "$host" || fail "processes --json vs the expected values and Sidekiq::ProcessSet (above)"
assert_eq "$(R sismember processes "ghost.example:1:000000000000")" 0 "processes pruned the ghost member (as ProcessSet.new does)"

hh_cli processes -r "$REDIS_URL"
assert_eq "$HH_RC" 0 "processes (table) exit status"
row1="$(printf '%s\n' "$HH_OUT" | grep -F -- "$id1" || true)"
[ -n "$row1" ] || fail "processes table has no row for $id1: $HH_OUT"
assert_contains "$row1" "clitag" "table row of $id1 shows the tag"
assert_contains "$row1" "1/2" "table row of $id1 shows busy/concurrency"
assert_contains "$(printf '%s\n' "$HH_OUT" | grep -F -- "$id2")" "0/3" "table row of $id2 shows busy/concurrency"

# ---------------------------------------------------------------- unknown identities
for cmd in quiet stop dump; do
    hh_cli "$cmd" "nosuch.example:42:abcdefabcdef" -r "$REDIS_URL"
    assert_eq "$HH_RC" 1 "hiredhand $cmd on an unknown identity: exit status (stdout [$HH_OUT], stderr [$HH_ERR])"
    [ -n "$HH_ERR" ] || fail "hiredhand $cmd on an unknown identity printed no message"
    assert_eq "$(R exists "nosuch.example:42:abcdefabcdef-signals")" 0 "hiredhand $cmd on an unknown identity wrote a signals list"
done
R sadd processes "stale.example:7:abcdefabcdef" >/dev/null    # listed but its hash expired
hh_cli quiet "stale.example:7:abcdefabcdef" -r "$REDIS_URL"
assert_eq "$HH_RC" 1 "hiredhand quiet on a member whose hash expired: exit status"
assert_eq "$(R exists "stale.example:7:abcdefabcdef-signals")" 0 "signals list written for a dead member"
R srem processes "stale.example:7:abcdefabcdef" >/dev/null
hh_cli quiet -r "$REDIS_URL"
assert_ne "$HH_RC" 0 "hiredhand quiet without an ID: exit status"

# ---------------------------------------------------------------- quiet ID
mon="$HH_TMP/monitor.txt"
hb_monitor_start "$mon"
hh_cli quiet "$id1" -r "$REDIS_URL"
assert_eq "$HH_RC" 0 "hiredhand quiet $id1 exit status (stderr: $HH_ERR)"
sleep 0.3
hb_monitor_stop
client="$(grep -F "\"LPUSH\" \"$id1-signals\"" "$mon" | head -n 1 | sed 's/^[^[]*\[//; s/\].*//')"
[ -n "$client" ] || fail "no LPUSH $id1-signals in the MONITOR capture"
seq="$(grep -F "[$client]" "$mon" | sed 's/^[^]]*\] //' | grep -vE '^"(INFO|PING|SISMEMBER|EXISTS|HMGET|HGET|CLIENT|HELLO|SELECT|AUTH)"' | tr '\n' ';')"
assert_eq "$seq" "\"MULTI\";\"LPUSH\" \"$id1-signals\" \"TSTP\";\"EXPIRE\" \"$id1-signals\" \"60\";\"EXEC\";" \
    "commands hiredhand quiet sent (the Web UI's Quiet sends MULTI, LPUSH, EXPIRE 60, EXEC)"
must_wait $((2 * BEAT + 1)) '[ "$(R hget "$id1" quiet)" = true ]' "$id1 not quiet within two beats of hiredhand quiet"
hh_cli processes --json -r "$REDIS_URL"
HB_CLI="$HH_OUT" ruby -rjson -e 'p = JSON.parse(ENV["HB_CLI"]).find { |x| x["identity"] == ARGV[0] }; exit(p && p["quiet"] == true ? 0 : 1)' "$id1" \
    || fail "processes --json does not show $id1 as quiet: $HH_OUT"
ruby_procs="$(hh_ruby hb_api.rb processes)"
HB_RUBY="$ruby_procs" ruby -rjson -e 'p = JSON.parse(ENV["HB_RUBY"])["list"].find { |x| x["identity"] == ARGV[0] }; exit(p && p["stopping"] == true ? 0 : 1)' "$id1" \
    || fail "Sidekiq::ProcessSet does not show $id1 as stopping?: $ruby_procs"
ok="$(hh_jid)"
hb_push OkJob "$ok" '[1]' default
sleep 3
assert_eq "$(R llen queue:default)" 1 "an OkJob pushed after quiet stays queued (no new job fetched)"
assert_alive "$w1" "worker 1 exited after quiet"

# ---------------------------------------------------------------- stop ID
hh_cli stop "$id1" -r "$REDIS_URL"
assert_eq "$HH_RC" 0 "hiredhand stop $id1 exit status (stderr: $HH_ERR)"
wait_until $((BEAT + 2 + 4)) "! kill -0 $w1" || fail "worker 1 still running $((BEAT + 2 + 4)) s after hiredhand stop (-t 2)"
wait "$w1"; rc=$?
assert_eq "$rc" 0 "worker 1 exit status after hiredhand stop"
assert_eq "$(R sismember processes "$id1")" 0 "$id1 left processes at once"
hh_cli processes --json -r "$REDIS_URL"
assert_not_contains "$HH_OUT" "\"$id1\"" "processes --json after stop"
assert_contains "$HH_OUT" "\"$id2\"" "processes --json still lists the other process"
q="$(R lrange queue:default 0 -1)"
assert_eq "$(printf '%s\n' "$q" | grep -cxF -- "$slow_payload")" 1 "the unfinished SlowJob is back in queue:default once, byte-identical"
assert_contains "$q" "$ok" "the OkJob is still queued"
assert_alive "$w2" "worker 2 exited when worker 1 was stopped"
pass
