#!/usr/bin/env bash
# Runs every test: installs the pinned real agents (tests/peers) when missing, then cargo test.
# CI (.ci/run) calls exactly this. With CI=true a missing real agent fails the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x tests/peers/node_modules/@anthropic-ai/claude-code/bin/claude.exe ] \
  || [ ! -e tests/peers/node_modules/.bin/claude-agent-acp ]; then
  echo "tests/run.sh: installing the pinned real agents (npm ci in tests/peers)"
  npm ci --prefix tests/peers --no-audit --no-fund
fi
# Every test's scratch files (recordings of the flood tests alone run to hundreds of MiB) go to a
# private directory removed on exit, so repeated runs never fill the disk. SB_KEEP_TMP=1 keeps it.
tmp=$(mktemp -d "${TMPDIR:-/tmp}/switchboard-tests.XXXXXX")
if [ "${SB_KEEP_TMP:-}" = 1 ]; then
  echo "tests/run.sh: scratch files kept in $tmp"
else
  trap 'rm -rf "$tmp"' EXIT
fi
export TMPDIR="$tmp"
cargo fmt --all -- --check
cargo clippy --all-targets -- -D warnings
cargo test --all-targets "$@"
