//! The one size parser: a whole number of bytes with an optional binary multiple, as servers and
//! sysbench write them (`512M`, `2G`, `64k`) and PostgreSQL with a `B` (`512MB`, `64kB`).

/// Parses a size such as `512M`, `2G`, `64kB`, `1073741824` into bytes (K, M, G, T, P, E are
/// binary multiples, with or without a trailing `B`); `None` when it is not one or overflows.
pub fn parse_size(s: &str) -> Option<u64> {
    let t = s.trim();
    // PostgreSQL spells units with a B (`512MB`, `1GB`, `64kB`).
    let t = match t.strip_suffix('B') {
        Some(rest) if rest.ends_with(|c: char| "kKMGTPE".contains(c)) => rest,
        _ => t,
    };
    let (num, mult) = match t.chars().last()?.to_ascii_uppercase() {
        'K' => (&t[..t.len() - 1], 1u64 << 10),
        'M' => (&t[..t.len() - 1], 1 << 20),
        'G' => (&t[..t.len() - 1], 1 << 30),
        'T' => (&t[..t.len() - 1], 1 << 40),
        'P' => (&t[..t.len() - 1], 1 << 50),
        'E' => (&t[..t.len() - 1], 1 << 60),
        _ => (t, 1),
    };
    num.trim().parse::<u64>().ok()?.checked_mul(mult)
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes_take_binary_multiples_with_or_without_a_b() {
        assert_eq!(parse_size("1073741824"), Some(1 << 30));
        assert_eq!(parse_size("512M"), Some(512 << 20));
        assert_eq!(parse_size("512MB"), Some(512 << 20));
        assert_eq!(parse_size("64kB"), Some(64 << 10));
        assert_eq!(parse_size(" 2g "), Some(2 << 30));
        assert_eq!(parse_size("1E"), Some(1 << 60));
        assert_eq!(parse_size("16E"), None);
        assert_eq!(parse_size("1.5G"), None);
        assert_eq!(parse_size("M"), None);
        assert_eq!(parse_size(""), None);
    }
}
