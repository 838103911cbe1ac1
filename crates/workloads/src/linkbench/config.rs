//! The workload configuration: LinkBench's properties (`FBWorkload.properties` embedded as
//! the default, the 2017 mix, or a user's file on top), validated into a [`Workload`] of
//! plain numbers. Errors name the key (and the file) and say what is expected.

use std::collections::BTreeMap;

use super::dist::{Geometric, IdDist, Zipf};

/// The reference's 2011 Facebook workload (`config/FBWorkload.properties`).
pub const FB2011: &str = include_str!("FBWorkload.properties");

/// Differences of the 2017 workload (mdcallag/linkbench) from [`FB2011`].
pub const FB2017_OVERRIDES: &str = "\
addlink = 5.35038
deletelink = 0.98401
updatelink = 4.75589
countlink = 4.27898
getlink = 12.14725
getlinklist = 22.57039
getnode = 43.9869
addnode = 2.61198
updatenode = 3.06256
deletenode = 0.25166
link_datasize = 23
node_datasize = 168
";

/// Operation types, in the reference's `LinkBenchOp` order (the report's order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u16)]
pub enum Op {
    AddNode,
    UpdateNode,
    DeleteNode,
    GetNode,
    AddLink,
    DeleteLink,
    UpdateLink,
    CountLink,
    MultigetLink,
    GetLinksList,
}

impl Op {
    /// Every op, in report order.
    pub const ALL: [Op; 10] = [
        Op::AddNode,
        Op::UpdateNode,
        Op::DeleteNode,
        Op::GetNode,
        Op::AddLink,
        Op::DeleteLink,
        Op::UpdateLink,
        Op::CountLink,
        Op::MultigetLink,
        Op::GetLinksList,
    ];

    /// The order the request loop tests the cumulative mix in.
    pub const DRAW_ORDER: [Op; 10] = [
        Op::AddLink,
        Op::DeleteLink,
        Op::UpdateLink,
        Op::CountLink,
        Op::MultigetLink,
        Op::GetLinksList,
        Op::AddNode,
        Op::UpdateNode,
        Op::DeleteNode,
        Op::GetNode,
    ];

    /// The reference's name.
    pub fn name(self) -> &'static str {
        OP_NAMES[self as usize]
    }

    /// The property holding its percentage.
    pub fn key(self) -> &'static str {
        match self {
            Op::AddNode => "addnode",
            Op::UpdateNode => "updatenode",
            Op::DeleteNode => "deletenode",
            Op::GetNode => "getnode",
            Op::AddLink => "addlink",
            Op::DeleteLink => "deletelink",
            Op::UpdateLink => "updatelink",
            Op::CountLink => "countlink",
            Op::MultigetLink => "getlink",
            Op::GetLinksList => "getlinklist",
        }
    }
}

/// Names of [`Op`], as the reference prints them.
pub const OP_NAMES: [&str; 10] = [
    "ADD_NODE",
    "UPDATE_NODE",
    "DELETE_NODE",
    "GET_NODE",
    "ADD_LINK",
    "DELETE_LINK",
    "UPDATE_LINK",
    "COUNT_LINK",
    "MULTIGET_LINK",
    "GET_LINKS_LIST",
];

/// Properties: `key = value` lines, `#` comments, later sources overriding earlier ones;
/// each value remembers where it came from for error messages.
#[derive(Clone, Debug, Default)]
pub struct Props {
    values: BTreeMap<String, (String, String)>,
}

impl Props {
    /// Adds the lines of `text` (from `origin`, e.g. a file name).
    pub fn merge(&mut self, text: &str, origin: &str) -> Result<(), String> {
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
                continue;
            }
            let (k, v) = line
                .split_once('=')
                .or_else(|| line.split_once(':'))
                .ok_or_else(|| format!("{origin}:{}: expected key = value, got {line:?}", n + 1))?;
            self.values.insert(
                k.trim().to_string(),
                (v.trim().to_string(), format!("{origin}:{}", n + 1)),
            );
        }
        Ok(())
    }

    /// Sets one value (a command-line override).
    pub fn set(&mut self, key: &str, value: &str, origin: &str) {
        self.values
            .insert(key.to_string(), (value.to_string(), origin.to_string()));
    }

    fn raw(&self, key: &str) -> Result<&(String, String), String> {
        self.values
            .get(key)
            .ok_or_else(|| format!("the workload has no {key:?}: add `{key} = ...` to the --mix file"))
    }

    /// A number.
    pub fn f64(&self, key: &str) -> Result<f64, String> {
        let (v, at) = self.raw(key)?;
        v.parse().map_err(|_| format!("{at}: {key} = {v:?} is not a number"))
    }

    /// An integer.
    pub fn i64(&self, key: &str) -> Result<i64, String> {
        let (v, at) = self.raw(key)?;
        v.parse().map_err(|_| format!("{at}: {key} = {v:?} is not an integer"))
    }

    /// A number, or `default` when absent.
    pub fn f64_or(&self, key: &str, default: f64) -> Result<f64, String> {
        if self.values.contains_key(key) {
            self.f64(key)
        } else {
            Ok(default)
        }
    }

    fn string(&self, key: &str) -> Result<&(String, String), String> {
        self.raw(key)
    }
}

