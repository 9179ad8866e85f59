#!/usr/bin/env python3
"""A stand-in for the iii harness, session-manager and approval-gate workers, for switchboard's
real-engine tests (tests/iii_real.rs). Written on the iii authors' own Python SDK (`iii-sdk`,
pinned in requirements.txt), so the worker side of every frame is theirs, not ours.

One process, three worker connections to the engine ("harness", "session-manager",
"approval-gate"), each a `register_worker` of the SDK. The sessions and held calls are
scripted (`--sessions N --held M`); the approval gate speaks one generation of the gate's
function and event names (`--generation`), or is absent (`none`).

Prints `READY` on stdout once every function is listed by the engine. Then reads commands on
stdin, one a line, and answers each with one `OK ...` line:

    hold SESSION CALL     hold one more call in SESSION, emit the generation's pending-created
    ready                 fire `harness::ready` at every bound subscriber again
    bindings TYPE         `OK <n>`: how many bindings of trigger type TYPE we were handed

Exits cleanly on SIGTERM, on `quit` and when stdin closes (the test that started it is gone).
`--log FILE` gets one JSON line per invocation received and per binding handed to us.
"""

import argparse
import json
import signal
import sys
import threading
import time

from iii import InitOptions
from iii.iii import III
from iii.triggers import TriggerHandler
from iii_helpers.observability import ReconnectionConfig


def now_ms():
    return int(time.time() * 1000)


class Log:
    def __init__(self, path):
        self.f = open(path, "a", buffering=1) if path else None
        self.lock = threading.Lock()

    def write(self, **row):
        if self.f:
            row["t"] = now_ms()
            with self.lock:
                self.f.write(json.dumps(row) + "\n")


# The names of each generation of the approval gate. `list`/`resolve` are the function ids a
# supervisor calls, `created`/`resolved` the trigger types of its events, `extra` the other
# function ids it registers.
GENERATIONS = {
    "current": {
        "list": "approval::list-pending",
        "resolve": "approval::resolve",
        "created": "approval::pending-created",
        "resolved": "approval::pending-resolved",
        "extra": ["approval::approve-always", "approval::get-settings"],
    },
    # The older snake_case ids (its gate binds `harness::hook::pre_dispatch`). Not the
    # durable-subscriber gate (`approval::consume`, `approval::lookup_record`), which pushes
    # no approval events at all.
    "legacy": {
        "list": "approval::list_pending",
        "resolve": "approval::resolve",
        "created": "approval::pending_created",
        "resolved": "approval::pending_resolved",
        "extra": ["approval::approve_always"],
    },
    "unknown": {
        "list": "approval::inbox-v9",
        "resolve": "approval::decide-v9",
        "created": "approval::held-v9",
        "resolved": "approval::released-v9",
        "extra": [],
    },
}


def record(generation, session, turn, call, function_id, pending_at, title, excerpt):
    """A held call's record as the gate of `generation` lists and emits it (the one place
    its shape is decided)."""
    r = {
        "session_id": session,
        "turn_id": turn,
        "function_call_id": call,
        "function_id": function_id,
        "pending_at": pending_at,
        "arguments_excerpt": excerpt,
        "depth": 0,
        "session_title": title,
    }
    if generation == "legacy":
        r["expires_at"] = pending_at + 1_800_000
    else:
        r["kind"] = "function"
    return r


class Provider(TriggerHandler):
    """A trigger type we provide: keeps the bindings the engine hands us, to fire at them."""

    def __init__(self, world, worker, trigger_type):
        self.world = world
        self.worker = worker
        self.type = trigger_type
        self.bound = {}

    async def register_trigger(self, c):
        self.bound[c.id] = c.function_id
        self.world.log.write(kind="bind", trigger_type=self.type, id=c.id,
                             function_id=c.function_id, config=c.config)

    async def unregister_trigger(self, c):
        self.bound.pop(c.id, None)
        self.world.log.write(kind="unbind", trigger_type=self.type, id=c.id)


