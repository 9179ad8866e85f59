#!/usr/bin/env bash
# Runs every test: installs the pinned real agents (tests/peers) and the iii SDK the stand-in iii
# worker runs on (tests/peers/iii-worker/.venv) when missing, then cargo test.
# CI (.ci/run) calls exactly this. With CI=true a missing real agent or peer fails the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
# One install serves every real agent: the Claude CLI and claude-agent-acp, opencode, gemini-cli
# and codex-acp (tests/acp_agents.rs). Installed again when one is missing or the lockfile
# changed since (node_modules keeps a copy of the lockfile it was installed from).
peers=tests/peers
agents=(
  node_modules/@anthropic-ai/claude-code/bin/claude.exe
  node_modules/.bin/claude-agent-acp
  node_modules/opencode-linux-x64/bin/opencode
  node_modules/.bin/gemini
  node_modules/@zed-industries/codex-acp-linux-x64/bin/codex-acp
)
install=
cmp -s "$peers/package-lock.json" "$peers/node_modules/.installed-lock.json" || install=1
for a in "${agents[@]}"; do
  [ -x "$peers/$a" ] || install=1
done
if [ -n "$install" ]; then
  echo "tests/run.sh: installing the pinned real agents (npm ci in $peers)"
  npm ci --prefix "$peers" --no-audit --no-fund
  cp "$peers/package-lock.json" "$peers/node_modules/.installed-lock.json"
fi
# Exactly the pinned set (--no-deps; `pip check` fails on anything missing), made again when
# requirements.txt changes (the venv keeps a copy of the one it was made from).
worker=tests/peers/iii-worker
if ! cmp -s "$worker/requirements.txt" "$worker/.venv/requirements.txt"; then
  echo "tests/run.sh: installing the pinned iii SDK (python3 -m venv $worker/.venv)"
  rm -rf "$worker/.venv"
  python3 -m venv "$worker/.venv"
  "$worker/.venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps \
    -r "$worker/requirements.txt"
  "$worker/.venv/bin/python" -m pip check --disable-pip-version-check
  cp "$worker/requirements.txt" "$worker/.venv/requirements.txt"
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
cargo clippy --workspace --all-targets -- -D warnings
cargo test --workspace --all-targets "$@"