/// A payload generator's settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GenSpec {
    /// Smallest byte.
    pub start: u8,
    /// Largest byte.
    pub end: u8,
    /// Share of 128-byte chunks that are fresh random bytes.
    pub uniqueness: f64,
}

/// An access distribution: its shape (Zipf θ) or uniform.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Access {
    /// Zipf with this shape.
    Zipf(f64),
    /// Uniform.
    Uniform,
}

impl Access {
    /// The distribution over `[min, max)`.
    pub fn over(self, min: i64, max: i64) -> IdDist {
        match self {
            Access::Zipf(shape) => IdDist::Zipf(Zipf::new(min, max, shape)),
            Access::Uniform => IdDist::Uniform { min, max },
        }
    }
}

/// The validated workload.
#[derive(Clone, Debug)]
pub struct Workload {
    /// Link types (123456789 + i).
    pub link_types: i64,
    /// Median link payload.
    pub link_datasize: f64,
    /// Median node payload.
    pub node_datasize: f64,
    /// Generators: link add, link update, node add, node update.
    pub link_add: GenSpec,
    pub link_up: GenSpec,
    pub node_add: GenSpec,
    pub node_up: GenSpec,
    /// Percent of each op, indexed by [`Op`].
    pub mix: [f64; 10],
    /// Probability (0..1) that a getlinklist asks for older history from the cache.
    pub history: f64,
    /// Link reads, the uncorrelated reads and their blend (0..1).
    pub read: Access,
    pub read_uncorr: Option<(Access, f64)>,
    /// Link writes and their uncorrelated blend. The reference reads the latter from the
    /// `read_uncorr_*` keys (its `WRITE_UNCORR_CONFIG_PREFIX` bug), and so does this.
    pub write: Access,
    pub write_uncorr: Option<(Access, f64)>,
    /// Node reads, updates, deletes.
    pub node_read: Access,
    pub node_update: Access,
    pub node_delete: Access,
    /// Multiget sizes.
    pub multiget: Geometric,
}

fn access(p: &Props, prefix: &str) -> Result<Access, String> {
    let key = format!("{prefix}function");
    let (f, at) = p.string(&key)?;
    if f.ends_with("ZipfDistribution") {
        Ok(Access::Zipf(p.f64(&format!("{prefix}shape"))?))
    } else if f.ends_with("UniformDistribution") {
        Ok(Access::Uniform)
    } else {
        Err(format!(
            "{at}: {key} = {f:?} is not supported: use com.facebook.LinkBench.distributions.ZipfDistribution (with {prefix}shape) or UniformDistribution"
        ))
    }
}

fn gen(p: &Props, prefix: &str) -> Result<GenSpec, String> {
    let key = prefix.trim_end_matches('_');
    let (class, at) = p.string(key)?;
    if !class.ends_with("MotifDataGenerator") {
        return Err(format!(
            "{at}: {key} = {class:?} is not supported: use com.facebook.LinkBench.generators.MotifDataGenerator"
        ));
    }
    let byte = |k: &str| -> Result<u8, String> {
        let v = p.i64(&format!("{prefix}{k}"))?;
        u8::try_from(v).map_err(|_| format!("{prefix}{k} = {v} must be a byte value 0..255"))
    };
    let (start, end) = (byte("startbyte")?, byte("endbyte")?);
    if start >= end {
        return Err(format!(
            "{prefix}startbyte ({start}) must be below {prefix}endbyte ({end})"
        ));
    }
    Ok(GenSpec {
        start,
        end,
        uniqueness: p.f64(&format!("{prefix}uniqueness"))?,
    })
}

fn blend(p: &Props, prefix: &str) -> Result<Option<(Access, f64)>, String> {
    let key = format!("{prefix}blend");
    if !p.values.contains_key(&key) {
        return Ok(None);
    }
    let b = p.f64(&key)? / 100.0;
    if b > 0.0 {
        Ok(Some((access(p, prefix)?, b)))
    } else {
        Ok(None)
    }
}

