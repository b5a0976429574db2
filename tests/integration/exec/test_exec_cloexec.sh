#!/usr/bin/env bash
# Every descriptor the worker opens is close-on-exec: an --exec handler's program sees only its
# stdin, stdout and stderr (plus what it opens itself), not the worker's Redis connections, its
# -l log file or its --http listen socket; and every descriptor the worker itself holds, an
# accepted HTTP connection included, has O_CLOEXEC set (/proc/<pid>/fdinfo). And a handler's background child does not keep any of
# the worker's Redis connections open once the worker is killed with SIGKILL.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start
export FDS_DIR; FDS_DIR="$(hh_tmp)"
logfile="$HH_TMP/worker-file.log"
http_port="$(hh_pick_free_port)"

push() {   # CLASS -> jid
    local jid; jid="$(hh_jid)"
    R lpush queue:default "{\"retry\":false,\"queue\":\"default\",\"class\":\"$1\",\"args\":[],\"jid\":\"$jid\",\"created_at\":$(hh_now),\"enqueued_at\":$(hh_now)}" >/dev/null
    R sadd queues default >/dev/null
    echo "$jid"
}

hh_start_worker -c 4 -l "$logfile" --http "$http_port" \
    --exec "Fds=$HH_HANDLERS/list_fds.sh" --exec "Bg=$HH_HANDLERS/bg_sleep.sh"
hh_worker_wait_ready
# a few jobs, so that every thread's connections exist when one runs
jids=()
for _ in 1 2 3 4 5 6; do jids+=("$(push Fds)"); done
for j in "${jids[@]}"; do
    must_wait 20 "[ -s '$FDS_DIR/$j' ]" "handler for $j did not run within 20 s"
done
for j in "${jids[@]}"; do
    listing="$(cat "$FDS_DIR/$j")"
    fds="$(printf '%s\n' "$listing" | awk '$(NF-1) == "->" { print $(NF-2) }' | sort -n | tr '\n' ' ')"
    # 0 stdin (job pipe), 1 stdout (the listing file), 2 stderr (pipe), 3 ls's /proc/self/fd
    assert_eq "$fds" "0 1 2 3 " "descriptors an --exec handler inherits (listing: $listing)"
    assert_not_contains "$listing" "socket:" "a handler inherited a socket"
    assert_not_contains "$listing" "worker-file.log" "a handler inherited the -l log file"
done

# Every descriptor the worker opened (not those it inherited from this shell) is close-on-exec,
# checked in the worker itself while an HTTP connection is open.
sockets() { ls -l "/proc/$WORKER_PID/fd" 2>/dev/null | grep -c 'socket:'; }
before="$(sockets)"
exec 7<>"/dev/tcp/127.0.0.1/$http_port"
must_wait 10 '[ "$(sockets)" -gt "$before" ]' "the worker did not accept an HTTP connection"
bad=""
for f in /proc/"$WORKER_PID"/fd/*; do
    fd="${f##*/}"
    [ "$fd" -le 2 ] && continue
    target="$(readlink "$f")" || continue
    ls -l /proc/$$/fd 2>/dev/null | grep -qF -- "-> $target" && continue   # inherited from here
    flags="$(awk '/^flags:/ { print $2 }' "/proc/$WORKER_PID/fdinfo/$fd" 2>/dev/null)"
    [ -n "$flags" ] || continue
    (( (8#$flags & 8#2000000) )) || bad="$bad $fd($target)"
done
exec 7>&-
[ -z "$bad" ] || fail "descriptors of the worker without close-on-exec:$bad"

# A background child of a handler outlives it; once the worker is killed, no Redis connection
# may stay open through that child.
push Bg >/dev/null
must_wait 20 "[ -s '$FDS_DIR/bg' ]" "Bg handler did not run within 20 s"
bgpid="$(tail -1 "$HH_PIDFILE")"
assert_alive "$bgpid" "the handler's background sleep"
clients() { R client list | grep -vc 'cmd=client'; }
[ "$(clients)" -ge 1 ] || fail "the worker holds no Redis connection?"
kill -9 "$WORKER_PID"
if ! wait_until 10 '[ "$(clients)" -eq 0 ]'; then
    fail "$(clients) Redis connections still open 10 s after kill -9 of the worker, while its handler's background child (pid $bgpid) lives: $(R client list)"
fi
assert_alive "$bgpid" "the handler's background sleep (the test needs it alive)"
pass
