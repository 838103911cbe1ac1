#!/usr/bin/env bash
# The demo: a sandboxed MariaDB, 8 sysbench tables, oltp_read_only and oltp_read_write at
# 1, 2, 4, 8 and 16 connections (the first waits for the load's flushing to end, every one warms
# up first); at the end, TPS and p99 by connections for each workload, the warnings that explain
# artifacts (such as more than twice the TPS at 2 connections as at 1 on a VM with idle vCPUs),
# and a self-contained HTML report (charts) in the results directory.
# Knobs: DEMO_TIME (seconds per point, default 10), DEMO_WARMUP (seconds, default 3),
# DEMO_TABLE_SIZE (rows, default 100000), DEMO_KEEP=1 keeps the sandbox running afterwards.
# State lives in $DBPERF_HOME (~/.dbperf).
set -euo pipefail
cd "$(dirname "$0")/.."
DBPERF=${DBPERF:-target/release/dbperf}
TIME=${DEMO_TIME:-10}
WARMUP=${DEMO_WARMUP:-3}
SIZE=${DEMO_TABLE_SIZE:-100000}
NAME=demo
RESULTS=${DEMO_RESULTS:-dbperf-results/demo-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$RESULTS"

if ! $DBPERF server list | grep -q "^$NAME .*running"; then
  $DBPERF server start mariadb --name "$NAME"
fi
cleanup() { [ "${DEMO_KEEP:-0}" = 1 ] || $DBPERF server stop "$NAME" >/dev/null; }
trap cleanup EXIT
T=sandbox:$NAME

# The demo sandbox is the demo's own: --force also clears tables an older dbperf made there.
$DBPERF sysbench oltp_read_write cleanup --tables=8 --force --target $T >/dev/null
$DBPERF sysbench oltp_read_write prepare --tables=8 --table-size="$SIZE" --target $T
$DBPERF sysbench oltp_read_write prewarm --tables=8 --table-size="$SIZE" --target $T >/dev/null

# A load leaves InnoDB flushing for minutes (checkpoint age near its maximum, a third of the
# pages dirty): a run started now would measure that write-back. The first point waits for it
# (--settle), and every point warms up before it measures.
SETTLE=--settle
for w in oltp_read_only oltp_read_write; do
  for n in 1 2 4 8 16; do
    echo "== $w, $n connection(s), ${TIME}s after a ${WARMUP}s warmup"
    $DBPERF sysbench $w run --tables=8 --table-size="$SIZE" --threads=$n --time="$TIME" \
      --warmup-time="$WARMUP" $SETTLE --report-interval=$(( TIME >= 10 ? 5 : 1 )) --target $T \
      --results-dir "$RESULTS/runs" --summary-json "$RESULTS/$w-$n.json" |
      grep -E '^\[|^settle:|transactions:|p99:' || true
    SETTLE=
  done
done

echo
# TPS and p99 by connections for each workload, and the HTML report with its charts.
$DBPERF report "$RESULTS"/runs/*/ --html "$RESULTS/report.html"
echo "Run directories: $RESULTS/runs"
echo "HTML report: $RESULTS/report.html"
