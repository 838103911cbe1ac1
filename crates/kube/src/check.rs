//! What Kubernetes and a sharded Job accept from `dbperf kube`'s flags: DNS-1123 names,
//! Secret keys, node labels, resource quantities, image references, and the user's measuring
//! command, which may not hold `--target`, a password, or the flags the Job sets itself
//! (`--shard`, `--start-at`, `--results-dir`). Every refusal names the flag or the argument
//! and says what to write instead; none repeats a password.

use anyhow::{anyhow, bail};

/// The longest Kubernetes label value and DNS-1123 label; also the longest pod host name.
pub const MAX_LABEL: usize = 63;

/// The longest DNS-1123 subdomain (Secret and PersistentVolumeClaim names).
const MAX_SUBDOMAIN: usize = 253;

/// Checks the user's command: a measuring command, without the flags the Job sets or a
/// password. Each refusal names the argument.
pub fn check_command(command: &[String]) -> anyhow::Result<()> {
    const USAGE: &str = "give a measuring command after --: sysbench TEST run, tpcc run, linkbench request, \
                         pgbench (a script or built-in run), lua SCRIPT run, or tpch throughput";
    let Some(first) = command.first() else {
        bail!("no command: {USAGE}");
    };
    let phase = match first.as_str() {
        "sysbench" | "tpcc" | "lua" => Some("run"),
        "linkbench" => Some("request"),
        "pgbench" => None,
        "tpch" => match command.get(1).map(String::as_str) {
            Some("throughput") => None,
            Some("power") => bail!(
                "`tpch power` is one query stream on one connection, which cannot be spread over clients: give \
                 `tpch throughput --streams N` (each shard runs its share of the streams)"
            ),
            _ => {
                bail!("`tpch` without `throughput`: the TPC-H test a Job can spread over clients is `tpch throughput`")
            }
        },
        other => bail!("{other:?} is not a measuring command: {USAGE}"),
    };
    if let Some(phase) = phase {
        if !command.iter().any(|a| a == phase) {
            bail!(
                "`{first}` without `{phase}`: a sharded run measures, so the command is `{first} ... {phase}` \
                 (prepare the data once, before the Job)"
            );
        }
    }
    // `init`, or pgbench's `-i` (alone or bundled with its other switches, as `-in`).
    let initializes = |a: &String| {
        a == "--initialize"
            || a.strip_prefix('-')
                .is_some_and(|b| b.contains('i') && b.chars().all(|c| "inSN".contains(c)))
    };
    if first == "pgbench" && (command.get(1).is_some_and(|a| a == "init") || command.iter().any(initializes)) {
        bail!("`pgbench init` (or -i) loads data: run it once before the Job, and give the Job the measuring pgbench command");
    }
    for (i, arg) in command.iter().enumerate() {
        let at = format!("argument {} after -- ({})", i + 1, shown(arg));
        if arg.chars().any(char::is_control) {
            bail!("{at} holds a control character (a newline?): give each argument on one line");
        }
        if arg == "--" {
            bail!(
                "{at}: a second `--` would make the flags the Job appends (--shard, --start-at, --results-dir) plain \
                 arguments; leave it out"
            );
        }
        if let Some(body) = arg.strip_prefix("--") {
            let name = body.split_once('=').map_or(body, |(n, _)| n).replace('_', "-");
            match name.as_str() {
                "target" | "target-file" => bail!(
                    "{at}: remove --{name}: every shard reads the target from the Secret (--target-secret) as \
                     DBPERF_TARGET, so no password appears in the Job or in a process list"
                ),
                "shard" | "start-at" | "results-dir" => bail!(
                    "{at}: remove --{name}: the Job sets it for each shard (--shard=$(JOB_COMPLETION_INDEX)/N, \
                     the shared --start-at, --results-dir on the results volume)"
                ),
                n if n.contains("password") => bail!(
                    "{at}: remove --{n}: a password in the Job's arguments is readable by anyone who can read the \
                     Job or see the pod's processes; put it in the target URL in the Secret (--target-secret)"
                ),
                _ => {}
            }
        }
        if url_has_password(arg) {
            bail!(
                "{at} holds a URL with a password: a password in the Job's arguments is readable by anyone who can \
                 read the Job or see the pod's processes; put the URL in the Secret (--target-secret) instead"
            );
        }
    }
    Ok(())
}

