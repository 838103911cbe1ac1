//! A sysbench script's command-line options: the definitions it declares in
//! `sysbench.cmdline.options` (`name = {description, default[, type[, validator]]}`), the values
//! given as `--name=value`, checked against them, and the `sysbench.opt` table both make.
//! Types are sysbench's: bool (on/off), int, size (`10M`), double, string, list (comma
//! separated), file.

use mlua::{Lua, Table, Value};

/// A value in `sysbench.opt`.
#[derive(Clone, Debug, PartialEq)]
pub enum OptValue {
    /// `ARG_BOOL`.
    Bool(bool),
    /// `ARG_INT`, `ARG_SIZE`, `ARG_DOUBLE`.
    Number(f64),
    /// `ARG_STRING`.
    Str(String),
    /// `ARG_LIST`.
    List(Vec<String>),
    /// `ARG_FILE`, or no value.
    Nil,
}

/// sysbench's option types (`sysbench.cmdline.ARG_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgType {
    /// on/off.
    Bool,
    /// An integer.
    Int,
    /// A size with an optional K/M/G/T suffix.
    Size,
    /// A number.
    Double,
    /// Text.
    Str,
    /// Comma-separated text.
    List,
    /// A file name (not exported).
    File,
}

impl ArgType {
    fn from_code(n: i64) -> Option<ArgType> {
        Some(match n {
            1 => ArgType::Bool,
            2 => ArgType::Int,
            3 => ArgType::Size,
            4 => ArgType::Double,
            0 | 5 => ArgType::Str,
            6 => ArgType::List,
            7 => ArgType::File,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            ArgType::Bool => "[=on|off]",
            ArgType::Int => "=N",
            ArgType::Size => "=SIZE",
            ArgType::Double => "=N",
            ArgType::Str => "=STRING",
            ArgType::List => "=[LIST,...]",
            ArgType::File => "=FILENAME",
        }
    }
}

/// One option a script declares.
#[derive(Clone, Debug, PartialEq)]
pub struct OptDef {
    /// Its name as declared (`table_size`).
    pub name: String,
    /// Its description.
    pub desc: String,
    /// Its default, as text (`None`: no value).
    pub default: Option<String>,
    /// Its type.
    pub ty: ArgType,
}

/// Reads `sysbench.cmdline.options` after the script ran its top level.
pub fn script_options(lua: &Lua) -> Result<Vec<OptDef>, String> {
    let e = |m: mlua::Error| m.to_string();
    let sysbench: Table = lua.globals().get("sysbench").map_err(e)?;
    let cmdline: Table = sysbench.get("cmdline").map_err(e)?;
    let options = match cmdline.get::<Value>("options").map_err(e)? {
        Value::Nil => return Ok(Vec::new()),
        Value::Table(t) => t,
        other => {
            return Err(format!(
                "sysbench.cmdline.options is a {}, not a table of {{description, default}} entries",
                other.type_name()
            ))
        }
    };
    let mut defs = Vec::new();
    for pair in options.pairs::<Value, Value>() {
        let (k, v) = pair.map_err(e)?;
        let (Value::String(name), Value::Table(def)) = (&k, &v) else {
            return Err(format!(
                "sysbench.cmdline.options: entry {k:?} is not name = {{description, default}}"
            ));
        };
        let name = name.to_str().map_err(e)?.to_string();
        let desc = match def.raw_get::<Value>(1).map_err(e)? {
            Value::String(s) => s.to_str().map_err(e)?.to_string(),
            Value::Nil => {
                return Err(format!(
                    "sysbench.cmdline.options.{name}: the description (its first element) is missing"
                ))
            }
            other => format!("{other:?}"),
        };
        let default = def.raw_get::<Value>(2).map_err(e)?;
        let given_type = match def.raw_get::<Value>(3).map_err(e)? {
            Value::Nil => None,
            Value::Integer(n) => ArgType::from_code(n),
            Value::Number(n) => ArgType::from_code(n as i64),
            _ => None,
        };
        let (default, guessed) = match &default {
            Value::Nil => (None, ArgType::Str),
            Value::Boolean(b) => (Some(if *b { "on" } else { "off" }.to_string()), ArgType::Bool),
            Value::Integer(n) => (Some(n.to_string()), ArgType::Double),
            Value::Number(n) => (Some(number_text(*n)), ArgType::Double),
            Value::String(s) => (Some(s.to_str().map_err(e)?.to_string()), ArgType::Str),
            Value::Table(t) => {
                let items: Vec<String> = t.sequence_values::<String>().collect::<mlua::Result<_>>().map_err(e)?;
                (Some(items.join(",")), ArgType::List)
            }
            other => {
                return Err(format!(
                    "sysbench.cmdline.options.{name}: a default of type {} is not an option value",
                    other.type_name()
                ))
            }
        };
        defs.push(OptDef {
            name,
            desc,
            default,
            ty: given_type.unwrap_or(guessed),
        });
    }
    defs.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(defs)
}

fn number_text(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        n.to_string()
    }
}

