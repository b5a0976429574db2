# shellcheck shell=bash
# tests/lib/cron_helpers.sh -- checks shared by the periodic-job tests.
#
#   cron_check_once HASHKEY QUEUE   every tick guarded in HASHKEY:enqueued is a distinct
#                                   instant (members written with other bytes for one tick
#                                   would both win), and QUEUE holds exactly one job per
#                                   guarded tick but the one sidekiq-cron's save guards;
#                                   prints the number of jobs pushed
cron_check_once() {
    local hk="$1" q="$2" members n distinct pushed
    members="$(R ZRANGE "$hk:enqueued" 0 -1)"
    n=$(printf '%s\n' "$members" | grep -c .)
    distinct=$(printf '%s\n' "$members" | while read -r m; do date -u -d "$m" +%s; done | sort -u | grep -c .)
    assert_eq "$distinct" "$n" "guard members of $hk are distinct ticks (members: $(echo $members))"
    pushed=$(R LLEN "queue:$q")
    assert_eq "$pushed" "$((n - 1))" "one job per guarded tick in queue:$q (guard members: $(echo $members))"
    echo "$pushed"
}
