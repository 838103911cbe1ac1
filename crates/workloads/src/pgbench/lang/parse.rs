//! Script text → commands, as pgbench reads a `-f` file: SQL commands end at `;` outside
//! quotes and comments (and may span lines; `\;` separates the parts of a compound
//! command), `:name` in SQL is a variable, a line starting with `\` is a meta-command
//! (`\set`, `\sleep`, `\if`/`\elif`/`\else`/`\endif`, `\gset`/`\aset` after a query,
//! `\startpipeline`/`\endpipeline`). Every command keeps its `FILE:LINE` and source line
//! for errors, which point at the text (with a caret under an expression's fault).

use std::fmt;

use super::expr::{self, Expr};
use super::{valid_name, Vars};

/// pgbench's most parameters of one SQL command sent with `-M prepared` or `extended`.
pub const MAX_PARAMS: usize = 255;

/// Where a command is, and its first source line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Loc {
    /// The file as the user named it (or `builtin: NAME`).
    pub file: String,
    /// 1-based line.
    pub line: u32,
    /// The line's text.
    pub text: String,
}

impl fmt::Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// A script error: where, what, and optionally the column to point a caret at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScriptError {
    /// The command's place.
    pub loc: Loc,
    /// What is wrong.
    pub message: String,
    /// Column (in characters) of the line's text.
    pub column: Option<usize>,
}

impl fmt::Display for ScriptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}\n    {}", self.loc, self.message, self.loc.text)?;
        if let Some(c) = self.column {
            write!(f, "\n    {}^ error found here", " ".repeat(c))?;
        }
        Ok(())
    }
}

impl std::error::Error for ScriptError {}

/// A piece of SQL text: literal text or a variable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Piece {
    /// SQL as written.
    Text(String),
    /// `:name`, by slot.
    Var(u32),
    /// `:name` inside a quoted string: the value in simple mode, else the text as written.
    Quoted(u32, String),
}

/// One SQL statement of a script.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Statement {
    /// The SQL split at its variables.
    pub pieces: Vec<Piece>,
    /// The SQL with `?` for each variable (prepared mode).
    pub placeholders: String,
    /// The variables bound to the `?`s, in order.
    pub params: Vec<u32>,
    /// Its name in the per-statement latencies: the SQL's first words (`UPDATE pgbench_accounts`).
    pub name: String,
    /// A block comment alone (before a meta-command): pgbench sends it as an empty query;
    /// servers that refuse empty queries (MySQL's "Query was empty") are sent nothing.
    pub comment_only: bool,
}

/// Where `\gset`/`\aset` puts a query's columns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Store {
    /// `\aset`: every row (the last one wins), no row is no change; `\gset`: exactly one row.
    pub all_rows: bool,
    /// The variable of each column, in order.
    pub vars: Vec<u32>,
}

/// `\sleep`'s amount.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Amount {
    /// A number.
    Const(i64),
    /// `:name`.
    Var(u32),
}

/// One step of a script.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// Runs a statement (an index into [`Parsed::statements`]), storing its row if asked.
    Sql { stmt: usize, store: Option<Store> },
    /// `\set`.
    Set { var: u32, expr: Expr },
    /// `\sleep`, in microseconds per unit.
    Sleep { amount: Amount, unit_us: u64 },
    /// `\if`/`\elif`: go to `to` unless the condition holds.
    JumpUnless { cond: Expr, to: usize },
    /// The end of an `\if` branch: go to `to` (after the `\endif`).
    Jump(usize),
    /// `\startpipeline`.
    StartPipeline,
    /// `\endpipeline`.
    EndPipeline,
    /// An error pgbench finds only when the client reaches the command (an invalid `\set`
    /// name, a pipeline begun twice, a `\gset` with nothing to store): the client stops
    /// there with this message, as pgbench's does.
    Fail(String),
}

/// A command: an [`Op`] and where it is.
#[derive(Clone, Debug, PartialEq)]
pub struct Cmd {
    /// What it does.
    pub op: Op,
    /// Where.
    pub loc: Loc,
    /// Its number in the script as pgbench counts commands (1-based; an SQL command with
    /// its `\;` parts and `\gset` is one, every meta-command one): what `debug()` prints.
    pub number: u32,
}

/// A parsed script.
#[derive(Clone, Debug, PartialEq)]
pub struct Script {
    /// Its name in the results (the file name, or the built-in's).
    pub name: String,
    /// Its commands.
    pub cmds: Vec<Cmd>,
    /// pgbench's commands' first lines, by [`Cmd::number`] (`lines[number - 1]`): what `-r`
    /// prints beside each command's latency. `\endif` and `\else` are commands of pgbench's
    /// with a line here, though nothing runs for them.
    pub lines: Vec<String>,
}

/// Every script of a run, with the variables and statements they share.
#[derive(Clone, Debug, Default)]
pub struct Parsed {
    /// Variables by slot.
    pub vars: Vars,
    /// Statements, across scripts.
    pub statements: Vec<Statement>,
    /// The scripts.
    pub scripts: Vec<Script>,
}

impl Parsed {
    /// Parses `text` (from `file`) as a script named `name`, adding it.
    pub fn add(&mut self, name: &str, file: &str, text: &str) -> Result<(), ScriptError> {
        let (cmds, lines) = parse_script(self, file, text)?;
        if !cmds
            .iter()
            .any(|c| !matches!(c.op, Op::JumpUnless { .. } | Op::Jump(_)))
        {
            return Err(ScriptError {
                loc: Loc {
                    file: file.to_string(),
                    line: 1,
                    text: text.lines().next().unwrap_or("").to_string(),
                },
                message: format!(
                    "empty command list for script \"{name}\": write SQL ending in ';' or meta-commands such as \\set"
                ),
                column: None,
            });
        }
        self.scripts.push(Script {
            name: name.to_string(),
            cmds,
            lines,
        });
        Ok(())
    }

    /// The distinct statement names, in first-use order (the [`dbperf_engine::OpTable`]
    /// statements), and each statement's index among them.
    pub fn statement_kinds(&self) -> (Vec<String>, Vec<u16>) {
        let mut names: Vec<String> = Vec::new();
        let kinds = self
            .statements
            .iter()
            .map(|s| match names.iter().position(|n| *n == s.name) {
                Some(i) => i as u16,
                None => {
                    names.push(s.name.clone());
                    (names.len() - 1) as u16
                }
            })
            .collect();
        (names, kinds)
    }
}

