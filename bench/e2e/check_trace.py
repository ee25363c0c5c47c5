#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""check_trace.py - checks Go execution traces with Go's own tools, for scripts/bench-e2e.

Usage: check_trace.py [--go GO] [-j N] TRACE...

For each trace, as test/support/go_oracle.cc does:
  1. `go tool trace -d TRACE` must succeed and print events;
  2. `go tool trace -http=127.0.0.1:0 TRACE` (BROWSER=/bin/true, own process
     group) must log "Trace viewer is listening on http://ADDR" (it parses and
     splits the whole trace first), then GET /, /goroutines, the first
     /goroutine?id= group, /jsontrace and /mmuPlot must each answer 200 with a
     body.
Prints one line per trace, "OK<TAB>trace<TAB>events" or "FAIL<TAB>trace<TAB>why",
and exits 0 (the lines are the verdict); 2 on bad usage.
"""
import argparse
import concurrent.futures
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

TIMEOUT = 300  # seconds, for each tool run, the server's start and each page
NOISE = ("Parsing trace...", "Splitting trace...", "Opening browser.")


def excerpt(text, lines=4):
    """The meaningful part of a tool's stderr: from a panic on, else the last lines."""
    kept = [l.rstrip() for l in text.splitlines() if l.strip() and not any(n in l for n in NOISE)]
    for i, l in enumerate(kept):
        if "panic" in l:
            return " | ".join(kept[i:i + 8])
    return " | ".join(kept[-lines:])


def tool_env():
    env = dict(os.environ)
    env["BROWSER"] = "/bin/true"  # never open a browser
    return env


def parse(go, path):
    """Returns (events, None) or (0, why)."""
    try:
        r = subprocess.run([go, "tool", "trace", "-d", path], stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=TIMEOUT,
                           env=tool_env())
    except subprocess.TimeoutExpired:
        return 0, "go tool trace -d: timed out after %d s" % TIMEOUT
    if r.returncode != 0:
        return 0, "go tool trace -d: exit status %d: %s" % (
            r.returncode, excerpt(r.stderr.decode(errors="replace")))
    events = sum(1 for l in r.stdout.splitlines() if l.strip())
    if events == 0:
        return 0, "go tool trace -d printed no events"
    return events, None


def web(go, path):
    """Returns None or why the web UI failed."""
    proc = subprocess.Popen([go, "tool", "trace", "-http=127.0.0.1:0", path],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, env=tool_env(), start_new_session=True)
    log = []
    found = threading.Event()
    addr = []

    def reader():  # drains the log for as long as the server runs
        for raw in proc.stdout:
            line = raw.decode(errors="replace")
            log.append(line)
            m = re.search(r"listening on http://([^/\s]+)", line)
            if m and not addr:
                addr.append(m.group(1))
                found.set()
        found.set()

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    try:
        if not found.wait(TIMEOUT) or not addr:
            state = "exited (status %s)" % proc.poll() if proc.poll() is not None else "timed out"
            return "go tool trace -http %s before listening: %s" % (state, excerpt("".join(log)))
        pages = ["/", "/goroutines", "/jsontrace", "/mmuPlot"]
        i = 0
        while i < len(pages):
            page = pages[i]
            try:
                with urllib.request.urlopen("http://%s%s" % (addr[0], page), timeout=TIMEOUT) as resp:
                    body = resp.read()
                    status = resp.status
            except urllib.error.HTTPError as e:
                body = e.read()[:200].decode(errors="replace")
                time.sleep(0.5)  # let a handler's panic reach the log
                return "GET %s: HTTP %d: %s %s" % (page, e.code, body.strip(), excerpt("".join(log)))
            except Exception as e:  # connection reset (a handler panic), timeout
                time.sleep(0.5)
                return "GET %s: %s %s" % (page, e, excerpt("".join(log)))
            if status != 200:
                return "GET %s: HTTP %d" % (page, status)
            if not body:
                return "GET %s: HTTP 200 with an empty body" % page
            if page == "/goroutines":
                m = re.search(rb"/goroutine\?id=[0-9]+", body)
                if not m:
                    return "GET /goroutines: no goroutine group listed"
                pages.insert(i + 1, m.group(0).decode())
            i += 1
        return None
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # go and the trace tool it runs
        except ProcessLookupError:
            pass
        proc.wait()
        t.join(5)


def check(go, path):
    if not os.path.isfile(path):
        return "FAIL\t%s\tno such file" % path
    events, why = parse(go, path)
    if why is None:
        why = web(go, path)
    if why is not None:
        return "FAIL\t%s\t%s" % (path, " ".join(why.split())[:600])
    return "OK\t%s\t%d" % (path, events)


def main():
    ap = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    ap.add_argument("--go", default=os.environ.get("GOTRACE_GO", "/usr/lib/go-1.19/bin/go"))
    ap.add_argument("-j", "--jobs", type=int, default=1)
    ap.add_argument("traces", nargs="+")
    args = ap.parse_args()
    if not os.access(args.go, os.X_OK):
        ap.error("%s is not executable" % args.go)
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        for line in pool.map(lambda p: check(args.go, p), args.traces):
            print(line, flush=True)


if __name__ == "__main__":
    sys.exit(main())
