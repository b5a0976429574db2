#!/usr/bin/env bash
# /metrics beyond the snapshot (`hiredhand work --http PORT`):
#   - per-class counters: jobs of two classes (one failing) run, and
#     hiredhand_class_jobs_processed_total / _failed_total{class=...} count them exactly;
#   - hiredhand_job_duration_seconds is a histogram per class: its buckets are cumulative
#     and monotonic in le, end with le="+Inf", and _count equals the +Inf bucket and the
#     class's processed count;
#   - hiredhand_set_size{set="retry|schedule|dead",scope="cluster"} matches ZCARD of the
#     sets, and queue sizes carry scope="cluster" too;
#   - the process_* metrics are there with sane values;
#   - the whole page parses as Prometheus text 0.0.4: every line is a sample, HELP or TYPE
#     line, each family has one TYPE line, before its samples (promtool check metrics too,
#     when promtool is installed).
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
command -v curl >/dev/null || fail "curl is not installed (apt-get install curl)"
command -v jq >/dev/null || fail "jq is not installed (apt-get install jq)"
command -v python3 >/dev/null || fail "python3 is not installed"
hh_redis_start

# Sets seeded far in the future, so the scheduler leaves them alone during the test.
future="$(( $(date +%s) + 86400 ))"
for i in 1 2 3 4; do R zadd retry "$future" "{\"class\":\"RetryJob\",\"jid\":\"r$i\",\"args\":[]}" >/dev/null; done
for i in 1 2; do R zadd schedule "$future" "{\"class\":\"LaterJob\",\"jid\":\"s$i\",\"args\":[]}" >/dev/null; done
for i in 1 2 3 4 5 6 7; do R zadd dead "$future" "{\"class\":\"DeadJob\",\"jid\":\"d$i\",\"args\":[]}" >/dev/null; done

port="$(hh_pick_free_port)"
base="http://127.0.0.1:$port"
hh_start_worker -c 2 --heartbeat-interval 1 --http "$port" \
    --exec "OkJob=$HH_HANDLERS/record.sh" --exec "FailJob=$HH_HANDLERS/fail.sh"
must_wait 10 '[ "$(curl -s -o /dev/null -w "%{http_code}" --max-time 3 "$base/healthz")" = 200 ]' \
    "/healthz did not answer 200 within 10 s of start"

for i in 1 2 3 4 5; do
    hh_cli push OkJob "[$i]"
    assert_eq "$HH_RC" 0 "hiredhand push OkJob (stderr: $HH_ERR)"
done
for i in 1 2 3; do
    hh_cli push FailJob "[$i]" --retry false
    assert_eq "$HH_RC" 0 "hiredhand push FailJob (stderr: $HH_ERR)"
done
stat_field() { curl -s --max-time 3 "$base/stats" | jq -r "$1"; }
must_wait 30 '[ "$(stat_field .processed)" -ge 8 ]' "/stats processed did not reach 8: $(curl -s "$base/stats")"
assert_eq "$(stat_field .failed)" 3 "/stats failed"

# The set sizes are read at a beat: wait for one after the jobs ran.
scrape() { curl -s --max-time 5 "$base/metrics"; }
must_wait 10 'scrape | grep -q "^hiredhand_set_size{set=\"dead\",scope=\"cluster\"} "' \
    "/metrics shows no dead set size: $(scrape | grep set_size)"
metrics="$(scrape)"
printf '%s\n' "$metrics" >"$HH_TMP/metrics.txt"

# ------------------------------------------------------------------ the page parses
cat >"$HH_TMP/parse.py" <<'PY'
# Checks Prometheus text format 0.0.4 line by line; prints the samples as JSON.
import json, math, re, sys
name_re = r'[a-zA-Z_:][a-zA-Z0-9_:]*'
label_re = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"'
sample_re = re.compile(r'^(%s)(?:\{((?:%s)(?:,%s)*)?,?\})? (\S+)(?: -?[0-9]+)?$' % (name_re, label_re, label_re))
help_re = re.compile(r'^# HELP (%s) (.*)$' % name_re)
type_re = re.compile(r'^# TYPE (%s) (counter|gauge|histogram|summary|untyped)$' % name_re)
types, seen, samples, errors = {}, set(), [], []
def family(n):
    for suffix in ('_bucket', '_sum', '_count'):
        base = n[:-len(suffix)]
        if n.endswith(suffix) and types.get(base) in ('histogram', 'summary'):
            return base
    return n
