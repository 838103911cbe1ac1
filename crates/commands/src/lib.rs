//! dbperf-commands: the measuring commands, each from its flags (first stage) to its plan
//! (second stage) and what it carries out: prepare, load, check and cleanup steps directly, and
//! every measured run through the one path of [`dbperf_run`]. The binary puts these flags in its
//! command tree; the lab checks experiment options against the same definitions.
//!
//! | module | owns |
//! |---|---|
//! | [`args`] | the flags the measuring commands share (`--target`, `--target-file`, sysbench's random-number options) and `dbperf sysbench`'s own, sysbench's spellings (`normalize`) |
//! | [`sysbench`] | `dbperf sysbench TEST prepare|prewarm|run|cleanup` |
//! | [`tpcc`] | `dbperf tpcc prepare|run|check|cleanup` |
//! | [`tpch`], [`tpch_run`], [`tpch_throughput`] | `dbperf tpch prepare|qgen|validate|power|throughput|compare` |
//! | [`linkbench`] | `dbperf linkbench load|request|cleanup` |
//! | [`pgbench`] | `dbperf pgbench` (init, the built-in scripts, `-f FILE@W`) |
//! | [`pgbench_cli`] | `dbperf pgbench`'s texts in pgbench's shape: `--help`, `-V`, option-parse errors, the zero values pgbench refuses |
//! | [`pg_login`] | where `dbperf pgbench` connects as pgbench would: `-h -p -U -d`, `PGHOST`/`PGPORT`/`PGUSER`/`PGDATABASE`, `PGPASSWORD` and `~/.pgpass`, composed with `--target` |
//! | [`lua`] | `dbperf lua SCRIPT COMMAND` (the script's own options set aside before clap) |
//! | [`lua_help`] | `dbperf lua --help` and `--version`, shaped as sysbench's |

pub mod args;
pub mod linkbench;
pub mod lua;
pub mod lua_help;
pub mod pg_login;
pub mod pgbench;
pub mod pgbench_cli;
pub mod sysbench;
pub mod tpcc;
pub mod tpch;
pub mod tpch_run;
pub mod tpch_throughput;
