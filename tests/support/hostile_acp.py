#!/usr/bin/env python3
"""A misbehaving ACP agent for the pty tests of the binary: floods the client-side paths.

After session/new it asks for a terminal that writes 64 MiB (with an absurd outputByteLimit).
Once the terminal exists it stops reading its stdin and sends 100 `terminal/output` requests
whose ids are 1 MiB each, so every error reply (which echoes the id) piles up for a reader that
never comes. Then it says FLOOD-SENT and sleeps.
"""
import json
import sys
import time


def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    m = json.loads(line)
    method, rid = m.get("method"), m.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {
            "protocolVersion": 1, "agentCapabilities": {},
            "agentInfo": {"name": "hostile-acp", "version": "1.0.0"}}})
    elif method == "session/new":
        send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": "s1"}})
        send({"jsonrpc": "2.0", "id": "t-1", "method": "terminal/create", "params": {
            "sessionId": "s1", "command": "head", "args": ["-c", "67108864", "/dev/zero"],
            "outputByteLimit": 10 ** 15}})
    elif rid == "t-1" and method is None:
        for i in range(100):
            send({"jsonrpc": "2.0", "id": f"{i}-" + "i" * (1 << 20), "method": "terminal/output",
                  "params": {"sessionId": "s1", "terminalId": "no-such-terminal"}})
        send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1", "update": {
            "sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "FLOOD-SENT"}}}})
        time.sleep(600)
