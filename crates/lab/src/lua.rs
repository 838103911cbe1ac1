//! Users' scripts in experiment files: `kind = "lua"` (a sysbench 1.0 Lua script run by `dbperf
//! lua`) and the script files of `kind = "pgbench"` (`files`, `builtins`, `define`, `protocol`,
//! run by `dbperf pgbench -f/-b/-D/-M`). Owns finding the files (relative to the experiment
//! file, or sysbench's own scripts by name), reading the options a Lua script declares and
//! checking the file's `options` against them, which options shape a Lua data set, and whether
//! a Lua script writes.
//!
//! The checks are made when the file is read, so a typo in an option, a missing script or a
//! pgbench script that does not parse is an error at its `file:line:column`, not a failed
//! prepare an hour into the experiment.

use dbperf_commands::lua::LuaArgs;
use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use toml::{Spanned, Value};

use dbperf_workloads::lua::api::{self, Shared};
use dbperf_workloads::lua::options::{self as lua_options, OptDef};
use dbperf_workloads::pgbench::Script;

/// An error at a span of the experiment file.
type At = (Range<usize>, String);

/// Where sysbench keeps its scripts; a script named without a path is looked for there.
pub const SYSBENCH_DIRS: &[&str] = &["/usr/share/sysbench", "/usr/local/share/sysbench"];

/// sysbench's own scripts that only read: a workload running one of them restores its data
/// once per server start (`restore = "variant"`) unless the file says otherwise. Any other
/// script, and a script of the same name elsewhere, is taken to write (every point starts
/// from the prepared copy), since the lab cannot tell what a script does.
const READ_ONLY_SCRIPTS: &[&str] = &[
    "oltp_read_only",
    "oltp_point_select",
    "select_random_points",
    "select_random_ranges",
];

/// The options of sysbench's `oltp_common.lua` that shape the tables its `prepare` creates.
/// Scripts of sysbench's own that build on it share a data set when these agree (so
/// `oltp_read_only` and `oltp_write_only` at 4 tables of 10,000 rows prepare once).
const OLTP_DATA_OPTIONS: &[&str] = &[
    "tables",
    "table_size",
    "auto_inc",
    "create_secondary",
    "create_table_options",
    "mysql_storage_engine",
    "pgsql_variant",
    "secondary",
];

/// A `kind = "lua"` workload's own keys, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Lua {
    /// The script, as the child `dbperf lua` gets it (absolute, or as found in sysbench's
    /// directory).
    pub script: PathBuf,
    /// Its file stem, for labels (`oltp_read_write`).
    pub name: String,
    /// The script's own options, `--name=value` for prepare and run, in the file's order.
    pub options: Vec<(String, String)>,
    /// `dbperf lua`'s general options the file gives (`rand_type`, `db_ps_mode`, `rate`, ...).
    pub general: Vec<(String, String)>,
    /// The script builds on sysbench's `oltp_common.lua`: its data set is oltp_common's tables
    /// at [`OLTP_DATA_OPTIONS`].
    pub oltp_common: bool,
    /// One of sysbench's read-only scripts ([`READ_ONLY_SCRIPTS`]).
    pub read_only: bool,
    /// The script offers a `prewarm` command (run after every server start with `prewarm`).
    pub prewarm: bool,
    /// The defaults the script declares, as text: an option given at its default does not make
    /// another data set.
    pub defaults: Vec<(String, String)>,
}

impl Lua {
    /// What the data set of this workload is: who prepares it and the options that shape it.
    pub fn data(&self) -> (String, Vec<(String, String)>) {
        let options = self
            .options
            .iter()
            .filter(|(k, _)| !self.oltp_common || OLTP_DATA_OPTIONS.contains(&k.as_str()))
            .filter(|(k, v)| !self.defaults.iter().any(|(dk, dv)| dk == k && dv == v))
            .cloned()
            .collect();
        if self.oltp_common {
            ("oltp_common".into(), options)
        } else {
            (self.script.display().to_string(), options)
        }
    }

    /// `--quick`: at most 2,000 rows per table where the script takes `table_size`.
    pub fn quick(&mut self) {
        for (k, v) in &mut self.options {
            if k == "table_size" {
                if let Ok(n) = v.parse::<u64>() {
                    *v = n.min(2000).to_string();
                }
            }
        }
    }
}

