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

print(json.dumps({"hiredhand": 1}), flush=True)
for line in sys.stdin:
    msg = json.loads(line)
    try:
        perform(msg)
        answer = {"ok": True}
    except Exception as e:
        answer = {"ok": False, "error_class": type(e).__name__, "error_message": str(e),
                  "backtrace": traceback.format_exc().splitlines()}
    print(json.dumps(answer), flush=True)
