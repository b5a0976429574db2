#!/usr/bin/env bash
# `hiredhand top`: with a worker running jobs and a few queues,
#   - in a pseudo-terminal it draws a frame with the queue names, their sizes and the process's
#     identity and tag, in raw mode (no echo, no line buffering); `q` quits it with status 0 and
#     the terminal is restored (cooked mode with echo, main screen back); so does Ctrl-C;
#   - with stdout not a terminal it prints plain text with no escape sequence at all, one frame,
#     or --count N frames;
#   - --json prints one snapshot that parses, with rates, queues and processes, its reals with at
#     most 15 significant digits (no binary noise such as 5.2750500000000002); jobs run between
#     two snapshots show as processed/s over the window of beats the snapshot names (its
#     steadiness under load is test_top_rates');
#   - at a terminal a resize (SIGWINCH) redraws at once, not at the next tick;
#   - a queue named with an escape sequence (an OSC that would retitle the terminal) is shown
#     escaped as \x1b...\x07, never sent raw, at a terminal and elsewhere.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start
command -v python3 >/dev/null || fail "python3 is needed for the pseudo-terminal"

now="$(hh_now)"
job() { printf '{"retry":false,"queue":"%s","class":"Parked","args":[],"jid":"%s","created_at":%s,"enqueued_at":%s}' "$1" "$(hh_jid)" "$now" "$now"; }
for i in 1 2 3; do R lpush queue:alpha "$(job alpha)" >/dev/null; done
for i in 1 2 3 4 5 6 7; do R lpush queue:bravo "$(job bravo)" >/dev/null; done
evil=$'evil\e]0;pwned\a-q'
R lpush "queue:$evil" "$(job x)" >/dev/null
R sadd queues alpha bravo "$evil" >/dev/null

# The worker runs one slow job (busy 1 of 2) and a few fast ones (processed) from its own queue;
# alpha, bravo and the evil queue are not its, so their sizes stay put.
R sadd queues work >/dev/null
R lpush queue:work "$(printf '{"retry":false,"queue":"work","class":"SlowJob","args":[],"jid":"%s","created_at":%s,"enqueued_at":%s}' "$(hh_jid)" "$now" "$now")" >/dev/null
for i in 1 2 3; do
    R lpush queue:work "$(printf '{"retry":false,"queue":"work","class":"OkJob","args":[],"jid":"%s","created_at":%s,"enqueued_at":%s}' "$(hh_jid)" "$now" "$now")" >/dev/null
done
hh_start_worker -c 2 -q work --tag toptag --heartbeat-interval 1 --exec "SlowJob=$HH_HANDLERS/sleep.sh 60" --exec "OkJob=$HH_HANDLERS/record.sh"
hh_worker_wait_ready
must_wait 20 '[ "$(R get stat:processed)" = 3 ]' "the fast jobs did not run"
ident="$(R smembers processes)"
must_wait 20 '[ "$(R hget "$ident" busy)" = 1 ]' "the slow job is not shown busy"

# ---- not a terminal: plain text, no escape sequences
hh_cli top -r "$REDIS_URL" --interval 0.2
assert_eq "$HH_RC" 0 "top to a pipe exits 0 (stderr: $HH_ERR)"
assert_contains "$HH_OUT" "QUEUE" "the queue table"
assert_eq "$(printf '%s\n' "$HH_OUT" | grep -cE '^alpha +3 ')" 1 "alpha with its size 3 in [$HH_OUT]"
assert_eq "$(printf '%s\n' "$HH_OUT" | grep -cE '^bravo +7 ')" 1 "bravo with its size 7 in [$HH_OUT]"
assert_contains "$HH_OUT" "$ident" "the process identity"
assert_contains "$HH_OUT" "toptag" "the process tag"
assert_contains "$HH_OUT" "1/2" "busy threads of the process"
assert_contains "$HH_OUT" 'evil\x1b]0;pwned\x07-q' "the hostile queue name, escaped"
[ "$(printf '%s' "$HH_OUT" | tr -cd '\033\007' | wc -c)" = 0 ] || fail "escape or bell bytes in plain output"
assert_eq "$(printf '%s\n' "$HH_OUT" | grep -c '^hiredhand top')" 1 "one frame by default"