/// Finds `value` (a `script` or `files` entry): a path relative to `base` (the experiment
/// file's directory) or absolute, else, for a bare name, a script of sysbench's own
/// (`oltp_read_write` or `oltp_read_write.lua`) when `sysbench` is set.
pub fn find_file(value: &str, base: &Path, sysbench: bool) -> Result<PathBuf, String> {
    let v = value.trim();
    if v.is_empty() {
        return Err("the path is empty".into());
    }
    let p = base.join(v);
    if p.is_file() {
        return Ok(std::path::absolute(&p).unwrap_or(p));
    }
    if sysbench && !v.contains('/') {
        for dir in SYSBENCH_DIRS {
            for candidate in [format!("{dir}/{v}"), format!("{dir}/{v}.lua")] {
                if Path::new(&candidate).is_file() {
                    return Ok(PathBuf::from(candidate));
                }
            }
        }
    }
    let tried = if Path::new(v).is_absolute() {
        format!("{v} is not a file")
    } else {
        format!(
            "{} is not a file (a relative path is read from the experiment file's directory)",
            std::path::absolute(&p).unwrap_or(p).display()
        )
    };
    Err(if sysbench && !v.contains('/') {
        format!(
            "no script {v:?}: {tried}, and {} has no script of that name: give the script's path, or a sysbench script's name such as \"oltp_read_write\"",
            SYSBENCH_DIRS[0]
        )
    } else {
        tried
    })
}

/// What a Lua script declares: its options and whether it has the lab's commands.
struct Declared {
    options: Vec<OptDef>,
    prepare: bool,
    prewarm: bool,
}

/// Loads `script` in a Lua state without a server (as `dbperf lua SCRIPT help` does) and reads
/// what it declares.
fn declared(script: &Path) -> Result<Declared, String> {
    let shared = Shared::offline(script, "run", Vec::new(), Vec::new());
    let lua = api::new_state(&Arc::new(shared), 0)?;
    let options = lua_options::script_options(&lua)?;
    let has = |command: &str| -> bool {
        let declared: mlua::Result<bool> = lua
            .load("local c = ... ; local t = sysbench.cmdline.commands ; return type(t) == 'table' and t[c] ~= nil")
            .call(command);
        declared.unwrap_or(false) || matches!(lua.globals().get::<mlua::Value>(command), Ok(mlua::Value::Function(_)))
    };
    Ok(Declared {
        options,
        prepare: has("prepare"),
        prewarm: has("prewarm"),
    })
}

/// An option value as `dbperf lua` takes it after `=`: text as written, numbers, `on`/`off`,
/// a list joined by commas.
fn option_value(v: &Value) -> Result<String, String> {
    Ok(match v {
        Value::String(s) => s.clone(),
        Value::Integer(i) => i.to_string(),
        Value::Float(f) => f.to_string(),
        Value::Boolean(b) => if *b { "on" } else { "off" }.into(),
        Value::Array(items) => items
            .iter()
            .map(|i| match i {
                Value::Array(_) | Value::Table(_) => Err("a list holds strings, numbers or booleans".to_string()),
                other => option_value(other),
            })
            .collect::<Result<Vec<_>, _>>()?
            .join(","),
        other => {
            return Err(format!(
                "expected a string, number, boolean or list, got a {}",
                other.type_str()
            ))
        }
    })
}

/// `dbperf lua`'s own long option `name` (with `-`), if it has one.
fn is_general(name: &str) -> bool {
    use clap::Args as _;
    LuaArgs::augment_args(clap::Command::new("lua"))
        .get_arguments()
        .any(|a| a.get_long() == Some(name))
}

/// Whether `dbperf lua` accepts `--name=value` (its parser's own check of the value).
fn general_value_ok(name: &str, value: &str) -> Result<(), String> {
    use clap::{Args as _, FromArgMatches as _};
    let argv = ["lua", "script.lua", "run", &format!("--{name}={value}")];
    let command = LuaArgs::augment_args(clap::Command::new("lua"));
    let parsed = command
        .try_get_matches_from(argv)
        .and_then(|m| LuaArgs::from_arg_matches(&m).map(|_| ()));
    parsed.map_err(|e| {
        let text = e.to_string();
        let first = text
            .lines()
            .next()
            .unwrap_or_default()
            .trim_start_matches("error: ")
            .to_owned();
        format!("option {name}: {first}")
    })
}

