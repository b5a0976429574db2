#!/usr/bin/env bash
# push reads its input from a file or stdin: --args-file FILE|- (one args array, however big) and
# --bulk FILE|- (one job per line: args arrays with CLASS, like Sidekiq::Client.push_bulk, or job
# objects as Sidekiq::Client.push takes them). Every line is checked before anything is pushed:
# bad JSON on line N names the line and pushes nothing; a failure while pushing says how many
# jobs went in and from which line on none did. Jobs land as Sidekiq's client writes them.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
command -v jq >/dev/null || fail "jq is not installed (apt-get install jq)"
hh_redis_start

# --- --args-file: an args array bigger than a command line may be (ARG_MAX)
big="$(head -c 3000000 /dev/zero | tr '\0' 'x')"
printf '["%s", 2]\n' "$big" >"$HH_TMP/args.json"
hh_cli push Big --args-file "$HH_TMP/args.json"
assert_eq "$HH_RC" 0 "push --args-file (stderr: ${HH_ERR:0:300})"
jid="$HH_OUT"
item="$(R lindex queue:default 0)"
assert_eq "$(jq -r .jid <<<"$item")" "$jid" "the pushed job's jid is the one printed"
assert_eq "$(jq -r '.args[0] | length' <<<"$item")" 3000000 "the 3 MB argument arrived whole"
assert_eq "$(jq -r .class <<<"$item")" Big "class"
R del queue:default >/dev/null
printf '[1, {"a": "b"}]' | "$HIREDHAND" push Small --args-file - -r "$REDIS_URL" -q low >"$HH_TMP/out" 2>"$HH_TMP/err"
assert_eq "$?" 0 "push --args-file - (stdin): $(cat "$HH_TMP/err")"
assert_eq "$(R lindex queue:low 0 | jq -c .args)" '[1,{"a":"b"}]' "args from stdin"
R del queue:low >/dev/null
printf '[1,' >"$HH_TMP/bad.json"
hh_cli push K --args-file "$HH_TMP/bad.json"
assert_eq "$HH_RC" 2 "--args-file with bad JSON"
assert_contains "$HH_ERR" "bad.json: not JSON" "the error names the file"
hh_cli push K --args-file "$HH_TMP/missing.json"
assert_eq "$HH_RC" 2 "--args-file of a missing file"
assert_contains "$HH_ERR" "No such file" "the error says why"

# --- --bulk with CLASS: one args array per line, options for all; blank lines skipped
printf '[1]\n\n[2, "two"]\r\n[3]\n' >"$HH_TMP/args.jsonl"
hh_cli push HardWorker --bulk "$HH_TMP/args.jsonl" -q bulkq --retry 3
assert_eq "$HH_RC" 0 "push --bulk (stderr: $HH_ERR)"
assert_eq "$(wc -l <<<"$HH_OUT")" 3 "one jid per job printed"
assert_eq "$(R llen queue:bulkq)" 3 "three jobs in queue:bulkq"
assert_eq "$(R lrange queue:bulkq 0 -1 | jq -c .args | LC_ALL=C sort | tr '\n' ' ')" '[1] [2,"two"] [3] ' "their args"
assert_eq "$(R lrange queue:bulkq 0 -1 | jq -r '.retry' | sort -u)" 3 "--retry applies to every line"
for j in $HH_OUT; do
    R lrange queue:bulkq 0 -1 | grep -q "\"jid\":\"$j\"" || fail "printed jid $j is not in the queue"
done

# --- --bulk without CLASS, from stdin: job objects as Sidekiq::Client.push takes them
at="$(( $(date +%s) + 3600 ))"
printf '%s\n' '{"class":"A","args":[1],"queue":"qa"}' "{\"class\":\"B\",\"args\":[],\"at\":$at,\"retry\":false,\"tags\":[\"t\"]}" |
    "$HIREDHAND" push --bulk - -r "$REDIS_URL" >"$HH_TMP/out" 2>"$HH_TMP/err"
assert_eq "$?" 0 "push --bulk - with job objects: $(cat "$HH_TMP/err")"
assert_eq "$(wc -l <"$HH_TMP/out")" 2 "two jids"
assert_eq "$(R lindex queue:qa 0 | jq -r .class)" A "job A in its own queue"
assert_eq "$(R zcard schedule)" 1 "job B scheduled (its at is in the future)"
assert_eq "$(R zrange schedule 0 -1 | jq -c '[.class, .retry, .tags]')" '["B",false,["t"]]' "B's keys kept"

