//! A sharded run's own result files, merged for `dbperf merge`: TPC-C's `tpcc.json` and
//! LinkBench's `linkbench.json` and `linkbench-csvstats.csv`, computed again from the merged
//! run's histograms (every measured request of every shard) and, for what a histogram does
//! not hold (TPC-C's rollbacks, retries and errors), from the shards' own files. Any other
//! workload file stays in each shard's run directory, and the merge says so.

use crate::linkbench::config::OP_NAMES;
use crate::linkbench::report as linkbench;
use crate::tpcc::report as tpcc;
use crate::ReportFile;
use dbperf_results::merge::MergedRun;
use dbperf_results::tpcc::{TpccResult, TPCC_FILE};

use crate::linkbench::report::CSVSTATS_FILE as LINKBENCH_CSV;
use dbperf_results::linkbench::LINKBENCH_FILE as LINKBENCH_JSON;

/// Merges the workload files `m`'s shards have and this module knows (see the module
/// documentation) into `m`, and returns the workload's report text for them. A file that
/// cannot be merged stays listed as not merged, with a note saying why.
pub fn merge_own_files(m: &mut MergedRun) -> String {
    let mut text = String::new();
    if m.not_merged.contains_key(TPCC_FILE) {
        match merged_tpcc(m) {
            Ok(result) => {
                text.push_str(&tpcc::final_text(&result));
                m.add_own_file(TPCC_FILE, ReportFile::json(TPCC_FILE, &result).bytes);
            }
            Err(why) => m.notes.push(format!("{TPCC_FILE} not merged: {why}")),
        }
    }
    if m.not_merged.contains_key(LINKBENCH_JSON) {
        let per_op: Vec<_> = OP_NAMES
            .iter()
            .map(|op| m.measured.get(&format!("response:{op}")))
            .collect();
        let stats = linkbench::all_stats(&per_op);
        text.push_str(&linkbench::text(&stats));
        m.add_own_file(LINKBENCH_CSV, linkbench::csv(&stats).into_bytes());
        m.add_own_file(LINKBENCH_JSON, ReportFile::json(LINKBENCH_JSON, &stats).bytes);
    }
    text
}

/// The shards' `tpcc.json` merged with the merged run's per-type histograms.
fn merged_tpcc(m: &MergedRun) -> Result<TpccResult, String> {
    let mut shards = Vec::with_capacity(m.merged.len());
    for shard in &m.merged {
        let path = shard.dir.join(TPCC_FILE);
        let read = std::fs::read(&path).map_err(|e| format!("shard {}: {}: {e}", shard.index, path.display()))?;
        let result: TpccResult =
            serde_json::from_slice(&read).map_err(|e| format!("shard {}: {}: {e}", shard.index, path.display()))?;
        shards.push(result);
    }
    let terminals = usize::try_from(m.record.users).unwrap_or(usize::MAX);
    crate::tpcc::report::merged_result(&shards, |name| m.measured.get(&format!("response:{name}")), terminals)
}