hh_cli top -r "$REDIS_URL" --interval 0.2 --count 3
assert_eq "$HH_RC" 0 "top --count 3 exits 0"
assert_eq "$(printf '%s\n' "$HH_OUT" | grep -c '^hiredhand top')" 3 "three frames with --count 3"

# ---- --json: one snapshot that parses
hh_cli top -r "$REDIS_URL" --json --interval 0.2
assert_eq "$HH_RC" 0 "top --json exits 0"
printf '%s' "$HH_OUT" > "$HH_TMP/top.json"
check="$(IDENT="$ident" EVIL="$evil" python3 - "$HH_TMP/top.json" <<'EOF'
import json, os, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 1, "one snapshot, one line: %r" % lines
o = json.loads(lines[0])
q = {x["name"]: x["size"] for x in o["queues"]}
assert q.get("alpha") == 3 and q.get("bravo") == 7 and q.get(os.environ["EVIL"]) == 1, q
assert o["processed"] == 3, o["processed"]
assert isinstance(o["processed_per_s"], float) and o["processed_per_s"] >= 0, o["processed_per_s"]
assert isinstance(o["failed_per_s"], float), o["failed_per_s"]
p = [x for x in o["processes"] if x["identity"] == os.environ["IDENT"]]
assert p and p[0]["tag"] == "toptag" and p[0]["busy"] == 1 and p[0]["concurrency"] == 2, o["processes"]
# reals as people read them: at most 15 significant digits (time, window, rates, latencies,
# beats), never a double's binary noise (a latency of 5.27505 as 5.2750500000000002)
import re
for tok in re.findall(r'(?<=[:\[,])-?[0-9][0-9.eE+-]*(?=[,}\]])', lines[0]):
    if "." in tok or "e" in tok or "E" in tok:
        digits = re.sub(r'[eE].*$', '', tok).replace("-", "").replace(".", "").lstrip("0")
        assert len(digits) <= 15, "real %s has %d significant digits in %s" % (tok, len(digits), lines[0])
print("ok")
EOF
)"
assert_eq "$check" ok "top --json snapshot"

# ---- a pseudo-terminal: one frame, raw mode, q (or Ctrl-C) quits and restores the terminal
cat > "$HH_TMP/top_term.py" <<'EOF'
import os, pty, sys, termios, time, select, fcntl, struct
key = sys.argv[1].encode().decode("unicode_escape").encode()
want = [w.encode() for w in sys.argv[2:]]
pid, fd = pty.fork()
if pid == 0:
    os.execv(os.environ["HIREDHAND"], [os.environ["HIREDHAND"], "top", "-r", os.environ["REDIS_URL"], "--interval", os.environ.get("TOP_INTERVAL", "0.3")])
fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
out = b""
def pump(t):
    global out
    r, _, _ = select.select([fd], [], [], t)
    if r:
        try:
            out += os.read(fd, 65536)
        except OSError:
            return False
    return True
deadline = time.time() + 30
while time.time() < deadline and not all(w in out for w in want):
    pump(0.2)
missing = [w for w in want if w not in out]
if missing:
    print("missing %r in %r" % (missing, out[-3000:])); os.kill(pid, 9); sys.exit(1)
lflag = termios.tcgetattr(fd)[3]
if lflag & (termios.ICANON | termios.ECHO):
    print("not in raw mode while running"); os.kill(pid, 9); sys.exit(1)
