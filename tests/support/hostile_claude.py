#!/usr/bin/env python3
"""A misbehaving stand-in for the claude CLI (stream-json), for the pty tests of the binary.

HOSTILE_MODE picks the behaviour:
  gates N   send N can_use_tool requests at once, then read stdin without answering anything
  deaf      never read stdin, after asking for replies big enough to fill its stdin pipe
  bigline M write one line of M MiB on stdout, then on stderr
  bigrequest  a can_use_tool over the line limit, then a normal one
  flood S   write whole assistant messages of ~16 KB as fast as possible for S seconds, then
            stay quiet
  nocancel  answer initialize, start a turn on the first user message, ignore interrupts
  escape    run `sh -c "$HOSTILE_ESCAPE"` (children that leave the agent's group), then read
            stdin and exit at its end, as a well-behaved agent does
Every mode first starts a grandchild (`sleep 600`) in its process group and writes the pids
(agent, grandchild) to HOSTILE_PIDS, so a test can check that nothing is left behind.
"""
import json
import os
import subprocess
import sys
import time

mode = os.environ.get("HOSTILE_MODE", "deaf").split()
out = sys.stdout


def emit(obj):
    out.write(json.dumps(obj) + "\n")
    out.flush()


grandchild = subprocess.Popen(["sleep", "600"], stdin=subprocess.DEVNULL)
pids = os.environ.get("HOSTILE_PIDS")
if pids:
    with open(pids + ".tmp", "w") as f:
        f.write(f"{os.getpid()} {grandchild.pid}\n")
    os.replace(pids + ".tmp", pids)

emit({"type": "system", "subtype": "init", "session_id": "hostile", "cwd": os.getcwd(),
      "tools": ["Bash"], "model": "hostile", "permissionMode": "default"})

if mode[0] == "gates":
    for i in range(int(mode[1])):
        emit({"type": "control_request", "request_id": f"gate-{i}", "request": {
            "subtype": "can_use_tool", "tool_name": "Bash",
            "input": {"command": f"echo gate-{i}"}, "tool_use_id": f"toolu_{i}"}})
    for _ in sys.stdin:
        pass
    time.sleep(600)
elif mode[0] == "deaf":
    # Each unsupported request is answered with an error echoing its 300 KB id: the replies
    # fill the pipe, so the stdin writer blocks for good.
    for i in range(4):
        emit({"type": "control_request", "request_id": f"{i}" + "r" * 300_000,
              "request": {"subtype": "no_such_subtype"}})
    time.sleep(600)
elif mode[0] == "bigline":
    # One line of N MiB on stdout, then on stderr; then quiet.
    mib = int(mode[1])
    chunk = "x" * (1024 * 1024)
    for stream in (sys.stdout, sys.stderr):
        stream.write('{"type":"assistant","pad":"')
        for _ in range(mib):
            stream.write(chunk)
        stream.write('"}\n')
        stream.flush()
    time.sleep(600)
elif mode[0] == "bigrequest":
    # A can_use_tool of 9 MiB (over the line limit), then a normal one; reads stdin after.
    emit({"type": "control_request", "request_id": "big-1", "request": {
        "subtype": "can_use_tool", "tool_name": "Bash",
        "input": {"command": "echo " + "y" * (9 * 1024 * 1024)}, "tool_use_id": "toolu_big"}})
    emit({"type": "control_request", "request_id": "small-2", "request": {
        "subtype": "can_use_tool", "tool_name": "Bash",
        "input": {"command": "echo after the big one"}, "tool_use_id": "toolu_small"}})
    for _ in sys.stdin:
        pass
    time.sleep(600)
elif mode[0] == "flood":
    # A long answer as claude without partial messages sends it: whole assistant messages of
    # ~16 KB of text each, written in batches as fast as the pipe takes them for `flood SECS`
    # seconds, then quiet. (Batches, so that Python's speed is not what limits the rate.)
    secs = float(mode[1]) if len(mode) > 1 else 12.0
    raw = sys.stdout.buffer
    word = "lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor. "
    end = time.monotonic() + secs
    n = 0
    while time.monotonic() < end:
        batch = []
        for _ in range(16):
            n += 1
            text = "".join(f"{n}.{i} {word}" for i in range(200))
            batch.append((json.dumps({"type": "assistant", "session_id": "hostile", "message": {
                "id": f"msg_{n}", "type": "message", "role": "assistant", "model": "hostile",
                "content": [{"type": "text", "text": text}], "stop_reason": None,
                "usage": {"input_tokens": 1, "output_tokens": 200}}}) + "\n").encode())
        raw.write(b"".join(batch))
        raw.flush()
    time.sleep(600)
elif mode[0] == "escape":
    subprocess.Popen(["sh", "-c", os.environ["HOSTILE_ESCAPE"]], stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in sys.stdin:
        pass
elif mode[0] == "nocancel":
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if msg.get("type") == "control_request":
            sub = msg.get("request", {}).get("subtype")
            if sub == "initialize":
                emit({"type": "control_response", "response": {
                    "subtype": "success", "request_id": msg["request_id"], "response": {}}})
            # interrupt: acknowledged by nothing, the turn goes on
        elif msg.get("type") == "user":
            emit({"type": "assistant", "session_id": "hostile", "message": {
                "id": "msg_1", "type": "message", "role": "assistant", "model": "hostile",
                "content": [{"type": "text", "text": "working forever"}],
                "stop_reason": None, "usage": {"input_tokens": 1, "output_tokens": 1}}})