struct Pending {
    /// Parts of a compound command, each SQL text.
    parts: Vec<String>,
    current: String,
    line: u32,
}

impl Pending {
    /// The pending command's first line as pgbench keeps it for `-r`: the SQL from its first
    /// word, spaces before a `\gset` kept (`\;` as `;`, `;` when `semicolon` ends it on its
    /// first line), cut at 127 bytes.
    fn first_line(&self, semicolon: bool) -> String {
        let mut text = self.parts.join(";");
        if !self.parts.is_empty() {
            text.push(';');
        }
        text.push_str(&self.current);
        let text = text.trim_start();
        let mut line = match text.find(['\n', '\r']) {
            Some(i) => text[..i].to_string(),
            None => {
                let mut l = text.to_string();
                if semicolon {
                    l.push(';');
                }
                l
            }
        };
        if line.len() > 127 {
            let mut cut = 127;
            while !line.is_char_boundary(cut) {
                cut -= 1;
            }
            line.truncate(cut);
        }
        line
    }
}

fn parse_script(p: &mut Parsed, file: &str, text: &str) -> Result<(Vec<Cmd>, Vec<String>), ScriptError> {
    let lines: Vec<&str> = text.lines().collect();
    let loc = |n: usize| Loc {
        file: file.to_string(),
        line: n as u32 + 1,
        text: lines.get(n).map_or("", |l| l.trim_end()).to_string(),
    };
    let err = |n: usize, message: String, column: Option<usize>| ScriptError {
        loc: loc(n),
        message,
        column,
    };
    let mut cmds: Vec<Cmd> = Vec::new();
    // pgbench's count of the commands so far, and their first lines.
    let mut number = 0u32;
    let mut lines_of: Vec<String> = Vec::new();
    // Open \if blocks: the index of the pending JumpUnless (to patch) and the Jumps to the
    // \endif, the \if's line, and whether \else was seen.
    struct Block {
        unless: Option<usize>,
        ends: Vec<usize>,
        line: usize,
        had_else: bool,
    }
    let mut blocks: Vec<Block> = Vec::new();
    let mut pipeline: Option<usize> = None;
    let mut sql = Pending {
        parts: Vec::new(),
        current: String::new(),
        line: 0,
    };
    // Lexer state carried across lines inside SQL.
    let mut quote: Option<String> = None;
    let mut block_comment = 0usize;
    let mut n = 0;
    while n < lines.len() {
        let line = lines[n];
        let pending = !sql.current.trim().is_empty() || !sql.parts.is_empty();
        // A line starting with `\;` continues a compound SQL command.
        let meta = line.trim_start().starts_with('\\') && !line.trim_start().starts_with("\\;");
        if quote.is_none() && block_comment == 0 && meta {
            // A meta-command, continued on the next line while it ends with '\'.
            let first = n;
            let mut body = line.trim_start()[1..].to_string();
            while body.ends_with('\\') && n + 1 < lines.len() {
                body.pop();
                n += 1;
                body.push(' ');
                body.push_str(lines[n]);
            }
            n += 1;
            let indent = line.len() - line.trim_start().len() + 1;
            let (word, rest) = match body.find(char::is_whitespace) {
                Some(i) => (&body[..i], &body[i..]),
                None => (body.as_str(), ""),
            };
            let args_col = indent + word.len() + (rest.len() - rest.trim_start().len());
            let rest = rest.trim();
            let word_lc = word.to_ascii_lowercase();
            if matches!(word_lc.as_str(), "gset" | "aset") {
                if !pending {
                    return Err(err(first, format!("\\{word} must follow an SQL command"), None));
                }
                number += 1;
                lines_of.push(sql.first_line(false));
                finish_sql(
                    p,
                    &mut cmds,
                    &mut sql,
                    Some((&word_lc, rest)),
                    &loc,
                    number,
                    pipeline.is_some(),
                )
                .map_err(|m| err(first, m, None))?;
                continue;
            }
            if pending {
                // SQL without its ';' ends at a meta-command's line, as pgbench ends it: a
                // command of its own. A block comment alone is one too: pgbench sends it (an
                // empty query, which the server answers) and counts it.
                let comment = strip_comments(&sql.current).trim().is_empty() && sql.parts.is_empty();
                if !sql.current.trim().is_empty() || !sql.parts.is_empty() {
                    number += 1;
                    lines_of.push(sql.first_line(false));
                }
                if comment && !sql.current.trim().is_empty() {
                    let text = std::mem::take(&mut sql.current);
                    p.statements.push(statement(text.trim(), &mut p.vars));
                    cmds.push(Cmd {
                        op: Op::Sql {
                            stmt: p.statements.len() - 1,
                            store: None,
                        },
                        loc: loc(sql.line as usize),
                        number,
                    });
                }
                finish_sql(p, &mut cmds, &mut sql, None, &loc, number, pipeline.is_some())
                    .map_err(|m| err(sql.line as usize, m, None))?;
            }
            let at = loc(first);
            number += 1;
            lines_of.push(format!("\\{}", body.trim()));
            if matches!(word_lc.as_str(), "else" | "endif" | "startpipeline" | "endpipeline") && !rest.is_empty() {
                return Err(err(
                    first,
                    format!("unexpected argument in command \"{word_lc}\""),
                    Some(args_col),
                ));
            }
            let op = match word_lc.as_str() {
                "set" => {
                    let (name, e) = match rest.find(char::is_whitespace) {
                        Some(i) => (&rest[..i], rest[i..].trim_start()),
                        None => (rest, ""),
                    };
                    if name.is_empty() {
                        return Err(err(first, "missing argument in command \"set\": \\set name expression".into(), None));
                    }
                    if !valid_name(name) {
                        cmds.push(Cmd {
                            op: Op::Fail(format!("set: invalid variable name: \"{name}\"")),
                            loc: at,
                            number,
                        });
                        continue;
                    }
                    if e.is_empty() {
                        return Err(err(first, "syntax error in command \"set\": \\set name expression".into(), None));
                    }
                    let e_col = args_col + name.len() + (rest.len() - name.len() - e.len());
                    let var = p.vars.slot(name);
                    let expr = expr::parse(e, &mut p.vars)
                        .map_err(|s| err(first, s.in_command("set"), Some(e_col + s.column)))?;
                    Op::Set { var, expr }
                }
                "sleep" => {
                    let (amount, unit_us) = sleep_args(p, rest).map_err(|m| err(first, m, Some(args_col)))?;
                    Op::Sleep { amount, unit_us }
                }
                "setshell" | "shell" => {
                    return Err(err(
                        first,
                        format!("\\{word} is not supported: dbperf runs no shell commands from scripts; compute the value with \\set or a query and \\gset"),
                        None,
                    ))
                }
                "if" | "elif" => {
                    let e = rest;
                    if e.is_empty() {
                        return Err(err(first, format!("syntax error in command \"{word_lc}\": \\{word} needs a condition"), None));
                    }
                    let cond = expr::parse(e, &mut p.vars).map_err(|s| {
                        err(first, s.in_command(&word_lc), Some(args_col + s.column))
                    })?;
                    if word_lc == "if" {
                        blocks.push(Block {
                            unless: Some(cmds.len()),
                            ends: Vec::new(),
                            line: first,
                            had_else: false,
                        });
                    } else {
                        let Some(b) = blocks.last_mut() else {
                            return Err(err(first, "\\elif without matching \\if".into(), None));
                        };
                        if b.had_else {
                            return Err(err(first, "\\elif after \\else".into(), None));
                        }
                        b.ends.push(cmds.len());
                        cmds.push(Cmd {
                            op: Op::Jump(0),
                            loc: at.clone(),
                            number,
                        });
                        if let Some(u) = b.unless.take() {
                            let end = cmds.len();
                            patch(&mut cmds[u].op, end);
                        }
                        b.unless = Some(cmds.len());
                    }
                    Op::JumpUnless { cond, to: 0 }
                }
                "else" => {
                    let Some(b) = blocks.last_mut() else {
                        return Err(err(first, "\\else without matching \\if".into(), None));
                    };
                    if b.had_else {
                        return Err(err(first, "\\else after \\else".into(), None));
                    }
                    b.had_else = true;
                    b.ends.push(cmds.len());
                    cmds.push(Cmd {
                        op: Op::Jump(0),
                        loc: at.clone(),
                        number,
                    });
                    if let Some(u) = b.unless.take() {
                        let end = cmds.len();
                        patch(&mut cmds[u].op, end);
                    }
                    continue;
                }
                "endif" => {
                    let Some(b) = blocks.pop() else {
                        return Err(err(first, "\\endif without matching \\if".into(), None));
                    };
                    let end = cmds.len();
                    if let Some(u) = b.unless {
                        patch(&mut cmds[u].op, end);
                    }
                    for j in b.ends {
                        patch(&mut cmds[j].op, end);
                    }
                    continue;
                }
                // pgbench's run-time words for a pipeline begun twice or ended unbegun.
                "startpipeline" if pipeline.is_some() => Op::Fail("already in pipeline mode".into()),
                "startpipeline" => {
                    pipeline = Some(first);
                    Op::StartPipeline
                }
                "endpipeline" => match pipeline.take() {
                    None => Op::Fail("not in pipeline mode".into()),
                    Some(_) => Op::EndPipeline,
                },
                _ => {
                    return Err(err(
                        first,
                        format!(
                            "invalid command in command \"{word}\": dbperf knows \\set, \\sleep, \\if, \\elif, \\else, \\endif, \
                             \\gset, \\aset, \\startpipeline and \\endpipeline"
                        ),
                        Some(indent - 1),
                    ))
                }
            };
            cmds.push(Cmd { op, loc: at, number });
            continue;
        }
        // SQL: scan the line, ending commands at ';'.
        if !pending {
            sql.line = n as u32;
        }
        let chars: Vec<char> = line.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if block_comment > 0 {
                if c == '*' && chars.get(i + 1) == Some(&'/') {
                    block_comment -= 1;
                    sql.current.push_str("*/");
                    i += 2;
                } else if c == '/' && chars.get(i + 1) == Some(&'*') {
                    block_comment += 1;
                    sql.current.push_str("/*");
                    i += 2;
                } else {
                    sql.current.push(c);
                    i += 1;
                }
                continue;
            }
            if let Some(q) = &quote {
                let rest: String = chars[i..].iter().collect();
                if rest.starts_with(q.as_str()) {
                    sql.current.push_str(q);
                    i += q.chars().count();
                    quote = None;
                } else {
                    sql.current.push(c);
                    i += 1;
                }
                continue;
            }
            match c {
                '\'' | '"' => {
                    quote = Some(c.to_string());
                    sql.current.push(c);
                    i += 1;
                }
                '$' => {
                    // A dollar quote: $$ or $tag$.
                    let mut j = i + 1;
                    while j < chars.len() && (chars[j].is_alphanumeric() || chars[j] == '_') {
                        j += 1;
                    }
                    if j < chars.len() && chars[j] == '$' && !chars.get(i + 1).is_some_and(|d| d.is_ascii_digit()) {
                        let tag: String = chars[i..=j].iter().collect();
                        sql.current.push_str(&tag);
                        quote = Some(tag);
                        i = j + 1;
                    } else {
                        sql.current.push(c);
                        i += 1;
                    }
                }
                '-' if chars.get(i + 1) == Some(&'-') => break,
                '/' if chars.get(i + 1) == Some(&'*') => {
                    block_comment = 1;
                    sql.current.push_str("/*");
                    i += 2;
                }
                '\\' if chars.get(i + 1) == Some(&';') => {
                    let part = std::mem::take(&mut sql.current);
                    sql.parts.push(part);
                    i += 2;
                }
                '\\' => {
                    // \gset or \aset ending a query on its line.
                    let rest: String = chars[i + 1..].iter().collect();
                    let (word, args) = match rest.find(char::is_whitespace) {
                        Some(k) => (&rest[..k], rest[k..].trim()),
                        None => (rest.as_str(), ""),
                    };
                    let w = word.to_ascii_lowercase();
                    if w == "gset" || w == "aset" {
                        number += 1;
                        lines_of.push(sql.first_line(false));
                        finish_sql(
                            p,
                            &mut cmds,
                            &mut sql,
                            Some((&w, args)),
                            &loc,
                            number,
                            pipeline.is_some(),
                        )
                        .map_err(|m| err(n, m, Some(i)))?;
                        i = chars.len();
                    } else {
                        return Err(err(
                            n,
                            format!("unexpected \\{word} inside SQL: meta-commands start their own line (only \\; \\gset and \\aset may follow SQL)"),
                            Some(i),
                        ));
                    }
                }
                ';' => {
                    let empty = strip_comments(&sql.current).trim().is_empty();
                    if !empty || !sql.parts.is_empty() {
                        number += 1;
                        lines_of.push(sql.first_line(true));
                    }
                    if !empty {
                        // Sent with its ';', as pgbench sends it (the server's errors then
                        // say `at or near ";"` where pgbench's do).
                        sql.current.push(';');
                    }
                    finish_sql(p, &mut cmds, &mut sql, None, &loc, number, false).map_err(|m| err(n, m, None))?;
                    i += 1;
                    sql.line = n as u32;
                }
                _ => {
                    sql.current.push(c);
                    i += 1;
                }
            }
        }
        sql.current.push('\n');
        n += 1;
    }
    if quote.is_some() || block_comment > 0 {
        return Err(err(
            sql.line as usize,
            "unterminated quoted string or comment in this SQL command".into(),
            None,
        ));
    }
    if !sql.current.trim().is_empty() || !sql.parts.is_empty() {
        number += 1;
        lines_of.push(sql.first_line(false));
        finish_sql(p, &mut cmds, &mut sql, None, &loc, number, false).map_err(|m| err(sql.line as usize, m, None))?;
    }
    if let Some(b) = blocks.last() {
        return Err(err(b.line, "\\if without matching \\endif".into(), None));
    }
    if let Some(l) = pipeline {
        // pgbench's client stops there, at run time.
        cmds.push(Cmd {
            op: Op::Fail("end of script reached with pipeline open".into()),
            loc: loc(l),
            number: number + 1,
        });
    }
    Ok((cmds, lines_of))
}

