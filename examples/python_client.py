#!/usr/bin/env python3
"""A turnfold client in Python, standard library only.

It opens a session on a running `turnfold serve`, posts a backlog of background
process exits as a producer would, drains the session as its TUI poller would, and
prints the one turn that comes back on the session's stream.

    TURNFOLD_PRODUCER_TOKEN=... python3 examples/python_client.py http://127.0.0.1:8700
"""

import json
import os
import sys
import time
import urllib.error
import urllib.request
import uuid


def call(base, method, path, token, body=None):
    """One JSON request; returns the decoded answer, or exits naming the status."""
    data = None if body is None else json.dumps(body).encode("utf-8")
    request = urllib.request.Request(base + path, data=data, method=method)
    request.add_header("Authorization", "Bearer " + token)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read().decode("utf-8"))
    except urllib.error.HTTPError as error:
        detail = error.read().decode("utf-8", "replace")
        sys.exit(f"{method} {path} answered {error.code}: {detail}")


def first_turn(base, key, token, timeout=10.0):
    """Reads the session's Server-Sent Events until the first turn arrives."""
    request = urllib.request.Request(f"{base}/v1/sessions/{key}/turns")
    request.add_header("Authorization", "Bearer " + token)
    request.add_header("Accept", "text/event-stream")
    deadline = time.monotonic() + timeout
    with urllib.request.urlopen(request, timeout=timeout) as stream:
        data = []
        for raw in stream:
            line = raw.decode("utf-8").rstrip("\n")
            if line.startswith("data:"):
                data.append(line[5:].lstrip())
            elif line == "" and data:
                return json.loads("\n".join(data))
            if time.monotonic() > deadline:
                break
    sys.exit("no turn arrived in time")


def main():
    base = (sys.argv[1] if len(sys.argv) > 1 else os.environ.get("TURNFOLD_URL", "http://127.0.0.1:8700")).rstrip("/")
    producer = os.environ.get("TURNFOLD_PRODUCER_TOKEN")
    if not producer:
        sys.exit("set TURNFOLD_PRODUCER_TOKEN to the server's producer token")

    key = "py-" + uuid.uuid4().hex[:12]
    session = call(base, "POST", "/v1/sessions", producer, {"session": key, "surface": "tui"})
    token = session["token"]

    now = int(time.time() * 1000)
    backlog = []
    for i in range(1, 6):
        backlog.append({
            "type": "process.exited", "at": now + i, "process": f"{key}-job{i}", "owner": key,
            "command": f"make shard-{i}", "exitCode": 1 if i == 3 else 0, "reason": "exited",
            "output": f"shard {i}: {'2 tests failed' if i == 3 else 'all tests passed'}",
        })
    call(base, "POST", "/v1/events", producer, backlog)
    call(base, "POST", f"/v1/sessions/{key}/drain", token, {"consumer": "tui-poller"})

    turn = first_turn(base, key, token)
    print(f"one turn for {len(turn['members'])} exits ({turn['kind']}, seq {turn['seq']}):")
    print(turn["text"])


if __name__ == "__main__":
    main()
