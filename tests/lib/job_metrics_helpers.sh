# shellcheck shell=bash
# tests/lib/job_metrics_helpers.sh -- reading Sidekiq 7.x/8.x's execution metrics keys (the
# Metrics tab) from the shell. Source it AFTER tests/lib/harness.sh:
#     . "$(dirname "$0")/../../lib/harness.sh"
#     . "$(dirname "$0")/../../lib/job_metrics_helpers.sh"
#
#   JM7, JM8, JM8_ROLLUP      SCAN patterns of 7.x's minute hashes j|<YYYYMMDD>|<H>:<M>, 8.x's
#                             j|<YYMMDD>|<H>:<MM> and 8.x's ten-minute j|<YYMMDD>|<H>:<M0>
#   jm_fields PATTERN         every field of the hashes PATTERN matches, summed over them (a
#                             test's runs may straddle a minute), as sorted "FIELD=N" lines
#   jm_sum PATTERN FIELD      one of them (e.g. 'MyJob|p'), 0 when absent
#   jm_hist PATTERN BUCKET    u16 histogram counter #BUCKET summed over the bitfields PATTERN
#                             matches (7.x: 'MyJob-*', 8.x: 'h|MyJob-*')

JM7='j|20[0-9][0-9][0-9][0-9][0-9][0-9]|*'
JM8='j|[0-9][0-9][0-9][0-9][0-9][0-9]|*:[0-9][0-9]'
JM8_ROLLUP='j|[0-9][0-9][0-9][0-9][0-9][0-9]|*:[0-9]'

jm_fields() {
    local k
    for k in $(R --scan --pattern "$1"); do R hgetall "$k"; done |
        awk 'NR % 2 { f = $0; next } { s[f] += $0 } END { for (f in s) print f "=" s[f] }' | LC_ALL=C sort
}

jm_sum() { jm_fields "$1" | awk -F= -v f="$2" '$1 == f { v = $2 } END { print v + 0 }'; }

jm_hist() {
    local k v s=0
    for k in $(R --scan --pattern "$1"); do v=$(R bitfield "$k" get u16 "#$2"); s=$((s + ${v:-0})); done
    echo "$s"
}