text = open(sys.argv[1], encoding='utf-8').read()
if not text.endswith('\n'):
    errors.append('the page does not end with a newline')
for i, line in enumerate(text.split('\n')[:-1], 1):
    if line == '':
        continue
    if line.startswith('#'):
        m = type_re.match(line)
        if m:
            if m.group(1) in types:
                errors.append('line %d: a second TYPE for %s' % (i, m.group(1)))
            if m.group(1) in seen:
                errors.append('line %d: TYPE for %s after its samples' % (i, m.group(1)))
            types[m.group(1)] = m.group(2)
        elif not help_re.match(line):
            errors.append('line %d: a comment that is neither HELP nor TYPE: %r' % (i, line))
        continue
    m = sample_re.match(line)
    if not m:
        errors.append('line %d: not a sample: %r' % (i, line))
        continue
    n, labels, value = m.group(1), m.group(2) or '', m.group(3)
    try:
        v = float(value)
    except ValueError:
        errors.append('line %d: bad value %r' % (i, value))
        continue
    f = family(n)
    if f not in types:
        errors.append('line %d: %s has no TYPE line before it' % (i, n))
    seen.add(f)
    ls = {k: re.sub(r'\\(.)', lambda x: '\n' if x.group(1) == 'n' else x.group(1), v2)
          for k, v2 in re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', labels)}
    samples.append({'name': n, 'labels': ls, 'value': v})
# histograms: cumulative, monotonic buckets ending at +Inf, _count == +Inf bucket
for f, t in types.items():
    if t != 'histogram':
        continue
    series = {}
    for s in samples:
        if s['name'] == f + '_bucket':
            key = tuple(sorted((k, v) for k, v in s['labels'].items() if k != 'le'))
            series.setdefault(key, []).append((float(s['labels']['le']), s['value']))
    for key, buckets in series.items():
        les = [b[0] for b in buckets]
        if les != sorted(les) or len(set(les)) != len(les):
            errors.append('%s%s: le not increasing: %s' % (f, key, les))
        if not les or not math.isinf(les[-1]):
            errors.append('%s%s: no le="+Inf" bucket' % (f, key))
        counts = [b[1] for b in buckets]
        if any(b < a for a, b in zip(counts, counts[1:])):
            errors.append('%s%s: bucket counts not cumulative: %s' % (f, key, counts))
        cnt = [s['value'] for s in samples if s['name'] == f + '_count' and
               tuple(sorted(s['labels'].items())) == key]
        if cnt != [counts[-1]]:
            errors.append('%s%s: _count %s is not the +Inf bucket %s' % (f, key, cnt, counts[-1]))
if errors:
    print('\n'.join(errors), file=sys.stderr)
    sys.exit(1)
json.dump(samples, sys.stdout)
PY
python3 "$HH_TMP/parse.py" "$HH_TMP/metrics.txt" >"$HH_TMP/samples.json" 2>"$HH_TMP/parse.err" \
    || fail "/metrics does not parse: $(cat "$HH_TMP/parse.err")"
if command -v promtool >/dev/null; then
    promtool check metrics <"$HH_TMP/metrics.txt" >"$HH_TMP/promtool.out" 2>&1 \
        || fail "promtool check metrics: $(cat "$HH_TMP/promtool.out")"
else
    hh_log "promtool is not installed: checked with the parser above only"
fi

# v NAME [LABEL=VALUE...]: the sample's value, printed as an integer when it is one.
v() {
    local name="$1"; shift
    local sel=".name == \"$name\"" kv
    for kv in "$@"; do sel="$sel and .labels.${kv%%=*} == \"${kv#*=}\""; done
    jq -r "[.[] | select($sel) | .value] | if length == 1 then (.[0] | if . == floor then floor else . end) else \"none(\(length))\" end" \
        "$HH_TMP/samples.json"
}

# ------------------------------------------------------------------ per-class counters
assert_eq "$(v hiredhand_class_jobs_processed_total class=OkJob)" 5 "OkJob processed"
assert_eq "$(v hiredhand_class_jobs_failed_total class=OkJob)" 0 "OkJob failed"
assert_eq "$(v hiredhand_class_jobs_processed_total class=FailJob)" 3 "FailJob processed"
assert_eq "$(v hiredhand_class_jobs_failed_total class=FailJob)" 3 "FailJob failed"
assert_eq "$(v hiredhand_job_duration_seconds_count class=OkJob)" 5 "OkJob duration count"
assert_eq "$(v hiredhand_job_duration_seconds_count class=FailJob)" 3 "FailJob duration count"
assert_eq "$(v hiredhand_job_duration_seconds_bucket class=OkJob le=+Inf)" 5 "OkJob +Inf bucket"
les="$(jq -r '[.[] | select(.name == "hiredhand_job_duration_seconds_bucket" and .labels.class == "FailJob") | .labels.le] | join(" ")' "$HH_TMP/samples.json")"
assert_eq "$les" "0.005 0.01 0.025 0.05 0.1 0.25 0.5 1 2.5 5 10 30 60 +Inf" "FailJob's buckets"
sum_ok="$(v hiredhand_job_duration_seconds_sum class=OkJob)"
assert_between "$sum_ok" 0.000001 300 "OkJob duration sum (the handlers run a process each)"
classes="$(jq -r '[.[] | select(.name == "hiredhand_class_jobs_processed_total") | .labels.class] | sort | join(",")' "$HH_TMP/samples.json")"
assert_eq "$classes" "FailJob,OkJob" "only the classes that ran are counted"
# per class adds up to the process-wide counters
assert_eq "$(v hiredhand_jobs_processed_total)" 8 "process-wide processed"
assert_eq "$(v hiredhand_jobs_failed_total)" 3 "process-wide failed"

# ------------------------------------------------------------------ cluster-scoped sizes
for set in retry schedule dead; do
    assert_eq "$(v hiredhand_set_size set=$set scope=cluster)" "$(R zcard "$set")" "hiredhand_set_size{set=\"$set\"} is ZCARD $set"
done
assert_eq "$(R zcard dead)" 7 "the dead set holds what was seeded"
assert_eq "$(v hiredhand_queue_size queue=default scope=cluster)" "$(R llen queue:default)" "queue size carries scope=cluster"
assert_contains "$(grep '^# HELP hiredhand_set_size ' "$HH_TMP/metrics.txt")" "max()" "the set-size help says to use max()"

# ------------------------------------------------------------------ process metrics
pid="$WORKER_PID"
assert_between "$(v process_cpu_seconds_total)" 0 100000 "process_cpu_seconds_total"
rss="$(v process_resident_memory_bytes)"
rss_now="$(( $(awk '{print $2}' "/proc/$pid/statm") * $(getconf PAGESIZE) ))"
assert_between "$rss" "$(( rss_now / 2 ))" "$(( rss_now * 2 ))" "process_resident_memory_bytes is about statm's resident ($rss_now)"
assert_between "$(v process_virtual_memory_bytes)" "$rss" 1e15 "process_virtual_memory_bytes"
assert_between "$(v process_open_fds)" 3 "$(v process_max_fds)" "process_open_fds"
soft="$(awk '/^Max open files/ { print $4 }' "/proc/$pid/limits")"
[ "$soft" = unlimited ] && soft=+Inf
assert_eq "$(v process_max_fds)" "$soft" "process_max_fds is the soft RLIMIT_NOFILE"
started="$(v process_start_time_seconds)"
assert_between "$started" "$(( $(date +%s) - 600 ))" "$(( $(date +%s) + 1 ))" "process_start_time_seconds is when the worker started"

hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "the worker exits 0 after TERM"
pass