/// The keys of a `kind = "lua"` workload: `script` (needed) and `options`.
pub(super) fn lua_keys(
    script: Option<&Spanned<String>>,
    options: Option<&Spanned<BTreeMap<String, Spanned<Value>>>>,
    workload_span: Range<usize>,
    base: &Path,
) -> Result<Lua, At> {
    let Some(s) = script else {
        return Err((
            workload_span,
            "a lua workload needs `script`: the path of a sysbench Lua script (relative to this file) or a sysbench script's name, e.g. script = \"oltp_read_write\"".into(),
        ));
    };
    let path = find_file(s.get_ref(), base, true).map_err(|m| (s.span(), format!("script: {m}")))?;
    let d = declared(&path).map_err(|m| (s.span(), format!("script {}: {m}", path.display())))?;
    if !d.prepare {
        return Err((
            s.span(),
            format!(
                "script {} has no prepare command, and the lab prepares each data set with it: give a script that defines prepare (sysbench.cmdline.commands or a global function)",
                path.display()
            ),
        ));
    }
    let canon = |k: &str| k.replace('-', "_");
    let (mut own, mut general) = (Vec::new(), Vec::new());
    for (k, v) in options.map(|o| o.get_ref().iter()).into_iter().flatten() {
        let key = canon(k);
        let value = option_value(v.get_ref()).map_err(|m| (v.span(), format!("option {k}: {m}")))?;
        if let Some(def) = d.options.iter().find(|d| canon(&d.name) == key) {
            lua_options::parse_value(&def.name, def.ty, Some(&value)).map_err(|m| (v.span(), m))?;
            own.push((def.name.clone(), value));
        } else if super::LAB_OWNED_OPTIONS.contains(&key.as_str()) {
            return Err((
                v.span(),
                format!(
                    "option {k:?} is set by the lab itself: use the workload's keys (users, duration, warmup) instead"
                ),
            ));
        } else if is_general(&key.replace('_', "-")) {
            general_value_ok(&key.replace('_', "-"), &value).map_err(|m| (v.span(), m))?;
            general.push((key.replace('_', "-"), value));
        } else {
            let why = lua_options::resolve(&d.options, &[(k.clone(), Some(value))])
                .err()
                .map_or_else(|| format!("unknown option {k}"), |e| e.why);
            return Err((
                v.span(),
                format!("{why}; `options` takes the script's own options and dbperf lua's general ones (`dbperf lua --help`)"),
            ));
        }
    }
    let in_sysbench_dir = SYSBENCH_DIRS.iter().any(|dir| path.parent() == Some(Path::new(dir)));
    let name = path
        .file_stem()
        .map_or_else(|| "script".into(), |n| n.to_string_lossy().into_owned());
    let oltp_common =
        in_sysbench_dir && std::fs::read_to_string(&path).is_ok_and(|t| t.contains("require(\"oltp_common\")"));
    Ok(Lua {
        read_only: in_sysbench_dir && READ_ONLY_SCRIPTS.contains(&name.as_str()),
        name: super::name_safe(&name, &['-', '_', '.'], '_'),
        script: path,
        options: own,
        general,
        oltp_common,
        prewarm: d.prewarm,
        defaults: d
            .options
            .iter()
            .filter_map(|o| Some((o.name.clone(), o.default.clone()?)))
            .collect(),
    })
}

/// pgbench's script keys: `files` (`PATH[@WEIGHT]`, relative to the experiment file) and
/// `builtins` (`NAME[@WEIGHT]`), `define` (`NAME = value`), `protocol`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PgbenchScripts {
    /// `-f PATH@WEIGHT`, the path absolute.
    pub files: Vec<String>,
    /// `-b NAME@WEIGHT`, the name in full.
    pub builtins: Vec<String>,
    /// `-D NAME=VALUE`.
    pub define: Vec<(String, String)>,
    /// `-M`: `prepared` or `simple` (`None`: the default, prepared).
    pub protocol: Option<String>,
    /// The label part: file stems and built-in names joined by `+`.
    pub label: String,
}

/// `X@WEIGHT` → (X, WEIGHT), as `dbperf pgbench` reads it: without a number after the last
/// `@`, all of it is X, weight 1.
fn split_weight(spec: &str) -> Result<(&str, u64), String> {
    match spec.rsplit_once('@') {
        Some((x, w)) if !w.is_empty() && w.chars().all(|c| c.is_ascii_digit()) => {
            let w = w
                .parse::<u64>()
                .ok()
                .filter(|&w| w <= i32::MAX as u64)
                .ok_or_else(|| format!("the weight of {spec:?} is too large (at most {})", i32::MAX))?;
            Ok((x, w))
        }
        Some((_, w)) if w.starts_with('-') => Err(format!("the weight of {spec:?} must be a number >= 0")),
        _ => Ok((spec, 1)),
    }
}

/// Raw pgbench script keys, as written.
pub(super) struct RawPgbenchScripts<'a> {
    pub script: Option<&'a Spanned<String>>,
    pub files: Option<&'a Spanned<Vec<Spanned<String>>>>,
    pub builtins: Option<&'a Spanned<Vec<Spanned<String>>>>,
    pub define: Option<&'a Spanned<BTreeMap<String, Spanned<Value>>>>,
    pub protocol: Option<&'a Spanned<String>>,
}