/// An argument as an error message may show it: of a URL or a value that may hold a
/// password, only the part before it.
fn shown(arg: &str) -> String {
    let secret = url_has_password(arg) || arg.to_ascii_lowercase().contains("password");
    match (secret, arg.find("://"), arg.find('=')) {
        (false, _, _) => arg.to_string(),
        (true, Some(i), _) => format!("{}…", &arg[..i + 3]),
        (true, None, Some(i)) => format!("{}…", &arg[..=i]),
        (true, None, None) if arg.starts_with("--") => arg.to_string(),
        (true, None, None) => "…".to_string(),
    }
}

/// Whether `arg` holds a URL with a password: `scheme://user:password@host` or a
/// `password=` query parameter (libpq takes one).
fn url_has_password(arg: &str) -> bool {
    let is_scheme = |c: char| c.is_ascii_alphanumeric() || "+-.".contains(c);
    let mut from = 0;
    while let Some(found) = arg[from..].find("://") {
        let sep = from + found;
        let start = arg[..sep]
            .char_indices()
            .rev()
            .find(|&(_, c)| !is_scheme(c))
            .map_or(0, |(j, c)| j + c.len_utf8());
        let end = arg[sep..].find(char::is_whitespace).map_or(arg.len(), |j| sep + j);
        let candidate = &arg[start..end];
        let has_password = match url::Url::parse(candidate) {
            Ok(u) => u.password().is_some() || u.query_pairs().any(|(k, _)| k.eq_ignore_ascii_case("password")),
            // Not a URL the parser takes: look for the user:password@ part by hand.
            Err(_) => arg[sep + 3..end]
                .split('/')
                .next()
                .and_then(|authority| authority.rsplit_once('@'))
                .is_some_and(|(user, _)| user.contains(':')),
        };
        if has_password {
            return true;
        }
        from = sep + 3;
    }
    false
}