/// `\\sleep`'s arguments as pgbench reads them: `N [us|ms|s]`, `Nms` (the unit glued on),
/// or `:variable [unit]`; N is read as C's `atoi` reads it; the unit defaults to seconds.
fn sleep_args(p: &mut Parsed, rest: &str) -> Result<(Amount, u64), String> {
    let words: Vec<&str> = rest.split_whitespace().collect();
    let (first, mut unit) = match words.as_slice() {
        [] => return Err("missing argument in command \"sleep\": \\sleep N [us|ms|s]".into()),
        [a] => (*a, None),
        [a, u] => (*a, Some(*u)),
        _ => return Err("too many arguments in command \"sleep\": \\sleep N [us|ms|s]".into()),
    };
    let amount = if let Some(name) = first.strip_prefix(':') {
        Amount::Var(p.vars.slot(name))
    } else {
        let unsigned = first.strip_prefix(['+', '-']).unwrap_or(first);
        let digits = unsigned.len() - unsigned.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let tail = &unsigned[digits..];
        if !tail.is_empty() {
            if unit.is_none() && digits > 0 {
                unit = Some(tail);
            } else {
                return Err(format!(
                    "invalid sleep time, must be an integer ({first}) in command \"sleep\""
                ));
            }
        }
        Amount::Const(atoi(first))
    };
    let unit_us = match unit.map(|u| u.to_ascii_lowercase()).as_deref() {
        None | Some("s") => 1_000_000,
        Some("ms") => 1_000,
        Some("us") => 1,
        Some(u) => {
            return Err(format!(
                "unrecognized time unit, must be us, ms or s ({u}) in command \"sleep\""
            ))
        }
    };
    Ok((amount, unit_us))
}

