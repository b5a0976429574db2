#!/usr/bin/env bash
# The AT / NEXT RETRY column of a sorted set's entry: a score whose year has
# four digits is a date, one before 1970 included (-5 is 1969-12-31T23:59:55Z,
# not "-"); a score beyond (1e300, inf) is shown as the score, never as a
# date printed from garbage ("-219246529-57-01T08:29:52Z").
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start
for sc in 1e300 +inf -inf -5 0 -0.5 1767225600 -1e20; do
    R zadd retry "$sc" "{\"class\":\"K\",\"args\":[],\"jid\":\"s$sc\",\"queue\":\"default\"}" >/dev/null
done
R zadd schedule 1e300 '{"class":"K","args":[],"jid":"big","queue":"default"}' >/dev/null
hh_cli retries list
assert_eq "$HH_RC" 0 "retries list (stderr: $HH_ERR)"
assert_eq "$(printf '%s\n' "$HH_OUT" | sed 1d | awk '{ j = ($1 == "score") ? $3 : $2; a = ($1 == "score") ? $1 " " $2 : $1; print j "=" a }' | tr '\n' ' ')" \
    "s-inf=score -inf s-1e20=score -1e+20 s-5=1969-12-31T23:59:55Z s-0.5=1969-12-31T23:59:59Z s0=1970-01-01T00:00:00Z s1767225600=2026-01-01T00:00:00Z s1e300=score 1e+300 s+inf=score inf " \
    "each score as a date or as itself"
hh_cli scheduled list
assert_contains "$HH_OUT" "score 1e+300" "scheduled list: AT of an absurd score"
hh_cli retries show s-5
assert_contains "$HH_OUT" "at:            1969-12-31T23:59:55Z (score -5.000000)" "show: a negative score is a date"
hh_cli retries show s+inf
assert_contains "$HH_OUT" "at:            score inf" "show: inf as the score"
hh_cli retries list --json
assert_contains "$HH_OUT" '"at":"score 1e+300"' "--json: at"
hh_cli jobs find s-5
assert_eq "$HH_OUT" "retry, at 1969-12-31T23:59:55Z" "jobs find: a negative score is a date"
pass
