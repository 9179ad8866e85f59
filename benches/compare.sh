#!/usr/bin/env bash
# Side by side, on one generated stream: switchboard's decode, decode+map and
# decode+map+reduce against the official Python SDK's json.loads + parse_message, plus every
# other target of benches/perf.rs, each printed with its value and PASS/FAIL.
#
#   bash benches/compare.sh [LINES]        (default 1,000,000 lines)
#
# The SDK (claude-agent-sdk, pinned below) is installed from PyPI into a throwaway venv that is
# deleted afterwards; where that is not possible the SDK column is skipped with a message.
set -euo pipefail
SDK_VERSION=0.2.189
lines=${1:-1000000}
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
stream=$work/stream.jsonl

cargo bench --bench perf -- --write-stream "$stream" --lines "$lines"

sdk=()
echo "installing claude-agent-sdk==$SDK_VERSION into a throwaway venv ($work/venv)"
if python3 -m venv "$work/venv" >/dev/null 2>&1 &&
    "$work/venv/bin/pip" install -q --disable-pip-version-check "claude-agent-sdk==$SDK_VERSION" >"$work/pip.log" 2>&1; then
    ns=$("$work/venv/bin/python" benches/sdk_parse.py "$stream")
    sdk=(--sdk-ns "$ns")
else
    echo "SKIP: could not install claude-agent-sdk==$SDK_VERSION (no python3 venv or no PyPI):"
    tail -n 3 "$work/pip.log" 2>/dev/null || true
    echo "the SDK column is left out"
fi

cargo bench --bench perf -- --stream "$stream" "${sdk[@]}"
