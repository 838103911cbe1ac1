//! The `schema` key every file of a run directory carries (`dbperf.manifest/2`): a reader takes
//! the versions it knows and older ones, and refuses a newer one by name, with the version it
//! knows and what to do, rather than misread keys that changed meaning.

use serde::{Deserialize, Deserializer};

/// Checks `found` (a file's `schema`) against `known` (what this dbperf writes, the newest it
/// reads): the same kind of file, and a version no newer.
pub fn check(found: &str, known: &str) -> Result<(), String> {
    let split = |s: &str| -> Option<(String, u32)> {
        let (kind, version) = s.rsplit_once('/')?;
        Some((kind.to_string(), version.parse().ok()?))
    };
    let (kind, newest) = split(known).expect("a known schema is KIND/VERSION");
    match split(found) {
        Some((k, v)) if k == kind && v <= newest => Ok(()),
        Some((k, v)) if k == kind => Err(format!(
            "{found} is a newer format than this dbperf {} reads ({known}, version {newest} and older): \
             read it with the dbperf version that wrote it (its manifest's dbperf_version) or a newer one (found version {v})",
            env!("CARGO_PKG_VERSION")
        )),
        _ => Err(format!("schema {found:?} is not {kind}/N: not a file of this kind")),
    }
}

/// A `schema` field that must be `known`'s kind and no newer (for `#[serde(deserialize_with)]`).
pub fn schema<'de, D: Deserializer<'de>>(d: D, known: &str) -> Result<String, D::Error> {
    let found = String::deserialize(d)?;
    check(&found, known).map_err(serde::de::Error::custom)?;
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn older_and_equal_versions_read_newer_ones_are_refused_by_name() {
        assert!(check("dbperf.manifest/1", "dbperf.manifest/2").is_ok());
        assert!(check("dbperf.manifest/2", "dbperf.manifest/2").is_ok());
        let e = check("dbperf.manifest/999", "dbperf.manifest/2").unwrap_err();
        assert!(
            e.contains("dbperf.manifest/999") && e.contains("newer") && e.contains("dbperf.manifest/2"),
            "{e}"
        );
        assert!(check("dbperf.summary/1", "dbperf.manifest/2")
            .unwrap_err()
            .contains("not dbperf.manifest/N"));
        assert!(check("garbage", "dbperf.manifest/2").is_err());
    }
}
