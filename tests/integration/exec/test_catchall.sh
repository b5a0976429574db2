#!/usr/bin/env bash
# Routing: '*' (--exec or --serve) takes every class without its own handler and learns the class
# from HIREDHAND_CLASS / the job line; an exact handler wins over it, whichever flag declares either;
# two catch-alls, or two handlers for one class, are a usage error.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start
export SERVE_DIR; SERVE_DIR="$(hh_tmp)"

push() { hh_push_job "$1" '[1]'; }   # CLASS -> jid
exact="$(hh_jid_recorder "$HH_TMP/exact.sh")"

# --exec '*' with an exact --serve and an exact --exec
j_any1="$(push Billing::Invoice)"
j_any2="$(push SomethingElse)"
j_serve="$(push Ok)"
j_exec="$(push Exact)"
hh_start_worker -c 2 --exec "*=$HH_HANDLERS/record.sh" --serve "Ok=$HH_HANDLERS/serve_test.py" --exec "Exact=$HH_TMP/exact.sh"
must_wait 60 '[ "$(R get stat:processed)" = 4 ]' "processed=$(R get stat:processed) failed=$(R get stat:failed)"
assert_eq "$(R get stat:failed | sed "s/^$/0/")" 0 "no failure (no NameError)"
assert_eq "$(R lrange test:meta 0 -1 | grep "$j_any1" | cut -d' ' -f2)" Billing::Invoice "--exec '*': HIREDHAND_CLASS"
assert_eq "$(R lrange test:meta 0 -1 | grep "$j_any2" | cut -d' ' -f2)" SomethingElse "--exec '*': HIREDHAND_CLASS"
assert_eq "$(R lrange test:meta 0 -1 | grep -c "$j_serve\|$j_exec")" 0 "exact handlers' jobs did not go to '*'"
assert_eq "$(grep -c " $j_serve Ok " "$SERVE_DIR/ran")" 1 "the exact --serve Ok handler won over --exec '*'"
assert_eq "$(grep -c "$j_exec" "$exact")" 1 "the exact --exec handler won over --exec '*'"
hh_stop_worker TERM 30

# --serve '*' with an exact --exec
R flushdb >/dev/null
SERVE_DIR="$(hh_tmp)"
j_any="$(push Reports::Nightly)"
j_exec="$(push Exact)"
hh_start_worker -c 2 --serve "*=$HH_HANDLERS/serve_test.py" --exec "Exact=$HH_TMP/exact.sh"
must_wait 60 '[ "$(R get stat:processed)" = 2 ]' "processed=$(R get stat:processed) failed=$(R get stat:failed)"
assert_eq "$(R get stat:failed | sed "s/^$/0/")" 0 "no failure (no NameError)"
assert_eq "$(grep -c " $j_any Reports::Nightly " "$SERVE_DIR/ran")" 1 "--serve '*': the class on the job line"
assert_eq "$(grep -c "$j_exec" "$SERVE_DIR/ran")" 0 "the exact --exec handler's job did not go to '*'"
assert_eq "$(grep -c "$j_exec" "$exact")" 1 "the exact --exec handler won over --serve '*'"
assert_eq "$(cut -d' ' -f2,3 "$SERVE_DIR/started" | sort -u)" '* 1' "HIREDHAND_CLASS and HIREDHAND_SERVE of a '*' process"
hh_stop_worker TERM 30

# two catch-alls, or one class twice: usage errors
hh_cli work -r "$REDIS_URL" --exec "*=$HH_HANDLERS/record.sh" --serve "*=$HH_HANDLERS/serve_test.py"
assert_eq "$HH_RC" 2 "two catch-alls: exit status"
assert_contains "$HH_ERR" "another --exec or --serve handler" "two catch-alls: message"
hh_cli work -r "$REDIS_URL" --serve "Ok=$HH_HANDLERS/serve_test.py" --exec "Ok=$HH_HANDLERS/record.sh"
assert_eq "$HH_RC" 2 "one class twice: exit status"
hh_cli work -r "$REDIS_URL" --serve "Ok=/nonexistent/handler"
assert_eq "$HH_RC" 2 "--serve with a missing program: exit status"
assert_contains "$HH_ERR" "not found or not executable" "--serve with a missing program: message"
hh_cli work -r "$REDIS_URL" --serve-pool 0 --serve "Ok=$HH_HANDLERS/serve_test.py"
assert_eq "$HH_RC" 2 "--serve-pool 0: exit status"
pass