/// A DNS-1123 label (Job names, namespaces): at most 63 characters of `a-z`, `0-9` and `-`,
/// starting and ending with a letter or digit.
pub fn dns_label(flag: &str, name: &str) -> anyhow::Result<()> {
    let rule = "a DNS-1123 label: 1 to 63 characters of a-z, 0-9 and '-', starting and ending with a letter or \
                digit (e.g. dbperf-oltp-1)";
    if name.is_empty() || name.len() > MAX_LABEL {
        bail!("{flag} {name:?} has {} characters: it must be {rule}", name.len());
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
    {
        bail!("{flag} {name:?}: {c:?} is not allowed; it must be {rule}");
    }
    if name.starts_with('-') || name.ends_with('-') {
        bail!("{flag} {name:?} starts or ends with '-'; it must be {rule}");
    }
    Ok(())
}

/// A DNS-1123 subdomain (Secret and PersistentVolumeClaim names): DNS-1123 labels joined by
/// dots, at most 253 characters.
pub fn dns_subdomain(flag: &str, name: &str) -> anyhow::Result<()> {
    let rule = "a DNS-1123 subdomain: 1 to 253 characters of a-z, 0-9, '-' and '.', each dot-separated part \
                starting and ending with a letter or digit";
    if name.is_empty() || name.len() > MAX_SUBDOMAIN {
        bail!("{flag} {name:?} has {} characters: it must be {rule}", name.len());
    }
    for part in name.split('.') {
        dns_label(flag, part)
            .map_err(|_| anyhow!("{flag} {name:?}: the part {part:?} is not allowed; it must be {rule}"))?;
    }
    Ok(())
}

/// A key of a Secret: `a-z`, `A-Z`, `0-9`, `-`, `_` and `.`, at most 253 characters.
pub fn secret_key(key: &str) -> anyhow::Result<()> {
    let ok = !key.is_empty()
        && key.len() <= MAX_SUBDOMAIN
        && key.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        && key != "."
        && key != "..";
    if !ok {
        bail!(
            "--target-secret-key {key:?}: a Secret's key has 1 to 253 characters of a-z, A-Z, 0-9, '-', '_' and '.' \
             (e.g. url)"
        );
    }
    Ok(())
}

/// `--node-selector KEY=VALUE`: a label key (`[prefix/]name`) and a label value.
pub fn node_selector(pair: &str) -> anyhow::Result<(String, String)> {
    let Some((key, value)) = pair.split_once('=') else {
        bail!("--node-selector {pair:?}: expected KEY=VALUE, e.g. role=bench-client");
    };
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if let Some(prefix) = prefix {
        dns_subdomain("--node-selector", prefix).map_err(|_| {
            anyhow!("--node-selector {pair:?}: the key's prefix {prefix:?} must be a DNS subdomain (e.g. example.com)")
        })?;
    }
    if name.is_empty() || !label_text(name) {
        bail!(
            "--node-selector {pair:?}: the key {key:?} must be [PREFIX/]NAME with NAME of 1 to 63 characters of \
             a-z, A-Z, 0-9, '-', '_' and '.', starting and ending with a letter or digit"
        );
    }
    if !value.is_empty() && !label_text(value) {
        bail!(
            "--node-selector {pair:?}: the value {value:?} must be empty or 1 to 63 characters of a-z, A-Z, 0-9, \
             '-', '_' and '.', starting and ending with a letter or digit"
        );
    }
    Ok((key.to_string(), value.to_string()))
}

/// A label name or value: at most 63 characters of `[A-Za-z0-9_.-]`, alphanumeric at both ends.
fn label_text(s: &str) -> bool {
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    s.len() <= MAX_LABEL
        && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        && edge(s.chars().next())
        && edge(s.chars().last())
}

/// A Kubernetes quantity above zero (`4`, `500m`, `2Gi`), as `kube_quantity` parses it.
pub fn quantity(flag: &str, text: &str) -> anyhow::Result<()> {
    let parsed = kube_quantity::ParsedQuantity::try_from(text)
        .map_err(|e| anyhow!("{flag} {text:?} is not a Kubernetes quantity ({e}): write e.g. 4, 500m, 2Gi or 512Mi"))?;
    if !parsed.to_bytes_f64().is_some_and(|v| v > 0.0) {
        bail!("{flag} {text:?}: give an amount above zero, e.g. 4, 500m, 2Gi or 512Mi");
    }
    Ok(())
}

/// The image reference: no spaces or control characters (Kubernetes checks the rest when it
/// pulls).
pub fn check_image(image: &str) -> anyhow::Result<()> {
    if image.is_empty() || image.chars().any(|c| c.is_whitespace() || c.is_control()) {
        bail!("--image {image:?}: give an image reference without spaces, e.g. registry.example.com/dbperf:0.1");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        line.split(' ').map(str::to_string).collect()
    }

    fn refusal(line: &str) -> String {
        check_command(&words(line)).unwrap_err().to_string()
    }

    #[test]
    fn dns_labels() {
        for ok in ["a", "dbperf-oltp-1", "0shard", &"x".repeat(63)] {
            dns_label("--name", ok).unwrap();
        }
        for bad in ["", "Dbperf", "db_perf", "-x", "x-", "a.b", "ö", &"x".repeat(64)] {
            let e = dns_label("--name", bad).unwrap_err().to_string();
            assert!(e.starts_with("--name") && e.contains("DNS-1123 label"), "{bad:?}: {e}");
        }
        let e = dns_label("--name", "Dbperf").unwrap_err().to_string();
        assert!(e.contains("'D' is not allowed"), "{e}");
    }

    #[test]
    fn dns_subdomains() {
        for ok in ["db", "db.example.com", "dbperf-results"] {
            dns_subdomain("--results-pvc", ok).unwrap();
        }
        for bad in ["", "db..x", ".db", "db.", "DB", "db_x", &"x".repeat(254)] {
            let e = dns_subdomain("--results-pvc", bad).unwrap_err().to_string();
            assert!(
                e.starts_with("--results-pvc") && e.contains("DNS-1123 subdomain"),
                "{bad:?}: {e}"
            );
        }
    }

    #[test]
    fn node_selectors_and_secret_keys() {
        assert_eq!(node_selector("role=bench").unwrap(), ("role".into(), "bench".into()));
        assert_eq!(
            node_selector("topology.kubernetes.io/zone=eu-1a").unwrap().0,
            "topology.kubernetes.io/zone"
        );
        node_selector("role=").unwrap();
        for bad in [
            "role",
            "=x",
            "role=-x",
            "role=a b",
            "Bad_Prefix/x=1",
            "a/=1",
            &format!("k={}", "v".repeat(64)),
        ] {
            let e = node_selector(bad).unwrap_err().to_string();
            assert!(e.starts_with("--node-selector"), "{bad:?}: {e}");
        }
        for ok in ["url", "mysql-url", "DB_URL", "a.b"] {
            secret_key(ok).unwrap();
        }
        for bad in ["", ".", "a/b", "a b"] {
            assert!(secret_key(bad).unwrap_err().to_string().contains("--target-secret-key"));
        }
    }

    #[test]
    fn quantities() {
        for ok in ["4", "500m", "0.5", "2Gi", "512Mi", "1e3"] {
            quantity("--cpu", ok).unwrap();
        }
        for bad in ["0", "-1", "2GB", "abc", "", " 4", "1.2.3"] {
            let e = quantity("--memory", bad).unwrap_err().to_string();
            assert!(e.starts_with("--memory") && e.contains("2Gi"), "{bad:?}: {e}");
        }
    }

    #[test]
    fn measuring_commands_pass() {
        for ok in [
            "sysbench oltp_point_select run --threads 48 --time 300",
            "tpcc run --warehouses 10",
            "linkbench request --maxid1 1000",
            "pgbench -c 8 -T 60 select-only",
            "lua oltp_read_write.lua run --threads=8",
            "sysbench oltp_read_write run --db-ps-mode=disable",
            "tpch throughput --streams 8 --seed 101000000",
        ] {
            check_command(&words(ok)).unwrap_or_else(|e| panic!("{ok}: {e}"));
        }
        assert!(refusal("tpch power --repeat 3").contains("one query stream"));
        assert!(refusal("tpch prepare --sf 1").contains("without `throughput`"));
    }

    #[test]
    fn flags_the_job_sets_are_refused_by_name() {
        for (line, flag) in [
            ("sysbench oltp_point_select run --shard 0/3", "--shard"),
            ("sysbench oltp_point_select run --shard=0/3", "--shard"),
            ("tpcc run --start-at=1767268800", "--start-at"),
            ("tpcc run --start_at 1767268800", "--start-at"),
            ("linkbench request --results-dir /tmp/x", "--results-dir"),
            ("linkbench request --results_dir=/tmp/x", "--results-dir"),
            ("sysbench oltp_point_select run --target sandbox:a", "--target"),
            (
                "sysbench oltp_point_select run --target-file /etc/target",
                "--target-file",
            ),
        ] {
            let e = refusal(line);
            assert!(e.contains(&format!("remove {flag}:")), "{line}: {e}");
        }
        assert!(refusal("tpcc run --target=sandbox:a").contains("--target-secret"));
    }

    #[test]
    fn passwords_are_refused_without_being_repeated() {
        for line in [
            "sysbench oltp_point_select run --target=mysql://sb:S3cret@db:3306/sbtest",
            "sysbench oltp_point_select run mysql://sb:S3cret@db:3306/sbtest",
            "pgbench -c 8 postgres://sb@db/bench?password=S3cret",
            "lua x.lua run --mysql-password=S3cret",
            "lua x.lua run --mysql_password S3cret",
            "lua x.lua run --pgsql-password=S3cret",
            "lua x.lua run --dsn=mysql://sb:S3cret@[::1]:3306",
            "lua x.lua run --dsn=weird+scheme://sb:S3cret@host:notaport",
        ] {
            let e = refusal(line);
            assert!(e.contains("password"), "{line}: {e}");
            assert!(!e.contains("S3cret"), "{line}: {e}");
        }
        // A URL without a password is not a secret.
        check_command(&words("lua x.lua run --report-url=http://example.com/a")).unwrap();
    }

    #[test]
    fn other_commands_are_refused_with_what_to_give() {
        for (line, says) in [
            ("server start mariadb", "not a measuring command"),
            ("sysbench oltp_point_select prepare", "without `run`"),
            ("linkbench load", "without `request`"),
            ("pgbench init -s 10", "`pgbench init`"),
            ("pgbench -i -s 10", "`pgbench init`"),
            ("pgbench -s 10 -in", "`pgbench init`"),
            ("sysbench oltp_point_select run -- x", "second `--`"),
            ("tpcc run --x=a\nb", ""),
        ] {
            let e = refusal(line);
            assert!(e.contains(says), "{line}: {e}");
        }
        let e = check_command(&["tpcc".into(), "run".into(), "a\nb".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("control character") && e.contains("argument 3"), "{e}");
        assert!(check_command(&[]).unwrap_err().to_string().contains("no command"));
    }
}
