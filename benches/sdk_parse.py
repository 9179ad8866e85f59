"""Time the official Python SDK on a stream-json file: json.loads + parse_message per line.

Prints the nanoseconds per line on stdout (what benches/compare.sh passes to the bench) and
a summary on stderr. Run inside the throwaway venv compare.sh makes.
"""
import json
import sys
import time

from claude_agent_sdk._internal.message_parser import parse_message

try:
    from claude_agent_sdk import __version__ as version
except ImportError:  # older layouts
    version = "?"


def main(path: str) -> None:
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    errors = 0
    start = time.perf_counter()
    for line in lines:
        try:
            parse_message(json.loads(line))
        except Exception:  # noqa: BLE001 - an unparsed line still cost its time
            errors += 1
    secs = time.perf_counter() - start
    ns = secs * 1e9 / len(lines)
    print(
        f"claude-agent-sdk {version}: {len(lines)} lines in {secs:.2f} s, "
        f"{ns:.0f} ns per line, {errors} not parsed",
        file=sys.stderr,
    )
    print(f"{ns:.1f}")


if __name__ == "__main__":
    main(sys.argv[1])