/// C's `atoi`: leading spaces, a sign, digits; anything after is ignored; no digits is 0.
pub fn atoi(text: &str) -> i64 {
    let t = text.trim_start();
    let (neg, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let mut n: i64 = 0;
    for b in t.bytes().take_while(|b| b.is_ascii_digit()) {
        n = n.saturating_mul(10).saturating_add((b - b'0') as i64);
    }
    if neg {
        -n
    } else {
        n
    }
}

fn patch(op: &mut Op, end: usize) {
    match op {
        Op::JumpUnless { to, .. } | Op::Jump(to) => *to = end,
        _ => {}
    }
}

/// The `\gset`/`\aset` of one query: a variable per result column, named by `prefix`
/// and the column. `Err` is an error in the command (pgbench's too); `Ok(Err)` one pgbench
/// meets only once the query ran (the columns cannot be stored), for an [`Op::Fail`].
fn store_for(p: &mut Parsed, text: &str, word: &str, prefix: &str) -> Result<Result<Store, String>, String> {
    if prefix.contains(char::is_whitespace) {
        return Err(format!("too many arguments in command \"{word}\": \\{word} [PREFIX]"));
    }
    if !prefix.is_empty() && !valid_name(prefix) {
        return Err(format!(
            "\\{word}'s prefix must be letters, digits or underscores, got {prefix:?}"
        ));
    }
    Ok(result_columns(text).map(|cols| Store {
        all_rows: word == "aset",
        vars: cols.iter().map(|c| p.vars.slot(&format!("{prefix}{c}"))).collect(),
    }))
}

/// Whether a query returns rows whose columns `\aset` stores.
fn returns_rows(sql: &str) -> bool {
    let name = statement_name(sql);
    name.starts_with("SELECT") || words(sql).iter().any(|w| w.eq_ignore_ascii_case("returning"))
}

/// Ends the pending SQL command, pgbench's command `number`: each part of a compound
/// becomes a statement. `\gset` (`store` `("gset", prefix)`) stores the last part's row,
/// `\aset` every part's rows. What pgbench finds wrong only at run time (a `\gset` in a
/// pipeline, columns that cannot be stored) becomes an [`Op::Fail`] after the query.
fn finish_sql(
    p: &mut Parsed,
    cmds: &mut Vec<Cmd>,
    sql: &mut Pending,
    store: Option<(&str, &str)>,
    loc: &dyn Fn(usize) -> Loc,
    number: u32,
    in_pipeline: bool,
) -> Result<(), String> {
    let mut parts = std::mem::take(&mut sql.parts);
    parts.push(std::mem::take(&mut sql.current));
    let parts: Vec<String> = parts
        .into_iter()
        .filter(|s| !strip_comments(s).trim().is_empty())
        .collect();
    let count = parts.len();
    for (k, part) in parts.into_iter().enumerate() {
        let text = part.trim();
        let store = match store {
            Some((word, _)) if in_pipeline && word == "gset" && k + 1 == count => {
                Some(Err("\\gset is not allowed in pipeline mode".to_string()))
            }
            Some((word, prefix)) if word == "aset" && returns_rows(text) => Some(store_for(p, text, word, prefix)?),
            Some((word, prefix)) if word == "gset" && k + 1 == count => Some(store_for(p, text, word, prefix)?),
            _ => None,
        };
        let (store, fail) = match store {
            Some(Ok(s)) => (Some(s), None),
            Some(Err(m)) => (None, Some(m)),
            None => (None, None),
        };
        let stmt = statement(text, &mut p.vars);
        p.statements.push(stmt);
        cmds.push(Cmd {
            op: Op::Sql {
                stmt: p.statements.len() - 1,
                store,
            },
            loc: loc(sql.line as usize),
            number,
        });
        if let Some(m) = fail {
            cmds.push(Cmd {
                op: Op::Fail(m),
                loc: loc(sql.line as usize),
                number,
            });
        }
    }
    Ok(())
}

/// Splits SQL at its `:variables` (`::` is a cast). Outside quotes a variable is a
/// parameter in prepared mode; inside single quotes it is written into the text in simple
/// mode only, as pgbench does (`':name'`), and left as written when the variable is unset.
pub fn statement(sql: &str, vars: &mut Vars) -> Statement {
    let chars: Vec<char> = sql.chars().collect();
    let mut pieces = Vec::new();
    let mut text = String::new();
    let mut placeholders = String::new();
    let mut params = Vec::new();
    let mut quote: Option<char> = None;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match (quote, c) {
            (_, ':') if chars.get(i + 1) == Some(&':') => {
                text.push_str("::");
                placeholders.push_str("::");
                i += 2;
                continue;
            }
            (None | Some('\''), ':') => {
                let mut j = i + 1;
                while j < chars.len() && (chars[j].is_alphanumeric() || chars[j] == '_') {
                    j += 1;
                }
                if j > i + 1 {
                    let written: String = chars[i..j].iter().collect();
                    let slot = vars.slot(&written[1..]);
                    if !text.is_empty() {
                        pieces.push(Piece::Text(std::mem::take(&mut text)));
                    }
                    if quote.is_some() {
                        pieces.push(Piece::Quoted(slot, written.clone()));
                        placeholders.push_str(&written);
                    } else {
                        pieces.push(Piece::Var(slot));
                        placeholders.push('?');
                        params.push(slot);
                    }
                    i = j;
                    continue;
                }
            }
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            _ => {}
        }
        text.push(c);
        placeholders.push(c);
        i += 1;
    }
    if !text.is_empty() {
        pieces.push(Piece::Text(text));
    }
    Statement {
        name: statement_name(sql),
        comment_only: strip_comments(sql).trim().is_empty(),
        pieces,
        placeholders,
        params,
    }
}

