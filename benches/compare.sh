#!/usr/bin/env bash
# Side by side with the strongest peer, in one run: Node's JSON.parse (read the way the
# TypeScript SDK reads, benches/node_parse.mjs) against switchboard's live decode+map+reduce
# on the same generated stream, and against its replay of realistic recordings (written by the
# real recorder) to their last frame, with the replay's peak memory against the file's size;
# then every other target of benches/perf.rs. Each target is printed with its value and
# PASS/FAIL; the exit code is 1 when one is missed.
#
#   bash benches/compare.sh [ARGS...]       (ARGS go to the bench: --node-only, --lines N, ...)
#
# Node is required (the real agents the tests run need it too): without it this fails.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! node --version >/dev/null 2>&1; then
    echo "FAIL: node is not on PATH; install Node.js (20 or later) to compare with it" >&2
    exit 1
fi
echo "comparing with $(node --version)"
exec cargo bench --bench perf -- "$@"