/// Parses `raw` as an option of type `ty`.
pub fn parse_value(name: &str, ty: ArgType, raw: Option<&str>) -> Result<OptValue, String> {
    let bad = |what: &str| format!("--{name}={}: {what}", raw.unwrap_or(""));
    Ok(match ty {
        ArgType::Bool => match raw.map(|s| s.to_ascii_lowercase()) {
            None => OptValue::Bool(true),
            Some(s) => match s.as_str() {
                "on" | "true" | "yes" | "1" | "" => OptValue::Bool(true),
                "off" | "false" | "no" | "0" => OptValue::Bool(false),
                _ => return Err(bad("expected on or off")),
            },
        },
        ArgType::Int => match raw {
            None => OptValue::Nil,
            Some(s) => OptValue::Number(s.trim().parse::<i64>().map_err(|_| bad("expected an integer"))? as f64),
        },
        ArgType::Double => match raw {
            None => OptValue::Nil,
            Some(s) => OptValue::Number(s.trim().parse::<f64>().map_err(|_| bad("expected a number"))?),
        },
        ArgType::Size => match raw {
            None => OptValue::Nil,
            Some(s) => OptValue::Number(
                dbperf_core::size::parse_size(s).ok_or_else(|| bad("expected a size such as 10M"))? as f64,
            ),
        },
        ArgType::Str => OptValue::Str(raw.unwrap_or("").to_string()),
        ArgType::List => OptValue::List(match raw {
            None | Some("") => Vec::new(),
            Some(s) => s.split(',').map(str::to_string).collect(),
        }),
        ArgType::File => OptValue::Nil,
    })
}

/// The script's options with the values given (`given`: name as typed, with `-` or `_`, and
/// the value after `=`), each checked; an option the script does not declare is an error
/// that lists those it does.
pub fn resolve(
    defs: &[OptDef],
    given: &[(String, Option<String>)],
    script: &str,
) -> Result<Vec<(String, OptValue)>, String> {
    let canon = |s: &str| s.replace('-', "_");
    for (name, _) in given {
        if !defs.iter().any(|d| canon(&d.name) == canon(name)) {
            let known: Vec<String> = defs.iter().map(|d| format!("--{}", d.name)).collect();
            let close = defs
                .iter()
                .map(|d| (strsim::levenshtein(&canon(&d.name), &canon(name)), &d.name))
                .filter(|(dist, _)| *dist <= 2)
                .min();
            return Err(match close {
                Some((_, n)) => format!("unknown option --{name}: did you mean --{n}? (`dbperf lua {script} help` lists the script's options)"),
                None if known.is_empty() => format!("unknown option --{name}: {script} declares no options of its own, and it is not one of dbperf's (`dbperf lua --help`)"),
                None => format!("unknown option --{name}: not one of dbperf's, and {script} declares {}", known.join(" ")),
            });
        }
    }
    defs.iter()
        .map(|d| {
            let raw = given
                .iter()
                .rev()
                .find(|(n, _)| canon(n) == canon(&d.name))
                .map(|(_, v)| v.as_deref());
            let value = match raw {
                Some(v) => parse_value(&d.name, d.ty, v)?,
                None => parse_value(&d.name, d.ty, d.default.as_deref())?,
            };
            Ok((d.name.clone(), value))
        })
        .collect()
}

/// `dbperf lua SCRIPT help`: the script's options, as sysbench lists them.
pub fn help_text(defs: &[OptDef]) -> String {
    let rows: Vec<(String, String)> = defs
        .iter()
        .map(|d| {
            let default = match &d.default {
                Some(v) if !v.is_empty() => format!(" [{v}]"),
                _ => String::new(),
            };
            (format!("  --{}{}", d.name, d.ty.name()), format!("{}{default}", d.desc))
        })
        .collect();
    let w = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
    rows.iter().map(|(a, b)| format!("{a:w$}  {b}\n")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_read_typed_and_checked() {
        let lua = Lua::new();
        lua.load(
            r#"sysbench = { cmdline = {} }
               sysbench.cmdline.options = {
                 tables = {"Number of tables", 1},
                 skip_trx = {"Don't start explicit transactions", false},
                 engine = {"Storage engine", "innodb"},
                 ids = {"Ids", {1, 2}},
                 buf = {"Buffer", "1M", 3},
               }"#,
        )
        .exec()
        .unwrap();
        let defs = script_options(&lua).unwrap();
        assert_eq!(
            defs.iter().map(|d| d.name.as_str()).collect::<Vec<_>>(),
            ["buf", "engine", "ids", "skip_trx", "tables"]
        );
        let given = vec![
            ("tables".to_string(), Some("4".to_string())),
            ("skip-trx".to_string(), None),
            ("buf".to_string(), Some("2M".to_string())),
        ];
        let v = resolve(&defs, &given, "t.lua").unwrap();
        let get = |n: &str| v.iter().find(|(k, _)| k == n).unwrap().1.clone();
        assert_eq!(get("tables"), OptValue::Number(4.0));
        assert_eq!(get("skip_trx"), OptValue::Bool(true));
        assert_eq!(get("engine"), OptValue::Str("innodb".into()));
        assert_eq!(get("ids"), OptValue::List(vec!["1".into(), "2".into()]));
        assert_eq!(get("buf"), OptValue::Number(2.0 * 1048576.0));
        let e = resolve(&defs, &[("tabels".into(), Some("2".into()))], "t.lua").unwrap_err();
        assert!(e.contains("did you mean --tables"), "{e}");
        let e = resolve(&defs, &[("tables".into(), Some("x".into()))], "t.lua").unwrap_err();
        assert!(e.contains("--tables=x: expected a number"), "{e}");
        assert!(help_text(&defs).contains("--tables=N"));
    }
}