fn strip_comments(sql: &str) -> String {
    let mut out = String::new();
    let mut in_block = false;
    for line in sql.lines() {
        let mut rest = line;
        loop {
            if in_block {
                match rest.find("*/") {
                    Some(k) => {
                        rest = &rest[k + 2..];
                        in_block = false;
                    }
                    None => break,
                }
            } else if let Some(k) = rest.find("/*") {
                out.push_str(&rest[..k]);
                rest = &rest[k + 2..];
                in_block = true;
            } else {
                out.push_str(rest.split("--").next().unwrap_or(""));
                break;
            }
        }
        out.push(' ');
    }
    out
}

/// Words of SQL for naming: identifiers, quoted names, and single punctuation.
fn words(sql: &str) -> Vec<String> {
    let chars: Vec<char> = strip_comments(sql).chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if let Some(end) = dollar_quoted(&chars, i) {
            // A dollar-quoted string is one word, whatever it holds.
            out.push(chars[i..end].iter().collect());
            i = end;
        } else if c.is_alphanumeric() || c == '_' || c == '.' || c == ':' || c == '$' {
            let s = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || "_.:$".contains(chars[i])) {
                i += 1;
            }
            out.push(chars[s..i].iter().collect());
        } else if c == '\'' || c == '"' || c == '`' {
            let s = i;
            i += 1;
            while i < chars.len() && chars[i] != c {
                i += 1;
            }
            i = (i + 1).min(chars.len());
            out.push(chars[s..i].iter().collect());
        } else {
            out.push(c.to_string());
            i += 1;
        }
    }
    out
}

/// The end (exclusive) of a dollar-quoted string (`$$...$$`, `$tag$...$tag$`) starting at
/// `i`, if one does.
fn dollar_quoted(chars: &[char], i: usize) -> Option<usize> {
    if chars[i] != '$' || chars.get(i + 1).is_some_and(|d| d.is_ascii_digit()) {
        return None;
    }
    let mut j = i + 1;
    while j < chars.len() && (chars[j].is_alphanumeric() || chars[j] == '_') {
        j += 1;
    }
    if chars.get(j) != Some(&'$') {
        return None;
    }
    let tag = &chars[i..=j];
    let mut k = j + 1;
    while k + tag.len() <= chars.len() {
        if &chars[k..k + tag.len()] == tag {
            return Some(k + tag.len());
        }
        k += 1;
    }
    Some(chars.len())
}

/// A statement's name: its verb and the table it works on (`UPDATE pgbench_accounts`,
/// `SELECT pgbench_accounts`, `INSERT pgbench_history`), or the verb alone (`BEGIN`).
pub fn statement_name(sql: &str) -> String {
    let w = words(sql);
    let Some(verb) = w.first() else {
        return "SQL".into();
    };
    let verb = verb.to_ascii_uppercase();
    let after = |kw: &str| -> Option<String> {
        let mut depth = 0i32;
        for (k, x) in w.iter().enumerate() {
            match x.as_str() {
                "(" => depth += 1,
                ")" => depth -= 1,
                _ if depth == 0 && x.eq_ignore_ascii_case(kw) => {
                    return w
                        .get(k + 1)
                        .filter(|t| {
                            t.chars()
                                .next()
                                .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '"' || c == '`')
                        })
                        .cloned()
                }
                _ => {}
            }
        }
        None
    };
    let table = match verb.as_str() {
        "SELECT" | "DELETE" => after("from"),
        "INSERT" => after("into"),
        "UPDATE" => w
            .get(1)
            .filter(|t| !t.eq_ignore_ascii_case("only"))
            .cloned()
            .or_else(|| w.get(2).cloned()),
        _ => None,
    };
    match table {
        Some(t) => format!("{verb} {t}"),
        None => verb,
    }
}

