#!/usr/bin/env python3
"""A scripted ACP v1 agent that declares and emits every Checkfu extension frame.

Test support for tests/acp.rs: speaks JSON-RPC 2.0 over stdio, one message per line. The first
word of the prompt picks a script:

  SUBAGENTS  title update, two sub-agents (started, activity, completed / canceled), a plan, text
  SLOW       streams "working", then waits: a steer is answered `delivered` (and echoed), an
             interrupt `draining` (the turn ends `cancelled`), a session/cancel ends it too
  PERMIT     an edit tool call with a diff, then session/request_permission with all four kinds
  FS         fs/write_text_file, fs/read_text_file in the cwd, then a read outside it
  TERM       terminal/create, terminal content on the tool call, wait_for_exit, output, release
  UNKNOWN    calls a method the client does not serve
  EDIT       an edit of notes.txt with a snippet diff, request_permission, then (allowed) the write
             of exactly that change, then a second write of something else
  LINKS      a write to `dangling` and a read of `link/secret.txt` (links the test plants)
  SWAP       a write to `sub/f.txt` (the test swaps `sub` for a link while the gate waits)
  TERMCWD    `pwd -P` in client terminals with cwd `build`, `alias` and `sub` (links the test plants)
Every turn ends with `checkfu.turn` telemetry in the prompt result. Its own request ids start at 0
so they collide with the client's.
"""

import json
import os
import queue
import sys
import threading

SESSION = "sess_1"
inbox = queue.Queue()
deferred = []
next_id = [0]
cwd = [os.getcwd()]
log_path = os.environ.get("CHECKFU_AGENT_LOG")


def log(msg):
    if log_path:
        with open(log_path, "a") as f:
            f.write(msg + "\n")


def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def reader():
    for line in sys.stdin:
        line = line.strip()
        if line:
            inbox.put(json.loads(line))
    inbox.put(None)


def next_message():
    if deferred:
        return deferred.pop(0)
    m = inbox.get()
    if m is None:
        sys.exit(0)
    log("in " + json.dumps(m))
    return m


def call(method, params):
    """Send a request to the client and wait for its response (other messages are deferred)."""
    rid = next_id[0]
    next_id[0] += 1
    send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
    held = []
    while True:
        m = inbox.get()
        if m is None:
            sys.exit(0)
        log("in " + json.dumps(m))
        if m.get("id") == rid and "method" not in m:
            deferred.extend(held)
            return m
        held.append(m)


def update(u):
    send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": SESSION, "update": u}})


def say(text):
    update({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}})


def subagent(phase):
    update({"sessionUpdate": "session_info_update", "updatedAt": "2026-12-01T10:00:00Z",
            "_meta": {"checkfu.subagent": phase}})


def telemetry(execution="shell", shell=0, fs=0):
    return {"checkfu.turn": {"execution": execution, "shell_commands": shell, "filesystem_commands": fs,
                             "mcp_calls": 0, "model_calls": 2, "wall_time_ms": 1250,
                             "model_transient_retries": 1, "model_overflow_recoveries": None}}


