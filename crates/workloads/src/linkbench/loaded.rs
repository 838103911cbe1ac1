//! The load phase as a command or a lab point runs it, and what a load left behind: the
//! load on the target's family with its summary line ([`load_phase`], [`load_text`]), and
//! the checks `request` makes of what the load recorded in [`META_TABLE`] before it
//! measures on the graph ([`LoadedGraph::read`]).

use super::load::{self, LoadConfig, LoadError, LoadReport};
use super::schema::META_TABLE;
use super::Seeding;
use dbperf_driver::pgwire::PgWireSession;
use dbperf_driver::target::Family;
use dbperf_driver::wire::WireSession;
use dbperf_driver::Session;

/// Runs the load phase with the family's loader session.
pub fn load_phase(cfg: &LoadConfig) -> Result<LoadReport, LoadError> {
    match cfg.family {
        Family::Mysql => load::load::<WireSession>(cfg),
        Family::Postgres => load::load::<PgWireSession>(cfg),
    }
}

/// The line printed before a load starts.
pub fn load_banner(cfg: &LoadConfig) -> String {
    let java = cfg.seeding == Seeding::JavaCompatible;
    format!(
        "Loading ids [{}, {}) into {} with {} loader(s){}, --seed {}{}",
        cfg.model.startid1,
        cfg.model.maxid1,
        cfg.target.database,
        cfg.loaders,
        if java { " and one node loader" } else { "" },
        cfg.seed,
        if java { " (java-compatible streams)" } else { "" }
    )
}

/// The reference's summary of a load (`LOAD PHASE COMPLETED ...`), or what an interrupted
/// load got done and that the graph cannot be measured on.
pub fn load_text(r: &LoadReport, expected_nodes: i64) -> String {
    let secs = r.elapsed.as_secs_f64().max(1e-9);
    if r.interrupted {
        return format!(
            "LOAD PHASE INTERRUPTED. Loaded {} nodes of {expected_nodes}, {} links, {} counts in {secs:.1} seconds. \
             Links/second = {:.0}. The graph is incomplete: load again before measuring requests on it",
            r.nodes,
            r.links,
            r.counts,
            r.links as f64 / secs
        );
    }
    format!(
        "LOAD PHASE COMPLETED. Loaded {} nodes (Expected {expected_nodes}). Loaded {} links ({:.2} links per node), \
         {} counts. Took {secs:.1} seconds. Links/second = {:.0}",
        r.nodes,
        r.links,
        r.links as f64 / r.nodes.max(1) as f64,
        r.counts,
        r.links as f64 / secs
    )
}

/// Why requests cannot run on what the database holds.
#[derive(Debug, thiserror::Error)]
pub enum LoadedError {
    /// No linktable at all.
    #[error("{database} has no linktable: run `dbperf linkbench load --maxid1 N` (same --target) first")]
    NoGraph {
        /// The database.
        database: String,
    },
    /// A load started but did not record that it finished.
    #[error(
        "the LinkBench load in {database} did not finish (it was interrupted, or is still running, or an older \
         dbperf loaded it without recording completion), so the graph lacks nodes and links: run \
         `dbperf linkbench load{again}` (same --target) again, or pass --allow-incomplete-load to measure on it as it is"
    )]
    Incomplete {
        /// The database.
        database: String,
        /// ` --maxid1 N` when the load recorded N.
        again: String,
    },
    /// Neither the load nor the caller says how big the graph is.
    #[error("the load's maxid1 is unknown (no {META_TABLE} table): give --maxid1 as loaded")]
    UnknownSize,
}

/// The graph requests run on: its ids as loaded (or as given) and warnings to show.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadedGraph {
    /// First node id.
    pub startid1: i64,
    /// One past the last node id.
    pub maxid1: i64,
    /// Things that do not stop the run but make it differ from the load (print them).
    pub warnings: Vec<String>,
}

impl LoadedGraph {
    /// Reads what the load recorded and checks the graph is there and whole (an incomplete
    /// one only with `allow_incomplete`). `maxid1` overrides the recorded size, `startid1`
    /// the recorded first id unless it is the default 1; `link_types` is the mix's, compared
    /// with the load's.
    pub async fn read<S: Session>(
        s: &mut S,
        database: &str,
        maxid1: Option<i64>,
        startid1: i64,
        link_types: i64,
        allow_incomplete: bool,
    ) -> Result<LoadedGraph, LoadedError> {
        let recorded_start = load::meta(s, "startid1").await;
        let recorded_max = load::meta(s, "maxid1").await;
        let recorded_types = load::meta(s, "link_type_count").await;
        if s.query_rows("SELECT 1 FROM linktable LIMIT 1").await.is_err() {
            return Err(LoadedError::NoGraph {
                database: database.to_string(),
            });
        }
        let mut warnings = Vec::new();
        if load::meta(s, "complete").await != Some(1) {
            if !allow_incomplete {
                return Err(LoadedError::Incomplete {
                    database: database.to_string(),
                    again: recorded_max.map_or(String::new(), |m| format!(" --maxid1 {m}")),
                });
            }
            warnings.push(format!(
                "the LinkBench load in {database} did not finish; measuring on an incomplete graph (--allow-incomplete-load)"
            ));
        }
        let maxid1 = maxid1.or(recorded_max).ok_or(LoadedError::UnknownSize)?;
        let startid1 = if startid1 != 1 {
            startid1
        } else {
            recorded_start.unwrap_or(1)
        };
        if let Some(t) = recorded_types {
            if t != link_types {
                warnings.push(format!(
                    "the load used link_type_count {t}, the --mix has {link_types}; id2 choices will not match the data"
                ));
            }
        }
        Ok(LoadedGraph {
            startid1,
            maxid1,
            warnings,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_load_text_says_whether_the_graph_is_whole() {
        let mut r = LoadReport {
            nodes: 100,
            links: 450,
            counts: 120,
            elapsed: std::time::Duration::from_secs(2),
            interrupted: false,
        };
        let done = load_text(&r, 100);
        assert!(
            done.starts_with(
                "LOAD PHASE COMPLETED. Loaded 100 nodes (Expected 100). Loaded 450 links (4.50 links per node)"
            ),
            "{done}"
        );
        assert!(done.ends_with("Links/second = 225"), "{done}");
        r.interrupted = true;
        r.nodes = 40;
        let cut = load_text(&r, 100);
        assert!(
            cut.starts_with("LOAD PHASE INTERRUPTED. Loaded 40 nodes of 100"),
            "{cut}"
        );
        assert!(cut.contains("load again before measuring"), "{cut}");
    }
}