/// Checks pgbench's script keys: every file read and parsed as `dbperf pgbench` would, every
/// built-in known, every variable name usable.
pub(super) fn pgbench_scripts(raw: &RawPgbenchScripts<'_>, base: &Path) -> Result<PgbenchScripts, At> {
    let mut out = PgbenchScripts::default();
    if let (Some(s), Some(_)) = (raw.script, raw.files.or(raw.builtins)) {
        return Err((
            s.span(),
            format!(
                "give either `script` (one built-in) or `files`/`builtins` (a mix): put {:?} in builtins instead, e.g. builtins = [\"{}@1\"]",
                s.get_ref(),
                s.get_ref()
            ),
        ));
    }
    let mut labels = Vec::new();
    let mut total_weight = 0u64;
    let mut parsed = dbperf_workloads::pgbench::lang::parse::Parsed::default();
    for b in raw.builtins.map(|b| b.get_ref().as_slice()).unwrap_or_default() {
        let (name, w) = split_weight(b.get_ref().trim()).map_err(|m| (b.span(), format!("builtins: {m}")))?;
        let s = Script::by_prefix(name).map_err(|m| (b.span(), format!("builtins: {m}")))?;
        out.builtins.push(format!("{}@{w}", s.name()));
        labels.push(s.name().to_string());
        total_weight += w;
    }
    for f in raw.files.map(|f| f.get_ref().as_slice()).unwrap_or_default() {
        let (path, w) = split_weight(f.get_ref().trim()).map_err(|m| (f.span(), format!("files: {m}")))?;
        let found = find_file(path, base, false).map_err(|m| (f.span(), format!("files: {m}")))?;
        let text = std::fs::read_to_string(&found)
            .map_err(|e| (f.span(), format!("files: cannot read {}: {e}", found.display())))?;
        let name = found
            .file_name()
            .map_or_else(|| path.to_string(), |n| n.to_string_lossy().into_owned());
        parsed
            .add(&name, &found.display().to_string(), &text)
            .map_err(|e| (f.span(), format!("files: {e}")))?;
        out.files.push(format!("{}@{w}", found.display()));
        labels.push(
            found
                .file_stem()
                .map_or_else(|| "script".into(), |n| n.to_string_lossy().into_owned()),
        );
        total_weight += w;
    }
    for list in [raw.files, raw.builtins].into_iter().flatten() {
        if list.get_ref().is_empty() {
            return Err((
                list.span(),
                "the list is empty: name one or more scripts, or leave the key out".into(),
            ));
        }
    }
    if !labels.is_empty() && total_weight == 0 {
        let span = raw.files.or(raw.builtins).map_or(0..0, |l| l.span());
        return Err((
            span,
            "every script has weight 0: give one a positive @WEIGHT (or none)".into(),
        ));
    }
    for (name, v) in raw.define.map(|d| d.get_ref().iter()).into_iter().flatten() {
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err((
                v.span(),
                format!("define: a variable name is letters, digits and _ (as in :name), got {name:?}"),
            ));
        }
        let value = match v.get_ref() {
            Value::String(s) => s.clone(),
            Value::Integer(i) => i.to_string(),
            Value::Float(f) => f.to_string(),
            other => {
                return Err((
                    v.span(),
                    format!(
                        "define {name}: expected a string or a number, got a {}",
                        other.type_str()
                    ),
                ))
            }
        };
        out.define.push((name.clone(), value));
    }
    if let Some(p) = raw.protocol {
        dbperf_workloads::pgbench::lang::exec::QueryMode::parse(p.get_ref().trim())
            .map_err(|m| (p.span(), format!("protocol: {m}")))?;
        out.protocol = Some(p.get_ref().trim().to_owned());
    }
    out.label = super::name_safe(&labels.join("+"), &['-', '_', '.', '+'], '_');
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_split_at_the_last_at_sign() {
        assert_eq!(split_weight("a.sql@3").unwrap(), ("a.sql", 3));
        assert_eq!(split_weight("dir@x/a.sql").unwrap(), ("dir@x/a.sql", 1));
        assert!(split_weight("a.sql@99999999999").unwrap_err().contains("too large"));
    }

    #[test]
    fn option_values_are_written_as_dbperf_lua_reads_them() {
        assert_eq!(option_value(&Value::Boolean(true)).unwrap(), "on");
        assert_eq!(option_value(&Value::Integer(4)).unwrap(), "4");
        let list = Value::Array(vec![Value::Integer(1), Value::String("b".into())]);
        assert_eq!(option_value(&list).unwrap(), "1,b");
        assert!(option_value(&Value::Array(vec![Value::Array(vec![])])).is_err());
    }

    #[test]
    fn general_options_are_dbperf_luas() {
        assert!(is_general("rand-type") && is_general("db-ps-mode"));
        assert!(!is_general("table-size"));
        assert!(general_value_ok("rand-type", "uniform").is_ok());
        assert!(general_value_ok("percentile", "many").is_err());
    }
}
