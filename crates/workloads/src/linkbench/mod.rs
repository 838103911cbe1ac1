//! LinkBench, Facebook's social-graph benchmark: the schema per family, the parallel
//! streaming loader of nodes, links and counts, the ten request operations with the
//! reference's access distributions and id2 choice, and its latency-bucket report.
//!
//! Files: `jrand` (java.util.Random and SHA1PRNG), `dist` (Zipf, geometric, log-normal,
//! shuffler, out-degrees, motif payloads), `config` (properties and mixes), `schema`
//! (tables and SQL per family), `load` (the load phase), `loaded` (the load as a command
//! runs it, and the checks of what a load recorded before requests), `request` (a requester and its
//! operations), `report` (LinkBench's buckets and `-csvstats` file).

pub mod config;
pub mod dist;
pub mod jrand;
pub mod load;
pub mod loaded;
pub mod report;
pub mod request;
pub mod schema;

use dbperf_engine::{OpTable, TxnError, Workload};

use self::config::{Workload as Mix, OP_NAMES};
use self::dist::{
    Cdf, IdDist, InvertibleShuffler, LinkCounts, LogNormal, NLINKS_SHUFFLER_SEED, NODE_SHUFFLER_SEED, SHUFFLER_GROUPS,
    UNCORR_SHUFFLER_SEED,
};
use self::jrand::{derive_seed, JavaRandom, Sha1Prng};
use self::request::Requester;
use self::schema::STATEMENT_NAMES;
use dbperf_driver::mysql::IgnoreErrors;
use dbperf_driver::{Session, Target};

/// The reference's distribution file (`config/Distribution.dat`).
pub const DISTRIBUTION_DAT: &str = include_str!("Distribution.dat");
/// Type of link i is `LINK_TYPE_BASE + i`.
pub const LINK_TYPE_BASE: i64 = 123_456_789;
/// Type of every node.
pub const NODE_TYPE: i64 = 2048;
/// Rows a link list returns at most.
pub const RANGE_LIMIT: i64 = 10_000;
/// Link payloads are shorter than this.
pub const MAX_LINK_DATA: i64 = 255;
/// Node payloads are shorter than this.
pub const MAX_NODE_DATA: i64 = 1024 * 1024;
/// σ of the log-normal payload sizes.
pub const DATASIZE_SIGMA: f64 = 1.0;

/// An id distribution with the shuffler applied to its draws.
#[derive(Clone, Debug)]
pub struct Access {
    /// The distribution of unshuffled ids.
    pub dist: IdDist,
    /// Scatters them over the id space.
    pub shuffler: InvertibleShuffler,
}

/// Everything that the load and the requesters share and never change: id range,
/// out-degrees, access distributions and payload sizes.
#[derive(Clone, Debug)]
pub struct Model {
    /// The workload.
    pub mix: Mix,
    /// First id.
    pub startid1: i64,
    /// One past the last loaded id.
    pub maxid1: i64,
    /// Out-degrees per (id1, type).
    pub links: LinkCounts,
    /// Link reads, and the uncorrelated reads with their blend.
    pub read: Access,
    pub read_uncorr: Option<(Access, f64)>,
    /// Link writes, and the uncorrelated writes with their blend.
    pub write: Access,
    pub write_uncorr: Option<(Access, f64)>,
    /// Node reads, updates, deletes.
    pub node_read: Access,
    pub node_update: Access,
    pub node_delete: Access,
    /// Payload sizes.
    pub link_size: LogNormal,
    pub node_size: LogNormal,
}

