#!/usr/bin/env bash
# Runs every fuzz target (or the ones named) for a fixed number of executions each.
#
#   fuzz/run.sh [RUNS] [TARGET...]     RUNS defaults to 200000; targets: claude_line claude_codec
#                                      acp_line recording rules iii_frame
#
# Needs the nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz --locked`). Seeds come
# from fixtures/ (and ../shared/recordings, or $FUZZ_SHARED, when present); what libFuzzer finds
# stays in fuzz/corpus/, crashes in fuzz/artifacts/TARGET/, logs in fuzz/logs/. Exits 1 if any
# target crashed. Built without a sanitizer (the code is safe Rust) but with debug assertions
# and overflow checks, which cargo-fuzz turns on.
set -uo pipefail
cd "$(dirname "$0")"
runs=${1:-200000}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(claude_line claude_codec acp_line recording rules iii_frame)
python3 seeds.py || exit 2
cargo +nightly fuzz build -s none || exit 2
mkdir -p logs
failed=0
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t" "artifacts/$t"
  echo "== $t: $runs executions"
  # Recordings and cassettes are long files; a wire target's input is a few lines.
  case $t in recording) max_len=65536 ;; *) max_len=8192 ;; esac
  # -seed fixes the mutation sequence; -timeout flags an input that takes over 10 s (a hang).
  cargo +nightly fuzz run -s none "$t" "corpus/$t" -- \
    -runs="$runs" -seed=1 -max_len="$max_len" -dict=json.dict -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 > "logs/$t.log" 2>&1
  rc=$?
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "logs/$t.log" | grep -o '[0-9]*$')
  crashes=$(find "artifacts/$t" -type f | wc -l)
  echo "   $t: exit $rc, ${execs:-?} executions, $crashes crash/timeout/oom file(s) in fuzz/artifacts/$t"
  if [ "$rc" -ne 0 ]; then
    failed=1
    grep -m1 -A12 'panicked at\|ERROR: libFuzzer' "logs/$t.log" || tail -20 "logs/$t.log"
  fi
done
exit $failed
