#!/usr/bin/env bash
# Cron expressions read as fugit (sidekiq-cron's parser) reads them: fugit regenerates the table of
# ticks and refusals (tests/ruby/cron_fugit_table.rb: every supported form, several zones,
# daylight-saving days, expressions without a zone under a process TZ such as Europe/Berlin), the
# result must equal the committed fixture when both were made with the same tz database (a
# drift of fugit is caught), and the C parser, run by
# the unit test binary on the fresh table, must give fugit's answer for every row.
# The logic is pinned without Ruby by tests/unit/test_cron_expr.c (on the committed fixture).
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_peers
driver="$(dirname "$HIREDHAND")/tests/test_cron_expr"
[ -x "$driver" ] || fail "unit test binary not found: $driver (build with -DHH_TESTS=ON)"

fresh="$HH_TMP/cron_fugit.tsv"
hh_peer_ruby 73-gems cron_fugit_table.rb >"$fresh" || fail "fugit's table could not be generated"
# A drift of fugit shows as a diff; so does a new tz database (a zone's
# future rules change), named on the table's first line: then the fixture
# is only stale, and the C parser is checked against the fresh table.
if [ "$(head -1 "$fresh")" = "$(head -1 "$HH_TESTS_DIR/fixtures/cron_fugit.tsv")" ]; then
    diff -u "$HH_TESTS_DIR/fixtures/cron_fugit.tsv" "$fresh" >"$HH_TMP/drift.diff" \
        || fail "fugit answers otherwise than the committed fixture: $(head -c 2000 "$HH_TMP/drift.diff")"
else
    hh_log "the fixture was made with $(head -1 "$HH_TESTS_DIR/fixtures/cron_fugit.tsv"), this machine has $(head -1 "$fresh"): regenerate it (see tests/ruby/cron_fugit_table.rb)"
fi
"$driver" "$fresh" >"$HH_TMP/driver.log" 2>&1 || fail "the C parser disagrees with fugit: $(tail -c 2000 "$HH_TMP/driver.log")"
hh_log "fugit and src/cron_expr.c agree on $(grep -c '^tick' "$fresh") ticks"
pass