impl Model {
    /// The model of ids `[startid1, maxid1)` under `mix`.
    pub fn new(mix: Mix, startid1: i64, maxid1: i64) -> Result<Model, String> {
        if startid1 < 1 {
            return Err(format!("startid1 must be at least 1, got {startid1}"));
        }
        if maxid1 <= startid1 + 1 {
            return Err(format!(
                "--maxid1 {maxid1} must be above startid1 + 1 ({}): it is one past the last node id",
                startid1 + 1
            ));
        }
        if maxid1 - startid1 > i32::MAX as i64 {
            return Err(format!("--maxid1 {maxid1}: at most 2^31 - 1 ids are supported"));
        }
        let n = maxid1 - startid1;
        let cdf = Cdf::parse(DISTRIBUTION_DAT, "nlinks")?;
        let corr = InvertibleShuffler::new(NLINKS_SHUFFLER_SEED, SHUFFLER_GROUPS, n);
        let uncorr = InvertibleShuffler::new(UNCORR_SHUFFLER_SEED, SHUFFLER_GROUPS, n);
        let node = InvertibleShuffler::new(NODE_SHUFFLER_SEED, SHUFFLER_GROUPS, n);
        let access = |a: config::Access, shuffler: &InvertibleShuffler| Access {
            dist: a.over(startid1, maxid1),
            shuffler: shuffler.clone(),
        };
        Ok(Model {
            links: LinkCounts::new(cdf, startid1, maxid1, mix.link_types),
            read: access(mix.read, &corr),
            read_uncorr: mix.read_uncorr.map(|(a, b)| (access(a, &uncorr), b)),
            write: access(mix.write, &corr),
            write_uncorr: mix.write_uncorr.map(|(a, b)| (access(a, &uncorr), b)),
            node_read: access(mix.node_read, &node),
            node_update: access(mix.node_update, &node),
            node_delete: access(mix.node_delete, &node),
            link_size: LogNormal::new(0, MAX_LINK_DATA, mix.link_datasize, DATASIZE_SIGMA),
            node_size: LogNormal::new(0, MAX_NODE_DATA, mix.node_datasize, DATASIZE_SIGMA),
            mix,
            startid1,
            maxid1,
        })
    }
}

/// How the random streams are seeded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seeding {
    /// As the reference: a SHA1PRNG master seeded with the seed gives each stream its
    /// `java.util.Random` seed, in the reference's order.
    JavaCompatible,
    /// dbperf's: each stream (requester, load chunk) seeded from (seed, stream number), so
    /// a parallel load gives the same rows as a serial one.
    PerStream,
}

/// The request phase's random generators, one per requester.
pub fn requester_rngs(seeding: Seeding, seed: i64, requesters: usize) -> Vec<JavaRandom> {
    match seeding {
        Seeding::JavaCompatible => {
            let mut master = Sha1Prng::linkbench_master(seed);
            (0..requesters)
                .map(|_| {
                    let mut r = JavaRandom::new(master.next_long());
                    // Drawn for a debug log line at the start of every requester thread.
                    r.next_long();
                    r
                })
                .collect()
        }
        Seeding::PerStream => (0..requesters)
            .map(|i| JavaRandom::new(derive_seed(seed as u64, 1_000_000 + i as u64)))
            .collect(),
    }
}

/// A request run's shared definition, on sessions of type `S`.
pub struct LinkBenchWorkload<S> {
    /// Where.
    pub target: Target,
    /// Errors to retry.
    pub ignore: IgnoreErrors,
    /// Ids, distributions, mix.
    pub model: std::sync::Arc<Model>,
    /// One generator per requester, taken when it connects.
    pub rngs: std::sync::Mutex<Vec<Option<JavaRandom>>>,
    /// Phantom session type.
    pub session: std::marker::PhantomData<fn() -> S>,
}

impl<S: Session + 'static> Workload for LinkBenchWorkload<S> {
    type Worker = Requester<S>;

    fn ops(&self) -> OpTable {
        OpTable {
            transactions: OP_NAMES.iter().map(|s| s.to_string()).collect(),
            statements: STATEMENT_NAMES.iter().map(|s| s.to_string()).collect(),
        }
    }

    async fn connect(&self, worker: usize) -> Result<Requester<S>, TxnError> {
        let rng = self
            .rngs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_mut(worker)
            .and_then(Option::take)
            .unwrap_or_else(|| JavaRandom::new(derive_seed(worker as u64, 7)));
        let rw = S::connect(&self.target, self.ignore.clone()).await?;
        let ro = S::connect(&self.target, self.ignore.clone()).await?;
        Ok(Requester::new(rw, ro, self.target.family, std::sync::Arc::clone(&self.model), rng).await?)
    }
}
