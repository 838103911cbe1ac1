//! dbperf-core: the ground every other crate stands on. It knows no database, no workload and no
//! file format; each rule here exists once.
//!
//! | module | owns |
//! |---|---|
//! | [`bounds`] | the allowed range of every duration and count (flags, experiment files, shards), the one duration parser |
//! | [`size`] | the one size parser (`512M`, `2G`, `64kB`) |
//! | [`clock`] | the wall clock as numbers: milliseconds since the epoch, a seed from the clock, a start instant (`--start-at`) |
//! | [`interrupt`] | Ctrl-C: the process-wide interrupted flag, the handler of long commands, cleanups for an exit that skips destructors |
//! | [`stats`] | statistics: median and range, mean and coefficient of variation, quantiles, geometric mean, the one draw rule |
//! | [`cpus`] | CPU lists (`0-3,6`) and pinning processes to them |
//! | [`exit`] | the exit codes of every command, in one table |
//! | [`innodb`] | whose InnoDB a server runs (XtraDB's release in `innodb_version`) |
//! | [`nofollow`] | writing files without following a link planted in their place: `O_NOFOLLOW` opens, atomic replacement, checked directories |

pub mod bounds;
pub mod clock;
pub mod cpus;
pub mod exit;
pub mod innodb;
pub mod interrupt;
pub mod nofollow;
pub mod size;
pub mod stats;