if os.environ.get("RESIZE"):
    # After the frame with rates (the second), the timer is 30 s away: a redraw
    # within 10 s of a resize is the SIGWINCH one.
    deadline = time.time() + 20
    while time.time() < deadline and b"/s)" not in out:
        pump(0.2)
    mark = len(out)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    deadline = time.time() + 10
    while time.time() < deadline and b"\x1b[H" not in out[mark:]:
        pump(0.2)
    if b"\x1b[H" not in out[mark:]:
        print("no redraw on SIGWINCH"); os.kill(pid, 9); sys.exit(1)
os.write(fd, key)
deadline = time.time() + 15
status = None
while time.time() < deadline:
    wp, st = os.waitpid(pid, os.WNOHANG)
    if wp:
        status = st; break
    pump(0.1)
if status is None:
    print("did not quit on %r" % key); os.kill(pid, 9); sys.exit(1)
while pump(0.05) and select.select([fd], [], [], 0)[0]:
    pass
lflag = termios.tcgetattr(fd)[3]
res = []
if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0: res.append("exit status %r" % status)
if not (lflag & termios.ICANON and lflag & termios.ECHO): res.append("terminal not restored (lflag %o)" % lflag)
if b"\x1b[?1049l" not in out: res.append("main screen not restored")
if b"\x1b]0;pwned" in out: res.append("the hostile name reached the terminal raw")
open(os.environ["HH_TMP"] + "/pty.out", "wb").write(out)
print("; ".join(res) if res else "ok")
EOF
r="$(REDIS_URL="$REDIS_URL" HH_TMP="$HH_TMP" timeout -k 2 60 python3 "$HH_TMP/top_term.py" q alpha bravo "$ident" toptag 'evil\x1b]0;pwned\x07-q')"
assert_eq "$r" ok "top in a pseudo-terminal, quit with q"
assert_contains "$(cat "$HH_TMP/pty.out")" "Processed 3" "the counters at the terminal"
r="$(REDIS_URL="$REDIS_URL" HH_TMP="$HH_TMP" timeout -k 2 60 python3 "$HH_TMP/top_term.py" '\x03' alpha "$ident")"
assert_eq "$r" ok "top in a pseudo-terminal, quit with Ctrl-C"

r="$(RESIZE=1 TOP_INTERVAL=30 REDIS_URL="$REDIS_URL" HH_TMP="$HH_TMP" timeout -k 2 60 python3 "$HH_TMP/top_term.py" q alpha "$ident")"
assert_eq "$r" ok "top in a pseudo-terminal redraws on a resize"

# ---- rates: jobs run between two snapshots show as processed/s over that interval
r="$(R="redis-cli -h 127.0.0.1 -p $REDIS_PORT" timeout -k 2 60 python3 - "$HIREDHAND" "$REDIS_URL" <<'EOF'
import json, subprocess, sys, time, os
p = subprocess.Popen([sys.argv[1], "top", "-r", sys.argv[2], "--json", "--count", "2", "--interval", "8"],
                     stdout=subprocess.PIPE, text=True)
a = json.loads(p.stdout.readline())
now = time.time()
for i in range(4):
    job = '{"retry":false,"queue":"work","class":"OkJob","args":[],"jid":"%024x","created_at":%f,"enqueued_at":%f}' % (i + 1, now, now)
    subprocess.run(os.environ["R"].split() + ["lpush", "queue:work", job], check=True, stdout=subprocess.DEVNULL)
b = json.loads(p.stdout.readline())
p.wait()
# measured between the beats that flushed the counters, over the window (10 s, or the interval
# when longer), not between the two reads
want = (b["processed"] - a["processed"]) / b["window"]
ok = b["processed"] - a["processed"] == 4 and b["processed_per_s"] > 0 and abs(b["processed_per_s"] - want) < 0.05 * want
print("ok" if ok and p.returncode == 0 else "got %r then %r" % (a, b))
EOF
)"
assert_eq "$r" ok "processed/s over the interval"

hh_cli top -r "$REDIS_URL" --interval 0
assert_eq "$HH_RC" 2 "a bad --interval is a usage error"
pass
