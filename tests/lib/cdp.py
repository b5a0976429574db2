#!/usr/bin/env python3
# tests/lib/cdp.py -- drive a headless chromium in real time through the
# DevTools protocol over --remote-debugging-pipe (the browser reads NUL-
# terminated JSON messages on its fd 3 and writes them on its fd 4): no
# websocket, no package beyond python3's json/os/subprocess. Used by
# hb_cdp_open / hb_cdp_eval / hb_cdp (tests/lib/heartbeat_helpers.sh).
#
#   cdp.py URL CHROMIUM [CHROMIUM ARGS...]
#
# Starts chromium (the pipe flag added), opens URL in its page, then reads
# one JSON command a line on stdin and answers one JSON line on stdout:
#   {"sleep": S}                          wait S real seconds -> {"ok": true}
#   {"expr": JS}                          evaluate JS (a promise is awaited)
#                                         -> {"ok": true, "value": V}
#   {"expr": JS, "until": true, "timeout": T}
#                                         evaluate every 0.25 s until V is truthy,
#                                         at most T s -> {"ok": false, "value": last}
#                                         when it never was
#   {"click": JS, "timeout": T}          JS names an element (evaluated every 0.25 s
#                                         until it does, at most T s): scrolled into
#                                         view, then a real left click at its centre
#                                         (Input.dispatchMouseEvent: hit-tested as a
#                                         user's, so a covered or hidden element is
#                                         not clicked) -> {"ok": true, "value": tag}
# An exception in JS gives {"ok": false, "error": text}. End of stdin
# closes the browser.
import json
import os
import subprocess
import sys
import time


class Browser:
    def __init__(self, argv):
        to_child_r, self.wfd = os.pipe()
        self.rfd, from_child_w = os.pipe()

        def fds():  # the child's fds 3 and 4; moved high first so dup2 cannot clobber
            a, b = os.dup(to_child_r), os.dup(from_child_w)
            a, b = os.dup2(a, 100), os.dup2(b, 101)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(argv + ["--remote-debugging-pipe"], preexec_fn=fds,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, close_fds=False)
        os.close(to_child_r)
        os.close(from_child_w)
        self.buf = b""
        self.next_id = 0
        self.session = None

    def send(self, method, params=None, session=True):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        data = json.dumps(msg).encode() + b"\0"
        while data:
            data = data[os.write(self.wfd, data):]
        while True:  # events and other answers are skipped
            reply = self.read()
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError("%s: %s" % (method, reply["error"]))
                return reply.get("result", {})

    def read(self):
        while b"\0" not in self.buf:
            chunk = os.read(self.rfd, 65536)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def open(self, url):
        deadline = time.time() + 30
        while True:
            pages = [t for t in self.send("Target.getTargets", session=False)["targetInfos"] if t["type"] == "page"]
            if pages:
                break
            if time.time() > deadline:
                raise RuntimeError("no page target")
            time.sleep(0.1)
        self.session = self.send("Target.attachToTarget", {"targetId": pages[0]["targetId"], "flatten": True},
                                 session=False)["sessionId"]
        self.send("Page.enable")
        self.send("Page.navigate", {"url": url})

    def evaluate(self, expr):
        r = self.send("Runtime.evaluate", {"expression": expr, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in r:
            d = r["exceptionDetails"]
            return False, (d.get("exception") or {}).get("description") or d.get("text")
        return True, r.get("result", {}).get("value")

    def click(self, expr, timeout):
        # the element's centre in viewport coordinates, once it exists and has a box
        where = ("(function () { var e = (%s); if (!e) return null; e.scrollIntoView({block: 'center'});"
                 " var r = e.getBoundingClientRect(); if (!r.width || !r.height) return null;"
                 " return [r.left + r.width / 2, r.top + r.height / 2, e.tagName]; })()" % expr)
        deadline = time.time() + timeout
        while True:
            ok, v = self.evaluate(where)
            if ok and v:
                break
            if time.time() > deadline:
                return False, v if not ok else "no such element: " + expr
            time.sleep(0.25)
        x, y, tag = v
        self.send("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})
        for t in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", {"type": t, "x": x, "y": y, "button": "left", "clickCount": 1})
        return True, tag


def main():
    url, argv = sys.argv[1], sys.argv[2:]
    b = Browser(argv)
    try:
        b.open(url)
        for line in sys.stdin:
            cmd = json.loads(line)
            if "sleep" in cmd:
                time.sleep(float(cmd["sleep"]))
                out = {"ok": True}
            elif "click" in cmd:
                ok, v = b.click(cmd["click"], float(cmd.get("timeout", 0)))
                out = {"ok": True, "value": v} if ok else {"ok": False, "error": v}
            else:
                deadline = time.time() + float(cmd.get("timeout", 0))
                while True:
                    ok, v = b.evaluate(cmd["expr"])
                    if not ok:
                        out = {"ok": False, "error": v}
                        if not cmd.get("until") or time.time() > deadline:
                            break
                    elif not cmd.get("until") or v:
                        out = {"ok": True, "value": v}
                        break
                    elif time.time() > deadline:
                        out = {"ok": False, "value": v}
                        break
                    time.sleep(0.25)
            sys.stdout.write(json.dumps(out) + "\n")
            sys.stdout.flush()
    finally:
        b.proc.terminate()
        try:
            b.proc.wait(10)
        except subprocess.TimeoutExpired:
            b.proc.kill()


if __name__ == "__main__":
    main()