def end(rid, stop="end_turn", **kw):
    send({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": stop, "_meta": telemetry(**kw)}})


def turn(rid, text):
    word = text.split()[0] if text.split() else ""
    if word == "SUBAGENTS":
        update({"sessionUpdate": "session_info_update", "title": "Checkfu review"})
        subagent({"phase": "started", "subagent": "sa-1", "name": "reviewer", "description": "Reviews the diff"})
        subagent({"phase": "started", "subagent": "sa-2", "name": "tester", "description": "Runs the tests"})
        subagent({"phase": "activity", "subagent": "sa-1"})
        update({"sessionUpdate": "plan", "entries": [
            {"content": "Review the diff", "priority": "high", "status": "completed"},
            {"content": "Run the tests", "priority": "medium", "status": "in_progress"},
            {"content": "Write the summary", "priority": "low", "status": "pending"}]})
        subagent({"phase": "completed", "subagent": "sa-1", "disposition": "completed"})
        subagent({"phase": "completed", "subagent": "sa-2", "disposition": "canceled"})
        say("Sub-agents finished.")
        end(rid, execution="model_only")
    elif word == "SLOW":
        say("working")
        while True:
            m = next_message()
            method = m.get("method")
            if method == "_checkfu/session/steer":
                send({"jsonrpc": "2.0", "id": m["id"], "result": {"disposition": "delivered"}})
                say(" steered: " + m["params"]["content"])
            elif method == "_checkfu/session/interrupt":
                send({"jsonrpc": "2.0", "id": m["id"], "result": {"disposition": "draining"}})
                say(" draining")
                end(rid, stop="cancelled")
                return
            elif method == "session/cancel":
                end(rid, stop="cancelled")
                return
            elif "id" in m and "method" in m:
                send({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": "Method not found"}})
    elif word == "PERMIT":
        path = os.path.join(cwd[0], "notes.txt")
        update({"sessionUpdate": "tool_call", "toolCallId": "call_1", "title": "Edit notes.txt",
                "kind": "edit", "status": "pending", "locations": [{"path": path, "line": 2}],
                "content": [{"type": "diff", "path": path, "oldText": "alpha\nbeta\ngamma\n",
                             "newText": "alpha\nBETA\ngamma\ndelta\n"}]})
        r = call("session/request_permission", {"sessionId": SESSION,
                 "toolCall": {"toolCallId": "call_1", "rawInput": {"file_path": path}},
                 "options": [{"optionId": "ok-once", "name": "Allow", "kind": "allow_once"},
                             {"optionId": "ok-always", "name": "Always allow", "kind": "allow_always"},
                             {"optionId": "no-once", "name": "Reject", "kind": "reject_once"},
                             {"optionId": "no-always", "name": "Never", "kind": "reject_always"}]})
        outcome = r.get("result", {}).get("outcome", {})
        chosen = outcome.get("optionId", outcome.get("outcome"))
        ok = str(chosen).startswith("ok")
        update({"sessionUpdate": "tool_call_update", "toolCallId": "call_1",
                "status": "completed" if ok else "failed"})
        say("outcome: %s" % chosen)
        end(rid, fs=1 if ok else 0)
    elif word == "FS":
        path = os.path.join(cwd[0], "out.txt")
        w = call("fs/write_text_file", {"sessionId": SESSION, "path": path, "content": "hello\nworld\n"})
        r = call("fs/read_text_file", {"sessionId": SESSION, "path": path, "line": 2, "limit": 1})
        o = call("fs/read_text_file", {"sessionId": SESSION, "path": "/etc/hostname"})
        say("write=%s read=%s outside=%s" % (
            "ok" if "result" in w else "error %s" % w.get("error", {}).get("code"),
            json.dumps(r.get("result", {}).get("content")),
            "error %s" % o["error"]["code"] if "error" in o else "ok"))
        end(rid, fs=3)
    elif word == "TERM":
        update({"sessionUpdate": "tool_call", "toolCallId": "call_t", "title": "Run echo",
                "kind": "execute", "status": "pending", "rawInput": {"command": "echo term-output"}})
        c = call("terminal/create", {"sessionId": SESSION, "command": "echo", "args": ["term-output"],
                                     "outputByteLimit": 1000})
        if "error" in c:
            update({"sessionUpdate": "tool_call_update", "toolCallId": "call_t", "status": "failed"})
            say("terminal refused")
            end(rid)
            return
        tid = c["result"]["terminalId"]
        update({"sessionUpdate": "tool_call_update", "toolCallId": "call_t", "status": "in_progress",
                "content": [{"type": "terminal", "terminalId": tid}]})
        x = call("terminal/wait_for_exit", {"sessionId": SESSION, "terminalId": tid})
        o = call("terminal/output", {"sessionId": SESSION, "terminalId": tid})
        call("terminal/release", {"sessionId": SESSION, "terminalId": tid})
        update({"sessionUpdate": "tool_call_update", "toolCallId": "call_t", "status": "completed"})
        say("exit=%s output=%s" % (x.get("result", {}).get("exitCode"),
                                   json.dumps(o.get("result", {}).get("output"))))
        end(rid, shell=1)
    elif word == "EDIT":
        path = os.path.join(cwd[0], "notes.txt")
        update({"sessionUpdate": "tool_call", "toolCallId": "call_e", "title": "Edit notes.txt",
                "kind": "edit", "status": "pending", "locations": [{"path": path}],
                "content": [{"type": "diff", "path": path, "oldText": "beta\n", "newText": "BETA\n"}]})
        r = call("session/request_permission", {"sessionId": SESSION,
                 "toolCall": {"toolCallId": "call_e"},
                 "options": [{"optionId": "ok", "name": "Allow", "kind": "allow_once"},
                             {"optionId": "no", "name": "Reject", "kind": "reject_once"}]})
        if r.get("result", {}).get("outcome", {}).get("optionId") != "ok":
            say("edit rejected")
            end(rid)
            return
        with open(path) as f:
            text = f.read()
        w1 = call("fs/write_text_file", {"sessionId": SESSION, "path": path,
                                        "content": text.replace("beta\n", "BETA\n", 1)})
        w2 = call("fs/write_text_file", {"sessionId": SESSION, "path": path,
                                        "content": "sneaky\n"})
        code = lambda m: "ok" if "result" in m else "error %s" % m.get("error", {}).get("code")
        update({"sessionUpdate": "tool_call_update", "toolCallId": "call_e", "status": "completed"})
        say("edit: first=%s second=%s" % (code(w1), code(w2)))
        end(rid, fs=2)
    elif word == "LINKS":
        w = call("fs/write_text_file", {"sessionId": SESSION, "path": os.path.join(cwd[0], "dangling"),
                                        "content": "pwned\n"})
        r = call("fs/read_text_file", {"sessionId": SESSION,
                                       "path": os.path.join(cwd[0], "link", "secret.txt")})
        code = lambda m: "ok" if "result" in m else "error %s" % m.get("error", {}).get("code")
        say("links: write=%s read=%s" % (code(w), code(r)))
        end(rid, fs=2)
    elif word == "SWAP":
        w = call("fs/write_text_file", {"sessionId": SESSION, "path": os.path.join(cwd[0], "sub", "f.txt"),
                                        "content": "pwned\n"})
        say("swap: write=%s" % ("ok" if "result" in w else "error %s" % w.get("error", {}).get("code")))
        end(rid, fs=1)
    elif word == "TERMCWD":
        res = []
        for d in ("build", "alias", "sub"):
            c = call("terminal/create", {"sessionId": SESSION, "command": "pwd", "args": ["-P"],
                                         "cwd": os.path.join(cwd[0], d)})
            if "error" in c:
                res.append("%s=error %s" % (d, c["error"]["code"]))
                continue
            tid = c["result"]["terminalId"]
            call("terminal/wait_for_exit", {"sessionId": SESSION, "terminalId": tid})
            o = call("terminal/output", {"sessionId": SESSION, "terminalId": tid})
            call("terminal/release", {"sessionId": SESSION, "terminalId": tid})
            res.append("%s=%s" % (d, o.get("result", {}).get("output", "").strip()))
        say("termcwd: " + " ".join(res))
        end(rid, shell=3)
    elif word == "UNKNOWN":
        r = call("_x/unknown", {"sessionId": SESSION})
        say("unknown answered %s" % r.get("error", {}).get("code"))
        end(rid)
    else:
        say("echo: " + text)
        end(rid, execution="model_only")


def main():
    threading.Thread(target=reader, daemon=True).start()
    while True:
        m = next_message()
        method = m.get("method")
        rid = m.get("id")
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": rid, "result": {
                "protocolVersion": 1,
                "agentCapabilities": {"mcpCapabilities": {"http": True}},
                "agentInfo": {"name": "checkfu-scripted", "version": "1.0.0"},
                "_meta": {"checkfu.capabilities": {
                    "subagents": "observed", "steer": "native", "interrupt": "cooperative",
                    "builtin_tool_scoping": "enforced", "structured_output": "response_format",
                    "staged_files": "resource_links", "native_checkpoint": "external_custody"}}}})
        elif method == "session/new":
            cwd[0] = m["params"]["cwd"]
            send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": SESSION, "modes": {
                "currentModeId": "default",
                "availableModes": [{"id": "default", "name": "Default"}, {"id": "plan", "name": "Plan"}]}}})
        elif method == "session/set_mode":
            send({"jsonrpc": "2.0", "id": rid, "result": {}})
            update({"sessionUpdate": "current_mode_update", "currentModeId": m["params"]["modeId"]})
        elif method == "session/prompt":
            text = " ".join(b.get("text", "") for b in m["params"]["prompt"])
            turn(rid, text)
        elif method in ("_checkfu/session/steer", "_checkfu/session/interrupt"):
            send({"jsonrpc": "2.0", "id": rid, "result": {"disposition": "refused"}})
        elif rid is not None and method is not None:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}})


if __name__ == "__main__":
    main()
