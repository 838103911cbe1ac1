//! Whose InnoDB a server runs, read from its `innodb_version`: the one rule the sandboxes'
//! `server add` and the reports' setup block share.

/// The XtraDB release in `innodb_version`, if the InnoDB is Percona's: XtraDB (MariaDB before
/// 10.2, Percona Server 5.x) carries Percona's release number after the MySQL version
/// (`5.6.35-80.0`), MySQL's own InnoDB the server version alone (`8.0.31`, `10.11.5`).
pub fn xtradb_release(innodb_version: &str) -> Option<&str> {
    let (mysql, release) = innodb_version.split_once('-')?;
    let numeric = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit() || c == '.');
    (numeric(mysql) && numeric(release)).then_some(innodb_version)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_release_number_after_the_version_is_xtradb() {
        assert_eq!(xtradb_release("5.6.35-80.0"), Some("5.6.35-80.0"));
        assert_eq!(xtradb_release("5.5.59-MariaDB-38.11"), None);
        assert_eq!(xtradb_release("8.0.31"), None);
        assert_eq!(xtradb_release("10.11.5"), None);
        assert_eq!(xtradb_release("-1"), None);
    }
}
