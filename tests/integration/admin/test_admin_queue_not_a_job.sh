#!/usr/bin/env bash
# queues show marks an entry that is no job (not JSON, or a JSON array) as
# retries list marks one, "(not a job: N bytes)", not a blank row; --json
# gives its text as "payload" and "valid": false. A job whose integers are
# beyond 64 bits is a job: its class shows.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start
R sadd queues q >/dev/null
R lpush queue:q '{"class":"K","args":[],"jid":"j1"}' '[1,2]' 'notjson' \
    '{"class":"B","args":[123456789012345678901234567890],"jid":"j2"}' >/dev/null
hh_cli queues show q
assert_eq "$HH_RC" 0 "queues show (stderr: $HH_ERR)"
assert_eq "$(printf '%s\n' "$HH_OUT" | sed -n 2,5p | tr -s ' ' | sed 's/ *$//')" \
    "$(printf '0 j1 K -\n1 (not a job: 5 bytes) -\n2 (not a job: 7 bytes) -\n3 j2 B -')" \
    "rows: the jobs' classes, the others marked"
hh_cli queues show q --json
assert_eq "$(printf '%s' "$HH_OUT" | ruby -rjson -e 'JSON.parse($stdin.read)["jobs"].each { |j| puts "#{j["jid"]}|#{j["valid"].inspect}|#{j["payload"]}" }')" \
    "$(printf 'j1|nil|\n|false|[1,2]\n|false|notjson\nj2|nil|{"class":"B","args":[123456789012345678901234567890],"jid":"j2"}')" \
    "--json: valid false for the entries that are no job"
pass
