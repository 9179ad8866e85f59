#!/usr/bin/env python3
"""A minimal hook client in Python, for benches/hooks.rs: what most hook tools are written in.

It does the same socket round trip as `switchboard hook AGENT`: read the event on stdin, find
the one host socket in $XDG_RUNTIME_DIR/switchboard, send the hello and the event frames, and
for a PermissionRequest wait for the answer and print the decision. Any failure: print
nothing, exit 0 (as the real client does). Standard library only.
"""
import glob
import json
import os
import socket
import struct
import sys


def frame(tag, body):
    return struct.pack(">I", len(body) + 1) + tag + body


def read_msg(sock):
    head = b""
    while len(head) < 4:
        chunk = sock.recv(4 - len(head))
        if not chunk:
            return None
        head += chunk
    (n,) = struct.unpack(">I", head)
    body = b""
    while len(body) < n:
        chunk = sock.recv(n - len(body))
        if not chunk:
            return None
        body += chunk
    return json.loads(body[1:]) if body[:1] == b"J" else None


def main():
    agent = sys.argv[1]
    event = sys.stdin.buffer.read()
    name = json.loads(event).get("hook_event_name")
    waits = name == "PermissionRequest"
    socks = glob.glob(os.path.join(os.environ["XDG_RUNTIME_DIR"], "switchboard", "*.sock"))
    if len(socks) != 1:
        return
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(0.2)
    s.connect(socks[0])
    hello = {"version": 1, "want": "hook", "agent": agent, "waits": waits, "size": len(event)}
    s.sendall(frame(b"J", json.dumps(hello).encode()) + frame(b"E", event))
    if not waits:
        return
    if (read_msg(s) or {}).get("t") != "hook_accepted":
        return
    s.settimeout(None)
    m = read_msg(s) or {}
    if m.get("t") == "hook_decision":
        sys.stdout.write(m["stdout"])


try:
    main()
except Exception:
    pass