# --- bad JSON on line 3: named, nothing pushed
before="$(R llen queue:default)"
printf '[1]\n[2]\n[3,\n[4]\n' | "$HIREDHAND" push K --bulk - -r "$REDIS_URL" >"$HH_TMP/out" 2>"$HH_TMP/err"
rc=$?
assert_eq "$rc" 2 "bad JSON on line 3: exit status"
assert_contains "$(cat "$HH_TMP/err")" "line 3: not JSON" "the error names line 3"
assert_contains "$(cat "$HH_TMP/err")" "nothing pushed" "and says nothing was pushed"
assert_eq "$(R llen queue:default)" "$before" "nothing was pushed"
assert_eq "$(cat "$HH_TMP/out")" "" "no jid printed"
printf '%s\n' '{"class":"A","args":[1]}' '{"args":[1]}' | "$HIREDHAND" push --bulk - -r "$REDIS_URL" >/dev/null 2>"$HH_TMP/err"
assert_eq "$?" 2 "a job object without class"
assert_contains "$(cat "$HH_TMP/err")" 'line 2: no "class" string' "names line 2 and what is missing"
assert_eq "$(R llen queue:default)" "$before" "nothing was pushed"
hh_cli push --bulk - -q x
assert_eq "$HH_RC" 2 "--bulk without CLASS takes no -q"

# --- Redis refuses line 3 (a payload over proto-max-bulk-len): lines 1-2 pushed, and said so
R config set proto-max-bulk-len 1mb >/dev/null
huge="$(head -c 1200000 /dev/zero | tr '\0' 'y')"
{
    echo '{"class":"A","args":[1],"queue":"part"}'
    echo '{"class":"A","args":[2],"queue":"part"}'
    printf '{"class":"A","args":["%s"],"queue":"part"}\n' "$huge"
    echo '{"class":"A","args":[4],"queue":"part"}'
} >"$HH_TMP/part.jsonl"
hh_cli push --bulk "$HH_TMP/part.jsonl"
assert_ne "$HH_RC" 0 "a push Redis refuses fails the command"
assert_contains "$HH_ERR" "2 jobs pushed" "says how many were pushed"
assert_contains "$HH_ERR" "none from line 3 on" "and from which line none were"
assert_eq "$(R llen queue:part)" 2 "exactly lines 1 and 2 are in Redis"
assert_eq "$(wc -l <<<"$HH_OUT")" 2 "their two jids were printed"

# --- documented
hh_cli push --help
assert_contains "$HH_OUT" "--bulk FILE" "push --help documents --bulk"
assert_contains "$HH_OUT" "--args-file FILE" "push --help documents --args-file"
# --- ARGS_JSON that is not JSON: jansson's reason, with line and column; nothing pushed
before=$(R llen queue:default)
while IFS='|' read -r args why; do
    hh_cli push X "$args" -r "$REDIS_URL"
    assert_eq "$HH_RC" 2 "push X '$args' is a usage error (stderr: $HH_ERR)"
    assert_contains "$HH_ERR" "$why" "push X '$args' says why"
    assert_contains "$HH_ERR" "(line 1, column" "push X '$args' gives line and column"
done <<'CASES'
[12345678901234567890]|too big integer
[1e400]|real number overflow
["\ud800"]|invalid Unicode
[1,]|unexpected token
CASES
hh_cli push X '[12345678901234567890]' -r "$REDIS_URL"
assert_contains "$HH_ERR" "(64 bits): pass a bigger one as a string" "a too big integer names push's limit"
assert_eq "$(R llen queue:default)" "$before" "nothing pushed for bad ARGS_JSON"

# --- a time already past pushes at once, as Sidekiq's perform_in does: --in -5 like --at 0
for when in "--in -5" "--at 0"; do
    before=$(R llen queue:default)
    # shellcheck disable=SC2086
    hh_cli push PastJob '[]' $when -r "$REDIS_URL"
    assert_eq "$HH_RC" 0 "push $when (stderr: $HH_ERR)"
    assert_eq "$(R llen queue:default)" "$((before + 1))" "push $when goes to the queue at once"
done
assert_eq "$(R zrange schedule 0 -1 | grep -c PastJob)" 0 "nothing past is scheduled"
pass