/// The names of a query's result columns, for `\gset`: the select list (or RETURNING
/// list), each column's `AS` name, a bare column's name, or a function's name. Unquoted
/// names are folded to lower case as PostgreSQL does.
pub fn result_columns(sql: &str) -> Result<Vec<String>, String> {
    let w = words(sql);
    let top = |kw: &str| -> Option<usize> {
        let mut depth = 0i32;
        for (k, x) in w.iter().enumerate() {
            match x.as_str() {
                "(" => depth += 1,
                ")" => depth -= 1,
                _ if depth == 0 && x.eq_ignore_ascii_case(kw) => return Some(k),
                _ => {}
            }
        }
        None
    };
    let start = match top("returning") {
        Some(k) => k + 1,
        None if w.first().is_some_and(|v| v.eq_ignore_ascii_case("select")) => {
            let mut k = 1;
            while w.get(k).is_some_and(|x| x.eq_ignore_ascii_case("distinct") || x.eq_ignore_ascii_case("all")) {
                k += 1;
            }
            k
        }
        None => {
            return Err("expected one row, got 0: \\gset and \\aset need a SELECT or a RETURNING clause (dbperf reads the column names from the select list)".into())
        }
    };
    let enders = [
        "from",
        "where",
        "group",
        "having",
        "order",
        "limit",
        "union",
        "into",
        "offset",
        "window",
        "for",
        "intersect",
        "except",
    ];
    let mut items: Vec<Vec<String>> = vec![Vec::new()];
    let mut depth = 0i32;
    for x in &w[start..] {
        match x.as_str() {
            "(" => depth += 1,
            ")" => depth -= 1,
            "," if depth == 0 => {
                items.push(Vec::new());
                continue;
            }
            ";" if depth == 0 => break,
            _ if depth == 0 && enders.iter().any(|e| x.eq_ignore_ascii_case(e)) => break,
            _ => {}
        }
        items.last_mut().expect("one item at least").push(x.clone());
    }
    let ident = |t: &str| t.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_') || t.starts_with('"');
    let fold = |t: &str| {
        if let Some(q) = t.strip_prefix('"') {
            q.trim_end_matches('"').to_string()
        } else {
            t.to_ascii_lowercase()
        }
    };
    if items.len() == 1 && items[0].is_empty() {
        // `SELECT \gset`: no columns, nothing to store.
        return Ok(Vec::new());
    }
    let mut cols = Vec::new();
    for (k, item) in items.iter().enumerate() {
        let text = item.join(" ");
        let name = if item.len() >= 2 && item[item.len() - 2].eq_ignore_ascii_case("as") {
            Some(fold(&item[item.len() - 1]))
        } else if item.len() == 1 && ident(&item[0]) && !item[0].contains(':') {
            Some(fold(item[0].rsplit('.').next().unwrap_or(&item[0])))
        } else if item.len() >= 2
            && item[item.len() - 1] != ")"
            && ident(&item[item.len() - 1])
            && (item[item.len() - 2] == ")" || ident(&item[item.len() - 2]))
        {
            Some(fold(&item[item.len() - 1]))
        } else if item.len() >= 3 && ident(&item[0]) && item[1] == "(" && item.last().is_some_and(|t| t == ")") {
            Some(fold(item[0].rsplit('.').next().unwrap_or(&item[0])))
        } else {
            None
        };
        match name {
            Some(n) if valid_name(&n) => cols.push(n),
            Some(n) => {
                return Err(format!(
                    "error storing into variable {n}: invalid variable name (result column {}, {text})",
                    k + 1
                ))
            }
            None => {
                return Err(format!(
                    "error storing into variable ?column?: dbperf cannot tell the name of result column {} ({text}) for \\gset: name it with AS",
                    k + 1
                ))
            }
        }
    }
    Ok(cols)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_ok(text: &str) -> Parsed {
        let mut p = Parsed::default();
        p.add("t.sql", "t.sql", text).unwrap_or_else(|e| panic!("{e}"));
        p
    }

    fn parse_err(text: &str) -> ScriptError {
        let mut p = Parsed::default();
        p.add("t.sql", "t.sql", text).unwrap_err()
    }

    #[test]
    fn sql_ends_at_semicolons_outside_quotes_and_comments() {
        let p = parse_ok(
            "-- a comment; not a command\n\
             SELECT 'a;b', \"c;d\" FROM t\n  WHERE x = :x; /* ; */ UPDATE t SET v = $$;$$ WHERE id = :id::int;\n\
             BEGIN \\; SELECT 1 \\; COMMIT;\n\
             END",
        );
        let s: Vec<&str> = p.statements.iter().map(|s| s.placeholders.as_str()).collect();
        assert_eq!(
            s,
            [
                "SELECT 'a;b', \"c;d\" FROM t\n  WHERE x = ?;",
                "/* ; */ UPDATE t SET v = $$;$$ WHERE id = ?::int;",
                "BEGIN",
                "SELECT 1",
                "COMMIT;",
                "END"
            ]
        );
        let lines: Vec<u32> = p.scripts[0].cmds.iter().map(|c| c.loc.line).collect();
        assert_eq!(lines, [2, 3, 4, 4, 4, 5]);
        let x = p.vars.find("x").unwrap();
        assert_eq!(p.statements[0].params, [x]);
        assert_eq!(
            p.statements[0].pieces,
            [
                Piece::Text("SELECT 'a;b', \"c;d\" FROM t\n  WHERE x = ".into()),
                Piece::Var(x),
                Piece::Text(";".into())
            ]
        );
    }

    #[test]
    fn statements_are_named_by_their_first_words() {
        for (sql, name) in [
            (
                "UPDATE pgbench_accounts SET abalance = 1 WHERE aid = ?",
                "UPDATE pgbench_accounts",
            ),
            (
                "SELECT abalance FROM pgbench_accounts WHERE aid = ?",
                "SELECT pgbench_accounts",
            ),
            ("select count(*) from (select 1 from t) x", "SELECT"),
            ("INSERT INTO pgbench_history (tid) VALUES (?)", "INSERT pgbench_history"),
            ("delete from h where x", "DELETE h"),
            ("begin", "BEGIN"),
            ("SELECT 1", "SELECT"),
        ] {
            assert_eq!(statement_name(sql), name, "{sql}");
        }
    }

    /// The script forms pgbench accepts (001_pgbench_with_server.pl): comments inside
    /// dollar quotes, lines starting with `\;`, `\sleep 2ms` and `\sleep :v ms`.
    #[test]
    fn pgbench_script_forms_parse_as_pgbench_reads_them() {
        let p = parse_ok(
            "DO $$\nBEGIN\n  -- a comment; inside the body\n  PERFORM 1;\nEND $$;\n\
             \\; SELECT 6 AS i6 \\; SELECT 7 AS i7 \\; \\aset\n\
             \\; \\; SELECT 0 AS i5 \\; SELECT 5 AS i5 \\; \\; \\gset\n\
             \\sleep 2ms\n\
             \\sleep :one ms\n\
             \\sleep -5\n\
             \\set x debug(1)\n",
        );
        assert_eq!(
            p.statements[0].placeholders,
            "DO $$\nBEGIN\n  -- a comment; inside the body\n  PERFORM 1;\nEND $$;"
        );
        let cmds = &p.scripts[0].cmds;
        let i6 = p.vars.find("i6").unwrap();
        let i7 = p.vars.find("i7").unwrap();
        let i5 = p.vars.find("i5").unwrap();
        let stores: Vec<Option<Vec<u32>>> = cmds[1..5]
            .iter()
            .map(|c| match &c.op {
                Op::Sql { store, .. } => store.as_ref().map(|s| s.vars.clone()),
                op => panic!("{op:?}"),
            })
            .collect();
        assert_eq!(stores, [Some(vec![i6]), Some(vec![i7]), None, Some(vec![i5])]);
        assert_eq!(
            cmds[5].op,
            Op::Sleep {
                amount: Amount::Const(2),
                unit_us: 1000
            }
        );
        assert_eq!(
            cmds[6].op,
            Op::Sleep {
                amount: Amount::Var(p.vars.find("one").unwrap()),
                unit_us: 1000
            }
        );
        assert_eq!(
            cmds[7].op,
            Op::Sleep {
                amount: Amount::Const(-5),
                unit_us: 1_000_000
            }
        );
        // pgbench numbers commands: the compound with its \aset is one, so is each \sleep.
        let numbers: Vec<u32> = cmds.iter().map(|c| c.number).collect();
        assert_eq!(numbers, [1, 2, 2, 3, 3, 4, 5, 6, 7]);
        assert!(parse_err("\\sleep 1 week\n")
            .message
            .starts_with("unrecognized time unit, must be us, ms or s (week)"));
    }

    /// pgbench ends SQL that has no ';' at the next meta-command's line: the SQL is a command
    /// of its own (SELECT 1 before \set), a block comment alone too.
    #[test]
    fn sql_without_a_semicolon_ends_at_a_meta_command() {
        let p = parse_ok("SELECT 1\n\\set x 2\nSELECT :x;\n");
        let s: Vec<&str> = p.statements.iter().map(|s| s.placeholders.as_str()).collect();
        assert_eq!(s, ["SELECT 1", "SELECT ?;"]);
        let cmds = &p.scripts[0].cmds;
        assert!(matches!(cmds[0].op, Op::Sql { stmt: 0, .. }), "{:?}", cmds[0]);
        assert!(matches!(cmds[1].op, Op::Set { .. }), "{:?}", cmds[1]);
        let numbers: Vec<(u32, u32)> = cmds.iter().map(|c| (c.number, c.loc.line)).collect();
        assert_eq!(numbers, [(1, 1), (2, 2), (3, 3)]);

        // A block comment alone is a command of its own, sent as pgbench sends it.
        let p = parse_ok("/* a note\n   on two lines */\n-- and a line\n\\if 1\nSELECT 2;\n\\endif\n");
        let s: Vec<(&str, bool)> = p
            .statements
            .iter()
            .map(|s| (s.placeholders.as_str(), s.comment_only))
            .collect();
        assert_eq!(s, [("/* a note\n   on two lines */", true), ("SELECT 2;", false)]);
        let cmds = &p.scripts[0].cmds;
        assert!(matches!(cmds[0].op, Op::Sql { stmt: 0, .. }), "{:?}", cmds[0]);
        assert!(matches!(cmds[1].op, Op::JumpUnless { .. }), "{:?}", cmds[1]);
        let numbers: Vec<u32> = cmds.iter().map(|c| c.number).collect();
        assert_eq!(numbers, [1, 2, 3]);
        assert_eq!(p.scripts[0].lines, ["/* a note", "\\if 1", "SELECT 2;", "\\endif"]);
    }

    #[test]
    fn meta_commands_are_numbered_as_pgbench_numbers_them() {
        let p = parse_ok("-- c\n\\set a 1\n\\if 1\nSELECT 1 AS one \\gset\n\\else\n\\set b 2\n\\endif\n\\set c 3\n");
        let numbers: Vec<(u32, bool)> = p.scripts[0]
            .cmds
            .iter()
            .map(|c| (c.number, matches!(c.op, Op::Set { .. })))
            .collect();
        // \set a=1, \if=2, SELECT=3, \else=4 (a jump), \set b=5, \endif=6, \set c=7.
        assert_eq!(
            numbers,
            [(1, true), (2, false), (3, false), (4, false), (5, true), (7, true)]
        );
    }

    #[test]
    fn every_meta_command_parses() {
        let p = parse_ok(
            "\\set aid random(1, 100000 * :scale)\n\
             \\set d \\\n   :aid + 1\n\
             \\sleep 10 ms\n\
             \\sleep :d us\n\
             \\sleep 0\n\
             \\if :aid > 10\n\
             SELECT abalance, aid AS a FROM pgbench_accounts WHERE aid = :aid \\gset p_\n\
             \\elif :aid > 5\n\
             SELECT 1 AS one \\; SELECT 2 AS two \\aset\n\
             \\else\n\
             \\startpipeline\n\
             SELECT 3;\n\
             \\endpipeline\n\
             \\endif\n",
        );
        let ops: Vec<&Op> = p.scripts[0].cmds.iter().map(|c| &c.op).collect();
        assert!(matches!(ops[0], Op::Set { .. }));
        assert!(matches!(ops[1], Op::Set { .. }));
        assert_eq!(p.scripts[0].cmds[1].loc.line, 2);
        assert_eq!(
            *ops[2],
            Op::Sleep {
                amount: Amount::Const(10),
                unit_us: 1000
            }
        );
        assert_eq!(
            *ops[3],
            Op::Sleep {
                amount: Amount::Var(p.vars.find("d").unwrap()),
                unit_us: 1
            }
        );
        assert_eq!(
            *ops[4],
            Op::Sleep {
                amount: Amount::Const(0),
                unit_us: 1_000_000
            }
        );
        // \if: 5 JumpUnless → 8 (the \elif's test); 6 SQL; 7 Jump → end.
        assert!(matches!(ops[5], Op::JumpUnless { to: 8, .. }));
        let gset = p.vars.find("p_abalance").unwrap();
        let a = p.vars.find("p_a").unwrap();
        assert_eq!(
            *ops[6],
            Op::Sql {
                stmt: 0,
                store: Some(Store {
                    all_rows: false,
                    vars: vec![gset, a]
                })
            }
        );
        assert_eq!(*ops[7], Op::Jump(15));
        assert!(matches!(ops[8], Op::JumpUnless { to: 12, .. }));
        // \aset stores every part of the compound.
        assert!(matches!(
            ops[9],
            Op::Sql {
                stmt: 1,
                store: Some(Store { all_rows: true, .. })
            }
        ));
        assert!(matches!(
            ops[10],
            Op::Sql {
                stmt: 2,
                store: Some(Store { all_rows: true, .. })
            }
        ));
        assert_eq!(*ops[11], Op::Jump(15));
        assert_eq!(*ops[12], Op::StartPipeline);
        assert!(matches!(ops[13], Op::Sql { stmt: 3, .. }));
        assert_eq!(*ops[14], Op::EndPipeline);
        assert_eq!(ops.len(), 15);
    }

    #[test]
    fn errors_name_the_file_and_line_with_the_text() {
        let e = parse_err("SELECT 1;\n\\frobnicate x\n");
        assert_eq!((e.loc.file.as_str(), e.loc.line), ("t.sql", 2));
        assert!(
            e.message.starts_with("invalid command in command \"frobnicate\""),
            "{e}"
        );
        assert!(e.to_string().starts_with("t.sql:2: invalid command"), "{e}");
        assert!(e.to_string().contains("\n    \\frobnicate x"), "{e}");

        let e = parse_err("\n\\set x 1 + * 2\n");
        assert_eq!(e.loc.line, 2);
        assert!(e.message.starts_with("syntax error in command \"set\""), "{e}");
        // The caret sits under the '*'.
        assert_eq!(
            e.to_string().lines().last().unwrap(),
            "               ^ error found here"
        );
        assert_eq!(e.to_string().lines().nth(1).unwrap().find('*'), Some(15));

        let e = parse_err("\\setshell x echo 1\n");
        assert!(e.to_string().starts_with("t.sql:1: \\setshell is not supported"), "{e}");
        assert!(parse_err("\\shell ls\n").message.contains("\\shell is not supported"));
        assert_eq!(parse_err("SELECT 1;\n\\if 1\nSELECT 2;\n").loc.line, 2);
        assert!(parse_err("\\endif\n").message.contains("\\endif without matching \\if"));
        assert!(parse_err("\\if 1\n\\else\n\\else\n\\endif\n")
            .message
            .contains("\\else after \\else"));
        assert!(parse_err("\\if 1\n\\else\n\\elif 2\n\\endif\n")
            .message
            .contains("after \\else"));
        assert!(parse_err("\\sleep 1 hours\n").message.contains("unit"));
        assert!(parse_err("\\sleep\n").message.starts_with("missing argument"));
        assert!(parse_err("\\sleep 1 ms x\n").message.starts_with("too many arguments"));
        assert!(parse_err("\\sleep x\n")
            .message
            .starts_with("invalid sleep time, must be an integer (x)"));
        assert!(parse_err("\\set x\n").message.contains("expression"));
        assert!(parse_err("\\gset\n")
            .message
            .contains("gset must follow an SQL command"));
        assert!(parse_err("SELECT 1 AS i \\gset\n\\gset\n")
            .message
            .contains("gset must follow an SQL command"));
        assert!(parse_err("SELECT 'open;\n").message.contains("unterminated"));
        assert!(parse_err("-- nothing\n\n")
            .message
            .starts_with("empty command list for script"));
    }

    /// What pgbench finds only when a client reaches it stops that client at run time, in
    /// pgbench's words (pgbench 15 exits 2 on these, after its report).
    #[test]
    fn errors_pgbench_meets_at_run_time_are_commands_that_fail() {
        let fails = |text: &str| -> Vec<String> {
            parse_ok(text)
                .scripts
                .remove(0)
                .cmds
                .into_iter()
                .filter_map(|c| match c.op {
                    Op::Fail(m) => Some(m),
                    _ => None,
                })
                .collect()
        };
        assert_eq!(
            fails("\\startpipeline\n\\startpipeline\n\\endpipeline\n"),
            ["already in pipeline mode"]
        );
        assert_eq!(fails("\\endpipeline\n"), ["not in pipeline mode"]);
        assert_eq!(
            fails("\\startpipeline\nSELECT 1;\n"),
            ["end of script reached with pipeline open"]
        );
        assert_eq!(
            fails("\\startpipeline\nselect 1 \\gset f\n\\endpipeline\n"),
            ["\\gset is not allowed in pipeline mode"]
        );
        assert_eq!(fails("\\set . 1\n"), ["set: invalid variable name: \".\""]);
        assert!(fails("SELECT x + 1 FROM t \\gset\n")[0].contains("name it with AS"));
        assert!(fails("SELECT 1 AS \"bad name!\" \\gset\n")[0].starts_with("error storing into variable bad name!"));
        // The query runs first, then the client stops: the failure follows the SQL.
        let p = parse_ok("DROP TABLE IF EXISTS x \\gset\n");
        let ops: Vec<_> = p.scripts[0].cmds.iter().map(|c| &c.op).collect();
        assert!(matches!(ops[..], [Op::Sql { store: None, .. }, Op::Fail(_)]), "{ops:?}");
    }

    #[test]
    fn gset_reads_column_names_from_the_select_list() {
        let cols = |sql: &str| result_columns(sql).unwrap();
        assert_eq!(
            cols("SELECT abalance FROM pgbench_accounts WHERE aid = 1"),
            ["abalance"]
        );
        assert_eq!(
            cols("select a.x, count(*), sum(b) AS Total, c \"Q\" from t"),
            ["x", "count", "total", "Q"]
        );
        assert_eq!(cols("SELECT DISTINCT max(v) m FROM t"), ["m"]);
        assert_eq!(cols("UPDATE t SET v = v + 1 WHERE id = 1 RETURNING v, id"), ["v", "id"]);
        assert_eq!(cols("SELECT 1 AS one"), ["one"]);
        // A dollar-quoted string is one value, its quotes and semicolons inside it.
        assert_eq!(cols("select $$'a' b; 'c'$$ as long, $x$1$x$ AS n"), ["long", "n"]);
        assert!(result_columns("SELECT * FROM t").is_err());
        assert!(result_columns("BEGIN").unwrap_err().contains("SELECT or a RETURNING"));
    }
}
