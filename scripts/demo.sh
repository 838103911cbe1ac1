#!/usr/bin/env bash
# The demo: examples/demo.toml, a lab experiment, on a sandboxed MariaDB from Debian. Is
# innodb_flush_log_at_trx_commit = 2 worth it against 1? oltp_read_write at 1, 4 and 16 users,
# both settings, two repetitions each, every point after a write starting from a settled server.
# At the end: the relative TPS and p99 per user count with the spread of the repetitions (a
# winner or a draw), what the server did inside, the warnings that explain artifacts, and a
# self-contained HTML report. Everything stays in the results directory and can be reopened:
#   dbperf report demo [--html FILE]    dbperf compare --experiment demo
# Knobs: DEMO_RESULTS (results directory, default dbperf-results), DEMO_QUICK=1 (a smoke test
# of the same file: 2 s points). State (sandboxes, the prepared data) lives in $DBPERF_HOME
# (~/.dbperf).
set -euo pipefail
cd "$(dirname "$0")/.."
DBPERF=${DBPERF:-target/release/dbperf}
RESULTS=${DEMO_RESULTS:-dbperf-results}
NAME=demo
QUICK=()
if [ "${DEMO_QUICK:-0}" = 1 ]; then
  QUICK=(--quick)
  NAME=demo-quick
fi

# --restart: a new demo measures every point again (the runs of an earlier one stay on disk).
"$DBPERF" lab run examples/demo.toml "${QUICK[@]}" --restart --results-dir "$RESULTS"
echo
"$DBPERF" report "$NAME" --results-dir "$RESULTS" --html "$RESULTS/$NAME.html"
echo
echo "Reopen it any time: $DBPERF report $NAME --results-dir $RESULTS [--html FILE]"
echo "HTML report: $RESULTS/$NAME.html"
