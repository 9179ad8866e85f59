#!/usr/bin/env python3
"""Seed corpora for the fuzz targets, from the repository's fixtures (and ../shared/recordings
when it is there). Writes corpus/<target>/seed-*; libFuzzer adds what it finds beside them."""
import json
import os
import pathlib

here = pathlib.Path(__file__).resolve().parent
repo = here.parent
shared = pathlib.Path(os.environ.get("FUZZ_SHARED", repo.parent / "shared" / "recordings"))
KEY_Y = "\x01\x00"  # a keys line: KEYS[0] is `y` (see fuzz_targets/drive.rs)


def out(target, name, text):
    d = here / "corpus" / target
    d.mkdir(parents=True, exist_ok=True)
    (d / f"seed-{name}").write_text(text)


def agent_lines(path):
    """The agent's lines of a recording, cassette or raw wire log."""
    text = path.read_text()
    if path.name.endswith(".cassette.json"):
        return [e if isinstance(e, str) else json.dumps(e) for e in json.loads(text)["events"]]
    lines = text.splitlines()
    first = json.loads(lines[0]) if lines and lines[0].startswith("{") else {}
    if "switchboard_recording" in first:
        return [json.loads(l)["line"] for l in lines[1:] if l.strip() and json.loads(l).get("dir") == "in"]
    # A raw wire log: the agent's lines are responses to us and its own requests/notifications.
    return [l for l in lines if l.strip() and '"clientInfo"' not in l]


def with_keys(lines):
    out = []
    for l in lines:
        out.append(l)
        if '"control_request"' in l or '"request_permission"' in l or '"method":"fs/' in l:
            out.append(KEY_Y)
    return "\n".join(out) + "\n"


def main():
    sources = {
        "claude": sorted((repo / "fixtures/recordings/claude").glob("*.jsonl")),
        "acp": sorted((repo / "fixtures/recordings/acp").glob("*.jsonl")),
    }
    if shared.is_dir():
        sources["claude"] += sorted((shared / "claude").glob("*.cassette.json"))
        sources["acp"] += sorted((shared / "acp").glob("*.jsonl"))
    for backend, target in (("claude", "claude_line"), ("acp", "acp_line")):
        for p in sources[backend]:
            try:
                lines = agent_lines(p)
            except (ValueError, KeyError):
                continue
            out(target, p.stem, with_keys(lines))
            if backend == "claude":
                out("claude_codec", p.stem, "\n".join(lines) + "\n")
    recs = sources["claude"] + sources["acp"]
    recs += sorted((repo / "fixtures/corrupt").glob("*"))
    for p in recs:
        if p.suffix in (".jsonl", ".json"):
            out("recording", p.name, p.read_text())
    for p in sorted((repo / "fixtures/iii/frames").glob("*.json")):
        out("iii_frame", p.stem, json.dumps(json.loads(p.read_text())))
    out("rules", "file", (
        '# comment\n[[rule]]\naction = "allow"\ntool = "Bash"\npattern = "git status *"\n\n'
        '[[rule]]\naction = "deny"\ntool = "mcp__*"\nexact = true\npattern = "/etc/**"\n'
        "allow Bash git *\ndeny Write /etc/*\nBash git status; curl x | sh\n"))
    out("rules", "config", (
        '[keys]\nsearch = "S"\nallow_once = "Y"\n\n[ui]\ntheme = "dark"\n'
        "ask Edit src/**/*.rs\nEdit ./src/../src/main.rs\n"))


main()