impl Workload {
    /// Validates properties into a workload.
    pub fn from_props(p: &Props) -> Result<Workload, String> {
        let mut mix = [0.0; 10];
        for op in Op::ALL {
            mix[op as usize] = match op {
                Op::AddNode | Op::UpdateNode | Op::DeleteNode | Op::GetNode => p.f64_or(op.key(), 0.0)?,
                _ => p.f64(op.key())?,
            };
            if mix[op as usize] < 0.0 {
                return Err(format!("{} = {} must not be negative", op.key(), mix[op as usize]));
            }
        }
        let total: f64 = Op::DRAW_ORDER.iter().map(|&o| mix[o as usize]).sum();
        if (total - 100.0).abs() > 1e-5 {
            return Err(format!(
                "the op percentages (addlink ... getnode) add up to {total}, not 100: fix the --mix file"
            ));
        }
        let link_types = p.i64("link_type_count")?;
        if link_types < 1 {
            return Err(format!("link_type_count = {link_types} must be at least 1"));
        }
        let nodes = mix[Op::GetNode as usize]
            + mix[Op::AddNode as usize]
            + mix[Op::UpdateNode as usize]
            + mix[Op::DeleteNode as usize]
            > 0.0;
        let (node_read, node_update, node_delete) = if nodes {
            (
                access(p, "node_read_")?,
                access(p, "node_update_")?,
                access(p, "node_delete_")?,
            )
        } else {
            (Access::Uniform, Access::Uniform, Access::Uniform)
        };
        let multiget = match p.values.get("link_multiget_dist") {
            Some((c, at)) if !c.trim().is_empty() => {
                if !c.ends_with("GeometricDistribution") {
                    return Err(format!(
                        "{at}: link_multiget_dist = {c:?} is not supported: use GeometricDistribution"
                    ));
                }
                Geometric {
                    min: p.i64("link_multiget_dist_min")?,
                    max: p.i64("link_multiget_dist_max")?,
                    p: p.f64("link_multiget_dist_prob")?,
                }
            }
            _ => Geometric { min: 1, max: 2, p: 1.0 },
        };
        Ok(Workload {
            link_types,
            link_datasize: p.f64("link_datasize")?,
            node_datasize: p.f64("node_datasize")?,
            link_add: gen(p, "link_add_datagen_")?,
            link_up: gen(p, "link_up_datagen_")?,
            node_add: gen(p, "node_add_datagen_")?,
            node_up: gen(p, "node_up_datagen_")?,
            mix,
            history: p.f64_or("getlinklist_history", 0.0)? / 100.0,
            read: access(p, "read_")?,
            read_uncorr: blend(p, "read_uncorr_")?,
            write: access(p, "write_")?,
            // The reference's WRITE_UNCORR_CONFIG_PREFIX is "read_uncorr_".
            write_uncorr: blend(p, "read_uncorr_")?,
            node_read,
            node_update,
            node_delete,
            multiget,
        })
    }

    /// Whether node operations run (the reference sets them up only then).
    pub fn has_node_ops(&self) -> bool {
        [Op::AddNode, Op::UpdateNode, Op::DeleteNode, Op::GetNode]
            .iter()
            .any(|&o| self.mix[o as usize] > 0.0)
    }
}

/// The properties of `--mix`: `fb2011` (the default), `fb2017`, or a file whose keys
/// override fb2011's.
pub fn mix_props(mix: &str) -> Result<Props, String> {
    let mut p = Props::default();
    p.merge(FB2011, "FBWorkload.properties")?;
    match mix {
        "fb2011" => {}
        "fb2017" => p.merge(FB2017_OVERRIDES, "fb2017")?,
        path => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("--mix {path}: {e} (use fb2011, fb2017 or a properties file)"))?;
            p.merge(&text, path)?;
        }
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fb2011_defaults() {
        let w = Workload::from_props(&mix_props("fb2011").unwrap()).unwrap();
        assert_eq!(w.mix[Op::GetLinksList as usize], 50.7119145);
        assert_eq!(w.link_types, 2);
        assert!((w.history - 0.003).abs() < 1e-12);
        assert_eq!(w.read, Access::Zipf(0.8));
        // The write blend comes from read_uncorr_* (99.5% of Zipf .8), not write_uncorr_*.
        assert_eq!(w.write_uncorr, Some((Access::Zipf(0.8), 0.995)));
        assert_eq!(w.write, Access::Zipf(0.741));
        assert_eq!(w.node_delete, Access::Uniform);
        assert_eq!(
            w.link_add,
            GenSpec {
                start: 32,
                end: 100,
                uniqueness: 0.225
            }
        );
    }

    #[test]
    fn fb2017_and_bad_mixes() {
        let w = Workload::from_props(&mix_props("fb2017").unwrap()).unwrap();
        assert_eq!(w.mix[Op::GetNode as usize], 43.9869);
        assert_eq!(w.link_datasize, 23.0);
        let mut p = mix_props("fb2011").unwrap();
        p.set("addlink", "10", "test");
        let e = Workload::from_props(&p).unwrap_err();
        assert!(e.contains("add up to") && e.contains("not 100"), "{e}");
        let mut p = mix_props("fb2011").unwrap();
        p.set("read_function", "real", "cli");
        let e = Workload::from_props(&p).unwrap_err();
        assert!(e.contains("read_function") && e.contains("not supported"), "{e}");
        assert!(mix_props("/nonexistent.properties").unwrap_err().contains("--mix"));
    }
}