class World:
    def __init__(self, a):
        self.a = a
        self.log = Log(a.log)
        self.lock = threading.Lock()
        self.workers = []
        self.providers = {}
        self.gen = GENERATIONS.get(a.generation)
        base = a.since_ms or now_ms() - 60_000
        self.sessions = {}
        for i in range(1, a.sessions + 1):
            sid = f"standin-{i}"
            self.sessions[sid] = {"title": f"Stand-in session {i}", "turn": f"turn-{i}",
                                  "created_at": base + i, "pending": []}
        self.pending = []
        for i in range(1, a.held + 1):
            sid = f"standin-{(i - 1) % a.sessions + 1}"
            self.hold(sid, f"standin-call-{i}", base + 1000 * i)

    def hold(self, sid, call, pending_at=None):
        s = self.sessions[sid]
        rec = record(self.a.generation, sid, s["turn"], call, "shell::exec",
                     pending_at or now_ms(), s["title"], {"command": f"echo {call}"})
        with self.lock:
            s["pending"].append(call)
            self.pending.append(rec)
        return rec

    # ------------------------------------------------------------------ workers

    def worker(self, name, version=None):
        # A test restarts the engine: come back within a few hundred ms, not the default 1 s+.
        opts = InitOptions(worker_name=name, otel={"enabled": False},
                           enable_metrics_reporting=False,
                           reconnection_config=ReconnectionConfig(initial_delay_ms=100,
                                                                  max_delay_ms=1000))

        class Worker(III):
            def _get_worker_metadata(self):
                # The SDK reports its own version; a harness reports the harness's.
                m = super()._get_worker_metadata()
                if version:
                    m["version"] = version
                return m

        w = Worker(self.a.url, opts)
        w.sb_name = name
        w._wait_until_connected()
        self.watch(w, announce=not self.workers)
        self.workers.append(w)
        return w

    def function(self, w, fid, handler):
        def logged(data):
            self.log.write(kind="invoke", worker=w.sb_name, function_id=fid,
                           data=data)
            return handler(data or {})

        w.register_function(fid, logged)

    def provide(self, w, trigger_type):
        p = Provider(self, w, trigger_type)
        self.providers[trigger_type] = p
        w.register_trigger_type({"id": trigger_type, "description": "stand-in"}, p)

    def emit(self, trigger_type, payload):
        p = self.providers.get(trigger_type)
        for fid in list(p.bound.values()) if p else []:
            self.workers[0].trigger({"function_id": fid, "payload": payload,
                                     "action": {"type": "void"}})
            self.log.write(kind="emit", trigger_type=trigger_type, function_id=fid,
                           data=payload)

    # ------------------------------------------------------------------ harness

    def status(self, d):
        s = self.sessions.get(d.get("session_id"))
        if s is None:
            return None
        r = {"session_id": d["session_id"], "turn_id": s["turn"],
             "status": "awaiting_functions" if s["pending"] else "completed",
             "step": 1, "turn_count": 1, "depth": 0, "children": [], "expects_wake": False}
        if s["pending"]:
            r["pending_function_calls"] = list(s["pending"])
        return r

    def tree(self, d):
        root = d.get("root_session_id")
        return {"root_session_id": root, "complete": root in self.sessions
                and not self.sessions[root]["pending"],
                "sessions": [{"session_id": root, "depth": 0}]}

    def metrics(self, d):
        root = d.get("root_session_id") or d.get("session_id")
        zero = {"turns": 1, "function_calls": 0, "function_call_errors": 0, "input_tokens": 0,
                "output_tokens": 0, "reasoning_tokens": None, "cache_read_tokens": None,
                "cache_write_tokens": 0, "cost_usd": 0.0}
        return {"root_session_id": root, "complete": False,
                "totals": dict(zero, sessions=1),
                "by_session": [dict(zero, session_id=root, depth=0)]}

    def meta(self, sid):
        s = self.sessions[sid]
        return {"session_id": sid, "title": s["title"], "description": "",
                "status": "working" if s["pending"] else "idle",
                "created_at": s["created_at"], "updated_at": s["created_at"],
                "message_count": 1}

    def messages(self, d):
        sid = d.get("session_id")
        if sid not in self.sessions:
            return None
        text = f"Work on {self.sessions[sid]['title']}"
        msg = {"role": "user", "content": [{"type": "text", "text": text}],
               "timestamp": self.sessions[sid]["created_at"]}
        return {"messages": [{"entry_id": f"{sid}-e1", "message": msg}]}

    def start_harness(self):
        a = self.a
        h = self.worker("harness", a.harness_version)
        for hook in filter(None, a.harness_hooks.split(",")):
            self.provide(h, f"harness::hook::{hook}")
        for t in ["harness::ready", "harness::turn-started", "harness::turn-completed"]:
            self.provide(h, t)
        self.function(h, "harness::status", self.status)
        self.function(h, "harness::session-tree", self.tree)
        self.function(h, "harness::metrics", self.metrics)
        self.function(h, "harness::send", lambda d: {
            "accepted": True, "session_id": d.get("session_id") or "standin-new",
            "turn_id": "turn-new"})
        self.function(h, "harness::stop", lambda d: {"stopping": True})
        m = self.worker("session-manager")
        self.function(m, "session::list", lambda d: {
            "sessions": [self.meta(s) for s in self.sessions]})
        self.function(m, "session::get", lambda d: {"meta": self.meta(d["session_id"])}
                      if d.get("session_id") in self.sessions else None)
        self.function(m, "session::messages", self.messages)
        self.function(m, "session::get_message", lambda d: None)

    # ------------------------------------------------------------------ approval gate

    def list_pending(self, d):
        sid = d.get("session_id")
        with self.lock:
            listed = [r for r in self.pending if sid is None or r["session_id"] == sid]
        # A listing taken now and delivered late: a decision may overtake it.
        time.sleep(self.a.list_lag_ms / 1000)
        return {"pending": listed}

    def resolve(self, d):
        sid, call = d.get("session_id"), d.get("function_call_id")
        with self.lock:
            found = [r for r in self.pending
                     if r["session_id"] == sid and r["function_call_id"] == call]
            if not found or d.get("decision") not in ("allow", "deny"):
                return {"resolved": False}
            self.pending.remove(found[0])
            self.sessions[sid]["pending"].remove(call)
        r = found[0]
        out = {"session_id": sid, "turn_id": r["turn_id"], "function_call_id": call,
               "function_id": r["function_id"], "outcome": d["decision"],
               "resolved_at": now_ms()}
        if d.get("reason"):
            out["reason"] = d["reason"]
        self.emit(self.gen["resolved"], out)
        return {"resolved": True, "turn_resumed": True}

    def start_gate(self):
        a, g = self.a, self.gen
        w = self.worker("approval-gate")
        self.provide(w, g["created"])
        self.provide(w, g["resolved"])
        self.function(w, g["list"], self.list_pending)
        self.function(w, g["resolve"], self.resolve)
        settings = {"settings": {"mode": "manual", "mode_set_at": 0, "always_allow": [],
                                 "approved_always": []}}
        for fid in g["extra"]:
            self.function(w, fid, lambda d: settings)
        self.function(w, "approval::gate", lambda d: {"decision": "continue"})
        if a.hook != "none":
            w.register_trigger({"type": f"harness::hook::{a.hook}",
                                "function_id": "approval::gate", "config": {}})

    # ------------------------------------------------------------------ start, commands

    def ours(self):
        ids = {"harness::status", "session::list"}
        if self.gen:
            ids |= {self.gen["list"], self.gen["resolve"], "approval::gate"}
        return ids

    def wait_listed(self, timeout=20.0):
        """Until the engine lists every function we registered (registration is silent)."""
        end = time.time() + timeout
        while time.time() < end:
            r = self.workers[0].trigger({"function_id": "engine::functions::list",
                                         "payload": {}})
            listed = {f["function_id"] for f in (r or {}).get("functions", [])}
            if self.ours() <= listed:
                return
            time.sleep(0.05)
        raise SystemExit(f"standin: the engine never listed {self.ours()}")

    def wait_bound(self, trigger_type, timeout):
        """Until the engine handed us a binding of `trigger_type`, at most `timeout` s."""
        end = time.time() + timeout
        p = self.providers.get(trigger_type)
        while p and not p.bound and time.time() < end:
            time.sleep(0.05)

    def announce(self):
        self.emit("harness::ready", {})
        if self.gen and self.a.announce:
            with self.lock:
                held = list(self.pending)
            for r in held:
                self.emit(self.gen["created"], r)

    def command(self, line):
        words = line.split()
        if not words:
            return None
        if words[0] == "hold" and len(words) == 3 and self.gen and words[1] in self.sessions:
            self.emit(self.gen["created"], self.hold(words[1], words[2]))
            return f"OK hold {words[2]}"
        if words[0] == "ready":
            self.emit("harness::ready", {})
            return "OK ready"
        if words[0] == "bindings" and len(words) == 2:
            p = self.providers.get(words[1])
            return f"OK {len(p.bound) if p else 0}"
        if words[0] == "quit":
            raise SystemExit(0)
        return f"ERR {line}"

    def watch(self, w, announce):
        """The engine forgets every binding when it restarts, and the SDK registers ours again
        when it reconnects: drop the bindings we were handed, and say ready again."""
        seen = {"connected": False}

        def listener(state):
            if state != "connected":
                for p in self.providers.values():
                    if p.worker is w:
                        p.bound.clear()
            elif seen["connected"] and announce:
                threading.Timer(1.0, self.announce).start()
            seen["connected"] = seen["connected"] or state == "connected"

        w.add_connection_state_listener(listener)

    def shutdown(self):
        for w in reversed(self.workers):
            try:
                w.shutdown()
            except Exception as e:  # noqa: BLE001 - leaving anyway
                print(f"standin: shutdown: {e}", file=sys.stderr)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--url", required=True)
    p.add_argument("--generation", default="current",
                   choices=["current", "legacy", "unknown", "none"])
    p.add_argument("--hook", default="pre-trigger",
                   help="the harness hook approval::gate is bound on (pre-trigger, "
                        "pre-dispatch, pre_dispatch, ...), or none")
    p.add_argument("--harness-hooks", default="pre-trigger")
    p.add_argument("--sessions", type=int, default=2)
    p.add_argument("--held", type=int, default=2)
    p.add_argument("--log")
    p.add_argument("--harness-version", default="1.8.25")
    p.add_argument("--wait-subscribers", type=float, default=1.0,
                   help="seconds to wait for a subscriber before announcing held calls")
    p.add_argument("--since-ms", type=int, default=0,
                   help="the scripted sessions' epoch (ms; default a minute ago): a restarted "
                        "worker given the same one holds the very same records")
    p.add_argument("--list-lag-ms", type=int, default=0,
                   help="answer a listing this long after taking it")
    p.add_argument("--no-announce", dest="announce", action="store_false",
                   help="hold the scripted calls without emitting pending-created for them: "
                        "a subscriber learns of them only by listing")
    a = p.parse_args()
    if a.held and not a.sessions:
        p.error("--held needs --sessions")

    def term(*_):
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, term)
    world = World(a)
    try:
        world.start_harness()
        if world.gen:
            world.start_gate()
        world.wait_listed()
        if world.gen and a.announce:
            world.wait_bound(world.gen["created"], a.wait_subscribers)
        world.announce()
        print("READY", flush=True)
        for line in sys.stdin:
            answer = world.command(line.strip())
            if answer:
                print(answer, flush=True)
    except KeyboardInterrupt:
        pass
    finally:
        world.shutdown()


if __name__ == "__main__":
    main()
