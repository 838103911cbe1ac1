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

/// Sets each value in `t` (a script's `sysbench.opt`) under its name, and under the name with
/// `_` for `-` too, as sysbench exports them: the one rule for every state that gets options.
pub fn set_values(lua: &Lua, t: &Table, values: &[(String, OptValue)]) -> mlua::Result<()> {
    for (name, v) in values {
        let value = match v {
            OptValue::Bool(b) => Value::Boolean(*b),
            OptValue::Number(n) => Value::Number(*n),
            OptValue::Str(s) => Value::String(lua.create_string(s)?),
            OptValue::List(l) => Value::Table(lua.create_sequence_from(l.iter().map(String::as_str))?),
            OptValue::Nil => Value::Nil,
        };
        t.raw_set(name.as_str(), value.clone())?;
        if name.contains('-') {
            t.raw_set(name.replace('-', "_"), value)?;
        }
    }
    Ok(())
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

/// A malformed `sysbench.cmdline.options` as sysbench says it: its option reader's file and
/// line, then what is wrong.
fn malformed(line: u32, what: String) -> String {
    format!("[string \"sysbench.cmdline.lua\"]:{line}: {what}")
}

/// Reads `sysbench.cmdline.options` after the script ran its top level. A malformed table
/// is refused in sysbench's words ([`malformed`]).
pub fn script_options(lua: &Lua) -> Result<Vec<OptDef>, String> {
    let e = |m: mlua::Error| m.to_string();
    let sysbench: Table = lua.globals().get("sysbench").map_err(e)?;
    let cmdline: Table = sysbench.get("cmdline").map_err(e)?;
    let options = match cmdline.get::<Value>("options").map_err(e)? {
        Value::Nil => return Ok(Vec::new()),
        Value::Table(t) => t,
        other => {
            return Err(malformed(
                120,
                format!("wrong type for sysbench.cmdline.options: {}", other.type_name()),
            ))
        }
    };
    let mut defs = Vec::new();
    for pair in options.pairs::<Value, Value>() {
        let (k, v) = pair.map_err(e)?;
        let (Value::String(name), Value::Table(def)) = (&k, &v) else {
            return Err(malformed(
                132,
                "wrong table structure in sysbench.cmdline.options".into(),
            ));
        };
        let name = name.to_str().map_err(e)?.to_string();
        let desc = match def.raw_get::<Value>(1).map_err(e)? {
            Value::String(s) => s.to_str().map_err(e)?.to_string(),
            Value::Nil => return Err(malformed(137, format!("nil description for option {name}"))),
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
            _ => return Err(malformed(166, format!("cannot determine type for option {name}"))),
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
            // sysbench exports a number without a value as 0.
            None => OptValue::Number(0.0),
            Some(s) => OptValue::Number(s.trim().parse::<i64>().map_err(|_| bad("expected an integer"))? as f64),
        },
        ArgType::Double => match raw {
            // sysbench exports a number without a value as 0.
            None => OptValue::Number(0.0),
            Some(s) => OptValue::Number(s.trim().parse::<f64>().map_err(|_| bad("expected a number"))?),
        },
        ArgType::Size => match raw {
            // sysbench exports a number without a value as 0.
            None => OptValue::Number(0.0),
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

/// An option [`resolve`] refuses: shown as sysbench says it (`invalid option: --NAME=VALUE`, as
/// typed), with dbperf's explanation in [`Invalid::why`] and a close name in
/// [`Invalid::suggestion`].
#[derive(Clone, Debug, PartialEq)]
pub struct Invalid {
    /// The option as typed: `--name` or `--name=value`.
    pub typed: String,
    /// What is wrong and what to give: `unknown option --rowz: did you mean --rows?`,
    /// `--rows=many: expected a number`.
    pub why: String,
    /// A declared option whose name is close to the unknown one typed.
    pub suggestion: Option<String>,
}

impl std::fmt::Display for Invalid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "invalid option: {}", self.typed)
    }
}

/// The script's options with the values given (`given`: name as typed, with `-` or `_`, and
/// the value after `=`; the last of a name wins), each checked. As under sysbench, an option
/// the script does not declare or a value its type refuses is [`Invalid`], and a script that
/// declares no options (an old-style one) gets every option given as a string.
pub fn resolve(defs: &[OptDef], given: &[(String, Option<String>)]) -> Result<Vec<(String, OptValue)>, Invalid> {
    let canon = |s: &str| s.replace('-', "_");
    let typed = |name: &str, value: Option<&str>| match value {
        Some(v) => format!("--{name}={v}"),
        None => format!("--{name}"),
    };
    if defs.is_empty() {
        let mut out: Vec<(String, OptValue)> = Vec::new();
        for (name, value) in given {
            out.retain(|(n, _)| n != name);
            out.push((name.clone(), OptValue::Str(value.clone().unwrap_or_default())));
        }
        return Ok(out);
    }
    if let Some((name, value)) = given
        .iter()
        .find(|(n, _)| !defs.iter().any(|d| canon(&d.name) == canon(n)))
    {
        let suggestion = defs
            .iter()
            .map(|d| (strsim::levenshtein(&canon(&d.name), &canon(name)), &d.name))
            .filter(|(dist, _)| *dist <= 2)
            .min()
            .map(|(_, n)| format!("--{n}"));
        let known: Vec<String> = defs.iter().map(|d| format!("--{}", d.name)).collect();
        let why = match &suggestion {
            Some(n) => format!("unknown option --{name}: did you mean {n}?"),
            None => format!("unknown option --{name}: the script declares {}", known.join(" ")),
        };
        return Err(Invalid {
            typed: typed(name, value.as_deref()),
            why,
            suggestion,
        });
    }
    defs.iter()
        .map(|d| {
            let given = given.iter().rev().find(|(n, _)| canon(n) == canon(&d.name));
            match given {
                Some((n, v)) => parse_value(&d.name, d.ty, v.as_deref()).map_err(|why| Invalid {
                    typed: typed(n, v.as_deref()),
                    why,
                    suggestion: None,
                }),
                None => parse_value(&d.name, d.ty, d.default.as_deref()).map_err(|why| Invalid {
                    typed: format!("--{} (its default)", d.name),
                    why,
                    suggestion: None,
                }),
            }
            .map(|value| (d.name.clone(), value))
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
    // sysbench's layout: one column as wide as the longest option, then a space.
    let w = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
    let mut text: String = rows.iter().map(|(a, b)| format!("{a:w$} {b}\n")).collect();
    // and a blank line after the list.
    text.push('\n');
    text
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
        let v = resolve(&defs, &given).unwrap();
        let get = |n: &str| v.iter().find(|(k, _)| k == n).unwrap().1.clone();
        assert_eq!(get("tables"), OptValue::Number(4.0));
        assert_eq!(get("skip_trx"), OptValue::Bool(true));
        assert_eq!(get("engine"), OptValue::Str("innodb".into()));
        assert_eq!(get("ids"), OptValue::List(vec!["1".into(), "2".into()]));
        assert_eq!(get("buf"), OptValue::Number(2.0 * 1048576.0));
        let e = resolve(&defs, &[("tabels".into(), Some("2".into()))]).unwrap_err();
        assert_eq!(e.to_string(), "invalid option: --tabels=2");
        assert_eq!(e.suggestion.as_deref(), Some("--tables"));
        assert!(e.why.contains("did you mean --tables?"), "{e:?}");
        let e = resolve(&defs, &[("tables".into(), Some("x".into()))]).unwrap_err();
        assert_eq!(e.to_string(), "invalid option: --tables=x");
        assert!(e.why.contains("--tables=x: expected a number"), "{e:?}");
        let e = resolve(&defs, &[("skip-trx".into(), Some("5".into()))]).unwrap_err();
        assert_eq!(e.to_string(), "invalid option: --skip-trx=5");
        // The last value given wins; a script without options takes any as text.
        let twice = [
            ("tables".to_string(), Some("2".to_string())),
            ("tables".into(), Some("3".into())),
        ];
        let v = resolve(&defs, &twice).unwrap();
        assert!(v.contains(&("tables".to_string(), OptValue::Number(3.0))));
        let v = resolve(&[], &twice).unwrap();
        assert_eq!(v, [("tables".to_string(), OptValue::Str("3".into()))]);
        assert!(help_text(&defs).contains("--tables=N"));
    }
}
