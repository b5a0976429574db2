#!/usr/bin/env python3
# A --serve handler for the tests (hiredhand's line protocol, version 1). Writes what it sees into
# files under $SERVE_DIR: "ran" gets "pid jid class queue retry_count" per job. Behaviour by class:
#   Ok       succeeds                   Fail   fails: Custom::Error, message, backtrace
#   Crash    exits 7 mid-job on its first run (retry_count null), succeeds on a retry
#   Garbage  answers "this is not json" on its first run, succeeds on a retry
#   Sleep    sleeps args[0] s, or Active Job's arguments[0] ("sleeping pid", "slept pid" lines in
#            $SERVE_DIR/sleep)
#   Gate     holds until args[0] Gate jobs run at once ($SERVE_DIR/gate.<pid> files), 20 s at most;
#            notes "DOUBLE" in $SERVE_DIR/double if another job line is waiting on its stdin, and
#            "pid most-seen-at-once" in $SERVE_DIR/gate
#   Noisy    writes two stderr lines, succeeds
#   ExitAfter  answers ok, then exits 0 0.3 s later without reading another line
#   FailBare answers {"ok":false}       TwoLines  answers two ok lines at once
#   OddFail  fails with a number as error_class, a list as error_message, a number in backtrace
#   Huge     answers a line of 17 MiB
#   Chatty   answers ok, then once $SERVE_DIR/chatty.go exists (its job done; 20 s at most)
#            writes 128 KiB of "chatty line N" lines to stdout (out of protocol, more than a pipe
#            holds) and notes "pid" in $SERVE_DIR/chatty once they are written
# As the process of --serve NoHello it writes "no hello: missing config" and a blank line to
# stderr and exits 1 before its hello; of --serve BadHello it says
# {"hiredhand":2}. "started" gets "pid HIREDHAND_CLASS HIREDHAND_SERVE" per process.
# Any other class succeeds (the catch-all tests read the class from "ran").
import json, os, select, sys, time

D = os.environ["SERVE_DIR"]
pid = os.getpid()

def note(name, text):
    with open(os.path.join(D, name), "a") as f:
        f.write(text + "\n")

def answer(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()

note("started", "%d %s %s" % (pid, os.environ.get("HIREDHAND_CLASS", ""), os.environ.get("HIREDHAND_SERVE", "-")))
if os.environ.get("HIREDHAND_CLASS") == "NoHello":
    sys.stderr.write("no hello: missing config\n\n")
    sys.stderr.flush()
    os._exit(1)
answer({"hiredhand": 2 if os.environ.get("HIREDHAND_CLASS") == "BadHello" else 1})
while True:
    line = sys.stdin.readline()
    if not line:
        break
    msg = json.loads(line)
    k, job, rc = msg["class"], msg["job"], msg["retry_count"]
    note("ran", "%d %s %s %s %s" % (pid, msg["jid"], k, msg["queue"], "-" if rc is None else rc))
    note("lines", line.strip())
    if k == "Fail":
        answer({"ok": False, "error_class": "Custom::Error", "error_message": "failed: %s" % job["args"][0],
                "backtrace": ["handler.py:10:in `perform'", "handler.py:2:in `main'"]})
        continue
    if k == "ExitAfter":
        answer({"ok": True})
        time.sleep(0.3)  # the next job line comes meanwhile, and stays unread
        os._exit(0)
    if k == "FailBare":
        answer({"ok": False})
        continue
    if k == "OddFail":
        answer({"ok": False, "error_class": 42, "error_message": ["a", {"b": 1}], "backtrace": ["x.py:1", 7]})
        continue
    if k == "Huge":
        answer({"ok": False, "error_message": "x" * (17 << 20)})
        continue
    if k == "Chatty":
        answer({"ok": True})
        until = time.time() + 20
        while not os.path.exists(os.path.join(D, "chatty.go")) and time.time() < until:
            time.sleep(0.02)
        for n in range(8192):
            sys.stdout.write("chatty line %05d\n" % n)
        sys.stdout.flush()
        note("chatty", "%d" % pid)
        continue
    if k == "TwoLines":
        sys.stdout.write('{"ok":true}\n{"ok":true}\n')
        sys.stdout.flush()
        continue
    if k == "Crash" and rc is None:
        sys.stderr.write("about to crash\n")
        sys.stderr.flush()
        os._exit(7)
    if k == "Garbage" and rc is None:
        sys.stdout.write("this is not json\n")
        sys.stdout.flush()
        continue
    if k == "Sleep":
        note("sleep", "sleeping %d" % pid)
        a = job["args"][0]  # an Active Job payload: its first argument
        time.sleep(float(a["arguments"][0] if isinstance(a, dict) else a))
        note("sleep", "slept %d" % pid)
    if k == "Gate":
        gate = os.path.join(D, "gate.%d" % pid)
        open(gate, "w").close()
        until, seen = time.time() + 20, 0
        while time.time() < until:
            if select.select([sys.stdin], [], [], 0)[0]:
                note("double", "DOUBLE %d" % pid)
            seen = max(seen, len([f for f in os.listdir(D) if f.startswith("gate.")]))
            if seen >= int(job["args"][0]):
                break
            time.sleep(0.05)
        note("gate", "%d %d" % (pid, seen))
        time.sleep(0.3)  # the others see the full count too
        os.unlink(gate)
    if k == "Noisy":
        sys.stderr.write("noisy line one\nnoisy line two\n")
        sys.stderr.flush()
    answer({"ok": True})
