#!/usr/bin/env python3
# A --serve handler in Python (standard library only): hiredhand's line
# protocol, version 1. Replace perform() with your jobs; raise to fail one.
import json, sys, traceback

def perform(msg):
    job = msg["job"]                      # the payload as stored in Redis
    if msg["class"] == "FailJob":
        raise ValueError("failed on purpose: %r" % (job["args"],))
    if msg["class"] == "CrashJob":
        sys.exit(3)                       # hiredhand fails the job and starts another process

def answer(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()

answer({"hiredhand": 1})
for line in sys.stdin:
    try:
        perform(json.loads(line))
        answer({"ok": True})
    except Exception as e:
        answer({"ok": False, "error_class": type(e).__name__, "error_message": str(e),
                "backtrace": traceback.format_exc().splitlines()})
