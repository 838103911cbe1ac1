//! `dists.dss`, the reference kit's weighted word lists (kept verbatim as data), read the
//! way dbgen's `read_dist` reads it: `BEGIN name` … `END`, `text|weight` lines, `#`
//! comments, a `COUNT` line, and weights accumulated so `pick` can scan them.

/// The file, as shipped with dbgen 2.17.3 (identical in 2.14).
pub const DISTS_DSS: &str = include_str!("dists.dss");

/// One distribution: members with cumulative weights.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dist {
    /// (text, cumulative weight).
    pub members: Vec<(String, i64)>,
}

impl Dist {
    /// Reads distribution `name` (case-insensitive) from `dists.dss`.
    ///
    /// Panics if it is missing: the file is compiled in, so that is a build defect.
    pub fn named(name: &str) -> Dist {
        let mut members = Vec::new();
        let mut inside = false;
        for line in DISTS_DSS.lines() {
            let line = line.split('#').next().unwrap_or("");
            if line.trim().is_empty() {
                continue;
            }
            if !inside {
                let mut words = line.split_whitespace();
                if words.next().is_some_and(|w| w.eq_ignore_ascii_case("begin"))
                    && words.next().is_some_and(|w| w.eq_ignore_ascii_case(name))
                {
                    inside = true;
                }
                continue;
            }
            if line.len() >= 3 && line[..3].eq_ignore_ascii_case("end") {
                break;
            }
            let Some((text, weight)) = line.split_once('|') else {
                continue;
            };
            let Ok(weight) = weight.trim().parse::<i64>() else {
                continue;
            };
            if text.eq_ignore_ascii_case("count") {
                continue;
            }
            let total = members.last().map_or(0, |m: &(String, i64)| m.1) + weight;
            members.push((text.to_string(), total));
        }
        assert!(!members.is_empty(), "distribution {name} missing from dists.dss");
        Dist { members }
    }

    /// Sum of all weights.
    pub fn total(&self) -> i64 {
        self.members.last().map_or(0, |m| m.1)
    }

    /// The index of the first member whose cumulative weight reaches `j`.
    pub fn index_for(&self, j: i64) -> usize {
        self.members
            .iter()
            .position(|m| m.1 >= j)
            .unwrap_or(self.members.len() - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_weights_cumulatively() {
        let n = Dist::named("nations");
        assert_eq!(n.members.len(), 25);
        // nations' weights are deltas of the region key: the sums are the region keys.
        assert_eq!(n.members[2], ("BRAZIL".to_string(), 1));
        assert_eq!(n.members[20], ("SAUDI ARABIA".to_string(), 4));
        assert_eq!(Dist::named("regions").members[1].0, "AMERICA");
        assert_eq!(Dist::named("p_types").members.len(), 150);
        assert_eq!(Dist::named("Q13b").total(), 160);
    }
}
